"""The contract as published: docs/conformance.md's bound tables, generated from
:mod:`.bounds` (tests/conformance/test_docs.py, test_complex_metric.py and test_fast_tier.py
check that the document holds what these functions print).

Example::

    >>> markdown_table().splitlines()[0]
    '| op class | bound on each output element |'
"""

from __future__ import annotations

from ..ir.builder import GraphBuilder
from ..ir.dtypes import DType
from ..ir.opdef import Kind
from ..ir.ops import OP_TABLE, ops_in_family
from ..ir.types import tensor
from .bounds import (
    COMPOSITE_BOUNDS,
    CONTRACT_BLOCK,
    FAST_BOUNDS,
    Bound,
    Scale,
    bound_for,
    widens,
)


def _one_add_body():
    """The loop body the table describes the loop's bound with: one float32 add a step."""
    b = GraphBuilder("step")
    total, x = b.input(tensor(DType.float32, 2)), b.input(tensor(DType.float32, 2))
    new = b.add(total, x)
    return b.build([new, new])


# -- the published table -------------------------------------------------------------------------------

_CLASS_ROWS = (
    ("exact (shape ops, select, compare, integer math, bitwise, convert to int, gather, sort, "
     "reduce max/min, scatter replace/max/min, every int/bool output)", "bit-exact"),
    ("correctly rounded (add, sub, mul, div, sqrt, reciprocal, convert float→float)", "≤ 1 ULP of the output dtype"),
    ("transcendental in float32/float64", "≤ 4 ULP"),
    ("transcendental in float16/bfloat16 (computed wider, rounded once)", "≤ 1 ULP"),
    ("accumulation (reduce_sum, cumsum, dot_general, convolution, reduce_window sum, scatter add/mul)",
     f"abs error ≤ m·(ε·Σ\\|terms\\| + η), m = min(n, ⌈log₂ n⌉ + B), B = {CONTRACT_BLOCK} or the backend's "
     "declared block; "
     "f16/bf16 summed in f32 (ε, η of f32) + 1 ULP of the output"),
    ("accumulation of products (reduce_prod, cumprod)", "abs error ≤ n·(ε·∏\\|x\\| + η); f16/bf16 in f32 + 1 ULP"),
)


# Attribute-dependent rules: the attribute values the table describes them with.
_RULE_VARIANTS = {
    "gelu": [("approximate=none", {"approximate": "none"}), ("tanh", {"approximate": "tanh"})],
    "interpolate": [("nearest", {"mode": "nearest", "size": (1,)}),
                    ("linear modes, per spatial dim", {"mode": "linear", "size": (1,)})],
    "istft": [("K = 1 (+2 per further overlapping frame)", {"n_fft": 4, "hop_length": 4})],
    "loop": [("one step of a one-add body (c0 = length × roundings per step)", {"length": 1, "body": _one_add_body()})],
}


def markdown_table() -> str:
    """The bounds table of docs/conformance.md, generated from this module."""
    lines = ["| op class | bound on each output element |", "| --- | --- |"]
    lines += [f"| {name} | {bound} |" for name, bound in _CLASS_ROWS]
    lines += ["", "| composite | bound | scale S |", "| --- | --- | --- |"]
    for op in sorted(o.name for o in OP_TABLE.values() if o.kind is Kind.COMPOSITE):
        rule = COMPOSITE_BOUNDS.get(op)
        if rule is None:
            lines.append(f"| {op} | bit-exact (exact class) | – |")
            continue
        variants = [("", rule)] if isinstance(rule, Bound) else [(label, rule(a)) for label, a in _RULE_VARIANTS[op]]
        texts, scales = [], []
        for label, bound in variants:
            wide = " + 1 ULP if f16/bf16 (computed in f32)" if widens(op) and bound.kind != "exact" else ""
            texts.append(f"{label + ': ' if label else ''}{bound.describe()}{wide}")
            if bound.kind != "exact":
                scales.append(bound.note.replace("|", "\\|") if bound.note else _SCALE_TEXT[bound.scale])
        lines.append(f"| {op} | {'; '.join(texts)} | {'; '.join(dict.fromkeys(scales)) or '–'} |")
    return "\n".join(lines)


def complex_markdown_table() -> str:
    """The complex-results table of docs/conformance.md: the bound of each op with complex
    results, each part measured in ULPs of |o|."""
    lines = ["| op (complex result) | bound on each part, in ULPs of \\|o\\| | why |", "| --- | --- | --- |"]
    real_results = set(ops_in_family("complex")) - {"complex", "conj"}  # real, imag, complex_abs, angle
    for name in (n for n, op in OP_TABLE.items() if op.kind is Kind.PRIMITIVE and n not in real_results
                 and (n == "complex" or any(d.is_complex for d in op.dtypes))):
        opdef = OP_TABLE[name]
        dtype = DType.complex64  # the bound of a complex result (complex's own operands are real)
        bound = bound_for(name, {a.name: a.default for a in opdef.attrs if not a.required}, dtype)
        why = bound.note or {"exact": "moves or builds values", "ulp": f"{opdef.accuracy.value} class"}.get(
            bound.kind, _SCALE_TEXT[bound.scale])
        lines.append(f"| {name} | {bound.describe()} | {why.replace('|', chr(92) + '|')} |")
    return "\n".join(lines)


def fast_markdown_table() -> str:
    """The fast tier's table of docs/conformance.md (ops whose bound differs from the exact tier's)."""
    lines = ["| op | exact tier | fast tier | scale S |", "| --- | --- | --- | --- |"]
    for op, bound in FAST_BOUNDS.items():
        exact = bound_for(op, {}, DType.float32)
        lines.append(f"| {op} | {exact.describe()} | {bound.describe()} | {bound.note.replace('|', chr(92) + '|')} |")
    return "\n".join(lines)


_SCALE_TEXT = {Scale.ORACLE: "\\|o\\|", Scale.TERMS: "op(\\|inputs\\|)", Scale.IN_OUT: "max(\\|o\\|, \\|x\\|)",
               Scale.ROW: "max \\|o\\| along the axis", Scale.CUSTOM: "see note",
               Scale.OPERANDS: "max(\\|o\\|, \\|operands\\|)", Scale.UNIT: "1"}
