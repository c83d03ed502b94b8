"""What one conformance case is: an op, its attributes, seeded inputs, a dtype and tags.

A :class:`Case` runs one op (or, for fuzzer regressions, a small graph) on inputs that a
seeded generator draws, so every run of the suite sees the same numbers. The case
builds its own graph from the arrays it draws: input types are the arrays' types, and
operands listed in ``broadcast`` go through a ``broadcast_in_dim`` inside the graph (the
IR broadcasts nothing implicitly). An :class:`ErrorCase` is an input the op's type rule
must reject, with a fragment of the message it must give.

Example::

    >>> import numpy as np
    >>> from parity.ir import f32
    >>> case = Case("exp", f32, lambda rng: (np.zeros(3, np.float32),), name="zeros")
    >>> case.id, case.graph(case.arrays()).op_counts()
    ('exp[f32]:zeros', {'exp': 1})
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..ir.builder import GraphBuilder
from ..ir.dtypes import DType
from ..ir.errors import TypeRuleError
from ..ir.graph import Graph, Value
from ..ir.sharding import GraphSharding
from ..ir.types import TensorType

InputFn = Callable[[np.random.Generator], Sequence[np.ndarray]]
MaskFn = Callable[[Sequence[np.ndarray]], Sequence[np.ndarray | None]]
BuildFn = Callable[[GraphBuilder, Sequence[Value], Mapping[str, Any]], Any]


@dataclass(frozen=True)
class Case:
    """One conformance case.

    ``inputs(rng)`` returns the graph's input arrays (possibly non-contiguous views);
    ``rng`` is seeded from the case id. ``dtype`` is the dtype the op table sweeps: the
    first operand's, or the created dtype for ops without operands. ``broadcast`` maps
    an operand index to ``(shape, broadcast_dimensions)``. ``mask(arrays)`` returns, per
    output, a bool array of the elements to compare (None: all) — the one place where
    implementation-defined elements are excluded. ``build`` replaces the single op by a
    small graph (fuzzer regressions); ``bound`` then overrides the op's bound. ``mesh``
    (an ``ir.sharding.Mesh``) gives the graph a device mesh, which ``sharding_constraint``
    needs to be a valid graph.
    """

    op: str
    dtype: DType
    inputs: InputFn
    attrs: Mapping[str, Any] = field(default_factory=dict)
    name: str = "case"
    tags: tuple[str, ...] = ()
    broadcast: Mapping[int, tuple[tuple[int, ...], tuple[int, ...]]] = field(default_factory=dict)
    mask: MaskFn | None = None
    build: BuildFn | None = None
    bound: Any = None  # a bounds.Bound overriding the op's, for multi-op cases
    mesh: Any = None  # an ir.sharding.Mesh the graph carries (None: no sharding)

    @property
    def id(self) -> str:
        return f"{self.op}[{self.dtype.short}]:{self.name}"

    @property
    def seed(self) -> int:
        return zlib.crc32(self.id.encode())

    def arrays(self) -> list[np.ndarray]:
        """The case's inputs, drawn from its own seeded generator (same every run)."""
        return [np.asarray(a) for a in self.inputs(np.random.default_rng(self.seed))]

    def graph(self, arrays: Sequence[np.ndarray]) -> Graph:
        """The graph under test, typed by ``arrays``."""
        b = GraphBuilder(self.op)
        params = [b.input(TensorType(DType.from_numpy(a.dtype), a.shape)) for a in arrays]
        operands = []
        for i, p in enumerate(params):
            if i in self.broadcast:
                shape, dims = self.broadcast[i]
                p = b.broadcast_in_dim(p, shape=shape, broadcast_dimensions=dims)
            operands.append(p)
        if self.build is not None:
            out = self.build(b, operands, self.attrs)
        else:
            out = b.op(self.op, *operands, **self.attrs)
        graph = b.build(list(out) if isinstance(out, tuple) else [out])
        return graph if self.mesh is None else graph.with_sharding(GraphSharding(self.mesh))

    def masks(self, arrays: Sequence[np.ndarray], n_outputs: int) -> list[np.ndarray | None]:
        if self.mask is None:
            return [None] * n_outputs
        return list(self.mask(arrays))


@dataclass(frozen=True)
class ErrorCase:
    """Operand types and attributes that the type rule of ``op`` must reject.

    ``message`` is a fragment the :class:`TypeRuleError` must contain.
    """

    op: str
    types: tuple[TensorType, ...]
    attrs: Mapping[str, Any]
    message: str
    name: str = "error"

    @property
    def id(self) -> str:
        return f"{self.op}:error:{self.name}"

    def check(self) -> str | None:
        """None when the op rejects the input with the expected message; else what went wrong."""
        b = GraphBuilder(self.op)
        params = [b.input(t) for t in self.types]
        try:
            b.op(self.op, *params, **self.attrs)
        except TypeRuleError as exc:
            if self.message in str(exc):
                return None
            return f"rejected, but with {str(exc)!r}; expected it to contain {self.message!r}"
        except Exception as exc:  # a crash in a type rule is a bug, not a rejection
            return f"raised {type(exc).__name__}: {exc} instead of a TypeRuleError"
        return "accepted; the type rule should have rejected it"
