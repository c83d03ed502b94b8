"""Values of a dtype the IR lacks (float8, quantized), and complex values where a backend
declines them: a short error naming the op or the user's parameter and line under
``strict=True``; with ``strict=False`` the ops that touch them run in eager torch (one
warning per call, a line per op) and the rest stays on the backend."""

import re
import sys

import pytest
import torch

import parity
from parity.frontend.errors import FallbackWarning, UnsupportedAtenOp


def rfft_abs(x):
    return torch.fft.rfft(x).abs() + 1


def times_2j(x):
    return torch.view_as_real(x * 2j) * 3


def complex_round_trip(x):
    return torch.view_as_real(torch.view_as_complex(x.reshape(4, 2)) * 2) + 1


def float8_cast(x):
    return x.to(torch.float8_e4m3fn).to(torch.float32) * 2


def quantized(x):
    return torch.quantize_per_tensor(x, 0.1, 0, torch.quint8).dequantize() * 2


def quantized_signed(x):
    return torch.quantize_per_tensor(x, 0.05, 3, torch.qint8).dequantize() - 1


IR_DTYPES = "bool, i8, i16, i32, i64, u8, u32, f16, bf16, f32, f64, c64, c128"
# (fn, the dtype, the aten ops that touch it: they run eagerly, the first is named by strict=True)
FOREIGN = [(float8_cast, "float8_e4m3fn", ["aten._to_copy.default"]),
           (quantized, "quint8", ["aten.quantize_per_tensor.default", "aten.dequantize.self"]),
           (quantized_signed, "qint8", ["aten.quantize_per_tensor.default", "aten.dequantize.self"])]


@pytest.mark.parametrize("backend", ["onnx", "xla"])
@pytest.mark.parametrize("fn, dtype, eager_ops", FOREIGN, ids=[f[0].__name__ for f in FOREIGN])
def test_a_dtype_the_ir_lacks_is_a_short_strict_error_and_runs_eagerly_otherwise(fn, dtype, eager_ops, backend):
    import warnings

    torch._dynamo.reset()
    x = torch.randn(8)
    with pytest.raises(UnsupportedAtenOp) as caught:
        parity.compile(fn, backend=backend)(x)
    assert str(caught.value).splitlines() == [
        f"{eager_ops[0]} at {__file__}:{fn.__code__.co_firstlineno + 1} in {fn.__name__} cannot run on backend {backend!r}",
        f"  why: parity's IR has no {dtype} dtype; its dtypes are {IR_DTYPES}",
        f"  fix: pass strict=False to run only this op eagerly in torch (the rest of the graph stays on {backend!r})"]
    torch._dynamo.reset()
    compiled = parity.compile(fn, backend=backend, strict=False)
    with warnings.catch_warnings(record=True) as caught_warnings:
        warnings.simplefilter("always")
        got = compiled(x)
        again = compiled(x)
    torch.testing.assert_close(got, fn(x), rtol=0, atol=0)
    torch.testing.assert_close(again, got, rtol=0, atol=0)
    (warning,) = [str(w.message) for w in caught_warnings if issubclass(w.category, FallbackWarning)]
    # one warning, on the first call only: a line per op when there are several
    eager = warning.splitlines()[1:] if len(eager_ops) > 1 else [warning]
    assert [m.split()[0 if len(eager_ops) > 1 else 1] for m in eager] == eager_ops
    if len(eager_ops) > 1:
        head = re.fullmatch(rf"parity: {len(eager_ops)} ops \((\d+) aten nodes\) run eagerly in torch, not on "
                            rf"backend {re.escape(repr(backend))}", warning.splitlines()[0])
        assert head and int(head.group(1)) >= len(eager_ops), warning
    # fake tensors show a quantized value as float: only the op with the dtype argument names it
    named = eager[:1] if dtype.startswith(("quint", "qint")) else eager
    assert all(f"parity's IR has no {dtype} dtype" in m for m in named), eager
    (report,) = parity.fallbacks(compiled)
    assert {f.aten_op for f in report.fallbacks} == set(eager_ops)
    assert report.on_backend >= 1  # the real part stays on the backend


def complex_argument(z, w):
    return (z * 2).real + w


def float8_argument(z, w):
    return z.float() * 2 + w


def test_a_complex_argument_is_an_ir_value_on_every_builtin_and_declined_at_its_first_op_on_the_plugin():
    z, w = torch.randn(3, dtype=torch.complex64), torch.randn(3)
    torch._dynamo.reset()
    for backend in ("xla", "onnx", "triton", "inductor"):  # onnx, triton: complex values travel as float parts
        torch._dynamo.reset()
        torch.testing.assert_close(parity.compile(complex_argument, backend=backend)(z, w), complex_argument(z, w))
    torch._dynamo.reset()
    with pytest.raises(UnsupportedAtenOp) as caught:  # the plugin template declines complex numbers
        parity.compile(complex_argument, backend="numpy")(z, w)
    line = complex_argument.__code__.co_firstlineno + 1
    assert str(caught.value).splitlines()[0] == (f"aten.mul.Tensor at {__file__}:{line} in complex_argument cannot "
                                                 "run on backend 'numpy'")


@pytest.mark.parametrize("fn, dtype", [(float8_argument, torch.float8_e4m3fn)], ids=["float8_e4m3fn"])
def test_an_argument_of_a_dtype_the_ir_lacks_is_named_as_the_users_parameter(fn, dtype):
    import warnings

    z, w = torch.randn(3).to(dtype), torch.randn(3)
    name, line = str(dtype).removeprefix("torch."), fn.__code__.co_firstlineno
    for options in ({}, {"fullgraph": True}):
        torch._dynamo.reset()
        with pytest.raises(UnsupportedAtenOp) as caught:
            parity.compile(fn, backend="onnx", **options)(z, w)
        first, why = str(caught.value).splitlines()[:2]  # AOTAutograd's name was 'input arg0_1', at the call
        assert first == f"input z at {__file__}:{line} in {fn.__name__} cannot run on backend 'onnx'"
        assert why == f"  why: parity's IR has no {name} dtype; its dtypes are {IR_DTYPES}"
    torch._dynamo.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FallbackWarning)
        assert torch.equal(parity.compile(fn, backend="onnx", strict=False)(z, w), fn(z, w))


def dequantized(x):
    return x.dequantize() * 2


@pytest.mark.parametrize("dtype", [torch.quint8, torch.qint8], ids=["quint8", "qint8"])
def test_a_quantized_argument_is_a_short_strict_error_and_one_eager_call_otherwise(dtype, capfd):
    import warnings

    # Dynamo cannot make a fake tensor of a quantized one: left to itself it runs the whole
    # frame eagerly with one log line and nothing parity could report, even with strict=True
    q = torch.quantize_per_tensor(torch.randn(8), 0.1, 3, dtype)
    name, line = str(dtype).removeprefix("torch."), dequantized.__code__.co_firstlineno
    with pytest.raises(UnsupportedAtenOp) as caught:
        parity.compile(dequantized, backend="onnx")(q)
    assert str(caught.value).splitlines() == [
        f"input x at {__file__}:{line} in dequantized cannot run on backend 'onnx'",
        f"  why: parity's IR has no {name} dtype; its dtypes are {IR_DTYPES}",
        "  fix: dequantize it before the call (x.dequantize()); or pass strict=False to run the whole call in eager "
        "torch (Dynamo cannot trace a quantized tensor)"]
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
    with pytest.raises(UnsupportedAtenOp, match=r"\(x.dequantize\(\)\); fullgraph=True runs every op on the backend"):
        parity.compile(dequantized, backend="onnx", fullgraph=True)(q)
    compiled = parity.compile(dequantized, backend="onnx", strict=False)
    with warnings.catch_warnings(record=True) as caught_warnings:
        warnings.simplefilter("always")
        assert torch.equal(compiled(q), dequantized(q))
        assert torch.equal(compiled(q), dequantized(q))
    (w,) = [w for w in caught_warnings if issubclass(w.category, FallbackWarning)]
    assert (w.filename, w.lineno) == (__file__, line)
    assert str(w.message) == (f"parity: input x at {__file__}:{line} in dequantized runs eagerly in torch, not on "
                              f"backend 'onnx' (parity's IR has no {name} dtype; its dtypes are {IR_DTYPES}; Dynamo "
                              "cannot trace it: the whole call runs eagerly)")
    assert "fake tensor" not in capfd.readouterr().err


class QuantizedWeight(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("wq", torch.quantize_per_tensor(torch.randn(4, 4), 0.1, 0, torch.qint8))

    def forward(self, x):
        return x @ self.wq.dequantize()


def test_a_module_with_a_quantized_buffer_is_an_eager_island_parity_reports(capfd):
    import warnings

    from parity.frontend.graph_breaks import GraphBreakError, GraphBreakWarning

    # Dynamo cannot make a fake tensor of the buffer: it runs the whole forward in eager torch
    # and records no graph break; its one trace of that is a log line
    model, x = QuantizedWeight(), torch.randn(2, 4)
    line = QuantizedWeight.forward.__code__.co_firstlineno + 1
    why = ("Dynamo cannot make a fake tensor of self.wq (qint8) (torch: quantized nyi in meta tensors), so it runs "
           "the whole function in eager torch")
    torch._dynamo.reset()
    with pytest.raises(GraphBreakError) as caught:
        parity.compile(model, backend="onnx", fullgraph=True)(x)
    assert str(caught.value).splitlines()[:2] == [
        f"parity.compile(fullgraph=True): the code at {__file__}:{line} in forward would run in eager torch, not on "
        "'onnx'", f"  why: {why}"]
    torch._dynamo.reset()
    with warnings.catch_warnings(record=True) as caught_warnings:
        warnings.simplefilter("always")
        assert torch.equal(parity.compile(model, backend="onnx")(x), model(x))
    (w,) = [w for w in caught_warnings if issubclass(w.category, GraphBreakWarning)]
    assert (w.filename, w.lineno) == (__file__, line)
    assert str(w.message).splitlines() == [
        f"parity.compile: the function at {__file__}:{line} in forward runs in eager torch, not on 'onnx'",
        f"  why: {why}",
        "  fix: keep such values out of the compiled function (dequantize a quantized weight once, outside it); "
        "fullgraph=True makes this an error"]
    with pytest.raises(GraphBreakError, match="Dynamo gave up on this function at an earlier call"):
        parity.compile(model, backend="onnx", fullgraph=True)(x)  # Dynamo remembers the skip: it tries nothing
    report = parity.explain(model, x, backends=["onnx"])
    assert [(b.reason, str(b.loc)) for b in report.breaks] == [(why, f"{__file__}:{line} in forward")]
    assert "fake tensor propagation" not in capfd.readouterr().err


def test_a_graph_break_inside_torchs_own_modules_is_located_at_the_compile_call():
    import warnings

    from parity.frontend.graph_breaks import GraphBreakWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # torch.ao.quantization's notice of its own future
        model = torch.ao.quantization.quantize_dynamic(torch.nn.Sequential(torch.nn.Linear(4, 3)),
                                                       {torch.nn.Linear}, dtype=torch.qint8)
    compiled, line = parity.compile(model, backend="onnx"), sys._getframe().f_lineno
    x = torch.randn(2, 4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert torch.equal(compiled(x), model(x))
    (w,) = [w for w in caught if issubclass(w.category, GraphBreakWarning)]  # torch's quantized linear
    assert (w.filename, w.lineno) == (__file__, line)
    assert str(w.message).startswith(f"parity.compile: Dynamo split the function at {__file__}:{line} in ")

    def user_forward(x):
        return model(x) + 1  # the user's line that called into torch's module

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert torch.equal(parity.compile(user_forward, backend="onnx")(x), model(x) + 1)
    (w,) = [w for w in caught if issubclass(w.category, GraphBreakWarning)]
    assert (w.filename, w.lineno) == (__file__, user_forward.__code__.co_firstlineno + 1)


# (fn, the aten ops that touch a complex value, and the IR op the plugin template names: it declines
# complex numbers, where every built-in backend runs them)
COMPLEX = [(rfft_abs, ["aten._fft_r2c.default", "aten.abs.default"], "rfft"),
           (times_2j, ["aten.mul.Tensor", "aten.view_as_real.default"], "constant"),
           (complex_round_trip, ["aten.view_as_complex.default", "aten.mul.Tensor", "aten.view_as_real.default"],
            "complex")]


@pytest.mark.parametrize("fn, eager_ops, ir_op", COMPLEX, ids=[f[0].__name__ for f in COMPLEX])
def test_complex_code_runs_on_every_builtin_and_is_declined_with_the_reason_on_the_plugin(fn, eager_ops, ir_op):
    import warnings

    torch._dynamo.reset()
    x = torch.randn(8)
    for backend in ("xla", "onnx", "triton", "inductor"):
        torch._dynamo.reset()
        torch.testing.assert_close(parity.compile(fn, backend=backend)(x), fn(x), rtol=1e-5, atol=1e-5)
    torch._dynamo.reset()
    with pytest.raises(UnsupportedAtenOp) as caught:
        parity.compile(fn, backend="numpy")(x)
    lines = str(caught.value).splitlines()
    assert lines[0] == (f"{eager_ops[0]} at {__file__}:{fn.__code__.co_firstlineno + 1} in {fn.__name__} cannot run "
                        "on backend 'numpy'")
    assert f"the IR op {ir_op!r}" in lines[1] and "the numpy template has no complex kernels" in lines[1]
    torch._dynamo.reset()
    compiled = parity.compile(fn, backend="numpy", strict=False)
    with warnings.catch_warnings(record=True) as caught_warnings:
        warnings.simplefilter("always")
        got = compiled(x)
    torch.testing.assert_close(got, fn(x), rtol=0, atol=0)
    (warning,) = [str(w.message) for w in caught_warnings if issubclass(w.category, FallbackWarning)]
    eager = warning.splitlines()[1:] if len(eager_ops) > 1 else [warning]  # one warning, a line per op
    assert [m.split()[0 if len(eager_ops) > 1 else 1] for m in eager] == eager_ops
