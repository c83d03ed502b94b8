"""Source locations: which line of the user's code an FX node came from.

FX nodes carry ``meta["stack_trace"]``, a Python traceback text. The user's frame is
the last one that is not inside torch or parity itself.

Example::

    >>> trace = 'File "/home/u/model.py", line 12, in forward\\n    return x + 1\\n'
    >>> str(loc_from_stack_trace(trace))
    '/home/u/model.py:12 in forward'
"""

from __future__ import annotations

import os
import re
import warnings

from ..ir.graph import SourceLoc

_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>\S+)')
_RESUME = re.compile(r"torch_dynamo_resume_in_(?P<function>.+)_at_\d+")


def function_name(name: str) -> str:
    """The user's function name for a frame's name: the code after a graph break runs in a
    function Dynamo names ``torch_dynamo_resume_in_<name>_at_<line>``."""
    resumed = _RESUME.fullmatch(name)
    return resumed["function"] if resumed else name


def _package_dir(module_name: str) -> str | None:
    import importlib.util

    spec = importlib.util.find_spec(module_name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.dirname(os.path.realpath(list(spec.submodule_search_locations)[0]))


def _internal_dirs() -> tuple[str, ...]:
    here = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))  # the repository root
    dirs = [os.path.join(here, sub) + os.sep for sub in ("frontend", "ir", "backends", "parity")]
    torch_dir = _package_dir("torch")
    if torch_dir:
        dirs.append(os.path.join(torch_dir, "torch") + os.sep)
    return tuple(dirs)


_INTERNAL: tuple[str, ...] | None = None


def is_user_file(path: str) -> bool:
    """False for files inside torch or parity (frames the user did not write)."""
    global _INTERNAL
    if _INTERNAL is None:
        _INTERNAL = _internal_dirs()
    real = os.path.realpath(path)
    return not real.startswith(_INTERNAL) and not path.startswith("<")


def loc_from_stack_trace(trace: str | None) -> SourceLoc | None:
    """The last user frame of an FX ``stack_trace`` text, or None when there is none."""
    if not trace:
        return None
    frames = [m for m in _FRAME.finditer(trace)]
    for match in reversed(frames):
        if is_user_file(match["file"]):
            return SourceLoc(match["file"], int(match["line"]), function_name(match["function"]))
    if frames:
        last = frames[-1]
        return SourceLoc(last["file"], int(last["line"]), function_name(last["function"]))
    return None


def graph_user_locs(gm) -> list[SourceLoc]:
    """The source lines of an FX graph's nodes, in graph order (those with a stack trace)."""
    locs = (loc_from_stack_trace(n.meta.get("stack_trace")) for n in gm.graph.nodes)
    return [loc for loc in locs if loc is not None]


def definition_loc(fn) -> SourceLoc | None:
    """Where the user's function (or a module's ``forward``) is defined, or None (a builtin)."""
    code = getattr(getattr(fn, "forward", fn), "__code__", None)
    return SourceLoc(code.co_filename, code.co_firstlineno, code.co_name) if code is not None else None


def in_user_code(loc: SourceLoc | None, site: SourceLoc | None) -> SourceLoc | None:
    """``loc`` when it is in the user's code, else ``site`` (where the user called parity): the
    layers of an ``nn.Sequential`` compiled as it is were called by torch's code alone."""
    if loc is not None and is_user_file(loc.file):
        return loc
    return site or loc


def warn_at(loc: SourceLoc | None, message: str, category: type[Warning]) -> None:
    """``warnings.warn`` attributed to the user's line ``loc`` (the filters and
    ``catch_warnings`` see that file and line), or to parity's caller when there is none."""
    if loc is None:
        warnings.warn(message, category, stacklevel=3)
        return
    module = loc.file.rsplit("/", 1)[-1].removesuffix(".py")
    warnings.warn_explicit(message, category, loc.file, loc.line, module=module,
                           registry=_REGISTRY.setdefault(loc.file, {}))


_REGISTRY: dict[str, dict] = {}  # warn_explicit's once-per-location bookkeeping, per user file
