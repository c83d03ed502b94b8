"""Directories for the compilers' own caches, under parity's per-user cache root, checked.

Inductor keeps generated C++/Triton code and compiled libraries in its cache directory
and loads them back; the Triton backend imports the Python modules it generates from
its own. Whoever can write there can run code in this process, so both sit under
parity's per-user cache root (``$PARITY_CACHE_DIR``, else ``$XDG_CACHE_HOME/parity``)
and are held to the disk cache's checks (backends/disk_cache.py): created ``0700``;
the root and the directory must be owned by this user and writable by nobody else,
not a symbolic link below the root. A directory that fails is refused with one
:class:`~.disk_cache.UnsafeCacheWarning`, and the compiler gets a fresh private
temporary directory for this process instead (as it does when the cache is off,
``PARITY_CACHE_DIR=""``): it compiles cold, never from the unsafe one.

Inductor's directory is set through torch's documented ``TORCHINDUCTOR_CACHE_DIR``,
only where the user has not chosen one: the variable is unset, or holds torch's own
default (``/tmp/torchinductor_$USER``, which torch writes into the variable once it has
used it). A directory the user chose is theirs.

Inductor's precompiled C++ headers ignore that variable: they live in
``/tmp/torchinductor_$USER/precompiled_headers`` whatever it says, and every C++ kernel
includes them. Anyone who created that directory first (``/tmp`` is shared; the name and
the header's hash are predictable) would put code into every kernel. So parity's compiles
use them only when that directory passes the same checks (created ``0700`` when absent);
otherwise they compile without precompiled headers (slower, never unsafe), with one warning
(:func:`inductor_header_settings`).

Example::

    >>> import os, tempfile
    >>> os.environ["PARITY_CACHE_DIR"] = tempfile.mkdtemp()
    >>> path = compiler_cache_dir("doc")
    >>> path.name, oct(path.stat().st_mode & 0o777)
    ('doc', '0o700')
    >>> del os.environ["PARITY_CACHE_DIR"]; compiler_cache_dir.cache_clear()
"""

from __future__ import annotations

import functools
import os
import tempfile
from pathlib import Path

from .disk_cache import STATS, UnsafeEntry, _warn_once, check_private_directory, resolve_cache_dir

INDUCTOR_ENV = "TORCHINDUCTOR_CACHE_DIR"

_FIX = ("set $PARITY_CACHE_DIR (or $XDG_CACHE_HOME) to a directory only you can write, or "
        "PARITY_CACHE_DIR='' to keep compiler caches in a private temporary directory")


@functools.cache  # resolved, created and checked once per process (and warned about once)
def compiler_cache_dir(name: str) -> Path:
    """``<parity's cache root>/<name>``, created ``0700``, when it and the root are safe; otherwise
    a fresh private temporary directory (:func:`tempfile.mkdtemp`, mode ``0700``)."""
    root = resolve_cache_dir(None)
    if root:
        path = Path(root) / name
        try:
            os.makedirs(path, mode=0o700, exist_ok=True)
            check_private_directory(Path(root), (name,))
            return path
        except UnsafeEntry as unsafe:
            STATS["refused"] += 1
            _warn_once(str(root), str(unsafe), what=f"the {name} compiler cache under parity's cache root", fix=_FIX)
        except OSError:
            pass  # cannot be created (read-only home...): a private temporary one, as below
    return Path(tempfile.mkdtemp(prefix=f"parity-{name}-"))


def use_private_inductor_cache() -> str:
    """Point Inductor at :func:`compiler_cache_dir` ``("inductor")`` unless the user chose its cache
    directory; returns the directory Inductor uses. Call before Inductor compiles."""
    from torch._inductor.runtime.cache_dir_utils import default_cache_dir

    current = os.environ.get(INDUCTOR_ENV)
    if current is None or os.path.abspath(current) == os.path.abspath(default_cache_dir()):
        os.environ[INDUCTOR_ENV] = str(compiler_cache_dir("inductor"))
    return os.environ[INDUCTOR_ENV]


_HEADERS_FIX = ("or remove it; until then parity's Inductor compiles do not use precompiled headers "
                "(slower C++ builds, never unsafe ones)")


@functools.cache  # checked once per process (and warned about once)
def inductor_header_settings() -> dict:
    """Inductor settings for parity's compiles: ``{}`` when Inductor's precompiled-header directory
    is private to this user, else precompiled headers off (``cpp_cache_precompile_headers``)."""
    from torch._inductor import codecache

    headers = getattr(codecache, "_HEADER_DIR", None)  # torch's private constant (2.13)
    off = {"cpp_cache_precompile_headers": False}
    if headers is None:
        return off  # where this torch keeps them is unknown: do not use them
    root, name = Path(headers).parent, Path(headers).name
    try:
        os.makedirs(root, mode=0o700, exist_ok=True)
        os.makedirs(root / name, mode=0o700, exist_ok=True)
        check_private_directory(root, (name,))
        return {}
    except UnsafeEntry as unsafe:
        STATS["refused"] += 1
        _warn_once(str(root), str(unsafe), what="Inductor's precompiled-header directory", fix=_HEADERS_FIX)
    except OSError:
        pass  # cannot be created or read: compile without them
    return off
