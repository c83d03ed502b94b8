"""``parity.compile``: the entry point a model author uses.

Example::

    >>> import torch, parity
    >>> @parity.compile
    ... def f(x):
    ...     return torch.tanh(x) * 2
    >>> f(torch.zeros(2)).tolist()
    [0.0, 0.0]
"""

from __future__ import annotations

import functools
from typing import Any

import torch

from ..backends.disk_cache import resolve_cache_dir
from ..backends.registry import get_backend
from ..ir.errors import ParityError
from ..ir.precision import Precision
from .auto import AutoBackend, resolve_auto_options
from .compiler import AUTO, CompileOptions, Session, make_dynamo_backend
from .explain import compiled_repr
from .fast_path import FastPath, call_arguments
from .fast_path_disk import function_key
from .graph_breaks import watch_breaks
from .sharding import configure


def compile(fn_or_module: Any = None, *, backend: str = AUTO, device: str = "cpu",
            strict: bool = True, dynamic: bool | None = None, mesh: Any = None, in_shardings: Any = None,
            out_shardings: Any = None, cache_dir: str | bool | None = None, auto: Any = None,
            fast_path: bool | None = None, precision: str = "exact"):
    """Compile a function or ``nn.Module`` with a parity backend; training works too.

    Usable as ``@parity.compile``, ``@parity.compile(backend="xla")`` or
    ``parity.compile(module, backend="onnx", strict=False)``. Capture is TorchDynamo
    (guards, recompiles and graph breaks: Python it cannot trace runs eagerly between
    captured graphs) plus AOTAutograd (forward and backward graphs), translated to the
    parity IR. ``strict=True`` raises :class:`~parity.frontend.errors.UnsupportedAtenOp`
    for an op the backend cannot run; ``strict=False`` runs just the nodes the backend
    cannot run eagerly in torch (one warning per op) and the rest of the graph on the
    backend (``parity.explain`` shows the share; frontend/partition.py). ``dynamic=True`` (or ``torch._dynamo.mark_dynamic``) makes sizes
    symbolic IR dimensions. A module comes back as a module sharing its parameters.
    ``mesh``, ``in_shardings``, ``out_shardings`` and ``parity.shard`` run the graphs
    sharded over several devices (backend="xla"; docs/sharding.md). ``cache_dir`` keeps
    compiled executables (and ``auto``'s picks) on disk so the next process starts warm:
    by default (None or ``True``) in ``$PARITY_CACHE_DIR`` if set, else the per-user
    ``$XDG_CACHE_HOME/parity`` (``~/.cache/parity``, created ``0700``; a directory or entry
    another user owns or can write is refused with a warning); a path; ``False`` for off
    (backends/disk_cache.py).
    ``backend="auto"``, the default, picks per graph, at its first call, the fastest backend
    that claims its ops and is conformant for them, and keeps the pick in the disk cache
    (frontend/auto.py; ``auto=AutoOptions(budget_s=...)`` tunes it, ``$PARITY_BACKEND``
    forces one backend, ``parity.auto_choices`` shows what it chose). The reference
    interpreter (the spec, slow) runs only when asked for: ``backend="reference"``.
    ``repr()`` of the result says which backend runs and why.
    Calls of a function whose tensor signature was seen before skip Dynamo's guards, like
    ``jax.jit``, where Dynamo's guards showed that the function reads no Python state besides
    its tensor arguments (the default, ``fast_path=None``; other functions keep Dynamo's
    path by themselves). ``fast_path=True`` skips that check (the user vouches for the
    function), ``False`` turns the fast path off (frontend/fast_path.py says exactly when
    it applies).
    ``precision="exact"`` (the default) holds every op to the IR's contract; ``"fast"`` lets
    a backend that declares the tier (xla, onnx) fuse multiply-adds and call native kernels,
    within the fast tier's published per-op bounds (docs/conformance.md); NaN, ±inf and -0.0
    mean the same in both. A backend without the tier runs exact (``parity.explain`` says so).
    """
    if fn_or_module is None:
        return functools.partial(compile, backend=backend, device=device, strict=strict, dynamic=dynamic,
                                 mesh=mesh, in_shardings=in_shardings, out_shardings=out_shardings,
                                 cache_dir=cache_dir, auto=auto, fast_path=fast_path, precision=precision)
    tier = Precision.parse(precision)  # an unknown tier fails here, before any capture
    requested = backend
    if backend == AUTO:
        auto = resolve_auto_options(auto)
        backend = auto.forced or backend  # $PARITY_BACKEND (or AutoOptions.forced) wins
    found = AutoBackend if backend == AUTO else get_backend(backend)  # an unknown name fails here
    if backend != AUTO and device not in found.devices:
        raise ParityError(f"backend {backend!r} runs on {', '.join(found.devices)}, not {device!r}; "
                          f"choose one of those devices or another backend")
    warned: set[str] = set()
    mesh, site, traced = configure(fn_or_module, found, mesh=mesh, in_shardings=in_shardings,
                                   out_shardings=out_shardings, strict=strict, warned=warned)
    session = Session(CompileOptions(backend=backend, device=device, strict=strict, dynamic=dynamic, mesh=mesh,
                                     site=site, cache_dir=resolve_cache_dir(cache_dir),
                                     auto=auto if requested == AUTO else None, precision=tier), warned)
    if isinstance(fn_or_module, torch.nn.Module):
        return CompiledModule(fn_or_module, session, traced)
    if fast_path or (fast_path is None and traced is None):
        return FastCompiledFunction(fn_or_module, session, traced, read_guards=not fast_path)
    return CompiledFunction(fn_or_module, session, traced)


def _raise_user_error(err: Exception, eager, args, kwargs) -> None:
    """Raise parity's or the user's own error in place of Dynamo's wrapping of it, if it is one.

    Returns when ``err`` is none of those; the caller then re-raises it as it is.
    """
    from torch._dynamo import exc as dynamo_exc

    if isinstance(err, dynamo_exc.BackendCompilerFailed):
        inner = getattr(err, "inner_exception", None)
        if isinstance(inner, ParityError):
            raise inner.with_traceback(None) from None
    elif isinstance(err, (dynamo_exc.TorchRuntimeError, dynamo_exc.UserError, dynamo_exc.Unsupported)):
        # The user's code fails while being traced (bad shapes or types): run it eagerly,
        # which raises the user's own error from the user's own line.
        eager(*args, **kwargs)


class CompiledFunction:
    """A function compiled by :func:`compile`; call it like the original."""

    def __init__(self, fn, session: Session, traced=None):
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.session = session
        self.options = session.options
        # `traced` is fn with its in/out shardings applied (frontend/sharding.py), when there are any
        self._compiled = torch.compile(traced or fn, backend=_dynamo_backend(session), dynamic=_dynamic(session))

    def __repr__(self) -> str:
        return compiled_repr(self.fn, self.session)

    def __call__(self, *args, **kwargs):
        # The hot path is this one call; errors are sorted out only when there is one.
        try:
            return self._compiled(*args, **kwargs)
        except Exception as err:
            _raise_user_error(err, self.fn, args, kwargs)
            raise


class FastCompiledFunction(CompiledFunction):
    """A :class:`CompiledFunction` with the signature fast path: see frontend/fast_path.py."""

    def __init__(self, fn, session: Session, traced=None, read_guards: bool = True):
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.session = session
        self.options = session.options
        fn_key = function_key(fn) if session.options.cache_dir and session.options.backend != AUTO \
            and traced is None else None
        if fn_key and not read_guards:
            fn_key += "-unchecked"  # fast_path=True's entries never serve a process that reads guards
        self.fast_path = FastPath(persist=(fn_key, session.options) if fn_key else None, read_guards=read_guards)
        session.on_compiled = self.fast_path.on_compiled
        code = getattr(traced or fn, "__code__", None)  # the frame whose whole graphs qualify
        arguments = call_arguments(fn) if code is not None and traced is None else frozenset()
        backend = self.fast_path.wrap_backend(_dynamo_backend(session), code, arguments)
        self._compiled = torch.compile(traced or fn, backend=backend, dynamic=_dynamic(session))

    def __call__(self, *args, **kwargs):
        try:
            return self.fast_path.call(self._compiled, args, kwargs)
        except Exception as err:
            _raise_user_error(err, self.fn, args, kwargs)
            raise


class CompiledModule(torch.nn.Module):
    """An ``nn.Module`` whose forward runs through parity; parameters are the original's."""

    def __init__(self, module: torch.nn.Module, session: Session, traced=None):
        super().__init__()
        self.module = module
        self.session = session
        self.options = session.options
        compiled = torch.compile(traced or module, backend=_dynamo_backend(session), dynamic=_dynamic(session))
        object.__setattr__(self, "_compiled", compiled)  # not a submodule: no duplicate parameters

    def __repr__(self) -> str:
        return compiled_repr(self.module, self.session)

    def forward(self, *args, **kwargs):
        try:
            return self._compiled(*args, **kwargs)
        except Exception as err:
            _raise_user_error(err, self.module, args, kwargs)
            raise


def _dynamic(session: Session) -> bool:
    """Sizes are static unless the user asks: dynamic=True, or torch._dynamo.mark_dynamic.

    (torch's default would turn a size symbolic after it changes once; parity recompiles
    for the new shape instead, so no op is limited by symbolic sizes unasked.)
    """
    return bool(session.options.dynamic)


def _dynamo_backend(session: Session):
    """parity's Dynamo backend for ``session``, warning about graph breaks under strict=True."""
    return watch_breaks(make_dynamo_backend(session), bool(session.options.strict), str(session.options.backend))
