"""Eager islands: code under ``parity.compile`` that Dynamo runs in eager torch.

parity promises that what it captures runs on the chosen backend. Dynamo may still split
a function (a data-dependent shape such as ``nonzero``, ``.item()``, a ``print``, a call of
a ``torch._dynamo.disable``'d function) and run the code at the split in eager torch,
which no translation error reports. Dynamo records every split it makes (its
``graph_break_reasons``, the list ``torch._dynamo.explain`` reads), also those where no
graph is compiled on either side. :class:`BreakWatch` reads the entries a call added and
warns once per break (:class:`GraphBreakWarning`), attributed to the user's line with
``warnings.warn_explicit``. ``fullgraph=True`` (as in ``torch.compile``) makes Dynamo
raise at the split instead; :func:`graph_break_error` turns that into a short
:class:`GraphBreakError`. ``parity.explain`` lists every break without compiling.

Example::

    >>> reason = "Dynamic shape operator\\n  Explanation: Operator `aten.nonzero.default`'s output shape depends"
    >>> short_reason(reason)
    "Dynamic shape operator: Operator `aten.nonzero.default`'s output shape depends"
"""

from __future__ import annotations

from typing import NamedTuple

from ..ir.graph import SourceLoc
from .errors import FrontendError
from .source import definition_loc, function_name, in_user_code, is_user_file, warn_at


class GraphBreakWarning(UserWarning):
    """Part of a compiled function runs in eager torch (a Dynamo graph break)."""


class RecompileLimitWarning(GraphBreakWarning):
    """Dynamo compiled a function as often as its recompile limit allows: later calls run in eager torch."""


class GraphBreakError(FrontendError):
    """``fullgraph=True``: Dynamo would run part of the function in eager torch."""

    def __init__(self, reason: str, loc: SourceLoc | None, backend_name: str):
        self.reason = reason
        self.loc = loc
        where = f"at {loc}" if loc else "(Dynamo names no line)"
        super().__init__(
            f"parity.compile(fullgraph=True): the code {where} would run in eager torch, not on {backend_name!r}\n"
            f"  why: {reason}\n"
            f"  fix: {break_fix(reason)}, or drop fullgraph=True to run it eagerly (with a warning); "
            f"parity.explain(fn, *args) lists every such place")


def short_reason(reason: str) -> str:
    """Dynamo's reason without its hints: the headline and its 'Explanation:' line."""
    lines = [line.strip() for line in (reason or "").splitlines() if line.strip()]
    if not lines:
        return ""
    explanation = [line[len("Explanation:"):].strip() for line in lines if line.startswith("Explanation:")]
    return lines[0] + (f": {explanation[0]}" if explanation else "")


def user_loc(stack, site: SourceLoc | None = None) -> SourceLoc | None:
    """The last frame of Dynamo's user stack (a list of FrameSummary) in the user's own files;
    ``site`` (the ``parity.compile`` call) when only torch's files are on it (a torch module
    compiled as it is), else the last frame."""
    if not stack:
        return None
    frame = next((f for f in reversed(stack) if is_user_file(f.filename)), stack[-1])
    return in_user_code(SourceLoc(frame.filename, frame.lineno, function_name(frame.name)), site)


def _dynamo_reasons() -> list:
    """Dynamo's list of every graph break it made (cleared by ``torch._dynamo.reset``)."""
    from torch._dynamo.utils import graph_break_reasons

    return graph_break_reasons


class Island(NamedTuple):
    """A piece of a compiled function that runs in eager torch: what kind, where, why. The
    warnings parity gives and ``parity.explain``'s list are both made of these, from the
    same records, so they name the same line and reason."""

    kind: str  # one of ISLAND_KINDS
    loc: SourceLoc | None
    why: str
    count: int = 1  # aten nodes, for a strict=False fallback (the warning names the op once)
    op: str = ""  # the aten op, for a strict=False fallback


#: What makes an eager island, in the order ``parity.explain`` lists them.
FALLBACK_ISLAND = "strict=False fallback"  # an aten op that strict=False runs in eager torch
ISLAND_KINDS = ("graph break", "skipped frame", FALLBACK_ISLAND, "recompile limit")


def dynamo_breaks(reasons, site: SourceLoc | None = None) -> list[Island]:
    """One island per distinct (line, reason) among Dynamo's graph-break records ``reasons``:
    what :class:`BreakWatch` warns about and ``parity.explain`` lists, also a break with no
    graph on either side (``torch.unique`` returned as it is)."""
    islands, seen = [], set()
    for reason in reasons:
        loc = user_loc(reason.user_stack, site)
        why = short_reason(reason.reason)
        if (str(loc), why) not in seen:
            seen.add((str(loc), why))
            islands.append(Island("graph break", loc, why))
    return islands


class BreakWatch:
    """Warns once per graph break that Dynamo made while one compiled object was called.

    :meth:`mark` before the call and :meth:`report` after it: only the entries the call
    added are read (two ``len`` calls when there are none).
    """

    def __init__(self, backend_name: str, site: SourceLoc | None = None):
        self.backend_name = backend_name
        self.site = site  # the parity.compile call: the line named when no frame is the user's
        self.reasons = _dynamo_reasons()
        self.seen: set = set()

    def mark(self) -> int:
        return len(self.reasons)

    def report(self, start: int) -> None:
        end = len(self.reasons)
        if end == start and not SKIPPED_FRAMES:
            return
        skipped = take_skipped_frames()
        if end == start:  # with a graph break recorded, a fake-tensor failure is that break's cause
            for frame in skipped:
                if (str(frame.loc), frame.why) not in self.seen:
                    self.seen.add((str(frame.loc), frame.why))
                    warn_at(frame.loc, skipped_message(frame, self.backend_name), GraphBreakWarning)
            return
        for island in dynamo_breaks(self.reasons[start if end > start else 0:end], self.site):  # reset: from 0
            if (str(island.loc), island.why) in self.seen:
                continue
            self.seen.add((str(island.loc), island.why))
            warn_at(island.loc, break_message(island.why, island.loc, self.backend_name), GraphBreakWarning)


def graph_break_error(err: BaseException, backend_name: str, site: SourceLoc | None = None) -> GraphBreakError | None:
    """The :class:`GraphBreakError` for Dynamo's ``Unsupported`` under ``fullgraph=True``."""
    from torch._dynamo.exc import Unsupported

    if not isinstance(err, Unsupported):
        return None
    stack = getattr(err, "real_stack", None)
    return GraphBreakError(short_reason(getattr(err, "msg", "") or str(err)), user_loc(stack, site), backend_name)


RNN_FIX = ("set torch._dynamo.config.allow_rnn = True before the first call: parity's backends run these modules "
           "(docs/frontend.md)")
# Breaks with a fix of their own, by a piece of Dynamo's reason: the generic "rewrite that code"
# would send the user away from a one-line switch.
BACKWARD_HOOK_FIX = ("hook the tensor instead: in forward, out.register_hook(fn) on the module's output (fn gets "
                     "and may replace its gradient; Dynamo traces tensor hooks, so the backward stays on the "
                     "backend), or register the module hook outside the compiled module")
# a function the user wrapped in torch.compiler.disable ("Skip calling" and "Skip inlining" both)
DISABLED_FIX = ("none needed if that function is meant to run in eager torch (it is wrapped in "
                "torch.compiler.disable); remove the decorator to compile it on the backend")
KNOWN_FIXES = {"Attempted to wrap RNN, GRU, or LSTM": RNN_FIX,
               "`torch.compiler.disable()`d function": DISABLED_FIX,
               "Module-level backwards hooks require compiled autograd": BACKWARD_HOOK_FIX}


def break_fix(reason: str) -> str:
    """The fix a break message gives for Dynamo's ``reason``."""
    for piece, fix in KNOWN_FIXES.items():
        if piece in reason:
            return fix
    return "rewrite that code (e.g. static shapes instead of a data-dependent one)"


def break_message(reason: str, loc: SourceLoc | None, backend_name: str) -> str:
    where = f"at {loc}" if loc else "(Dynamo names no line)"
    return (f"parity.compile: Dynamo split the function {where}; the code there runs in eager torch, not on "
            f"{backend_name!r}\n  why: {reason}\n  fix: {break_fix(reason)}; fullgraph=True makes this an error; "
            "parity.explain(fn, *args) lists every break")


class SkippedFrame(NamedTuple):
    """A frame Dynamo gave up on (it runs the whole function in eager torch): why, where, and
    what the user can do about it."""

    why: str
    loc: SourceLoc | None
    fix: str


_QUANTIZED_FIX = ("keep such values out of the compiled function (dequantize a quantized weight once, outside "
                  "it); fullgraph=True makes this an error")
_DATA_DEPENDENT_FIX = ("give that value a static size (e.g. torch.where(mask, values, x) instead of boolean "
                       "indexing), or compute it outside the compiled function; fullgraph=True makes this an error")

#: Each frame Dynamo gave up on while a parity-compiled call traced it. Two causes reach here:
#: it could not make a fake tensor of a value there (a quantized buffer), which user_errors.py's
#: log filter notes from Dynamo's "Encountered exception ... during fake tensor propagation"
#: line; or AOTAutograd met an op whose output size depends on the data while tracing the
#: forward and gradient graphs, which the pipeline notes (Dynamo then logs "Backend compiler
#: exception" and runs the frame eagerly, recording no graph break). :meth:`BreakWatch.report`
#: warns, :func:`skipped_frame_error` raises.
SKIPPED_FRAMES: list[SkippedFrame] = []


def take_skipped_frames() -> list[SkippedFrame]:
    """The frames skipped since the last take, forgotten here."""
    skipped = SKIPPED_FRAMES[:]
    SKIPPED_FRAMES.clear()
    return skipped


def _traced_frame():
    """(loc, locals) of the frame Dynamo is tracing now, or (None, {})."""
    try:
        from torch._dynamo.symbolic_convert import InstructionTranslator

        tx = InstructionTranslator.current_tx()
        return SourceLoc(tx.f_code.co_filename, tx.lineno, function_name(tx.f_code.co_name)), tx.f_locals
    except Exception:  # no frame being traced, or Dynamo's internals moved: the reason alone
        return None, {}


def note_skipped_frame(torch_reason: str) -> None:
    """Record the frame Dynamo is tracing now as skipped for ``torch_reason`` (fake tensor's words)."""
    loc, local_values = _traced_frame()
    values = _quantized_values(local_values) if local_values else ""
    what = f"a fake tensor of {values}" if values else "a fake tensor of a value there"
    SKIPPED_FRAMES.append(SkippedFrame(f"Dynamo cannot make {what} (torch: {torch_reason}), so it runs the whole "
                                       "function in eager torch", loc, _QUANTIZED_FIX))


def note_data_dependent(op: str) -> None:
    """Record the frame Dynamo is tracing now as skipped: AOTAutograd met ``op``, whose output
    size depends on the data, while tracing its forward and gradient graphs."""
    loc, _ = _traced_frame()
    SKIPPED_FRAMES.append(SkippedFrame(
        f"{op} has an output whose size depends on the data, met while the forward and gradient graphs were "
        "traced (a gradient can need one where the forward does not: grad[mask] for an index_put with a boolean "
        "mask), so Dynamo runs the whole function in eager torch", loc, _DATA_DEPENDENT_FIX))


def _quantized_values(local_values: dict) -> str:
    """The quantized tensors among a frame's locals and its modules' buffers and parameters,
    as ``self.w (qint8)``: what a fake tensor cannot be made of."""
    import torch

    found = []
    for name, value in local_values.items():
        if isinstance(value, torch.Tensor) and value.is_quantized:
            found.append(f"{name} ({str(value.dtype).removeprefix('torch.')})")
        elif isinstance(value, torch.nn.Module):
            for inner, tensor in (*value.named_buffers(), *value.named_parameters()):
                if tensor.is_quantized:
                    found.append(f"{name}.{inner} ({str(tensor.dtype).removeprefix('torch.')})")
    return ", ".join(found[:3])


def skipped_message(frame: SkippedFrame, backend_name: str) -> str:
    where = f"at {frame.loc}" if frame.loc else "(Dynamo names no line)"
    return (f"parity.compile: the function {where} runs in eager torch, not on {backend_name!r}\n"
            f"  why: {frame.why}\n  fix: {frame.fix}")


def skipped_frame_error(err: BaseException, fn, backend_name: str) -> GraphBreakError | None:
    """``fullgraph=True``: the :class:`GraphBreakError` for Dynamo's error when it gave up on
    ``fn``'s frame (:data:`SKIPPED_FRAMES`), else None. Forgets the skipped frames either way."""
    skipped = take_skipped_frames()
    text = str(err)
    if skipped and ("no compiled frames" in text or "during fake tensor propagation" in text
                    or "Backend compiler exception" in text):
        return GraphBreakError(skipped[0].why, skipped[0].loc, backend_name)
    if "found no compiled frames" in text:  # Dynamo gave up on the frame at an earlier call
        return GraphBreakError("Dynamo gave up on this function at an earlier call in this process (a value it "
                               "cannot make a fake tensor of, such as a quantized tensor, or an op whose output "
                               "size depends on the data), and does not try again", definition_loc(fn), backend_name)
    return None
