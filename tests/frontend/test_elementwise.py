"""Elementwise translations: torch's promotion rules, Python's floor division and modulo,
comparisons, predicates and activations, checked element by element against eager torch."""

import math

import pytest
import torch

from parity.ir import DType


def _same(actual, expected):
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    torch.testing.assert_close(actual, expected, rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("fn", [torch.floor_divide, torch.remainder, torch.fmod], ids=["floordiv", "remainder", "fmod"])
def test_integer_floor_division_and_modulo_follow_python(via_ir, fn):
    a = torch.tensor([7, -7, 7, -7, 0, 5, -128], dtype=torch.int64)
    b = torch.tensor([2, 2, -2, -2, 3, 5, 3], dtype=torch.int64)
    (out,) = via_ir(fn, a, b)
    _same(out, fn(a, b))
    if fn is torch.floor_divide:
        assert out.tolist() == [3, -4, -4, 3, 0, 1, -43]


def test_float_floor_division_and_remainder_match_torch_edge_cases(via_ir):
    a = torch.tensor([7.5, -7.5, 1.0, -1.0, 0.0, -0.0, math.inf, 1.0, math.nan, 5.0], dtype=torch.float32)
    b = torch.tensor([2.0, 2.0, -3.0, 3.0, 3.0, 3.0, 2.0, 0.0, 1.0, -0.5], dtype=torch.float32)
    fd, rm = via_ir(lambda x, y: (x // y, x % y), a, b)
    _same(fd, a // b)
    _same(rm, a % b)
    assert torch.signbit(fd[5]) and fd[1].item() == -4.0  # -0.0 // 3 is -0.0; -7.5 // 2 is -4


@pytest.mark.parametrize("case", ["int+float", "int_tensor+float_scalar", "f16+f32_scalar_tensor",
                                  "bool_mask*float", "int/int", "i32+i64_scalar_tensor"])
def test_type_promotion_is_torchs(via_ir, case):
    i = torch.tensor([1, -2, 3], dtype=torch.int32)
    f = torch.tensor([0.5, 1.5, -2.5])
    h = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float16)
    m = torch.tensor([True, False, True])
    fns = {
        "int+float": (lambda x, y: x + y, (i, f)),
        "int_tensor+float_scalar": (lambda x: x + 2.5, (i,)),
        "f16+f32_scalar_tensor": (lambda x, y: x * y, (h, torch.tensor(3.0))),
        "bool_mask*float": (lambda x, y: x * y, (m, f)),
        "int/int": (lambda x, y: x / y, (i, torch.tensor([2, 4, -2], dtype=torch.int32))),
        "i32+i64_scalar_tensor": (lambda x, y: x + y, (i, torch.tensor(7))),
    }
    fn, args = fns[case]
    (out,) = via_ir(fn, *args)
    _same(out, fn(*args))


def test_comparisons_promote_before_comparing_and_broadcast(via_ir):
    i = torch.tensor([[1], [2], [3]], dtype=torch.int64)
    f = torch.tensor([1.5, 2.0, math.nan])
    outs = via_ir(lambda x, y: (x < y, x == y, x != y, x >= 2.0), i, f)
    for out, ref in zip(outs, (i < f, i == f, i != f, i >= 2.0)):
        _same(out, ref)


def test_integer_overflow_wraps_like_torch(via_ir):
    a = torch.tensor([2**31 - 1, -2**31], dtype=torch.int32)
    (out,) = via_ir(lambda x: x + 1, a)
    assert out.tolist() == [-2**31, -2**31 + 1]


def test_predicates_and_where_and_clamp(via_ir):
    x = torch.tensor([-math.inf, -1.0, -0.0, 0.5, math.nan, math.inf])
    outs = via_ir(lambda t: (torch.isnan(t), torch.isinf(t), torch.where(t > 0, t, 0.0),
                             torch.clamp(t, min=-0.5, max=0.25), torch.clamp(t, max=0.0)), x)
    refs = (torch.isnan(x), torch.isinf(x), torch.where(x > 0, x, 0.0), torch.clamp(x, -0.5, 0.25), torch.clamp(x, max=0.0))
    for out, ref in zip(outs, refs):
        _same(out, ref)


def test_unary_math_on_integers_goes_to_float(via_ir):
    i = torch.tensor([0, 1, 4], dtype=torch.int64)
    outs = via_ir(lambda t: (torch.sqrt(t), torch.exp(t), torch.abs(-t), torch.floor(t)), i)
    for out, ref in zip(outs, (torch.sqrt(i), torch.exp(i), torch.abs(-i), torch.floor(i))):
        assert out.dtype == ref.dtype
        torch.testing.assert_close(out, ref)


@pytest.mark.parametrize("fn", [torch.relu, lambda t: torch.nn.functional.gelu(t), torch.sigmoid,
                                lambda t: torch.nn.functional.silu(t), torch.tanh,
                                lambda t: torch.nn.functional.gelu(t, approximate="tanh"),
                                lambda t: torch.nn.functional.leaky_relu(t, 0.2), lambda t: torch.nn.functional.elu(t),
                                lambda t: torch.nn.functional.hardtanh(t, -0.5, 0.5), torch.log10])
def test_activations_match_eager(via_ir, fn):
    x = torch.tensor([-3.0, -0.5, -0.0, 0.0, 0.25, 2.0, 9.0])
    (out,) = via_ir(fn, x)
    torch.testing.assert_close(out, fn(x), rtol=1e-4, atol=1e-5, equal_nan=True)


def test_pow_of_integers_by_squaring(via_ir):
    i = torch.tensor([-3, 2, 7], dtype=torch.int64)
    (out,) = via_ir(lambda t: t ** 3, i)
    _same(out, i ** 3)


def test_graph_inputs_and_types_mirror_torch(to_ir):
    t = to_ir(lambda x, y: x + y, torch.ones(2, 3, dtype=torch.bfloat16), torch.ones(3, dtype=torch.bfloat16))
    assert [str(v.type) for v in t.graph.inputs] == ["bf16[2,3]", "bf16[3]"]
    assert t.graph.outputs[0].type.dtype is DType.bfloat16
