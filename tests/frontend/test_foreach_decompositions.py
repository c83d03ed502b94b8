"""The ``_foreach_*`` list ops, decomposed per tensor (frontend/foreach_decompositions.py), give
eager torch's results: each case is traced with parity's decomposition table, translated and run
by the reference interpreter. Lists hold tensors of different shapes and scalar lists different
values, so a mixed-up element shows."""

import pytest
import torch

aten = torch.ops.aten
# the longest per-tensor op here (addcmul, addcdiv, lerp) is three correctly rounded operations,
# in eager's kernel and in the IR's decomposition alike, maybe in another order: each result is
# within 1.5 ULP of exact, so the two are at most 3 ULP (3 eps relative) apart
ROUNDINGS = 3


def _lists(n: int = 3, seed: int = 0) -> list[list[torch.Tensor]]:
    g = torch.Generator().manual_seed(seed)
    shapes = [(2, 3), (4,), (1, 5)]
    return [[torch.rand(shapes[i], generator=g) + 0.5 for i in range(3)] for _ in range(n)]


CASES = {
    "add.List alpha": lambda a, b, c: aten._foreach_add.List(a, b, alpha=-0.25),
    "add.Scalar": lambda a, b, c: aten._foreach_add.Scalar(a, 1.5),
    "add.ScalarList": lambda a, b, c: aten._foreach_add.ScalarList(a, [1.0, -2.0, 3.5]),
    "add.Tensor": lambda a, b, c: aten._foreach_add.Tensor(a, b[0].sum(), alpha=2.0),
    "sub.ScalarList": lambda a, b, c: aten._foreach_sub.ScalarList(a, [0.5, 1.5, 2.5]),
    "mul.Tensor": lambda a, b, c: aten._foreach_mul.Tensor(a, c[1].mean()),
    "div.List": lambda a, b, c: aten._foreach_div.List(a, b),
    "div.ScalarList": lambda a, b, c: aten._foreach_div.ScalarList(a, [2.0, 3.0, 5.0]),
    "pow.ScalarAndTensor": lambda a, b, c: aten._foreach_pow.ScalarAndTensor(0.9, a),
    "pow.List": lambda a, b, c: aten._foreach_pow.List(a, b),
    "lerp.Scalar": lambda a, b, c: aten._foreach_lerp.Scalar(a, b, 0.1),
    "lerp.List": lambda a, b, c: aten._foreach_lerp.List(a, b, c),
    "lerp.ScalarList": lambda a, b, c: aten._foreach_lerp.ScalarList(a, b, [0.1, 0.7, 0.3]),
    "addcdiv.Scalar": lambda a, b, c: aten._foreach_addcdiv.Scalar(a, b, c, -0.01),
    "addcdiv.ScalarList": lambda a, b, c: aten._foreach_addcdiv.ScalarList(a, b, c, [0.1, -0.2, 0.3]),
    "addcmul.ScalarList": lambda a, b, c: aten._foreach_addcmul.ScalarList(a, b, c, [0.5, 2.0, -1.0]),
    "maximum.List": lambda a, b, c: aten._foreach_maximum.List(a, b),
    "clamp_min.Scalar": lambda a, b, c: aten._foreach_clamp_min.Scalar(a, 1.0),
    "sqrt": lambda a, b, c: aten._foreach_sqrt.default(a),
    "neg": lambda a, b, c: aten._foreach_neg.default(a),
    "norm": lambda a, b, c: aten._foreach_norm.Scalar(a, 2),
    "norm ord 1": lambda a, b, c: aten._foreach_norm.Scalar(a, 1),
}


@pytest.mark.parametrize("name", list(CASES))
def test_foreach_op_matches_eager(name, via_ir):
    a, b, c = _lists()
    fn = CASES[name]

    def flat(*tensors):
        return tuple(fn(list(tensors[0:3]), list(tensors[3:6]), list(tensors[6:9])))

    expected = flat(*a, *b, *c)
    got = via_ir(flat, *a, *b, *c)
    assert len(got) == len(expected) == 3
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e, rtol=ROUNDINGS * torch.finfo(torch.float32).eps, atol=0)


def test_a_foreach_op_the_table_leaves_out_stays_whole(to_ir):
    """The per-list-scalars tensor overload has no per-tensor op with a Python number: it is
    not decomposed, and the translation names it."""
    from parity.frontend.errors import UnsupportedAtenOp

    a, b, c = _lists()

    def fn(*t):
        return tuple(aten._foreach_addcdiv.Tensor(list(t[0:3]), list(t[3:6]), list(t[6:9]), torch.ones(3)))

    with pytest.raises(UnsupportedAtenOp, match="_foreach_addcdiv.Tensor"):
        to_ir(fn, *a, *b, *c)
