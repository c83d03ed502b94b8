"""parity.compile end to end: functions and modules, training, errors, fallback, caching,
dynamic sizes, randomness and graph breaks (TorchDynamo + AOTAutograd + the reference backend)."""

import copy
import warnings

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import parity
from parity.backends.base import Backend, OpClaim
from parity.backends.registry import register_backend, unregister_backend
from parity.frontend import STATS
from parity.frontend.errors import UnsupportedAtenOp
from parity.ir import ParityError, Symbol, evaluate, primitives
from parity.ir.dtypes import DType

RTOL, ATOL = 1e-4, 1e-5


def _close(a, b):
    torch.testing.assert_close(a, b, rtol=RTOL, atol=ATOL)


def test_decorator_forms_and_values():
    @parity.compile(backend="reference")
    def f(x, y):
        return torch.relu(x @ y) + 1

    @parity.compile(backend="reference", strict=True)
    def g(x):
        return x.sum(dim=0) / 3

    x, y = torch.randn(3, 4), torch.randn(4, 2)
    _close(f(x, y), torch.relu(x @ y) + 1)
    _close(g(x), x.sum(dim=0) / 3)
    assert f.__name__ == "f"


def test_module_shares_parameters_and_trains_like_eager():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.LayerNorm(8), nn.Linear(8, 3))
    eager = copy.deepcopy(model)
    compiled = parity.compile(model, backend="reference")
    assert isinstance(compiled, nn.Module)
    assert [id(p) for p in compiled.parameters()] == [id(p) for p in model.parameters()]
    x, target = torch.randn(5, 4), torch.tensor([0, 2, 1, 1, 0])
    for m in (compiled, eager):
        F.cross_entropy(m(x), target).backward()
    for p, q in zip(model.parameters(), eager.parameters()):
        _close(p.grad, q.grad)


def test_batch_norm_train_and_eval_modes_follow_the_module():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                          nn.AvgPool2d(2), nn.Flatten())
    eager = copy.deepcopy(model)
    compiled = parity.compile(model, backend="reference")
    x = torch.randn(2, 3, 8, 8)
    _close(compiled(x), eager(x))
    _close(model[1].running_mean, eager[1].running_mean)  # the functional update reaches the buffers
    _close(model[1].running_var, eager[1].running_var)
    compiled.eval(), eager.eval()
    _close(compiled(x), eager(x))


def test_input_gradients_match_eager_for_a_function():
    def f(x, w):
        return (torch.tanh(x @ w) * x.sum(-1, keepdim=True)).mean()

    x, w = torch.randn(3, 4, requires_grad=True), torch.randn(4, 4, requires_grad=True)
    gx, gw = torch.autograd.grad(parity.compile(f, backend="reference")(x, w), (x, w))
    ex, ew = torch.autograd.grad(f(x, w), (x, w))
    _close(gx, ex)
    _close(gw, ew)


@pytest.mark.parametrize("causal", [True, False])
def test_attention_gradients_through_compile(causal):
    q, k, v = (torch.randn(2, 2, 5, 8, requires_grad=True) for _ in range(3))
    mask = None if causal else torch.rand(5, 5) > 0.4

    def attn(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal)

    out = parity.compile(attn, backend="reference")(q, k, v)
    grads = torch.autograd.grad((out ** 2).sum(), (q, k, v))
    expected = torch.autograd.grad((attn(q, k, v) ** 2).sum(), (q, k, v))
    for g, e in zip(grads, expected):
        _close(g, e)


def test_same_shapes_never_recompile_and_new_shapes_compile_once():
    @parity.compile(backend="reference")
    def f(x):
        return x * 2 + 1

    for _ in range(3):
        f(torch.randn(4, 3))
    assert STATS["translations"] == 1 and STATS["backend_compiles"] == 1
    f(torch.randn(5, 3))
    f(torch.randn(5, 3))
    assert STATS["translations"] == 2


def test_equal_graphs_share_one_executable():
    x = torch.randn(3)
    # fast_path=False: with it, the second lambda (the same code) would find the first's entry on disk
    parity.compile(lambda t: t + 1, backend="reference", fast_path=False)(x)
    parity.compile(lambda t: t + 1, backend="reference", fast_path=False)(x)
    assert STATS["translations"] == 2 and STATS["backend_compiles"] == 1 and STATS["cache_hits"] == 1


def test_dynamic_dims_become_symbols_and_serve_every_size(compiled_graphs):
    f = parity.compile(lambda x: torch.softmax(x * 3, dim=-1).sum(0), dynamic=True, backend="reference")
    for n in (2, 5, 7):
        x = torch.randn(n, 4)
        _close(f(x), torch.softmax(x * 3, dim=-1).sum(0))
    assert len(compiled_graphs) == 1
    (x_type,) = [v.type for v in compiled_graphs[0].inputs]
    assert all(isinstance(d, Symbol) for d in x_type.shape)  # dynamic=True: every size


def test_mark_dynamic_makes_only_that_dim_symbolic():
    f = parity.compile(lambda x: x.sum(1), backend="reference")
    x = torch.randn(3, 4)
    torch._dynamo.mark_dynamic(x, 0)
    _close(f(x), x.sum(1))
    y = torch.randn(6, 4)
    _close(f(y), y.sum(1))
    assert STATS["translations"] == 1


def test_randomness_is_reproducible_with_manual_seed():
    @parity.compile(backend="reference")
    def f(x):
        return F.dropout(x, 0.5, training=True) + torch.rand(3) + torch.randn(3)

    x = torch.ones(3)
    torch.manual_seed(3)
    a = f(x)
    torch.manual_seed(3)
    b = f(x)
    c = f(x)
    assert torch.equal(a, b) and not torch.equal(b, c)
    dropped = F.dropout(torch.ones(10000), 0.25, training=True)
    kept = parity.compile(lambda t: F.dropout(t, 0.25, training=True), backend="reference")(torch.ones(10000))
    assert set(torch.unique(kept).tolist()) <= {0.0, torch.tensor(1 / 0.75).item()}
    assert abs((kept == 0).float().mean().item() - 0.25) < 0.02 and dropped.shape == kept.shape


def test_dropout_gradient_uses_the_forward_mask():
    x = torch.randn(50, requires_grad=True)
    out = parity.compile(lambda t: F.dropout(t, 0.5, training=True) * 3, backend="reference")(x)
    (grad,) = torch.autograd.grad(out.sum(), x)
    assert torch.equal(grad == 0, out.detach() == 0)
    assert torch.allclose(grad[grad != 0], torch.tensor(6.0))


def test_graph_breaks_still_give_correct_results(capsys):
    def f(x):
        y = torch.sin(x) * 2
        print("between graphs")
        scale = y.sum().item()
        return y * scale + 1

    x = torch.randn(4, requires_grad=True)
    out = parity.compile(f, backend="reference")(x)
    _close(out, f(x))
    assert "between graphs" in capsys.readouterr().out
    assert STATS["translations"] >= 2  # the graphs on either side of the break
    (g,) = torch.autograd.grad(out.sum(), x)
    (e,) = torch.autograd.grad(f(x).sum(), x)
    _close(g, e)


class _NoTanh(Backend):
    """Every primitive except tanh: a backend that cannot run torch.tanh."""

    name = "no_tanh_test"
    devices = ("cpu",)

    def claims(self):
        return {op.name: OpClaim(frozenset(op.dtypes)) for op in primitives() if op.name != "tanh"}

    def compile(self, graph, device):
        return lambda *arrays: evaluate(graph, arrays)


@pytest.fixture
def no_tanh():
    register_backend(_NoTanh())
    yield "no_tanh_test"
    unregister_backend("no_tanh_test")


def _uses_tanh(x):
    y = x + 1
    return torch.tanh(y) * 2  # the line the error must name


def test_strict_error_names_op_line_backend_and_fix(no_tanh):
    f = parity.compile(_uses_tanh, backend=no_tanh)
    with pytest.raises(UnsupportedAtenOp) as info:
        f(torch.randn(3))
    lines = str(info.value).splitlines()
    assert lines[0].startswith("aten.tanh.default at ")
    assert f"test_compile.py:{_uses_tanh.__code__.co_firstlineno + 2} in _uses_tanh" in lines[0]
    assert "cannot run on backend 'no_tanh_test'" in lines[0]
    assert lines[1] == "  why: backend 'no_tanh_test' does not claim the IR op 'tanh'"
    assert lines[2].startswith("  fix: pass strict=False")
    assert isinstance(info.value, ParityError)


def test_composite_needing_an_unclaimed_primitive_is_reported_with_the_composite(no_tanh):
    f = parity.compile(lambda x: F.gelu(x, approximate="tanh"), backend=no_tanh)
    with pytest.raises(UnsupportedAtenOp, match=r"aten.gelu.default .*\n  why: backend 'no_tanh_test' does not "
                                                r"claim the IR op 'tanh' \(needed by the decomposition of 'gelu'\)"):
        f(torch.randn(3))


class _SelectF32Only(Backend):
    """Every primitive; select only for f32 values. Claims key select by its values' dtype
    (on_true's, the op table's ``dtype_operand``), never by its bool predicate's."""

    name = "select_f32_test"
    devices = ("cpu",)

    def claims(self):
        return {op.name: OpClaim(frozenset((DType.float32,) if op.name == "select" else op.dtypes))
                for op in primitives()}

    def compile(self, graph, device):
        return lambda *arrays: evaluate(graph, arrays)


@pytest.fixture
def select_f32():
    register_backend(_SelectF32Only())
    yield _SelectF32Only.name
    unregister_backend(_SelectF32Only.name)


def test_select_claims_are_checked_against_its_values_dtype_not_the_predicate(select_f32):
    from parity.frontend.claims import ClaimCheck
    from parity.ir import GraphBuilder

    check = ClaimCheck(_SelectF32Only())
    for dtype, expected in ((DType.float32, None),
                            (DType.float64, "backend 'select_f32_test' claims the IR op 'select' but not for dtype f64")):
        b = GraphBuilder()
        x, y = b.input(dtype[3]), b.input(dtype[3])
        b.build([b.select(b.gt(x, y), x, y)])
        assert check(b.nodes[-1]) == expected  # the frontend used to check the bool predicate's dtype
    f = parity.compile(lambda x, y: torch.where(x > 0, x, y), backend=select_f32)
    x, y = torch.randn(5), torch.randn(5)
    _close(f(x, y), torch.where(x > 0, x, y))


def test_non_strict_falls_back_to_eager_with_one_warning(no_tanh):
    f = parity.compile(_uses_tanh, backend=no_tanh, strict=False)
    x = torch.randn(3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _close(f(x), _uses_tanh(x))
        _close(f(x * 2), _uses_tanh(x * 2))
    messages = [str(w.message) for w in caught if "parity" in str(w.message)]
    assert len(messages) == 1
    assert messages[0].startswith("parity: aten.tanh.default at ") and "runs eagerly in torch" in messages[0]


def test_wrong_input_shapes_give_the_users_own_error():
    f = parity.compile(lambda x, y: x @ y, backend="reference")
    with pytest.raises(RuntimeError) as info:
        f(torch.randn(2, 3), torch.randn(4, 5))
    assert "cannot be multiplied" in str(info.value)
    assert "Dynamo" not in str(info.value) and "FakeTensor" not in str(info.value)


def test_types_that_only_eager_refuses_give_the_users_own_error():
    """An f32 input to an f64 Linear: torch's fake addmm does not compare the dtypes, so the
    capture succeeds and the IR's dot_general type rule refuses it. That is the user's error,
    as eager torch and torch.compile raise it, not a "TranslationBug" of parity's."""
    linear = torch.nn.Linear(8, 4).double()
    with pytest.raises(RuntimeError, match="mat1 and mat2 must have the same dtype") as info:
        parity.compile(linear, backend="reference")(torch.randn(3, 8))
    assert not isinstance(info.value, ParityError)
    assert info.traceback[-1].path.name == "linear.py"  # raised from the module's own line


def test_a_type_rule_failure_where_eager_runs_stays_a_translation_bug(monkeypatch):
    """Where eager torch runs the same call, a type rule's refusal is parity's bug and says so."""
    from parity.frontend import translate
    from parity.frontend.errors import TranslationBug

    def wrong_dtype(ctx, x, *_):
        return ctx.convert(x, translate.DType.float64)  # planted: tanh's result in the wrong dtype

    monkeypatch.setitem(translate.TABLE, "tanh.default", wrong_dtype)
    with pytest.raises(TranslationBug, match="aten.tanh.default"):
        parity.compile(lambda x: torch.tanh(x) + 1, backend="reference")(torch.randn(3))


def test_unknown_backend_fails_at_compile_time():
    with pytest.raises(ParityError, match="unknown backend 'nope'; choose from: auto, reference"):
        parity.compile(lambda x: x, backend="nope")


def test_integer_and_bool_outputs_keep_their_dtypes():
    f = parity.compile(lambda x: (x > 0, (x * 10).to(torch.int32) // 3, x.argmax()), backend="reference")
    x = torch.tensor([-1.5, 2.5, 0.25])
    mask, q, i = f(x)
    assert mask.dtype == torch.bool and q.dtype == torch.int32 and i.dtype == torch.int64
    assert mask.tolist() == [False, True, True] and q.tolist() == [-5, 8, 0] and i.item() == 1


def test_results_do_not_alias_inputs():
    x = torch.zeros(3)
    y = parity.compile(lambda t: t.clone().view(3), backend="reference")(x)
    y.add_(1)
    assert x.tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("backend", ["onnx", "xla"])
def test_large_results_are_the_callers_own_even_when_buffers_are_reused(backend):
    """ONNX recycles a released output array and XLA hands large outputs over by DLPack: a
    result the caller still holds is never written by a later call, and writing to it
    changes neither the input nor later results."""
    f = parity.compile(lambda x: x * 2 + 1, backend=backend)
    x = torch.randn(512, 512)
    first = f(x)
    second = f(x)
    assert first.data_ptr() != second.data_ptr() and torch.equal(first, x * 2 + 1)
    first.add_(1)
    assert torch.equal(second, x * 2 + 1) and torch.equal(f(x), x * 2 + 1)
    assert not torch.equal(first, second)


@pytest.mark.parametrize("backend", ["onnx", "xla", "reference"])
def test_a_graph_that_computes_nothing_is_not_sent_to_a_backend(backend):
    # Found as the fused optimizers' failure on onnx: one captured region had no inputs and no
    # outputs (its effects are input mutations the frontend applies), and onnxruntime refuses
    # a session for a graph without values ("OrtValue indexes should have been populated").
    from parity.backends.registry import get_backend
    from parity.frontend.compiled_graph import STATS, compiled_executable
    from parity.ir import GraphBuilder

    compiles = STATS["backend_compiles"]
    executable = compiled_executable(GraphBuilder("nothing").build([]), get_backend(backend), "cpu")
    assert list(executable()) == []
    assert STATS["backend_compiles"] == compiles
