"""Argument checks shared by the public functions and the command line.

Each check returns the value it accepted (normalised) or raises :class:`UsageError`,
whose one-line message names what was given, the valid choices, and the nearest one
when the value looks like a typo ("did you mean 'onnx'?"). The CLI prints that line
and exits with status 2 (docs/troubleshooting-cli.md); a public function raises it.

Example::

    >>> from parity import validate
    >>> validate.one_of("onx", ["reference", "xla", "onnx"], "backend")
    Traceback (most recent call last):
    ...
    parity.validate.UsageError: unknown backend 'onx'; did you mean 'onnx'? choose from: reference, xla, onnx
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from .ir.errors import ParityError


class UsageError(ParityError, ValueError):
    """A bad argument: an unknown name, a bad regex, a missing file, an option of another function."""


def did_you_mean(value: str, choices: Iterable[str]) -> str:
    """``" did you mean 'onnx'?"`` for a near miss among ``choices``, else ``""``."""
    close = difflib.get_close_matches(str(value), [str(c) for c in choices], n=1, cutoff=0.6)
    return f" did you mean {close[0]!r}?" if close else ""


def one_of(value: str, choices: Iterable[str], what: str, hint: str = "") -> str:
    """``value`` if it is one of ``choices``; else a :class:`UsageError` naming them."""
    choices = list(dict.fromkeys(choices))
    if value in choices:
        return value
    near = did_you_mean(value, choices)
    raise UsageError(f"unknown {what} {value!r};{near} choose from: {', '.join(map(str, choices))}{hint}")


# Who takes which option: a keyword given to the wrong function is named with its owner.
OPTIONS: dict[str, tuple[str, ...]] = {
    "parity.compile": ("backend", "device", "strict", "dynamic", "mesh", "in_shardings", "out_shardings",
                       "cache_dir", "auto", "fast_path", "precision", "fullgraph"),
    "parity.export": ("format", "path", "input_names", "output_names", "dynamic_dims", "params", "kwargs"),
    "parity.explain": ("backends",),
}


def options(function: str, given: Mapping[str, object]) -> None:
    """Reject keywords ``function`` does not take, saying which function takes them."""
    for name in given:
        if name in OPTIONS[function]:
            continue
        owners = [f for f, names in OPTIONS.items() if name in names and f != function]
        why = (f": it is an option of {owners[0]}" if owners else
               f";{did_you_mean(name, OPTIONS[function])} its options are {', '.join(OPTIONS[function])}")
        raise UsageError(f"{function} takes no option {name!r}{why}")


def backend(name: str, *, also: Iterable[str] = ()) -> str:
    """A backend name the registry knows (a built-in, a plugin, a registered instance), or one of ``also``."""
    from .backends.registry import BackendNotFound, backend_names, get_backend

    if not isinstance(name, str):
        raise UsageError(f"a backend is named by a string, got {type(name).__name__} {name!r}")
    known = [*also, *backend_names()]
    if name in known:
        return name
    try:
        get_backend(name)  # an instance registered with register_backend
        return name
    except BackendNotFound:
        pass
    return one_of(name, known, "backend", " (a plugin registers an entry point in the group 'parity.backends')")


def device(name: str, backends: Iterable[str]) -> str:
    """A device that at least one of ``backends`` runs on (``cpu``, ``cuda``, ``tpu``...)."""
    from .backends.registry import get_backend

    backends = list(backends)
    devices = list(dict.fromkeys(d for b in backends for d in get_backend(b).devices))
    if name in devices:
        return name
    runs = f"backend {backends[0]!r} runs" if len(backends) == 1 else "the backends run"
    raise UsageError(f"{runs} on {', '.join(devices)}, not {name!r};{did_you_mean(name, devices)} "
                     f"choose one of those devices{' or another backend' if len(backends) == 1 else ''}")


def regex(pattern: str, what: str) -> re.Pattern:
    """``pattern`` compiled, or a :class:`UsageError` saying where it is broken."""
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise UsageError(f"{what} {pattern!r} is not a regular expression: {exc} "
                         "(escape literal characters: '\\[')") from None


def existing_file(path: str | os.PathLike, what: str) -> Path:
    """``path`` if it is a file; else which part of it is missing."""
    target = Path(path)
    if target.is_file():
        return target
    if target.is_dir():
        raise UsageError(f"{what} {str(path)!r} is a folder, not a file")
    if target.parent.is_dir():
        near = did_you_mean(target.name, [p.name for p in target.parent.iterdir()])
        hint = f";{near}" if near else ""
    else:
        hint = f" (the folder {str(target.parent)!r} does not exist)"
    raise UsageError(f"no such {what}: {str(path)!r}{hint}")


def output_path(path: str | os.PathLike, what: str, suffixes: Iterable[str] = ()) -> Path:
    """``path`` if a file can be written there: its folder exists and is writable, its extension fits."""
    target = Path(path)
    suffixes = tuple(suffixes)
    if suffixes and target.suffix not in suffixes:
        raise UsageError(f"{what} {str(path)!r} should end in {' or '.join(suffixes)}")
    folder = target.parent
    if not folder.is_dir():
        raise UsageError(f"{what} {str(path)!r}: the folder {str(folder)!r} does not exist (create it first)")
    if target.is_dir():
        raise UsageError(f"{what} {str(path)!r} is a folder; give a file name")
    if not os.access(folder, os.W_OK) or (target.exists() and not os.access(target, os.W_OK)):
        raise UsageError(f"{what} {str(path)!r} cannot be written (no write permission)")
    return target


def of_type(value, types: type | tuple[type, ...], what: str):
    """``value`` if it is an instance of ``types``; else what was expected and what came."""
    if isinstance(value, types):
        return value
    names = " or ".join(t.__name__ for t in (types if isinstance(types, tuple) else (types,)))
    raise UsageError(f"{what} should be {names}, got {type(value).__name__} {value!r}")


def auto_options(auto):
    """``auto`` (None: the defaults) with ``$PARITY_BACKEND`` applied, if its backends, budget
    and report path are valid."""
    from .frontend.auto_options import ENV_VAR, AutoOptions, resolve_auto_options

    auto = resolve_auto_options(of_type(auto, (AutoOptions, type(None)), "auto"))
    if isinstance(auto.budget_s, bool) or not isinstance(auto.budget_s, (int, float)) or auto.budget_s <= 0:
        raise UsageError(f"AutoOptions.budget_s should be a positive number of seconds, got {auto.budget_s!r}")
    if isinstance(auto.candidates, str):
        raise UsageError(f"AutoOptions.candidates is a tuple of backend names, got the string {auto.candidates!r}")
    from_env = auto.forced is not None and auto.forced == os.environ.get(ENV_VAR)
    for name in (*(auto.candidates or ()), *([auto.forced] if auto.forced else [])):
        try:
            backend(name)
        except UsageError as exc:  # a name from the environment says where it came from
            raise UsageError(f"${ENV_VAR}: {exc}" if from_env and name == auto.forced else str(exc)) from None
    if auto.matrix is not None:
        existing_file(auto.matrix, "conformance report (AutoOptions.matrix)")
    return auto


__all__ = ["auto_options", "OPTIONS", "UsageError", "backend", "device", "did_you_mean", "existing_file", "of_type", "one_of",
           "options", "output_path", "regex"]
