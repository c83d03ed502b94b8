"""Complex numbers as float pairs: a graph with c64/c128 values rewritten to one without.

Triton has no complex type. Each complex value ``z: c64[S]`` becomes the float tensor
``f32[S, 2]`` (``c128``: ``f64[S, 2]``) holding its parts interleaved, which is how torch
stores a complex tensor (``torch.view_as_real``), so inputs and outputs cross without a
copy. Every complex op becomes float ops of the IR on that pair, which the scheduler
fuses like any other: ``real``/``imag`` are a slice of the trailing axis, ``complex`` a
concatenation, ``add``/``sub``/``neg`` and the shape ops act on the pair as it is, ``mul``,
``div`` and ``complex_abs`` are formulas over the parts (c64 ones computed in float64 and
rounded once per part, as the reference does), ``dot_general`` two real contractions,
``exp``, ``log``, ``sqrt`` of c64 formulas in float64. The FFTs, and ``exp``, ``log``,
``sqrt`` of c128, stay one node each, an extern torch call (extern_complex.py) on the pair.

Example::

    >>> import numpy as np
    >>> from parity.ir import GraphBuilder, c64
    >>> b = GraphBuilder(); z = b.input(c64[3])
    >>> pairs = to_pairs(b.build([b.mul(z, b.conj(z))]))
    >>> [str(v.type) for v in pairs.inputs + pairs.outputs]
    ['f32[3,2]', 'f32[3,2]']
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...ir.builder import GraphBuilder
from ...ir.dtypes import DType
from ...ir.graph import Graph, Node, Value
from ...ir.types import TensorType

# Ops whose complex form is an extern call on the pair (extern_complex.TABLE has each): the
# pair node keeps the IR op's attributes, under this name. (exp, log and sqrt of c128 too:
# their rules below call extern().)
EXTERN_NAMES = {"fft": "fft", "ifft": "ifft", "rfft": "rfft", "irfft": "irfft"}


def has_complex(graph: Graph) -> bool:
    """Whether any value of ``graph`` is complex (then :func:`to_pairs` is needed)."""
    return any(v.type.dtype.is_complex for v in graph.values())


def pair_type(t: TensorType) -> TensorType:
    """The float pair type of a complex type (``c64[S]`` → ``f32[S,2]``); others unchanged."""
    return TensorType(t.dtype.real_dtype, (*t.shape, 2)) if t.dtype.is_complex else t


def to_pairs(graph: Graph) -> Graph:
    """``graph`` with every complex value as its float pair (module docstring)."""
    return _Rewriter(graph).run()


class _Rewriter:
    def __init__(self, graph: Graph):
        self.graph = graph
        self.b = GraphBuilder(graph.name)
        self.env: dict[Value, Value] = {}
        self._parts: dict[Value, tuple[Value, Value]] = {}

    def run(self) -> Graph:
        b = self.b
        for v in self.graph.inputs:
            self.env[v] = b.input(pair_type(v.type))
        for node in self.graph.nodes:
            with b.location(node.loc):
                outs = self.rewrite(node)
            self.env.update(zip(node.outputs, outs if isinstance(outs, tuple) else (outs,)))
        return b.build([self.env[v] for v in self.graph.outputs])

    def rewrite(self, node: Node):
        ins = [self.env[v] for v in node.inputs]
        complex_node = any(v.type.dtype.is_complex for v in (*node.inputs, *node.outputs))
        if not complex_node:
            return self.b.op(node.op, *ins, **node.attrs)
        if node.op in EXTERN_NAMES:
            return self.extern(EXTERN_NAMES[node.op], node, ins)
        rule = RULES.get(node.op)
        if rule is None:  # a complex op added to the op table without a pair rule here
            raise NotImplementedError(f"the triton backend has no float-pair rule for complex {node.op!r} "
                                      f"(backends/triton/complex_pairs.py)")
        return rule(self, node, ins)

    def extern(self, name: str, node: Node, ins: list[Value]) -> Value:
        """``node`` as one extern call ``name`` on the pairs (a node of no op-table op: the
        scheduler runs it through extern.TABLE)."""
        types = [pair_type(v.type) for v in node.outputs]
        extern = Node(name, ins, node.attrs, types, self.b.loc)
        self.b.nodes.append(extern)
        return extern.outputs[0]

    # -- parts ----------------------------------------------------------------------------

    def parts(self, p: Value) -> tuple[Value, Value]:
        """(real, imag) of a pair value ``p: f[S,2]``, each ``f[S]`` (built once per value)."""
        if p not in self._parts:
            b, shape = self.b, tuple(p.type.shape[:-1])
            rank = len(shape)

            def part(i: int) -> Value:
                cut = b.slice(p, start_indices=[0] * rank + [i], limit_indices=[*shape, i + 1],
                              strides=[1] * (rank + 1))
                return b.reshape(cut, shape=list(shape))

            self._parts[p] = (part(0), part(1))
        return self._parts[p]

    def pair(self, re: Value, im: Value) -> Value:
        b, shape = self.b, list(re.type.shape)
        return b.concatenate(b.reshape(re, shape=[*shape, 1]), b.reshape(im, shape=[*shape, 1]),
                             dimension=len(shape))

    def wide_parts(self, p: Value) -> tuple[Value, Value]:
        """The parts in float64 (exact for c64's float32 parts)."""
        return tuple(self.to(x, DType.float64) for x in self.parts(p))

    def to(self, x: Value, dtype: DType) -> Value:
        return x if x.type.dtype is dtype else self.b.convert(x, dtype=dtype)

    def narrow_pair(self, re: Value, im: Value, node: Node) -> Value:
        """float64 parts rounded once each to the result's part dtype, as a pair."""
        part = node.outputs[0].type.dtype.real_dtype
        return self.pair(self.to(re, part), self.to(im, part))

    def scalar(self, value: float, like: Value) -> Value:
        b = self.b
        c = b.constant(np.array(value, like.type.dtype.numpy))
        return b.broadcast_in_dim(c, shape=list(like.type.shape), broadcast_dimensions=[])


def _axis(axis: int, rank: int) -> int:
    return axis % rank if rank else axis


# -- rules: rule(rewriter, node, pair operands) -> the pair result -----------------------------

def _complex(rw, node, ins):
    return rw.pair(*ins)


def _real(rw, node, ins):
    return rw.parts(ins[0])[0]


def _imag(rw, node, ins):
    return rw.parts(ins[0])[1]


def _conj(rw, node, ins):
    re, im = rw.parts(ins[0])
    return rw.pair(re, rw.b.neg(im))


def _same(op: str):
    """An op that acts on each part alone (neg, add, sub): the same op on the pair."""
    def rule(rw, node, ins):
        return rw.b.op(op, *ins)

    return rule


def _mul(rw, node, ins):
    # (ac - bd) + (ad + bc)i, as NumPy's complex128 product; float32 products are exact in float64
    b = rw.b
    (a, bi), (c, d) = rw.wide_parts(ins[0]), rw.wide_parts(ins[1])
    return rw.narrow_pair(b.sub(b.mul(a, c), b.mul(bi, d)), b.add(b.mul(a, d), b.mul(bi, c)), node)


def _div(rw, node, ins):
    # Smith's algorithm as NumPy's complex128 division (numpy/_core/src/umath/loops.c.src):
    # scale by the divisor's larger part; a zero divisor divides the parts by +0.0
    b = rw.b
    (a, bi), (c, d) = rw.wide_parts(ins[0]), rw.wide_parts(ins[1])
    ac, ad = b.abs(c), b.abs(d)
    one = rw.scalar(1.0, c)
    # |c| >= |d|: rat = d/c, scl = 1/(c + d·rat), ((a + b·rat)·scl, (b - a·rat)·scl)
    rat1 = b.div(d, c)
    scl1 = b.div(one, b.add(c, b.mul(d, rat1)))
    re1, im1 = b.mul(b.add(a, b.mul(bi, rat1)), scl1), b.mul(b.sub(bi, b.mul(a, rat1)), scl1)
    # |c| < |d|: rat = c/d, scl = 1/(d + c·rat), ((a·rat + b)·scl, (b·rat - a)·scl)
    rat2 = b.div(c, d)
    scl2 = b.div(one, b.add(d, b.mul(c, rat2)))
    re2, im2 = b.mul(b.add(b.mul(a, rat2), bi), scl2), b.mul(b.sub(b.mul(bi, rat2), a), scl2)
    # both parts zero: (a / |c|, b / |c|)
    re0, im0 = b.div(a, ac), b.div(bi, ac)
    zero = rw.scalar(0.0, c)
    first = b.ge(ac, ad)
    both_zero = b.logical_and(b.eq(ac, zero), b.eq(ad, zero))
    re = b.select(first, b.select(both_zero, re0, re1), re2)
    im = b.select(first, b.select(both_zero, im0, im1), im2)
    return rw.narrow_pair(re, im, node)


def _complex_abs(rw, node, ins):
    # |z| = m·√(1 + (n/m)²), m = max(|re|, |im|), n = the other (no overflow nor underflow);
    # inf if a part is infinite (even beside a NaN), 0 for 0. c64: √(re² + im²) in float64, exact
    # squares, then rounded once.
    b = rw.b
    re, im = rw.wide_parts(ins[0])
    are, aim = b.abs(re), b.abs(im)
    inf = rw.scalar(np.inf, re)
    infinite = b.logical_or(b.eq(are, inf), b.eq(aim, inf))
    if node.inputs[0].type.dtype is DType.complex64:
        r = b.sqrt(b.add(b.mul(re, re), b.mul(im, im)))
    else:
        m, n = b.max(are, aim), b.min(are, aim)
        zero = rw.scalar(0.0, re)
        q = b.div(n, b.select(b.eq(m, zero), rw.scalar(1.0, re), m))
        r = b.mul(m, b.sqrt(b.add(rw.scalar(1.0, re), b.mul(q, q))))
    return rw.to(b.select(infinite, inf, r), node.outputs[0].type.dtype)


def _c64_kernel(formula):
    """exp, log, sqrt: c64 as ``formula`` over the float64 parts, each part rounded once (float32
    parts neither overflow nor underflow there, and float64 carries the cancellations of
    log near |z| = 1); c128 has no wider type, so it is the extern call ``complex_<op>``
    (torch in complex128: scaled overflow and log1p forms would be needed by hand)."""
    def rule(rw, node, ins):
        if node.inputs[0].type.dtype is not DType.complex64:
            return rw.extern(f"complex_{node.op}", node, ins)
        re, im = formula(rw, *rw.wide_parts(ins[0]))
        return rw.narrow_pair(re, im, node)

    return rule


def _exp(rw, a, bi):
    # e^a·(cos b + i sin b); a zero imaginary part stays as it is (inf·sin 0 would be NaN)
    b = rw.b
    ea = b.exp(a)
    im = b.select(b.eq(bi, rw.scalar(0.0, bi)), bi, b.mul(ea, b.sin(bi)))
    return b.mul(ea, b.cos(bi)), im


def _log(rw, a, bi):
    # log|z| + i·atan2(b, a); |z|² of float32 parts is exact enough in float64 (no log1p needed)
    b = rw.b
    return b.mul(rw.scalar(0.5, a), b.log(b.add(b.mul(a, a), b.mul(bi, bi)))), b.atan2(bi, a)


def _sqrt(rw, a, bi):
    # C99's csqrt: t = √((|a| + |z|)/2); a >= 0: (t, b/2t), else (|b|/2t, t with b's sign);
    # 0 → (0, b). The sign of b, -0.0 included, is 1/b < 0.
    b = rw.b
    zero, half = rw.scalar(0.0, a), rw.scalar(0.5, a)
    t = b.sqrt(b.mul(b.add(b.abs(a), b.sqrt(b.add(b.mul(a, a), b.mul(bi, bi)))), half))
    two_t = b.add(t, t)
    negative_b = b.lt(b.div(rw.scalar(1.0, bi), bi), zero)
    right = b.ge(a, zero)
    re = b.select(right, t, b.div(b.abs(bi), two_t))
    im = b.select(right, b.div(bi, two_t), b.select(negative_b, b.neg(t), t))
    origin = b.logical_and(b.eq(a, zero), b.eq(bi, zero))
    return b.select(origin, zero, re), b.select(origin, bi, im)


def _angle(rw, node, ins):
    re, im = rw.parts(ins[0])
    return rw.b.atan2(im, re)


def _compare(op: str, combine: str):
    def rule(rw, node, ins):
        (a, bi), (c, d) = rw.parts(ins[0]), rw.parts(ins[1])
        return rw.b.op(combine, rw.b.op(op, a, c), rw.b.op(op, bi, d))

    return rule


def _select(rw, node, ins):
    pred, x, y = ins
    rank = pred.type.rank
    wide = rw.b.broadcast_in_dim(pred, shape=list(x.type.shape), broadcast_dimensions=list(range(rank)))
    return rw.b.select(wide, x, y)


def _convert(rw, node, ins):
    (x,), dst = ins, node.attrs["dtype"]
    part = dst.real_dtype
    if node.inputs[0].type.dtype.is_complex:  # complex → complex: each part rounded once
        return rw.to(x, part)
    re = rw.to(x, part)  # a real x is the real part; the imaginary part is +0.0
    return rw.pair(re, rw.scalar(0.0, re))


def _constant(rw, node, ins):
    value = np.asarray(node.attrs["value"])
    if not np.iscomplexobj(value):
        return rw.b.op("constant", **node.attrs)
    part = node.outputs[0].type.dtype.real_dtype.numpy
    return rw.b.constant(np.stack([value.real, value.imag], axis=-1).astype(part))


def _reshape(rw, node, ins):
    return rw.b.reshape(ins[0], shape=[*node.attrs["shape"], 2])


def _broadcast(rw, node, ins):
    a = node.attrs
    return rw.b.broadcast_in_dim(ins[0], shape=[*a["shape"], 2],
                                 broadcast_dimensions=[*a["broadcast_dimensions"], len(a["shape"])])


def _transpose(rw, node, ins):
    perm = list(node.attrs["permutation"])
    return rw.b.transpose(ins[0], permutation=[*perm, len(perm)])


def _slice(rw, node, ins):
    a = node.attrs
    return rw.b.slice(ins[0], start_indices=[*a["start_indices"], 0], limit_indices=[*a["limit_indices"], 2],
                      strides=[*a["strides"], 1])


def _concatenate(rw, node, ins):
    return rw.b.concatenate(*ins, dimension=_axis(node.attrs["dimension"], node.outputs[0].type.rank))


def _pad(rw, node, ins):
    # one padding value per part: pad each part, then pair them again
    (x, v), b = ins, rw.b
    (re, im), (vre, vim) = rw.parts(x), rw.parts(v)
    return rw.pair(b.pad(re, vre, **node.attrs), b.pad(im, vim, **node.attrs))


def _reverse(rw, node, ins):
    rank = node.outputs[0].type.rank
    return rw.b.reverse(ins[0], dimensions=[_axis(d, rank) for d in node.attrs["dimensions"]])


def _reduce_sum(rw, node, ins):
    rank = node.inputs[0].type.rank
    return rw.b.reduce_sum(ins[0], axes=[_axis(d, rank) for d in node.attrs["axes"]])


def _dot_general(rw, node, ins):
    # Σ(a + bi)(c + di) as two real contractions over twice the length: [a, b]·[c, -d] and
    # [a, b]·[d, c], concatenated along the last contracted axis (index rewrites: no copies), in
    # the parts' own dtype: one dot kernel per part, each part one sum, as a real dot of 2K terms
    b, attrs = rw.b, node.attrs
    (a, bi), (c, d) = rw.parts(ins[0]), rw.parts(ins[1])
    if not attrs["lhs_contracting_dims"]:  # an outer product: no axis to stack the parts on
        return rw.pair(b.sub(b.dot_general(a, c, **attrs), b.dot_general(bi, d, **attrs)),
                       b.add(b.dot_general(a, d, **attrs), b.dot_general(bi, c, **attrs)))
    lhs_axis = _axis(attrs["lhs_contracting_dims"][-1], a.type.rank)
    rhs_axis = _axis(attrs["rhs_contracting_dims"][-1], c.type.rank)
    lhs = b.concatenate(a, bi, dimension=lhs_axis)
    re = b.dot_general(lhs, b.concatenate(c, b.neg(d), dimension=rhs_axis), **attrs)
    im = b.dot_general(lhs, b.concatenate(d, c, dimension=rhs_axis), **attrs)
    return rw.pair(re, im)


Rule = Callable[[_Rewriter, Node, list], Value]
RULES: dict[str, Rule] = {
    "complex": _complex, "real": _real, "imag": _imag, "conj": _conj, "complex_abs": _complex_abs, "angle": _angle,
    "exp": _c64_kernel(_exp), "log": _c64_kernel(_log), "sqrt": _c64_kernel(_sqrt),
    "neg": _same("neg"), "add": _same("add"), "sub": _same("sub"), "mul": _mul, "div": _div,
    "eq": _compare("eq", "logical_and"), "ne": _compare("ne", "logical_or"), "select": _select, "convert": _convert,
    "constant": _constant, "reshape": _reshape, "broadcast_in_dim": _broadcast, "transpose": _transpose,
    "slice": _slice, "concatenate": _concatenate, "pad": _pad, "reverse": _reverse,
    "reduce_sum": _reduce_sum, "dot_general": _dot_general,
}
