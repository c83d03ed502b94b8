"""The command line's argument checks, run before a subcommand starts its work.

One checker per subcommand (:data:`CHECKS`), each built from :mod:`parity.validate`, so a
typo in a backend, a device, a regex or a path is one line on stderr and exit status 2
(docs/troubleshooting-cli.md), never a traceback or a table of "not installed".

Example::

    >>> import argparse
    >>> check(argparse.Namespace(command="ops", backend=["onx"]))
    Traceback (most recent call last):
    ...
    parity.ir.usage.UsageError: unknown backend 'onx'; did you mean 'onnx'? choose from: reference, xla, triton, onnx, inductor, ... (a plugin registers an entry point in the group 'parity.backends')
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from . import validate


def _backends(args) -> list[str]:
    """The ``--backend`` names, each checked (all known backends when none is given)."""
    from .backends.registry import backend_names

    return [validate.backend(b) for b in args.backend] if args.backend else backend_names()


def _devices(devices, backends) -> None:
    for d in devices:
        if d != "cpu":  # every backend runs on the CPU; checking another device loads the backends
            validate.device(d, backends)


def _check_ops(args) -> None:
    _backends(args)


def _plugins(args) -> None:
    """Load ``--plugin`` backends first: the names they register are valid ``--backend`` names."""
    from .conformance.plugins import PluginError, load_plugins

    try:
        load_plugins(getattr(args, "plugin", None) or ())
    except PluginError as exc:
        raise validate.UsageError(str(exc)) from None


def _check_conform(args) -> None:
    from .ir.dtypes import DType

    _plugins(args)
    for name in args.dtype or ():
        validate.one_of(name, [d.short for d in DType], "dtype")
    _devices(args.device or (), _backends(args))
    if args.ops is not None:
        validate.regex(args.ops, "--ops")


def _check_fuzz(args) -> None:
    _plugins(args)
    _devices([args.device], _backends(args))
    if args.budget < 1:  # a run of no graph found nothing and exited 0
        raise validate.UsageError(f"--budget is a number of graphs, at least 1; got {args.budget}")
    if args.time_limit is not None and args.time_limit <= 0:
        raise validate.UsageError(f"--time-limit is a number of seconds above 0; got {args.time_limit:g}")
    for index in args.graph or ():
        if index < 0:
            raise validate.UsageError(f"--graph is a graph's index in the seed's stream, from 0; got {index}")


def _check_diff(args) -> None:
    from .cli_diff import check_target

    check_target(args.target)
    backend = validate.backend(args.backend)
    validate.backend(args.against, also=("oracle", "eager"))
    _devices([args.device], [backend])


def _check_bench(args) -> None:
    for name in args.backends or ():
        validate.backend(name, also=("auto",))
    if args.workloads or args.anchors or args.cold:
        from .bench.candidates import ANCHORS
        from .bench.workloads import WORKLOADS

        for name in args.workloads or ():
            validate.one_of(name, WORKLOADS, "workload")
        for name in args.cold or ():
            validate.one_of(name, [*WORKLOADS, "none"], "--cold workload")
        for name in args.anchors or ():
            validate.one_of(name, ANCHORS, "anchor")


# subcommand -> its checker; a subcommand without one (aten) has no option to check
CHECKS: dict[str, Callable[[argparse.Namespace], None]] = {
    "ops": _check_ops, "conform": _check_conform, "fuzz": _check_fuzz, "diff": _check_diff, "bench": _check_bench,
}


def check(args: argparse.Namespace) -> None:
    """Raise :class:`~parity.validate.UsageError` for the first bad argument of ``args``."""
    checker = CHECKS.get(args.command)
    if checker is not None:
        checker(args)


__all__ = ["CHECKS", "check"]
