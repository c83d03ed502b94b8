"""``torch.compile(m, backend="parity", options={...})``: torch finds parity through the
``torch_dynamo_backends`` entry point, and the result computes, trains and warns as
``parity.compile`` with the same options does (parity/dynamo_backend.py)."""

from __future__ import annotations

import warnings
from importlib.metadata import entry_points

import pytest
import torch
from torch._dynamo.exc import BackendCompilerFailed

import parity
from parity.frontend.compiled_graph import STATS
from parity.frontend.errors import FallbackWarning, UnsupportedAtenOp
from parity.frontend.graph_breaks import GraphBreakWarning


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()  # each test compiles its functions afresh (Dynamo caches per code object)
    yield
    torch._dynamo.reset()


class MLP(torch.nn.Module):
    """A user's module. (torch 2.13's ``Module.compile()`` skips torch's own classes, nn.Sequential and
    nn.Linear, as files on Dynamo's skip list, whatever the backend: Inductor's too.)"""

    def __init__(self):
        super().__init__()
        self.hidden, self.out = torch.nn.Linear(6, 8), torch.nn.Linear(8, 3)

    def forward(self, x):
        return self.out(torch.nn.functional.gelu(self.hidden(x)))


def mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    return MLP()


def train_step(model, x):
    """loss, and every parameter's gradient, of one backward through ``model``."""
    model.zero_grad()
    loss = model(x).square().mean()
    loss.backward()
    return loss.detach(), [p.grad.clone() for p in model.parameters()]


def test_torch_finds_parity_through_its_entry_point():
    from torch._dynamo.backends.registry import list_backends, lookup_backend

    from parity.dynamo_backend import parity_backend

    (found,) = [ep for ep in entry_points(group="torch_dynamo_backends") if ep.name == "parity"]
    assert found.load() is parity_backend
    assert "parity" in list_backends(exclude_tags=()) and lookup_backend("parity") is parity_backend


@pytest.mark.parametrize("backend", ["onnx", "xla"])
def test_module_forward_and_training_equal_parity_compile_bit_for_bit(backend):
    x = torch.randn(5, 6)
    ours, by_torch, by_method = mlp(), mlp(), mlp()
    reference_loss, reference_grads = train_step(parity.compile(ours, backend=backend), x)
    torch._dynamo.reset()  # each a first capture (a recompile of MLP.forward may turn sizes symbolic)
    translated = STATS["translations"]
    torch_loss, torch_grads = train_step(torch.compile(by_torch, backend="parity", options={"backend": backend}), x)
    assert STATS["translations"] == translated + 2  # parity translated its forward and backward graphs
    torch._dynamo.reset()
    by_method.compile(backend="parity", options={"backend": backend})
    method_loss, method_grads = train_step(by_method, x)
    assert STATS["translations"] == translated + 4
    eager_loss, _ = train_step(mlp(), x)
    assert torch.equal(torch_loss, reference_loss) and torch.equal(method_loss, reference_loss)
    assert all(torch.equal(a, b) and torch.equal(a, c)
               for a, b, c in zip(reference_grads, torch_grads, method_grads))
    torch.testing.assert_close(torch_loss, eager_loss)  # and parity's numbers are eager's, within the contract


def test_a_function_and_the_default_options_run_as_parity_compile(monkeypatch):
    monkeypatch.setenv("PARITY_BACKEND", "onnx")  # auto, forced to one backend: no race in a unit test

    def scaled_softplus(x, y):
        return torch.nn.functional.softplus(x) * y - x.exp()

    x, y = torch.randn(4, 3), torch.randn(4, 3)
    expected = parity.compile(scaled_softplus)(x, y)
    assert torch.equal(torch.compile(scaled_softplus, backend="parity")(x, y), expected)
    assert torch.equal(torch.compile(backend="parity")(scaled_softplus)(x, y), expected)  # as a decorator


def _warnings_of(run) -> list[tuple[type, str, str, int]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run()
    return [(w.category, str(w.message), w.filename, w.lineno) for w in caught
            if issubclass(w.category, (FallbackWarning, GraphBreakWarning))]


def bessel_then_item(x):
    y = torch.special.bessel_j0(x) * 2  # no translation: strict=False runs it in eager torch, with a warning
    scale = y.sum().item()  # a graph break: eager torch between two graphs, with a warning
    return torch.tanh(y) * scale


def test_fallback_and_graph_break_warnings_are_parity_compiles():
    x = torch.rand(4) + 0.5
    expected = _warnings_of(lambda: parity.compile(bessel_then_item, backend="onnx", strict=False)(x))
    torch._dynamo.reset()
    compiled = torch.compile(bessel_then_item, backend="parity", options={"backend": "onnx", "strict": False})
    got = _warnings_of(lambda: compiled(x))
    assert [category for category, *_ in expected] == [FallbackWarning, GraphBreakWarning]
    assert got == expected
    assert _warnings_of(lambda: compiled(x)) == []  # once, as parity.compile warns once
    torch.testing.assert_close(compiled(x), bessel_then_item(x))


def scatter_rows(x, v, mask):
    return torch.index_put(x, (mask,), v).sin()  # its gradient is grad[mask]: a size that depends on the data


def test_a_frame_run_eagerly_for_a_data_dependent_gradient_warns_as_parity_compile():
    x, v = torch.randn(5, 3, requires_grad=True), torch.randn(3, requires_grad=True)
    mask = torch.tensor([True, False, True, False, False])
    expected = _warnings_of(lambda: parity.compile(scatter_rows, backend="onnx")(x, v, mask))
    torch._dynamo.reset()
    got = _warnings_of(lambda: torch.compile(scatter_rows, backend="parity", options={"backend": "onnx"})(x, v, mask))
    assert [category for category, *_ in expected] == [GraphBreakWarning] and "depends on the data" in expected[0][1]
    assert got == expected


def _inner_error(run) -> BaseException:
    with pytest.raises(BackendCompilerFailed) as caught:  # torch.compile's wrapper around every backend's error
        run()
    assert f"backend='parity' raised:\n{type(caught.value.inner_exception).__name__}: " in str(caught.value)
    return caught.value.inner_exception


# bessel_j0 has no translation (no backend runs it); onnx has no float64 asin, which other backends run
@pytest.mark.parametrize("op", [torch.special.bessel_j0, torch.asin])
def test_errors_are_parity_compiles_inside_torchs_wrapper_with_the_fix_in_options(op):
    def unsupported(x):
        return op(x) * 2

    x = torch.rand(3, dtype=torch.float64) * 0.5
    with pytest.raises(UnsupportedAtenOp) as direct:
        parity.compile(unsupported, backend="onnx")(x)
    torch._dynamo.reset()
    inner = _inner_error(lambda: torch.compile(unsupported, backend="parity", options={"backend": "onnx"})(x))
    what_and_why = str(direct.value).splitlines()[:2]
    alternatives = direct.value.alternatives
    assert (op is torch.asin) == bool(alternatives) and (not alternatives or "xla" in alternatives)
    others = f"; or use a backend that runs it (options={{'backend': NAME}}): {', '.join(alternatives)}" \
        if alternatives else ""
    assert type(inner) is UnsupportedAtenOp and inner.alternatives == alternatives
    assert str(inner).splitlines() == [
        *what_and_why, "  fix: pass options={'strict': False} to run only this op eagerly in torch (the rest of the "
                       f"graph stays on 'onnx'){others}"]


@pytest.mark.parametrize("arguments, message", [
    ({"options": {"backnd": "onnx"}}, "torch.compile(backend='parity') takes no option 'backnd'; did you mean "
                                      "'backend'? its options are backend, device, strict, precision, cache_dir, auto, "
                                      "backend_options"),
    ({"options": {"mesh": {"data": 2}}}, "torch.compile(backend='parity') takes no option 'mesh': it is an option of "
                                         "parity.compile"),
    ({"options": {"fullgraph": True}}, "torch.compile(backend='parity'): 'fullgraph' is torch.compile's own "
                                       "argument, not an option: torch.compile(model, backend='parity', "
                                       "fullgraph=...)"),
    ({"options": {"backend": "onx"}}, "unknown backend 'onx'; did you mean 'onnx'?"),
    ({"options": {"backend": "onnx", "strict": "no"}}, "strict should be"),
    ({"options": "onnx"}, "torch.compile(backend='parity'): options is a dict of parity.compile's keywords, got str"),
    ({"mode": "max-autotune"}, "torch.compile(backend='parity') takes no mode ('max-autotune' is Inductor's); pass "
                               "parity's options as options={...}: backend, device, strict, precision, cache_dir, "
                               "auto"),
])
def test_a_bad_option_is_parity_compiles_usage_error(arguments, message):
    inner = _inner_error(lambda: torch.compile(torch.tanh, backend="parity", **arguments)(torch.ones(2)))
    assert isinstance(inner, parity.validate.UsageError) and str(inner).startswith(message)


def test_a_dtype_error_of_the_users_reads_as_eagers_not_as_parity_bug():
    """As under parity.compile (tests/frontend/test_compile.py): an f32 input to an f64 Linear
    passes torch's fake kernels and reaches the IR's type rule; the backend reruns the graph
    eagerly and raises eager's error, not a TranslationBug."""
    torch._dynamo.reset()
    linear = torch.nn.Linear(8, 4).double()
    with pytest.raises(BackendCompilerFailed) as info:
        torch.compile(linear, backend="parity", options={"backend": "reference"})(torch.randn(3, 8))
    inner = info.value.inner_exception
    assert type(inner) is RuntimeError and "mat1 and mat2 must have the same dtype" in str(inner), inner
