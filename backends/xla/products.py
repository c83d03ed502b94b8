r"""Products kept out of fused sums on XLA:CPU, so each is rounded as the IR says.

XLA:CPU's own loop fusions turn ``a * b + c`` into one fused multiply-add, and no compile
option stops it. :func:`fuses_products` tells from the optimized HLO whether a graph has
such a fusion; if so the backend compiles it again with :func:`opaque` applied to every
product :func:`products_summed` finds, using a zero the executable receives at run time.

Example::

    >>> fuses_products("%f (p: f32[2]) -> f32[2] {\n  %m = f32[2]{0} multiply(%p, %p)\n"
    ...                "  ROOT %a = f32[2]{0} add(%m, %p)\n}\n"
    ...                "ENTRY %main {\n  ROOT %x = f32[2]{0} fusion(%p), kind=kLoop, calls=%f\n}")
    True
"""

from __future__ import annotations

import re

import numpy as np
from jax import lax

from ...ir.dtypes import DType
from ...ir.graph import Graph
from ...ir.opdef import Group
from ...ir.ops import ops_in_group

# XLA:CPU computes a·b ± c as one fused multiply-add whenever the product and the sum share a
# fused loop (its CPU compiler hard-codes LLVM's AllowFPOpFusion = Fast; no compile option
# turns it off: measured with xla_cpu_enable_fast_math=false, xla_cpu_use_fusion_emitters=
# false, xla_cpu_max_isa=SSE4_2 and an optimization barrier). The IR rounds the product first,
# and under cancellation the difference is any number of ULPs of the sum (724,970 ULP f32,
# 1,522,234 f64 on the xla-*-fma regressions). So a float32/float64 product that may reach an
# addition has its bits OR-ed with a zero the executable only receives at run time: the same
# value, but neither XLA nor LLVM can see through it, so it is never fused. It costs one
# integer op in the loop (16M chain +5 %, softmax + layer norm +1 %); computing the product
# in float64 and rounding by reduce_precision was exact too but split XLA's fusions (2.2×).
_NO_ADD = frozenset(ops_in_group(Group.NO_FUSED_ADD))
# ... consumers above never add to their operand (a reduce_sum may fuse a product, within its
# accumulation bound); these pass the product on unchanged, so their consumers decide: the
# shape ops, and the indexing ops that read (Group.SELECTS; dynamic_update_slice writes, so it is not one).
_MOVES = frozenset(ops_in_group(Group.SHAPE)) | frozenset(ops_in_group(Group.SELECTS))
_OPAQUE_BITS = {DType.float32: np.int32, DType.float64: np.int64}  # f16/bf16 products are rounded by converts


def products_summed(graph: Graph, *, returned: bool = False) -> set:
    """The float32/float64 ``mul`` nodes whose result may be fused into an addition: any consumer
    that adds to its operand can absorb it (add, sub, exp's range reduction, a decomposed
    composite's x - mean), so only the consumers in _NO_ADD (Group.NO_FUSED_ADD) leave a product alone.

    ``returned``: the graph's outputs have readers this graph does not show (a loop's body:
    the next step's sums, or the enclosing graph's once XLA inlines a one-step ``while``),
    so a product it returns counts as summed."""
    users = graph.users()
    escapes = set(graph.outputs) if returned else set()

    def absorbed(value, depth=0) -> bool:
        if value in escapes:
            return True
        for u in users.get(value, ()):
            if u.op in _MOVES and depth < 8:
                if any(absorbed(out, depth + 1) for out in u.outputs):
                    return True
            elif u.op not in _NO_ADD:
                return True
        return False

    return {node for node in graph.nodes
            if node.op == "mul" and node.outputs[0].type.dtype in _OPAQUE_BITS and absorbed(node.outputs[0])}


def opaque(product, zero):
    """``product`` with its bits OR-ed with the run-time ``zero``: unchanged, but no longer a
    multiplication XLA or LLVM can fuse into the addition that reads it."""
    bits = _OPAQUE_BITS[DType.from_numpy(product.dtype)]
    raw = lax.bitwise_or(lax.bitcast_convert_type(product, bits), lax.convert_element_type(zero, bits))
    return lax.bitcast_convert_type(raw, product.dtype)


_FLOAT_OP = r"= f(32|64)\[[^\]]*\](\{{[^}}]*\}})? {}\("  # "= f32[16]{{0}} multiply(" in HLO text


def fuses_products(hlo_text: str) -> bool:
    """Whether an optimized HLO module has a float multiply and an add/subtract in one fusion
    that XLA emits itself (its loop emitters contract them into FMAs; YNNPACK's fusions keep
    them apart, measured bit-identical to two roundings)."""
    computations = {}
    for block in re.split(r"\n(?=%|ENTRY )", hlo_text):
        head = block.split(" ", 1)[0].lstrip("%")
        computations[head] = block
    for line in hlo_text.splitlines():
        if " fusion(" not in line or "__ynn_fusion" in line or "__xnn_fusion" in line:
            continue
        called = re.search(r"calls=%([\w.\-]+)", line)
        body = computations.get(called.group(1), "") if called else ""
        if re.search(_FLOAT_OP.format("multiply"), body) and re.search(
                _FLOAT_OP.format("(add|subtract)"), body):
            return True
    return False
