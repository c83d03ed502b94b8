"""What one ``parity.compile`` call was asked for (:class:`CompileOptions`) and its state
(:class:`Session`): passed down the pipeline as one object, no hidden globals; and how a
session reads (:func:`backend_line`: a compiled function's ``repr`` and ``parity.explain``).

Example::

    >>> from parity.frontend.session import CompileOptions, Session
    >>> Session(CompileOptions(backend="onnx", strict=False)).options.strict
    False
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..ir.precision import Precision
from .errors import FallbackWarning, fallbacks_text
from .source import in_user_code, warn_at

AUTO = "auto"  # the backend name that picks, per graph, the fastest conformant backend (frontend/auto.py)


@dataclass(frozen=True)
class CompileOptions:
    """What ``parity.compile`` was asked for; one object passed down (no hidden globals)."""

    backend: str = "reference"
    device: str = "cpu"
    strict: bool = True
    dynamic: bool | None = None
    mesh: Any = None  # an ir.sharding.Mesh: graphs run sharded on it (frontend/sharding.py)
    site: Any = None  # the SourceLoc of the parity.compile call, for sharding errors
    cache_dir: str | None = None  # the disk cache's directory (backends/disk_cache.py); None: off
    auto: Any = None  # backend="auto": its AutoOptions (frontend/auto.py)
    precision: Precision = Precision.EXACT  # the tier asked for; a backend without it runs EXACT (base.compile_at)
    fullgraph: bool = False  # every piece on the backend: a graph break is an error (frontend/graph_breaks.py)
    backend_options: Any = None  # the backend's own options, checked and completed (frontend/plugin_runtime.py)


@dataclass
class Session:
    """State of one ``parity.compile`` call: its options and the fallbacks already warned about."""

    options: CompileOptions
    warned: set[str] = field(default_factory=set)
    reports: list = field(default_factory=list)  # a PartitionReport per graph split by strict=False
    auto_choices: list = field(default_factory=list)  # backend="auto": an AutoChoice per graph
    on_compiled: Any = None  # called with (compiled graph, kind) after each FX graph compiles (fast_path)
    pending: list = field(default_factory=list)  # (aten op, loc, why) not yet in a warning: flush_fallbacks
    pending_nodes: Counter = field(default_factory=Counter)  # aten op of ``pending`` → its nodes noted

    def fall_back(self, aten_op: str, loc, why: str) -> None:
        """Note that a node of ``aten_op`` runs in eager torch, not on the backend (once per
        node): the next :meth:`flush_fallbacks` warns about every op noted since the last one
        that no earlier warning named, with its nodes counted."""
        if aten_op in self.warned and aten_op not in self.pending_nodes:  # an earlier warning named it
            return
        self.pending_nodes[aten_op] += 1
        if aten_op not in self.warned:
            self.warned.add(aten_op)
            self.pending.append((aten_op, in_user_code(loc, self.options.site), why))

    def flush_fallbacks(self) -> None:
        """One warning for the ops noted since the last flush, at the first one's line: a call of
        the compiled function gives one, however many of its ops run eagerly."""
        pending, nodes, self.pending, self.pending_nodes = self.pending, self.pending_nodes, [], Counter()
        if pending:
            warn_at(pending[0][1], fallbacks_text(pending, self.options.backend, nodes), FallbackWarning)


def backend_line(session) -> str:
    """Which backend a ``parity.compile`` result runs, and why (its ``repr`` and ``explain``).

    For ``backend="auto"``: before the first call, that auto chooses then; after it, per
    graph, the pick and why (the race's medians, or where the pick was remembered).
    """
    options = session.options
    device = f"device={options.device}"
    if options.precision is not Precision.EXACT:
        device += f", precision={options.precision.value}"
    if options.backend != "auto":
        forced = options.auto is not None and options.auto.forced == options.backend
        why = " (forced over auto by $PARITY_BACKEND or AutoOptions.forced)" if forced else ""
        chosen = f", backend_options={dict(options.backend_options)}" if options.backend_options else ""
        return f"backend={options.backend}{why}{chosen}, {device}"
    picks = [_pick_text(choice) for choice in session.auto_choices]
    if not picks:
        return f"backend=auto (chooses the fastest conformant backend at the first call), {device}"
    return f"backend=auto → {'; '.join(picks)}, {device}"


def _pick_text(choice) -> str:
    if choice.choice is None:
        return f"({choice.source})" if choice.source else "(choosing at the first call)"
    if choice.source == "measured":
        raced = sorted((c for c in choice.candidates if c.median_s is not None), key=lambda c: c.median_s)
        times = ", ".join(f"{c.name} {_seconds(c.median_s)}" for c in raced)
        return f"{choice.choice} (fastest of {times} on the first call)"
    return f"{choice.choice} ({choice.source})"


def _seconds(s: float) -> str:
    return f"{s * 1e3:.3g} ms" if s >= 1e-3 else f"{s * 1e6:.3g} µs"


def compiled_repr(original, session) -> str:
    """``<parity.compile of NAME: backend=..., device=...>``."""
    name = getattr(original, "__qualname__", None) or type(original).__name__
    return f"<parity.compile of {name}: {backend_line(session)}>"
