"""Argument checks shared by the public functions and the command line.

The name-independent checks (choices, regexes, types) live in ``parity.ir.usage``, so that
every layer can use them; the checks here know backends, devices, paths and options.
Each check returns the value it accepted (normalised) or raises :class:`UsageError`,
whose one-line message names what was given, the valid choices, and the nearest one
when the value looks like a typo ("did you mean 'onnx'?"). The CLI prints that line
and exits with status 2 (docs/troubleshooting-cli.md); a public function raises it.

Example::

    >>> from parity import validate
    >>> validate.one_of("onx", ["reference", "xla", "onnx"], "backend")
    Traceback (most recent call last):
    ...
    parity.ir.usage.UsageError: unknown backend 'onx'; did you mean 'onnx'? choose from: reference, xla, onnx
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from .ir.usage import UsageError, did_you_mean, of_type, one_of, regex  # noqa: F401 - re-exported

# Who takes which option: a keyword given to the wrong function is named with its owner.
OPTIONS: dict[str, tuple[str, ...]] = {
    "parity.compile": ("backend", "device", "strict", "dynamic", "mesh", "in_shardings", "out_shardings",
                       "cache_dir", "auto", "fast_path", "precision", "fullgraph", "backend_options"),
    "parity.export": ("format", "path", "input_names", "output_names", "dynamic_dims", "params", "kwargs"),
    "parity.explain": ("backends",),
    # options={...} of torch.compile(backend="parity") (parity/dynamo_backend.py): parity.compile's, less those
    # torch.compile takes itself (dynamic, fullgraph) and those that need parity's wrapper
    "torch.compile(backend='parity')": ("backend", "device", "strict", "precision", "cache_dir", "auto",
                                        "backend_options"),
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


def call_keywords(function: str, fn, given: Mapping[str, object]) -> None:
    """Reject keywords that ``function`` would pass on to ``fn`` but ``fn`` does not take: a
    misspelt option of ``function`` (``backend=`` for ``backends=``) would otherwise reach the
    user's code and fail there. Nothing is checked when ``fn``'s signature is unknown or takes
    ``**kwargs``."""
    import inspect

    target = fn.forward if hasattr(fn, "forward") and not inspect.isfunction(fn) else fn
    try:
        params = inspect.signature(target).parameters.values()
    except (TypeError, ValueError):
        return
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return
    takes = {p.name for p in params if p.kind is not inspect.Parameter.POSITIONAL_ONLY}
    for name in given:
        if name in takes:
            continue
        near = did_you_mean(name, OPTIONS[function])
        raise UsageError(f"{function} passes the keyword {name!r} to {getattr(target, '__qualname__', 'the function')}, "
                         f"which takes no such parameter;{near} {function}'s own options are "
                         f"{', '.join(OPTIONS[function])}")


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


# what users type for a device parity names otherwise (torch says "cuda" for NVIDIA and AMD GPUs)
_DEVICE_ALIASES = {"gpu": "cuda", "nvidia": "cuda", "rocm": "cuda", "hip": "cuda"}


def _device_hint(name: str, devices: list[str]) -> str:
    alias = _DEVICE_ALIASES.get(name.lower())
    return f" did you mean {alias!r}?" if alias in devices else did_you_mean(name, devices)


def device(name: str, backends: Iterable[str]) -> str:
    """A device that at least one of ``backends`` runs on (``cpu``, ``cuda``, ``tpu``...)."""
    from .backends.registry import get_backend

    backends = list(backends)
    devices = list(dict.fromkeys(d for b in backends for d in get_backend(b).devices))
    if name in devices:
        return name
    runs = f"backend {backends[0]!r} runs" if len(backends) == 1 else "the backends run"
    raise UsageError(f"{runs} on {', '.join(devices)}, not {name!r};{_device_hint(name, devices)} "
                     f"choose one of those devices{' or another backend' if len(backends) == 1 else ''}")


def auto_device(name: str, auto) -> str:
    """A device that at least one of ``auto``'s candidates runs on (every backend when it names
    none). ``cpu`` is checked without loading a backend: the reference interpreter runs there."""
    from .backends.registry import backend_names, get_backend

    if name == "cpu":
        return name
    candidates = list(auto.candidates or backend_names())
    loadable = []
    for b in candidates:
        try:
            get_backend(b)
            loadable.append(b)
        except Exception:  # a plugin that fails to load is auto's to report, not a device error
            continue
    devices = list(dict.fromkeys(d for b in loadable for d in get_backend(b).devices))
    if name in devices:
        return name
    raise UsageError(f"backend='auto' chooses among backends that run on {', '.join(devices)}, not {name!r};"
                     f"{_device_hint(name, devices)} choose one of those devices")


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


def compile_options(given: Mapping[str, object]) -> None:
    """The checks of ``parity.compile``'s options, given by name (also those
    ``torch.compile(backend="parity")`` passes as ``options={...}``): their types, the backend,
    its device, and ``auto``'s options. An option not given is not checked."""
    name, on = given.get("backend", "auto"), given.get("device", "cpu")
    for option, types in (("strict", bool), ("fullgraph", bool), ("dynamic", (bool, type(None))),
                          ("fast_path", (bool, type(None))), ("cache_dir", (str, os.PathLike, bool, type(None))),
                          ("device", str)):
        if option in given:
            of_type(given[option], types, option)
    if name != "auto":
        device(on, [backend(name, also=("auto",))])
    if name == "auto" or given.get("auto") is not None:
        options = auto_options(given.get("auto"))
        if name == "auto" and options.forced is None:  # a forced backend is checked by make_compiled
            auto_device(on, options)


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


__all__ = ["auto_device", "auto_options", "call_keywords", "compile_options", "OPTIONS", "UsageError", "backend", "device", "did_you_mean", "existing_file", "of_type", "one_of",
           "export_arguments", "options", "output_path", "regex"]


def export_arguments(unknown: Mapping, format: str, params: str, path) -> Path:
    """The path :func:`parity.export` writes, once its options are known to be export's and the
    file can be written there; else an :class:`~parity.frontend.export.ExportError` that says which."""
    from .frontend.export import EXPORTERS, SUFFIXES, ExportError

    try:
        options("parity.export", unknown)
        one_of(format, EXPORTERS, "export format")
        one_of(params, ("constants", "inputs"), "params value", " ('constants': folded into the file)")
        target = output_path(path or f"model.{format}", "export path")
    except UsageError as exc:
        raise ExportError(str(exc)) from None
    named = SUFFIXES.get(target.suffix.lower(), format)
    if named != format:
        raise ExportError(f"export path {str(path)!r} names a {named} file, but format={format!r}; pass "
                          f"format={named!r}, or a path ending in the {format} format's extension")
    return target
