"""Where ``parity fuzz`` saves a backend's regressions: never into an installed package.

- ``--save-dir DIR`` (``save_dir``): there, for every backend.
- A built-in backend, when parity runs from its source checkout (a ``pyproject.toml`` two
  levels above this package, outside site-packages): parity's own
  ``conformance/regressions/``, which every later ``parity conform`` replays.
- A plugin: ``parity-regressions/`` beside it, in the project folder of the module that
  defines its class (the nearest folder above it with a ``pyproject.toml``, outside
  site-packages), e.g. ``examples/plugin_template/parity-regressions/``.
- Otherwise (an installed parity or plugin): ``parity-regressions/`` in the current folder.

Example::

    >>> import pathlib
    >>> from parity.backends.registry import get_backend
    >>> save_directory(get_backend("reference"), save_dir="out") == pathlib.Path("out")
    True
"""

from __future__ import annotations

import inspect
import pathlib
import sysconfig

from ...backends.registry import BUILTIN_BACKENDS

FOLDER = "parity-regressions"  # beside a plugin, or in the current folder
_PARITY_SOURCE = pathlib.Path(__file__).resolve().parent


def save_directory(backend, save_dir=None) -> pathlib.Path:
    """The folder ``backend``'s fuzzer regressions go to (see the module docstring)."""
    if save_dir is not None:
        return pathlib.Path(save_dir)
    if backend.name.partition("@")[0] in BUILTIN_BACKENDS:
        if _project_of(_PARITY_SOURCE) == _PARITY_SOURCE.parents[1]:
            return _PARITY_SOURCE
        return pathlib.Path.cwd() / FOLDER
    try:
        defined = pathlib.Path(inspect.getfile(type(getattr(backend, "backend", backend)))).resolve()
    except (TypeError, OSError):  # a class made at run time has no file
        return pathlib.Path.cwd() / FOLDER
    project = _project_of(defined.parent)
    return (project if project is not None else pathlib.Path.cwd()) / FOLDER


def _project_of(folder: pathlib.Path) -> pathlib.Path | None:
    """The nearest folder at or above ``folder`` with a ``pyproject.toml``; None inside an installed tree."""
    installed = {pathlib.Path(sysconfig.get_paths()[k]).resolve() for k in ("purelib", "platlib")}
    if any(folder == p or p in folder.parents for p in installed):
        return None
    return next((f for f in (folder, *folder.parents) if (f / "pyproject.toml").is_file()), None)
