"""The XLA backend as a Backend: claims, devices, I/O, caching, threads, x64 scoping, export."""

import threading

import jax
import numpy as np
import pytest
import torch

from parity.backends import get_backend
from parity.backends.xla import LOWERINGS, XlaBackend, XlaDeviceError, export_stablehlo
from parity.backends.xla.backend import _as_array, installed_platforms
from parity.backends.xla.lowering import graph_function
from parity.ir import DType, GraphBuilder, Symbol, UnsupportedOpError, bf16, evaluate, f32, f64, i64, primitives
from parity.ir.opdef import Kind
from parity.ir.ops import OP_TABLE


def _square_graph(dtype=f32, shape=(4,)):
    b = GraphBuilder("square")
    x = b.input(dtype[shape])
    return b.build([b.mul(x, x)])


def test_every_primitive_has_a_lowering_and_is_claimed_in_all_its_dtypes():
    backend = XlaBackend()
    claims = backend.claims()
    for op in primitives():
        assert op.name in LOWERINGS, f"no XLA lowering for primitive {op.name}"
        assert claims[op.name].dtypes == frozenset(op.dtypes)
        assert backend.claim_status(op.name) == "native"
    # Composites are claimed only where a rule beats the decomposition: softmax-like rows, and
    # loop (rolled: one step compiled, not length of them).
    native = {name for name in claims if OP_TABLE[name].kind is not Kind.PRIMITIVE}
    assert native == {"softmax", "log_softmax", "sharding_constraint", "loop"}
    assert backend.claim_status("layer_norm") == "decomposed"


def test_registry_finds_the_xla_backend():
    assert isinstance(get_backend("xla"), XlaBackend)


def test_devices_report_what_jax_has():
    backend = XlaBackend()
    assert "cpu" in backend.available_devices()
    assert set(backend.available_devices()) <= set(backend.devices)
    absent = [d for d in ("cuda", "tpu") if d not in backend.available_devices()]
    for device in absent:
        with pytest.raises(XlaDeviceError) as info:
            backend.compile(_square_graph(), device)
        message = str(info.value)
        assert repr(device) in message and "installed JAX platforms: " + ", ".join(installed_platforms()) in message
    with pytest.raises(XlaDeviceError, match="choose one of"):
        backend.compile(_square_graph(), "metal")


@pytest.mark.parametrize("user_x64", [False, True])
def test_64_bit_types_stay_64_bit_without_touching_the_users_jax_config(user_x64):
    before = jax.config.jax_enable_x64
    with jax.enable_x64(user_x64):
        b = GraphBuilder()
        x, y = b.input(i64[2]), b.input(f64[2])
        run = XlaBackend().compile(b.build([b.mul(x, x), b.add(y, y)]), "cpu")
        assert jax.config.jax_enable_x64 == user_x64
        ints, floats = run(np.array([2**32 + 1, 3]), np.array([1 + 2**-40, 0.5]))
        assert jax.config.jax_enable_x64 == user_x64
    assert jax.config.jax_enable_x64 == before
    assert ints.dtype == np.int64 and ints.tolist() == [2**33 + 1, 9]  # (2**32 + 1)**2 wraps mod 2**64
    assert floats.dtype == np.float64 and floats[0] == 2 + 2**-39


def test_compile_is_cached_by_hash_device_and_input_types():
    backend = XlaBackend()
    run = backend.compile(_square_graph(), "cpu")
    assert backend.compile_count == 1  # static graphs compile up front
    again = backend.compile(_square_graph(), "cpu")  # an equal graph built anew
    run(np.ones(4, np.float32))
    again(np.ones(4, np.float32))
    assert backend.compile_count == 1
    backend.compile(_square_graph(f64), "cpu")
    assert backend.compile_count == 2


def test_symbolic_dims_compile_once_per_shape():
    backend = XlaBackend()
    b = GraphBuilder()
    x = b.input(f32[Symbol("B"), 3])
    run = backend.compile(b.build([b.reduce_sum(x, axes=(1,))]), "cpu")
    assert backend.compile_count == 0
    for n in (2, 5, 2, 5):
        (out,) = run(np.ones((n, 3), np.float32))
        assert out.tolist() == [3.0] * n
    assert backend.compile_count == 2


def test_eight_threads_share_one_compilation():
    backend = XlaBackend()
    b = GraphBuilder()
    x = b.input(f32[Symbol("N")])  # symbolic: the compile happens inside the racing calls
    run = backend.compile(b.build([b.mul(x, x)]), "cpu")
    barrier = threading.Barrier(8)
    results, errors = {}, []

    def worker(i):
        try:
            barrier.wait()
            for _ in range(20):
                (out,) = run(np.full(16, i, np.float32))
            results[i] = out
        except Exception as exc:  # reported below with the thread's index
            errors.append((i, exc))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert all(results[i].tolist() == [float(i * i)] * 16 for i in range(8))
    assert backend.compile_count == 1


def test_torch_and_numpy_inputs_are_viewed_not_copied():
    t = torch.arange(6, dtype=torch.float32)
    assert np.shares_memory(_as_array(t, f32), t.numpy())
    tb = torch.tensor([1.5, -2.0, 3.0], dtype=torch.bfloat16)
    view = _as_array(tb, bf16)
    assert view.dtype == bf16.numpy and view.tolist() == [1.5, -2.0, 3.0]
    assert view.ctypes.data == tb.data_ptr()
    a = np.ones(3, np.float32)
    assert _as_array(a, f32) is a


def test_torch_inputs_and_numpy_outputs():
    run = XlaBackend().compile(_square_graph(bf16, (3,)), "cpu")
    (out,) = run(torch.tensor([1.5, -2.0, 3.0], dtype=torch.bfloat16))
    assert isinstance(out, np.ndarray) and out.dtype == bf16.numpy and out.tolist() == [2.25, 4.0, 9.0]
    assert torch.from_dlpack(run.run_device(np.ones(3, bf16.numpy))[0]).dtype == torch.bfloat16


def test_wrong_input_dtype_is_an_error_not_a_conversion():
    run = XlaBackend().compile(_square_graph(), "cpu")
    with pytest.raises(Exception, match="expected f32\\[4\\]"):
        run(np.ones(4, np.float64))


@pytest.mark.parametrize("user_x64", [False, True])
def test_the_fast_path_checks_numpy_inputs_exactly(user_x64):
    # Outside x64 mode JAX would quietly cut an f64 array to f32; parity refuses it instead.
    run = XlaBackend().compile(_square_graph(), "cpu")
    with jax.enable_x64(user_x64):
        with pytest.raises(Exception, match="input 0 of @square is float64\\[4\\], expected f32\\[4\\]"):
            run(np.ones(4, np.float64))
        with pytest.raises(Exception, match="input 0 of @square has shape \\[5\\], expected f32\\[4\\]"):
            run(np.ones(5, np.float32))
        with pytest.raises(Exception, match="takes 1 inputs, got 2"):
            run(np.ones(4, np.float32), np.ones(4, np.float32))
        (out,) = run(np.array([1.5, -2.0, 3.0, -0.0], np.float32))
    assert out.dtype == np.float32 and out.tolist() == [2.25, 4.0, 9.0, 0.0]
    (out,) = run(np.array([3.0, 1.0, 2.0, 4.0, 9.0, 5.0, 6.0, 7.0], np.float32)[::2])  # a strided view
    assert out.tolist() == [9.0, 4.0, 81.0, 36.0]


def test_x64_mode_is_entered_only_for_64_bit_inputs(monkeypatch):
    entered = []
    real = jax.enable_x64
    monkeypatch.setattr(jax, "enable_x64", lambda on=True: entered.append(on) or real(on))
    b = GraphBuilder()
    x = b.input(f32[2])
    widen = XlaBackend().compile(b.build([b.convert(x, dtype=DType.float64), b.convert(x, dtype=DType.int64)]), "cpu")
    entered.clear()  # compiling enters it
    wide, ints = widen(np.array([1 + 2**-20, -3.75], np.float32))
    assert entered == []  # 64-bit outputs come back whole without it
    assert wide.dtype == np.float64 and wide.tolist() == [1 + 2**-20, -3.75]
    assert ints.dtype == np.int64 and ints.tolist() == [1, -3]
    square = XlaBackend().compile(_square_graph(i64, (2,)), "cpu")
    entered.clear()
    assert square(np.array([2**32 + 1, -3]))[0].tolist() == [2**33 + 1, 9]  # wraps mod 2**64
    assert entered == [True]


def test_composites_run_through_their_decomposition():
    b = GraphBuilder()
    x = b.input(f32[2, 5])
    g = b.build([b.softmax(x, axis=1), b.relu(x)])
    data = np.linspace(-3, 3, 10, dtype=np.float32).reshape(2, 5)
    got = XlaBackend().compile(g, "cpu")(data)
    want = evaluate(g, [data])
    np.testing.assert_allclose(got[0], want[0], rtol=4e-7, atol=0)
    assert np.array_equal(got[1], want[1])


def test_an_op_without_a_rule_is_refused_by_name(monkeypatch):
    import parity.backends.xla.backend as backend_module

    monkeypatch.delitem(LOWERINGS, "exp")
    b = GraphBuilder()
    g = b.build([b.exp(b.input(f32[2]))])
    with pytest.raises(UnsupportedOpError, match="'exp'.*backend='reference'"):
        backend_module.XlaBackend().compile(g, "cpu")


def test_export_stablehlo():
    text = export_stablehlo(_square_graph(i64))
    assert "stablehlo.multiply" in text and "tensor<4xi64>" in text
    b = GraphBuilder()
    x = b.input(f32[Symbol("B"), 2])
    g = b.build([b.reduce_max(x, axes=(1,))])
    assert "tensor<7x2xf32>" in export_stablehlo(g, shapes={"B": 7})
    with pytest.raises(Exception, match="symbolic dims \\['B'\\]"):
        export_stablehlo(g)


def test_random_composites_draw_the_references_bits():
    """random_bits runs through its uint32 decomposition: bit-identical to the interpreter."""
    from parity.ir import u32

    b = GraphBuilder()
    key = b.input(u32[2])
    g = b.build([b.random_bits(key, shape=(3, 5)), b.uniform(key, shape=(1000,), dtype=f32)])
    data = np.array([0, 42], np.uint32)
    got = XlaBackend().compile(g, "cpu")(data)
    for a, w in zip(got, evaluate(g, [data])):
        assert a.dtype == w.dtype and np.array_equal(a, w)


def test_small_cpu_outputs_are_numpy_views_and_large_ones_jax_arrays_for_dlpack():
    from parity.backends.xla.backend import DLPACK_MIN_BYTES

    b = GraphBuilder()
    x, y = b.input(f32[4]), b.input(f32[DLPACK_MIN_BYTES // 4])
    run = XlaBackend().compile(b.build([b.mul(x, x), b.mul(y, y)]), "cpu")
    small, large = run(np.full(4, 3.0, np.float32), np.full(DLPACK_MIN_BYTES // 4, 2.0, np.float32))
    assert isinstance(small, np.ndarray) and small.tolist() == [9.0] * 4
    assert isinstance(large, jax.Array)
    wrapped = torch.from_dlpack(large)
    assert wrapped.data_ptr() == large.unsafe_buffer_pointer() and bool((wrapped == 4.0).all())


def _xla_compiles(monkeypatch) -> list:
    """Every XLA compilation from now on (jax.stages.Lowered.compile calls)."""
    calls = []
    compile_ = jax.stages.Lowered.compile

    def counting(self, *args, **kwargs):
        calls.append(self)
        return compile_(self, *args, **kwargs)

    monkeypatch.setattr(jax.stages.Lowered, "compile", counting)
    return calls


@pytest.mark.parametrize("op", ["log1p", "sinh"])
def test_a_graph_without_products_to_protect_compiles_once(monkeypatch, op):
    # f64 log1p/sinh's own rules fuse a multiply with an add, so the first compile's check
    # fires; with no IR product to protect the second module would be the same one.
    compiles = _xla_compiles(monkeypatch)
    b = GraphBuilder(op)
    x = b.input(f64[64])
    graph = b.build([getattr(b, op)(x)])
    run = XlaBackend().compile(graph, "cpu")
    assert len(compiles) == 1
    data = np.linspace(-0.9, 3, 64)
    with jax.enable_x64(True):  # bit for bit what the protected compile, once made as well, gives
        protected = jax.jit(graph_function(graph, run_time_zero=True))(data, np.int32(0))[0]
    np.testing.assert_array_equal(run(data)[0], np.asarray(protected))


def test_a_product_fused_into_a_sum_is_compiled_again_protected(monkeypatch):
    compiles = _xla_compiles(monkeypatch)
    b = GraphBuilder("fma")
    x, y, z = b.input(f32[64]), b.input(f32[64]), b.input(f32[64])
    run = XlaBackend().compile(b.build([b.sub(b.mul(x, y), z)]), "cpu")
    assert len(compiles) == 2
    # Under cancellation a fused multiply-add would return the product's rounding error.
    rng = np.random.default_rng(0)
    x_, y_ = rng.standard_normal(64).astype(np.float32), rng.standard_normal(64).astype(np.float32)
    z_ = x_ * y_
    np.testing.assert_array_equal(run(x_, y_, z_)[0], np.zeros(64, np.float32))
