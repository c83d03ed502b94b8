"""parity as a ``torch.compile`` backend: ``torch.compile(model, backend="parity", options={...})``.

Found by torch through the entry point group ``torch_dynamo_backends`` (pyproject), the
convention every vendor backend follows, so ``model.compile(backend="parity")`` and
``torch.compile(fn, backend="parity")`` work once parity is installed. torch hands the
backend each Dynamo FX graph with its example inputs; parity compiles it on the path
``parity.compile`` takes (the options checked by ``validate.compile_options``, the session
made by ``frontend.api.make_session``, the graph compiled by ``frontend.pipeline``), so the
numbers are the same. ``options`` are parity.compile's: ``backend`` (default ``"auto"``),
``device``, ``strict``, ``precision``, ``cache_dir``, ``auto``, ``backend_options``; ``dynamic`` and ``fullgraph``
are torch.compile's own arguments. What torch.compile's conventions change (docs/frontend.md,
"torch.compile(backend='parity')"): parity's errors reach the user inside torch's
``BackendCompilerFailed`` (``err.inner_exception`` is parity's), and the warnings are given
when a graph compiles.

Example::

    >>> import torch
    >>> f = torch.compile(lambda x: torch.tanh(x) * 2, backend="parity", options={"backend": "reference"})
    >>> f(torch.tensor([0.0, 100.0])).tolist()
    [0.0, 2.0]
"""

from __future__ import annotations

from dataclasses import dataclass

from . import validate

#: the options torch.compile(backend="parity") takes (validate.OPTIONS holds them, for its messages)
FUNCTION = "torch.compile(backend='parity')"
#: parity.compile's options that torch.compile takes as its own arguments, not as options
TORCH_COMPILES_OWN = ("dynamic", "fullgraph")


@dataclass
class _Compile:
    """What one options dict (one ``torch.compile`` call, or every call without options) keeps
    between the graphs torch hands over: its session, and how far its graph breaks are reported."""

    options: dict | None  # held, so that its id is not reused while the session lives
    session: object
    breaks: object  # a graph_breaks.BreakWatch
    reported: int | None = None  # Dynamo's graph-break list read up to here; None before the first graph


_COMPILES: dict[int, _Compile] = {}


def parity_backend(gm, example_inputs, *, options: dict | None = None, mode: str | None = None):
    """The ``torch.compile`` backend: ``gm`` (a Dynamo FX graph) compiled as ``parity.compile``
    compiles it, with ``options`` as parity.compile's keywords."""
    from .frontend.errors import TranslationBug, UnsupportedAtenOp
    from .frontend.pipeline import DATA_DEPENDENT, make_dynamo_backend

    state = _compile_state(options, mode)
    try:
        compiled = make_dynamo_backend(state.session)(gm, example_inputs)
    except DATA_DEPENDENT:  # Dynamo runs the frame eagerly: parity's warning says where and why
        _report_breaks(state)
        raise
    except UnsupportedAtenOp as err:
        raise _in_options_terms(err) from None
    except TranslationBug:
        user = _eager_error(gm, example_inputs)
        if user is not None:  # the user's own error, which torch's meta kernels let through
            raise user from None
        raise
    state.session.flush_fallbacks()  # strict=False: one warning for the ops this graph runs eagerly
    _report_breaks(state)
    return compiled


def _eager_error(gm, example_inputs) -> BaseException | None:
    """The error eager torch raises running ``gm`` on real tensors of the example inputs' types
    and sizes (None if it runs): a dtype mismatch that the fake kernels let through (an f32 input
    to an f64 Linear) is the user's error, as parity.compile reports it (frontend/api.py)."""
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    from .frontend.per_shape import hinted_inputs
    from .frontend.sizes import UntranslatedCase
    from .frontend.user_errors import eager_error

    with unset_fake_temporarily():
        try:
            real = [v.zero_() if hasattr(v, "zero_") else v for v in hinted_inputs(example_inputs)]
        except UntranslatedCase:  # a data-dependent size: no real input to build
            return None
        return eager_error(gm, tuple(real), {})


def _in_options_terms(err):
    """parity.compile's :class:`UnsupportedAtenOp` with its fix in torch.compile's words (options={...})."""
    others = (f"; or use a backend that runs it (options={{'backend': NAME}}): {', '.join(err.alternatives)}"
              if err.alternatives else "")
    fix = (f"pass options={{'strict': False}} to run only this op eagerly in torch (the rest of the graph stays on "
           f"{err.backend!r}){others}")
    return type(err)(err.aten_op, err.loc, err.why, backend=err.backend, alternatives=err.alternatives, fix=fix)


def _compile_state(options: dict | None, mode: str | None) -> _Compile:
    """The session of ``options`` (made, and its options checked, on its first graph)."""
    if mode is not None:  # checked at every graph: calls without options share one session
        raise validate.UsageError(f"{FUNCTION} takes no mode ({mode!r} is Inductor's); pass parity's options as "
                                  f"options={{...}}: {', '.join(validate.OPTIONS[FUNCTION])}")
    state = _COMPILES.get(id(options))
    if state is not None:
        return state
    given = _checked(options)
    from .frontend.api import make_session
    from .frontend.graph_breaks import BreakWatch

    session, _ = make_session(None, **given)
    state = _COMPILES[id(options)] = _Compile(options, session, BreakWatch(str(session.options.backend)))
    return state


def _checked(options: dict | None) -> dict:
    """``options`` as parity.compile's keywords, each checked as parity.compile checks it."""
    if options is not None and not isinstance(options, dict):
        raise validate.UsageError(f"{FUNCTION}: options is a dict of parity.compile's keywords, got "
                                  f"{type(options).__name__}")
    given = dict(options or {})
    for name in given:
        if name in TORCH_COMPILES_OWN:
            raise validate.UsageError(f"{FUNCTION}: {name!r} is torch.compile's own argument, not an option: "
                                      f"torch.compile(model, backend='parity', {name}=...)")
    validate.options(FUNCTION, given)
    validate.compile_options(given)
    return given


def _report_breaks(state: _Compile) -> None:
    """Warn once for each graph break Dynamo made since this session's last graph (on its first
    graph: those its frame made), as parity.compile warns after a call."""
    reasons = state.breaks.reasons  # Dynamo's list of every graph break it made
    start = state.reported if state.reported is not None else _frame_start(reasons)
    state.breaks.report(min(start, len(reasons)))
    state.reported = len(reasons)


def _frame_start(reasons: list) -> int:
    """Where the breaks of the frame Dynamo is compiling begin in its list: the trailing entries
    whose outermost frame is in that frame's file (its resume functions share the file)."""
    try:
        from torch._dynamo.symbolic_convert import InstructionTranslator

        filename = InstructionTranslator.current_tx().output.root_tx.f_code.co_filename
    except Exception:  # no frame being traced (Dynamo's internals moved): report from here on
        return len(reasons)
    start = len(reasons)
    while start > 0 and reasons[start - 1].user_stack and reasons[start - 1].user_stack[0].filename == filename:
        start -= 1
    return start
