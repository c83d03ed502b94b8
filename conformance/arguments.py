"""Up-front checks of :func:`~.runner.run`'s arguments: a typo is a one-line error with the
valid choices ("did you mean"), never a silently empty column or a traceback mid-run.

Example::

    >>> check_run_arguments(["onx"], None, (), None, False)
    Traceback (most recent call last):
    ...
    parity.ir.usage.UsageError: unknown backend 'onx'; did you mean 'onnx'? choose from: reference, xla, triton, onnx, inductor, ... (a plugin registers an entry point in the group 'parity.backends')
"""

from __future__ import annotations

from collections.abc import Sequence

from ..backends.base import Backend
from ..backends.registry import BackendNotFound, backend_names, get_backend
from ..ir.dtypes import DType
from ..ir.usage import of_type, one_of, regex

MODEL_SETS = ("zoo", "hf", "all")  # runner.run(models=...) besides True/False


def check_run_arguments(backends, devices, dtypes, ops, models) -> None:
    """Raise :class:`UsageError` for the first bad argument of a conformance run."""
    known = backend_names()
    named = [b for b in backends or () if not isinstance(b, Backend)]
    for name in named:
        of_type(name, str, "a backend")
        if name.partition("@")[0] not in known:
            try:
                get_backend(name)  # an instance registered with register_backend
            except BackendNotFound:
                one_of(name, known, "backend", " (a plugin registers an entry point in the group 'parity.backends')")
    listed = {d for b in backends or known for d in _devices_of(b)}
    for device in devices or ():
        one_of(device, sorted(listed), "device")
    for dtype in dtypes:
        of_type(dtype, DType, "each of dtypes (e.g. DType.float32, or DType.from_short('f32'))")
    if ops is not None:
        regex(ops, "ops")
    if models is not None and not isinstance(models, bool):
        one_of(models, MODEL_SETS, "model set")


def _devices_of(backend) -> Sequence[str]:
    if isinstance(backend, Backend):
        return backend.devices
    try:
        return get_backend(backend.partition("@")[0]).devices
    except (BackendNotFound, ImportError):
        return ("cpu",)  # a built-in whose extra is missing: its column says so
