"""What :func:`parity.compile` builds: the compiled function or module, and its calls.

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
import types
from typing import Any

import torch
from torch.compiler import is_compiling

from ..backends.disk_cache import resolve_cache_dir
from ..backends.registry import get_backend
from ..ir.errors import ParityError
from .auto import AutoBackend, resolve_auto_options
from .errors import TranslationBug, UnsupportedAtenOp
from .fast_path import FastPath, call_arguments, distinct_storages, torch_function_depth
from .fast_path_disk import function_key
from .foreign_inputs import checking_arguments, named_input_error
from .graph_breaks import BreakWatch, graph_break_error, skipped_frame_error
from .pipeline import make_dynamo_backend
from .recompile_limit import failing_at_recompile_limit, recompile_limit_error
from .rnn_modules import warn_eager_rnns
from .runtime_options import checked_backend_options, checked_precision
from .session import AUTO, CompileOptions, Session, compiled_repr
from .sharding import caller_site, configure
from .user_errors import eager_error, from_user_frame, quiet_tracing_logs


def make_compiled(fn_or_module: Any = None, *, backend: str = AUTO, device: str = "cpu",
            strict: bool = True, dynamic: bool | None = None, mesh: Any = None, in_shardings: Any = None,
            out_shardings: Any = None, cache_dir: str | bool | None = None, auto: Any = None,
            fast_path: bool | None = None, precision: str = "exact", fullgraph: bool = False,
            backend_options: dict | None = None):
    """The callable :func:`parity.compile` returns, its options already checked there.

    A function comes back as a :class:`CompiledFunction` (or :class:`FastCompiledFunction`),
    a module as a :class:`CompiledModule` sharing its parameters; without ``fn_or_module``,
    the decorator that makes one. The options are :func:`parity.compile`'s.
    """
    if fn_or_module is None:
        return functools.partial(make_compiled, backend=backend, device=device, strict=strict, dynamic=dynamic,
                                 mesh=mesh, in_shardings=in_shardings, out_shardings=out_shardings,
                                 cache_dir=cache_dir, auto=auto, fast_path=fast_path, precision=precision,
                                 fullgraph=fullgraph, backend_options=backend_options)
    if isinstance(fn_or_module, (staticmethod, classmethod)):  # @parity.compile above @staticmethod
        return type(fn_or_module)(make_compiled(fn_or_module.__func__, backend=backend, device=device, strict=strict,
                                          dynamic=dynamic, mesh=mesh, in_shardings=in_shardings,
                                          out_shardings=out_shardings, cache_dir=cache_dir, auto=auto,
                                          fast_path=fast_path, precision=precision, fullgraph=fullgraph,
                                          backend_options=backend_options))
    arguments = dict(backend=backend, device=device, strict=strict, dynamic=dynamic, mesh=mesh,
                     in_shardings=in_shardings, out_shardings=out_shardings, cache_dir=cache_dir, auto=auto,
                     fast_path=fast_path, precision=precision, fullgraph=fullgraph, backend_options=backend_options)
    session, traced = make_session(fn_or_module, **{k: v for k, v in arguments.items() if k != "fast_path"})
    quiet_tracing_logs(ENTRY_CODES)
    if isinstance(fn_or_module, torch.nn.Module):
        compiled = CompiledModule(fn_or_module, session, traced)
    elif fast_path or (fast_path is None and traced is None):
        compiled = FastCompiledFunction(fn_or_module, session, traced, read_guards=not fast_path)
    else:
        compiled = CompiledFunction(fn_or_module, session, traced)
    object.__setattr__(compiled, "compile_arguments", arguments)  # what pickle and deepcopy compile again with
    return compiled


def make_session(fn_or_module: Any, *, backend: str = AUTO, device: str = "cpu", strict: bool = True,
                 dynamic: bool | None = None, mesh: Any = None, in_shardings: Any = None, out_shardings: Any = None,
                 cache_dir: str | bool | None = None, auto: Any = None, precision: str = "exact",
                 fullgraph: bool = False, backend_options: dict | None = None) -> tuple[Session, Any]:
    """The :class:`Session` that compiles ``fn_or_module``'s graphs, and what Dynamo traces
    in its place (``fn_or_module`` with its in/out shardings applied) or None.

    Shared by :func:`make_compiled` and ``torch.compile(backend="parity")``
    (parity/dynamo_backend.py, with ``fn_or_module=None``): one path from options to graphs.
    """
    if fullgraph and not strict:
        raise ParityError("parity.compile: fullgraph=True runs every op on the backend, and strict=False would run "
                          "some in eager torch\n  fix: pass one of them: fullgraph=True (errors at every eager "
                          "piece) or strict=False (runs them eagerly, with a warning each)")
    requested = backend
    if backend == AUTO:
        auto = resolve_auto_options(auto)
        backend = auto.forced or backend  # $PARITY_BACKEND (or AutoOptions.forced) wins
    found = AutoBackend if backend == AUTO else get_backend(backend)  # an unknown name fails here
    if backend != AUTO and device not in found.devices:
        raise ParityError(f"backend {backend!r} runs on {', '.join(found.devices)}, not {device!r}; "
                          f"choose one of those devices or another backend")
    resolved = checked_backend_options(backend, None if backend == AUTO else found, backend_options)
    tier = checked_precision(precision, backend, None if backend == AUTO else found)  # before any capture
    warned: set[str] = set()
    mesh, site, traced = configure(fn_or_module, found, mesh=mesh, in_shardings=in_shardings,
                                   out_shardings=out_shardings, strict=strict, warned=warned)
    site = site or caller_site()  # the user's line, for code only torch's nn files call (source.in_user_code)
    session = Session(CompileOptions(backend=backend, device=device, strict=strict, dynamic=dynamic, mesh=mesh,
                                     site=site, cache_dir=resolve_cache_dir(cache_dir),
                                     auto=auto if requested == AUTO else None, precision=tier,
                                     fullgraph=fullgraph, backend_options=resolved), warned)
    return session, traced


def _user_facing_error(err: Exception, eager, args, kwargs, session: Session) -> BaseException | None:
    """parity's or the user's own error in place of Dynamo's wrapping of ``err``, if it is one.

    None when ``err`` is none of those; the caller then re-raises it as it is.
    """
    from torch._dynamo import exc as dynamo_exc

    limit = recompile_limit_error(err, eager, str(session.options.backend))
    if limit is not None:
        return limit
    skipped = skipped_frame_error(err, eager, str(session.options.backend))  # (forgets earlier skips too)
    if skipped is not None:
        return skipped
    if isinstance(err, UnsupportedAtenOp):  # raised before Dynamo ran (foreign_inputs.py): the message says it all
        return err.with_traceback(None)
    if isinstance(err, dynamo_exc.BackendCompilerFailed):
        inner = getattr(err, "inner_exception", None)
        if isinstance(inner, UnsupportedAtenOp):
            inner = named_input_error(inner, eager, args, kwargs)
        if isinstance(inner, UnsupportedAtenOp) and session.options.fullgraph:
            inner = inner.under_fullgraph()
        if isinstance(inner, TranslationBug):
            # Types torch's meta kernels let through but its eager kernels refuse (an f32 input
            # to an f64 Linear: fake addmm does not compare the dtypes) reach a type rule of the
            # IR. Eager's own error, from the user's line, where eager fails too; a bug of
            # parity's only where eager runs.
            user = eager_error(eager, args, kwargs)
            if user is not None:
                return user
        return inner.with_traceback(None) if isinstance(inner, ParityError) else None
    if session.options.fullgraph:
        broken = graph_break_error(err, str(session.options.backend), session.options.site)
        if broken is not None:
            return broken
    traced = hasattr(err, "innermost_user_frame_summary") and not isinstance(err, ParityError)
    if traced or isinstance(err, (dynamo_exc.TorchRuntimeError, dynamo_exc.UserError, dynamo_exc.Unsupported)):
        # The user's code fails while being traced (bad shapes or types; Dynamo wraps the
        # error or appends its "from user code" to it): run it eagerly, which raises the
        # user's own error from the user's own line.
        return eager_error(eager, args, kwargs)
    return None


def _run(call, args: tuple, kwargs: dict, breaks: BreakWatch, eager, session: Session):
    """``call(*args, **kwargs)`` as (result, None), or (None, the error to raise in its place).

    The hot path is the one call and two ``len``s; errors are sorted out only when there is
    one, and graph breaks reported only when Dynamo made one. The caller raises, so the
    traceback shows the user's call, one line of parity, and the user's failing line.
    """
    mark = breaks.mark()
    try:
        result = call(*args, **kwargs)
    except Exception as err:
        error = _call_error(err, eager, args, kwargs, session)
        if error is None:
            raise
        return None, error
    if session.pending:  # strict=False: one warning for every op this call's graphs run eagerly
        session.flush_fallbacks()
    breaks.report(mark)
    return result, None


def _call_error(err: Exception, eager, args: tuple, kwargs: dict, session: Session):
    """The error to raise for ``err``, raised by a call at run time (after a graph break, or
    by a fast-path hit): from the user's frame on; None to raise ``err`` itself."""
    session.flush_fallbacks()
    return _user_facing_error(err, eager, args, kwargs, session) or from_user_frame(err)


class CompiledFunction:
    """A function compiled by :func:`compile`; call it like the original.

    Decorating a method in a class body works as it does for a function: each access
    through an instance binds it (``__get__``), so the instance is the first argument.
    """

    def __init__(self, fn, session: Session, traced=None):
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.session = session
        self.options = session.options
        self._breaks = BreakWatch(str(session.options.backend), session.options.site)
        # `traced` is fn with its in/out shardings applied (frontend/sharding.py), when there are any
        self._inline = traced or fn
        self._compiled = _torch_compile(self._inline, _dynamo_backend(session), session, fn)

    def __get__(self, instance, owner=None):
        return self if instance is None else types.MethodType(self, instance)

    def __reduce__(self):
        """Pickled (and deep-copied) as the user's function and the compile's options, never its
        executables: unpickling compiles again (or loads from the disk cache). A function decorated
        at module level pickles by its name, as the function would; any other pickles its ``fn``,
        which pickle finds by qualified name (a lambda or a local function does not pickle)."""
        if _module_global(self) is self:
            return self.__qualname__
        return compile_again, (self.fn, self.compile_arguments)

    def __repr__(self) -> str:
        return compiled_repr(self.fn, self.session)

    def __call__(self, *args, **kwargs):
        if is_compiling():
            # Called inside another compiled function while Dynamo traces it: the function is
            # traced inline, into the caller's graph, as torch.compile does with nested calls
            # (going through this wrapper would break the caller's graph at each of its checks).
            return self._inline(*args, **kwargs)
        result, error = _run(self._compiled, args, kwargs, self._breaks, self.fn, self.session)
        if error is not None:
            raise error from None
        return result


class FastCompiledFunction(CompiledFunction):
    """A :class:`CompiledFunction` with the signature fast path: see frontend/fast_path.py."""

    def __init__(self, fn, session: Session, traced=None, read_guards: bool = True):
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.session = session
        self.options = session.options
        self._breaks = BreakWatch(str(session.options.backend), session.options.site)
        fn_key = function_key(fn) if session.options.cache_dir and session.options.backend != AUTO \
            and traced is None else None
        if fn_key and not read_guards:
            fn_key += "-unchecked"  # fast_path=True's entries never serve a process that reads guards
        self.fast_path = FastPath(persist=(fn_key, session.options) if fn_key else None, read_guards=read_guards)
        session.on_compiled = self.fast_path.on_compiled
        code = getattr(traced or fn, "__code__", None)  # the frame whose whole graphs qualify
        arguments = call_arguments(fn) if code is not None and traced is None else frozenset()
        backend = self.fast_path.wrap_backend(_dynamo_backend(session), code, arguments)
        self._inline = traced or fn
        self._compiled = _torch_compile(self._inline, backend, session, fn)

    def __call__(self, *args, **kwargs):
        if is_compiling():  # called inside another compiled function: see CompiledFunction.__call__
            return self._inline(*args, **kwargs)
        # The hit path: the entry last made or used, if these arguments match it (fast_path.py:
        # FastPath.last).
        last = self.fast_path.last
        if (last is not None and len(args) == last[0] and not kwargs
                and last[1].check(*args) and last[2].check() and torch_function_depth() == last[3]
                and (last[0] == 1 or distinct_storages(args))):
            try:
                return last[4](args)
            except Exception as err:
                error = _call_error(err, self.fn, args, kwargs, self.session)
                if error is None:
                    raise
            raise error from None
        # Keyword arguments never have a fast-path entry (fast_path.signature): with no missed call
        # recording (a call from inside one), FastPath.call would only run Dynamo's path: run it here,
        # two frames fewer on each generate() step (it passes its inputs by keyword).
        call = self._compiled if kwargs and not self.fast_path.recording else self._fast_call
        result, error = _run(call, args, kwargs, self._breaks, self.fn, self.session)
        if error is not None:
            raise error from None
        return result

    def _fast_call(self, *args, **kwargs):
        return self.fast_path.call(self._compiled, args, kwargs)


class CompiledModule(torch.nn.Module):
    """An ``nn.Module`` whose forward runs through parity.

    Its parameters, buffers and submodules *are* the original's, under the original's own
    names: the wrapper shares the module's registries instead of holding it as a submodule, so
    ``state_dict()`` keys, ``named_parameters()`` and ``load_state_dict`` are the module's own
    (no ``module.`` prefix; torch.compile's wrapper adds ``_orig_mod.``), and a state dict
    loads both ways. ``train()``, ``to()`` and ``apply()`` act on the original. Pickle and
    ``copy.deepcopy`` copy the original module and the options, and compile again.

    Example::

        >>> import torch, parity
        >>> linear = torch.nn.Linear(2, 3)
        >>> compiled = parity.compile(linear, backend="reference")
        >>> list(compiled.state_dict()) == list(linear.state_dict()), compiled.weight is linear.weight
        (True, True)
    """

    def __init__(self, module: torch.nn.Module, session: Session, traced=None):
        super().__init__()
        for registry in SHARED_REGISTRIES:  # the module's own dicts, not copies: one set of names
            object.__setattr__(self, registry, getattr(module, registry))
        object.__setattr__(self, "_version", module._version)  # state_dict's metadata, read at load
        object.__setattr__(self, "training", module.training)
        object.__setattr__(self, "module", module)  # not a submodule: its names stay unprefixed
        object.__setattr__(self, "session", session)
        object.__setattr__(self, "options", session.options)
        compiled = _torch_compile(traced or module, _dynamo_backend(session), session, module)
        object.__setattr__(self, "_compiled", compiled)  # not a submodule: no duplicate parameters
        object.__setattr__(self, "_breaks", BreakWatch(str(session.options.backend), session.options.site))
        warn_eager_rnns(module, str(session.options.backend), session.options.site)

    def __repr__(self) -> str:
        return compiled_repr(self.module, self.session)

    def __reduce__(self):
        return compile_again, (self.module, self.compile_arguments)  # train()/eval() ride on the module

    def forward(self, *args, **kwargs):
        result, error = _run(self._compiled, args, kwargs, self._breaks, self.module, self.session)
        if error is not None:
            raise error from None
        return result

    # What nn.Module does to ``self`` is done to the original (its own overrides included).
    def state_dict(self, *args, **kwargs):
        return self.module.state_dict(*args, **kwargs)

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        return self.module.load_state_dict(state_dict, strict=strict, assign=assign)

    def _load_from_state_dict(self, *args, **kwargs):  # a parent module's load_state_dict reaches here
        return self.module._load_from_state_dict(*args, **kwargs)

    def named_modules(self, memo=None, prefix: str = "", remove_duplicate: bool = True):
        return self.module.named_modules(memo, prefix, remove_duplicate)

    def train(self, mode: bool = True):
        self.module.train(mode)
        object.__setattr__(self, "training", mode)
        return self

    def apply(self, fn):
        self.module.apply(fn)
        return self

    def _apply(self, fn, recurse: bool = True):
        self.module._apply(fn, recurse)
        return self


#: The registries a :class:`CompiledModule` shares with its module (nn.Module keeps these per instance).
SHARED_REGISTRIES = ("_parameters", "_buffers", "_modules", "_non_persistent_buffers_set")


def compile_again(fn_or_module, arguments: dict):
    """What an unpickled (or deep-copied) compiled object is: ``fn_or_module`` compiled again
    with the options it was compiled with."""
    return make_compiled(fn_or_module, **arguments)


def _module_global(compiled):
    """What ``compiled``'s module holds under its qualified name (None if nothing): ``compiled``
    itself for a function decorated at module level."""
    import sys

    found = sys.modules.get(getattr(compiled, "__module__", None) or "")
    for part in getattr(compiled, "__qualname__", "<locals>").split("."):
        found = getattr(found, part, None)
    return found


#: parity's call entry points: torch's tracing logs emitted below them stay off stderr (user_errors.py)
ENTRY_CODES = (CompiledFunction.__call__.__code__, FastCompiledFunction.__call__.__code__,
               CompiledModule.forward.__code__)


def _torch_compile(target, dynamo_backend, session: Session, eager):
    """``torch.compile`` of ``target`` as ``session`` asks, behind the check for arguments Dynamo
    cannot trace (frontend/foreign_inputs.py); under ``fullgraph=True`` each call also fails at
    Dynamo's recompile limit instead of running eagerly (frontend/recompile_limit.py)."""
    compiled = torch.compile(target, backend=dynamo_backend, dynamic=_dynamic(session),
                             fullgraph=session.options.fullgraph)
    if session.options.fullgraph:
        compiled = failing_at_recompile_limit(compiled)
    return checking_arguments(compiled, eager, session)


def _dynamic(session: Session) -> bool | None:
    """torch.compile's ``dynamic``: None (the default) is its "automatic dynamic": a graph starts
    static, and a dim that changes between calls becomes symbolic at the next capture, which then
    serves every later size. True makes every size symbolic from the first call; False keeps every
    size static (one capture per shape, up to Dynamo's recompile limit)."""
    return session.options.dynamic


def _dynamo_backend(session: Session):
    """parity's Dynamo backend for ``session``."""
    return make_dynamo_backend(session)
