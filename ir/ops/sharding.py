"""Sharding ops: ``sharding_constraint`` pins how one intermediate value is split.

It computes nothing: its decomposition is the identity, so the reference interpreter
(and every backend that does not shard) returns its operand unchanged, bit for bit. A
backend that shards (XLA) claims it and tells its partitioner the layout. The spec's
axes are checked against the graph's mesh by the verifier (``ir/sharding.py``).

Example::

    >>> import numpy as np
    >>> from parity.ir import GraphBuilder, evaluate, f32
    >>> b = GraphBuilder(); x = b.input(f32[4, 2])
    >>> y = b.sharding_constraint(x, spec=("data", None))
    >>> str(y.producer.attrs["spec"]), evaluate(b.build([y]), [np.ones((4, 2), np.float32)])[0].sum()
    ('[data]', np.float32(8.0))
"""

from __future__ import annotations

from ..dtypes import ALL_DTYPES
from ..errors import TypeRuleError
from ..opdef import Accuracy, AttrKind, AttrSpec, Group, Kind, OpDef
from ..sharding import spec_problem


def _infer(types, attrs):
    (t,) = types
    problem = spec_problem(attrs["spec"], t, None)  # the mesh is the graph's: the verifier checks axes
    if problem:
        raise TypeRuleError("sharding_constraint", problem, "spec")
    return (t,)


def _identity(builder, attrs, x):
    return x


OPS = (
    OpDef(
        name="sharding_constraint",
        kind=Kind.COMPOSITE,
        operands=("x",),
        attrs=(AttrSpec("spec", AttrKind.SPEC, doc="how the value is split over the graph's mesh axes"),),
        infer=_infer,
        dtypes=ALL_DTYPES,
        accuracy=Accuracy.EXACT,
        groups=frozenset({Group.EXACT}),
        decompose=_identity,
        doc="The operand, unchanged; a sharding backend lays it out as `spec` says on the graph's mesh.",
    ),
)
