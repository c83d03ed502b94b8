"""Control flow: the ``loop`` op, with bodies that a rolled loop and the unrolled one must agree on.

Each case builds its body from the operand types (``Case.build``): a running sum, an affine
recurrence, a matrix recurrence (an RNN's step without its nonlinearity), exact bodies
(running maxima, an int32 counter beside a float carry, selects in every dtype the loop
accepts), a map without carries, carries
without ``ys``, one step, zero steps, ``reverse``, and values at the edge (inf and NaN
passing through the carry). Float bodies keep to sums and products, the class the loop's
bound is valid for (conformance/bounds.py, "loop"): a polynomial in the inputs, scaled by
itself on ``|inputs|``.
"""

from __future__ import annotations

import numpy as np

from ...ir.builder import GraphBuilder
from ...ir.dtypes import DType
from ...ir.ops import OP_TABLE
from ...ir.ops.control import row_type
from ...ir.types import tensor as _t
from .. import values as V
from ..case import Case, ErrorCase
from .common import EDGE, LAYOUT, case, ops_of

IR_FAMILIES = ("control",)
OPS = ops_of(IR_FAMILIES)

_FLOATS = (DType.float32, DType.float64, DType.float16, DType.bfloat16)


def _body(name: str, in_types, make) -> object:
    """A body graph on ``in_types`` whose outputs ``make(builder, *inputs)`` returns."""
    b = GraphBuilder(name)
    params = [b.input(t) for t in in_types]
    outs = make(b, *params)
    return b.build(list(outs))


def _looped(make, *, num_consts: int = 0, num_carry: int = 0, reverse: bool = False):
    """A ``Case.build`` that loops ``make``'s body over the case's operands."""
    def build(b, operands, attrs):
        types = [v.type for v in operands]
        consts, carry, xs = types[:num_consts], types[num_consts:num_consts + num_carry], types[num_consts + num_carry:]
        length = xs[0].shape[0] if xs else attrs["length"]
        body = _body("step", [*consts, *carry, *(row_type(x) for x in xs)], make)
        return b.loop(*operands, body=body, length=length, num_consts=num_consts, num_carry=num_carry,
                      reverse=reverse)

    return build


def _running_sum(b, total, x):
    new = b.add(total, x)
    return new, new


def _affine(b, a, h, x):  # h' = a*h + x; ys = h'*h'
    new = b.add(b.mul(a, h), x)
    return new, b.mul(new, new)


def _matrix(b, w, h, x):  # h' = h @ w + x
    product = b.dot_general(h, w, lhs_contracting_dims=(1,), rhs_contracting_dims=(0,), lhs_batch_dims=(),
                            rhs_batch_dims=())
    new = b.add(product, x)
    return new, new


def _max_and_count(b, m, count, x):  # exact: a running maximum beside an int32 counter
    one = b.constant(1, DType.int32)
    return b.max(m, x), b.add(count, one), b.max(m, x)


def _scaled_rows(b, scale, x):  # no carry: ys = scale * x
    return (b.mul(scale, x),)


def _sum_and_product(b, total, product, x):  # carries only, no ys
    return b.add(total, x), b.mul(product, x)


def _loop_case(d: DType, name: str, draw, make, tags=(), **loop) -> Case:
    return case("loop", d, name, draw, tags=tags or ("random",), build=_looped(make, **loop))


def _float_cases(d: DType) -> list[Case]:
    def n(rng, shape, scale=2.0):
        return V.normal(rng, d, shape, scale)

    return [
        _loop_case(d, "running_sum", lambda rng: (n(rng, (4,)), n(rng, (6, 4))), _running_sum, num_carry=1),
        _loop_case(d, "running_sum_reverse", lambda rng: (n(rng, (4,)), n(rng, (6, 4))), _running_sum,
                   num_carry=1, reverse=True),
        _loop_case(d, "one_step", lambda rng: (n(rng, (3,)), n(rng, (1, 3))), _running_sum, num_carry=1,
                   tags=(EDGE,)),
        _loop_case(d, "zero_steps", lambda rng: (n(rng, (3,)), n(rng, (0, 3))), _running_sum, num_carry=1,
                   tags=(EDGE,)),
        _loop_case(d, "affine", lambda rng: (n(rng, (3, 4), 0.5), n(rng, (3, 4)), n(rng, (5, 3, 4))), _affine,
                   num_consts=1, num_carry=1),
        _loop_case(d, "matrix", lambda rng: (n(rng, (4, 4), 0.5), n(rng, (2, 4)), n(rng, (5, 2, 4))), _matrix,
                   num_consts=1, num_carry=1),
        _loop_case(d, "max_and_count", lambda rng: (n(rng, (4,)), np.array(0, np.int32), n(rng, (7, 4))),
                   _max_and_count, num_carry=2),
        _loop_case(d, "no_carry", lambda rng: (n(rng, (4,)), n(rng, (3, 4))), _scaled_rows, num_consts=1),
        _loop_case(d, "no_ys", lambda rng: (n(rng, (5,)), n(rng, (5,), 1.0), n(rng, (4, 5), 1.0)), _sum_and_product,
                   num_carry=2, tags=(LAYOUT,)),
        # inf and NaN enter through the rows and stay in the carry from then on
        _loop_case(d, "specials", lambda rng: (np.zeros(V.specials(d).shape, d.numpy),
                                               np.stack([V.specials(d), np.flip(V.specials(d))])),
                   _running_sum, num_carry=1, tags=(EDGE,)),
    ]


def _int_cases() -> list[Case]:
    i32 = DType.int32

    def ints(rng, shape):
        return rng.integers(-1000, 1000, shape).astype(np.int32)

    return [
        _loop_case(i32, "running_sum", lambda rng: (ints(rng, (4,)), ints(rng, (6, 4))), _running_sum, num_carry=1),
        _loop_case(i32, "running_sum_reverse", lambda rng: (ints(rng, (4,)), ints(rng, (6, 4))), _running_sum,
                   num_carry=1, reverse=True),
    ]


def _latest(b, kept, x, keep):  # exact for every dtype: the carry takes the row where keep is set
    return b.select(keep, x, kept), kept


def _any_dtype_case(d: DType) -> Case:
    """A body of selects: every dtype the loop accepts (bool, the ints, complex) has a case."""
    def draw(rng):
        return (V.full_range(rng, d, (3,)), V.full_range(rng, d, (5, 3)), np.asarray(rng.random((5, 3)) < 0.5))
    return _loop_case(d, "latest_kept", draw, _latest, num_carry=1)


def cases() -> list[Case]:
    out = []
    for d in _FLOATS:
        out += _float_cases(d)
    out += _int_cases()
    return out + [_any_dtype_case(d) for d in OP_TABLE["loop"].dtypes]


def _error_body(in_types, out_types):
    """A body taking ``in_types`` whose outputs are ``out_types`` (zeros of them), for the error cases."""
    def make(b, *params):
        return [b.broadcast_in_dim(b.constant(0, t.dtype), shape=t.shape, broadcast_dimensions=()) for t in out_types]

    return _body("step", in_types, make)


_f32 = DType.float32
ERRORS = (
    ErrorCase("loop", (_t(_f32, 4), _t(_f32, 3, 4)),
              {"body": _error_body([_t(_f32, 4), _t(_f32, 5)], [_t(_f32, 4)]), "length": 3, "num_carry": 1},
              "the body takes (f32[4], f32[5])", "body_inputs"),
    ErrorCase("loop", (_t(_f32, 4), _t(_f32, 3, 4)),
              {"body": _error_body([_t(_f32, 4), _t(_f32, 4)], [_t(DType.float64, 4)]), "length": 3,
               "num_carry": 1},
              "of other types than it takes", "carry_changes_type"),
    ErrorCase("loop", (_t(_f32, 4), _t(_f32, 2, 4)),
              {"body": _error_body([_t(_f32, 4), _t(_f32, 4)], [_t(_f32, 4)]), "length": 3, "num_carry": 1},
              "needs a leading axis of the loop's length 3", "xs_length"),
    ErrorCase("loop", (_t(_f32, 4),),
              {"body": _error_body([_t(_f32, 4)], [_t(_f32, 4)]), "length": 3, "num_carry": 2},
              "do not split its 1 operand(s)", "counts"),
)
