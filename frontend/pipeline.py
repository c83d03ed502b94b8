"""The Dynamo backend behind ``parity.compile``: AOTAutograd graphs → IR → a parity backend.

For every FX graph AOTAutograd hands over (forward, backward, or inference),
:func:`compile_fx_graph` compiles it for the named backend (frontend/single_backend.py:
translated, checked against the backend's claims, strict error or eager fallback,
composites it does not claim expanded, compiled through the executable cache) or, with
``backend="auto"``, for the fastest conformant one (frontend/auto.py), and returns a
boxed callable that takes and returns torch tensors.
"""

from __future__ import annotations

import contextlib
import functools
import re
import warnings

import torch
from torch._subclasses.fake_tensor import DataDependentOutputException, DynamicOutputShapeException

from ..backends.registry import get_backend
from ..ir.errors import ParityError
from .aten_decompositions import decomposition_table, mkldnn_off
from .auto import compile_auto
from .errors import InternalError, UnsupportedAtenOp
from .graph_breaks import note_data_dependent
from .input_updates import mark_input_updates
from .no_derivative import no_derivative_error
from .per_shape import PerShapeGraph, PerShapeWarning, hinted_inputs
from .plugin_runtime import mark_parameter_placeholders
from .saved_tensors import partition_recomputing_input_views
from .session import AUTO, Session
from .single_backend import compile_split, compile_whole
from .sizes import UntranslatedCase, guarded_branches
from .source import graph_user_locs, in_user_code, warn_at
from .spectral import keep_whole
from .status import slow_work
from .tensor_subclasses import as_plain_tensors, plain_subclass_positions

# autograd's anomaly-mode report of a failed gradient trace (torch/autograd/graph.py)
ANOMALY_WARNING = r"Error detected in (\w+Backward|torch::autograd::NotImplemented)"

# How AOTAutograd splits a training graph into forward and backward (frontend/saved_tensors.py);
# a dict so that a benchmark can compare partitions in one process.
PARTITION = {"fn": partition_recomputing_input_views}
# fake tensor's errors for an op whose output size depends on the data, which Dynamo answers by
# running the frame in eager torch (torch._dynamo.exc.exceptions_allowed_to_be_fallback)
DATA_DEPENDENT = (DynamicOutputShapeException, DataDependentOutputException)


def make_dynamo_backend(session: Session):
    """A ``torch.compile`` backend: AOTAutograd with parity's forward/backward compilers."""
    from torch._dynamo.backends.common import aot_autograd

    compile_fw = functools.partial(compile_fx_graph, session=session, kind="forward")
    compile_bw = functools.partial(compile_fx_graph, session=session, kind="backward")
    compile_inference = functools.partial(compile_fx_graph, session=session, kind="inference")
    aot = aot_autograd(fw_compiler=compile_fw, bw_compiler=compile_bw, inference_compiler=compile_inference,
                       decompositions=decomposition_table(), partition_fn=PARTITION["fn"])

    return functools.partial(run_aot, aot)


def run_aot(aot, gm: torch.fx.GraphModule, example_inputs):
    """``aot`` (an AOTAutograd backend) on one Dynamo graph, as every parity capture runs it:
    torch.stft / istft kept whole (frontend/spectral.py), plain matmuls for LSTM layers, and a
    data-dependent size met in the forward or gradient trace noted for the user's warning.
    Plain tensor-subclass arguments reach the graph as plain tensors (frontend/tensor_subclasses.py)."""
    keep_whole(gm)
    with mkldnn_off(), warnings.catch_warnings():
        # AOTAutograd traces the gradient under autograd's anomaly mode, which warns "Error detected
        # in ...Backward0" when that trace fails; the failure is reported below, as parity's warning
        warnings.filterwarnings("ignore", message=ANOMALY_WARNING, category=UserWarning)
        try:
            return as_plain_tensors(aot(gm, example_inputs), plain_subclass_positions(gm))
        except DATA_DEPENDENT as exc:  # Dynamo runs the frame eagerly: say so at the user's line
            note_data_dependent(str(getattr(exc, "func", "") or exc))
            raise
        except RuntimeError as exc:  # a gradient torch does not have: the user's line, not Dynamo's wrapper
            named = no_derivative_error(exc, gm)
            if named is None:
                raise
            raise named from None


def compile_fx_graph(gm: torch.fx.GraphModule, example_inputs, *, session: Session, kind: str):
    """AOTAutograd's compiler hook: one FX graph → a boxed callable on torch tensors.

    AOTAutograd calls it with its fake-tensor mode still active; parity's work here is on
    real tensors (constants the graph holds become IR constants), so that mode is lifted.
    """
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    with unset_fake_temporarily(), slow_work(_status_message(session, kind)):
        try:
            mark_parameter_placeholders(gm, kind)  # which inputs a plugin may bind once (plugin_runtime.py)
            mark_input_updates(gm, kind)  # outputs written back into inputs (input_updates.py)
            # a forward or inference graph compiles inside Dynamo's compile, whose guards then
            # include any a Max/Min size adds (frontend/sizes.py); a backward compiles after them
            branches = guarded_branches() if kind != "backward" else contextlib.nullcontext()
            with branches:
                compiled = _compile_fx_graph(gm, session, kind, example_inputs)
            if kind == "backward":  # compiled at the first backward(), after the call that flushes
                session.flush_fallbacks()
            if session.on_compiled is not None:
                session.on_compiled(compiled, kind)
            return compiled
        except UnsupportedAtenOp as err:
            loc = in_user_code(err.loc, session.options.site)
            if loc is err.loc:
                raise
            raise UnsupportedAtenOp(err.aten_op, loc, err.why, backend=err.backend,
                                    alternatives=err.alternatives) from None
        except ParityError:
            raise
        except Exception as exc:  # not ours on purpose: a bug report, never Dynamo's opaque wrapper
            raise InternalError(kind, session.options.backend, graph_user_locs(gm), exc) from exc


def _status_message(session: Session, kind: str) -> str:
    """The terminal's status line while a graph compiles (shown only when it takes a while)."""
    backend = session.options.backend
    why = " (auto: timing the candidate backends)" if backend == AUTO else f" for backend {backend!r}"
    return f"parity: compiling the {kind} graph{why}"


def _compile_fx_graph(gm: torch.fx.GraphModule, session: Session, kind: str, example_inputs=None):
    if session.options.backend == AUTO:
        try:
            return compile_auto(gm, session, kind)
        except UnsupportedAtenOp as err:
            return _per_shape(gm, session, kind, example_inputs, err, lambda static: compile_auto(static, session, kind))
    backend = get_backend(session.options.backend)
    try:
        return compile_whole(gm, session, backend, kind)
    except UnsupportedAtenOp as err:
        try:
            return _per_shape(gm, session, kind, example_inputs, err,
                              lambda static: compile_whole(static, session, backend, kind))
        except UnsupportedAtenOp:
            if session.options.strict:
                raise
        return compile_split(gm, session, backend, kind, err)


def _per_shape(gm, session: Session, kind: str, example_inputs, err: UnsupportedAtenOp, compile_static):
    """A graph with symbolic sizes that ``err`` refuses: compiled per concrete shape when its
    static form compiles (frontend/per_shape.py), with one warning; else ``err`` is raised."""
    if example_inputs is None or not any(_symbolic(v) for v in example_inputs):
        raise err
    try:
        compiled = PerShapeGraph(gm, compile_static, hinted_inputs(example_inputs))
    except (UnsupportedAtenOp, UntranslatedCase):
        raise err from None  # static sizes do not help: the symbolic graph's own error
    # one warning per reason: a forward's op and its backward's (convolution, convolution_backward)
    # compile per shape for the same reason, and the fix is the same; a later capture's reason
    # differs only in its symbols' names and example values (Max(0, 16 - s69), "its example value is 4")
    note = "per-shape " + re.sub(r"\d+", "#", err.why)
    if note not in session.warned:
        session.warned.add(note)
        loc = in_user_code(err.loc, session.options.site)
        where = f" at {loc}" if loc is not None else ""  # (no line: compiled from a REPL or stdin)
        # the IR's own limit holds on every backend; a backend's claim is that backend's
        on = "in parity's IR (on every backend)" if err.in_ir else f"on {err.backend or session.options.backend!r}"
        other = "" if err.in_ir else ", or use a backend that runs the op at symbolic sizes"
        warn_at(loc, f"parity.compile: the sizes of the {kind} graph{where} change between calls, but "
                     f"{err.aten_op} has no form with symbolic sizes {on} ({err.why}): it compiles again for "
                     f"each new shape, as with dynamic=False\n"
                     f"  fix: nothing is needed for correct results; to compile once, keep that dim static "
                     f"(dynamic=False, or pad inputs to a few sizes){other}", PerShapeWarning)
    return compiled


def _symbolic(value) -> bool:
    if isinstance(value, torch.SymInt):
        return True
    return isinstance(value, torch.Tensor) and any(isinstance(d, torch.SymInt) for d in value.shape)
