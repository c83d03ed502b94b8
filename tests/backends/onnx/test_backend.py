"""The onnx backend's protocol side: claims, devices, the session cache, inputs and outputs."""

from __future__ import annotations

import threading

import ml_dtypes
import numpy as np
import pytest
import torch

from parity.backends import get_backend
from parity.backends.onnx import OnnxBackend, to_model
from parity.backends.onnx.backend import OnnxDeviceError, make_session
from parity.ir import (
    OP_TABLE,
    DType,
    GraphBuilder,
    ParityError,
    SourceLoc,
    Symbol,
    UnsupportedOpError,
    bf16,
    evaluate,
    f32,
    f64,
    i32,
)


def _double(name: str = "double", t=f32[3]):
    b = GraphBuilder(name)
    x = b.input(t)
    return b.build([b.add(x, x)])


def test_registry_finds_the_backend():
    backend = get_backend("onnx")
    assert isinstance(backend, OnnxBackend) and backend.name == "onnx"


def test_claims_cover_every_primitive_and_leave_out_unsupported_dtypes():
    backend = OnnxBackend()
    claims = backend.claims()
    primitives = {op.name for op in OP_TABLE.values() if op.kind.value == "primitive"}
    assert primitives <= set(claims) and not backend.declined and not backend.declined_dtypes
    assert DType.float64 not in claims["erf"].dtypes and DType.float32 in claims["erf"].dtypes
    # complex operands too (complex_numbers.py): every dtype the op takes
    assert claims["add"].dtypes == frozenset(OP_TABLE["add"].dtypes)
    for op in ("complex", "real", "conj", "angle", "fft", "ifft", "rfft", "irfft", "dot_general", "reshape"):
        assert claims[op].dtypes == frozenset(OP_TABLE[op].dtypes), op
    assert OnnxBackend().claim_status("softmax") == "native"  # composites.NATIVE
    assert OnnxBackend().claim_status("silu") == "decomposed"


def test_unsupported_dtype_error_names_op_dtype_and_source_line():
    b = GraphBuilder()
    x = b.input(f64[2])
    with b.location(SourceLoc("model.py", 12, "forward")):
        y = b.erf(x)
    with pytest.raises(UnsupportedOpError, match=r"'erf' on f64 \(at model.py:12 in forward\).*Erf"):
        OnnxBackend().compile(b.build([y]), "cpu")


def test_devices_are_the_truth():
    backend = OnnxBackend()
    assert backend.available_devices() == ("cpu",)  # this onnxruntime build has no CUDA provider
    with pytest.raises(OnnxDeviceError, match="'cuda' is not available.*onnxruntime-gpu"):
        backend.compile(_double(), "cuda")
    with pytest.raises(OnnxDeviceError, match="no device 'tpu'"):
        backend.compile(_double(), "tpu")


def test_one_session_per_graph_content_and_input_types():
    backend = OnnxBackend()
    backend.compile(_double("a"), "cpu")
    backend.compile(_double("b"), "cpu")  # same content, other name: same key
    assert backend.session_count == 1
    backend.compile(_double("a", f64[3]), "cpu")
    assert backend.session_count == 2


def test_threads_racing_for_one_key_build_one_session():
    backend = OnnxBackend()
    graph = _double()
    barrier = threading.Barrier(8)
    results = []

    def compile_it():
        barrier.wait()
        results.append(backend.compile(graph, "cpu").session)

    threads = [threading.Thread(target=compile_it) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert backend.session_count == 1 and len({id(s) for s in results}) == 1


def test_a_failed_build_is_not_cached():
    backend = OnnxBackend()
    b = GraphBuilder()
    x = b.input(f64[2])
    graph = b.build([b.erf(x)])
    for _ in range(2):
        with pytest.raises(UnsupportedOpError):
            backend.compile(graph, "cpu")
    assert backend.session_count == 0


def test_numpy_and_torch_inputs_including_bfloat16_and_strided():
    run = OnnxBackend().compile(_double(t=f32[2, 3]), "cpu")
    x = np.arange(6, dtype=np.float32).reshape(3, 2).T  # not contiguous
    np.testing.assert_array_equal(run(x)[0], 2 * x)
    np.testing.assert_array_equal(run(torch.from_numpy(x.copy()))[0], 2 * x)
    np.testing.assert_array_equal(run(torch.from_numpy(np.ascontiguousarray(x)).requires_grad_())[0], 2 * x)
    run16 = OnnxBackend().compile(_double(t=bf16[3]), "cpu")
    got = run16(torch.tensor([1.5, -2.0, 3.0], dtype=torch.bfloat16))[0]
    assert got.dtype == ml_dtypes.bfloat16 and got.tolist() == [3.0, -4.0, 6.0]
    assert run16(np.array([0.5, 1, 2], ml_dtypes.bfloat16))[0].tolist() == [1.0, 2.0, 4.0]


def test_wrong_dtype_or_shape_is_an_error_not_a_conversion():
    run = OnnxBackend().compile(_double(), "cpu")
    with pytest.raises(ParityError, match="dtype float64, expected f32"):
        run(np.zeros(3))
    with pytest.raises(ParityError, match="torch.float64 tensor, expected f32"):
        run(torch.zeros(3, dtype=torch.float64))
    with pytest.raises(ParityError, match=r"shape \[4\], expected f32\[3\]"):
        run(np.zeros(4, np.float32))
    with pytest.raises(ParityError, match="takes 1 inputs, got 2"):
        run(np.zeros(3, np.float32), np.zeros(3, np.float32))


def test_outputs_are_fresh_arrays_and_rebinding_follows_the_caller():
    run = OnnxBackend().compile(_double(), "cpu")
    x = np.ones(3, np.float32)
    first = run(x)[0]
    x[:] = 5  # same array object, new contents: bound in place, so the run sees them
    second = run(x)[0]
    assert first.tolist() == [2.0] * 3 and second.tolist() == [10.0] * 3
    assert not np.shares_memory(first, second)
    assert run(np.full(3, 2, np.float32))[0].tolist() == [4.0] * 3


def test_a_tensor_passed_again_is_bound_again_only_when_its_memory_or_layout_changed():
    """A torch tensor passed again keeps its binding (a model's parameters come back every
    call); one whose object now has other memory, a strided layout or another dtype is
    bound again, so the run always reads what the tensor holds now."""
    run = OnnxBackend().compile(_double(t=f32[2, 2]), "cpu")
    p = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert run(p)[0].tolist() == [[2, 4], [6, 8]]
    p.add_(1)  # in place: same memory, the binding reads the new values
    assert run(p)[0].tolist() == [[4, 6], [8, 10]]
    p.data = torch.tensor([[0.5, 0.5], [0.5, 0.5]])  # same object, other memory
    assert run(p)[0].tolist() == [[1, 1], [1, 1]]
    p.data = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    run(p)
    p.transpose_(0, 1)  # same memory and shape, strided: the values in row-major order differ
    assert run(p)[0].tolist() == [[2, 6], [4, 8]]
    q = torch.ones(2, 2)
    run(q)
    q.data = q.data.view(torch.int32)  # same object and memory, another dtype: refused, not misread
    with pytest.raises(ParityError, match="torch.int32 tensor, expected f32"):
        run(q)


def test_a_compiled_module_binds_its_parameters_once():
    """Through parity.compile, the executable gets the parameter tensors themselves, so a
    second call with a new input binds only that input."""
    import parity
    from parity.frontend import compiled_graph

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3)).eval()
    before = set(map(id, compiled_graph._EXECUTABLES.values()))
    f = parity.compile(model, backend="onnx")
    with torch.no_grad():
        f(torch.randn(2, 4))
        (executable,) = [e for e in compiled_graph._EXECUTABLES.values() if id(e) not in before]
        local, bound = executable._local, []
        real, real_pointer = local.bind_input, local.bind_pointer
        local.bind_input = lambda name, array: (bound.append(name), real(name, array))
        local.bind_pointer = lambda name, *rest: (bound.append(name), real_pointer(name, *rest))
        x = torch.randn(2, 4)
        torch.testing.assert_close(f(x), model(x), rtol=1e-6, atol=1e-6)
    assert len(bound) == 1, bound  # the new input; the 4 parameters kept their bindings


def test_large_outputs_are_written_into_fresh_arrays():
    run = OnnxBackend().compile(_double(t=f32[1 << 15]), "cpu")  # 128 KiB: bound as ORT's output buffer
    x = np.arange(1 << 15, dtype=np.float32)
    a, b = run(x)[0], run(x)[0]
    np.testing.assert_array_equal(a, 2 * x)
    assert not np.shares_memory(a, b)


def test_symbolic_dims_one_session_for_every_size():
    backend = OnnxBackend()
    b = GraphBuilder()
    n = Symbol("N")
    x = b.input(f32[n, 2])
    w = b.input(f32[2, 3])
    y = b.dot_general(x, w, lhs_contracting_dims=(1,), rhs_contracting_dims=(0,), lhs_batch_dims=(),
                      rhs_batch_dims=())
    z = b.broadcast_in_dim(b.reduce_sum(y, axes=(1,)), shape=(n, 4), broadcast_dimensions=(0,))
    run = backend.compile(b.build([y, z]), "cpu")
    w_in = np.arange(6, dtype=np.float32).reshape(2, 3)
    for rows in (1, 5, 0):
        x_in = np.ones((rows, 2), np.float32)
        got_y, got_z = run(x_in, w_in)
        np.testing.assert_array_equal(got_y, x_in @ w_in)
        np.testing.assert_array_equal(got_z, np.broadcast_to((x_in @ w_in).sum(1)[:, None], (rows, 4)))
    assert backend.session_count == 1


def test_a_symbol_bound_to_two_sizes_is_an_error():
    b = GraphBuilder()
    n = Symbol("N")
    p, q = b.input(f32[n]), b.input(f32[n])
    run = OnnxBackend().compile(b.build([b.add(p, q)]), "cpu")
    with pytest.raises(ParityError, match="dimension N is 3 here but 2"):
        run(np.ones(2, np.float32), np.ones(3, np.float32))


def test_outputs_that_are_inputs_or_repeated_get_their_own_names():
    b = GraphBuilder()
    x = b.input(i32[2])
    c = b.constant(np.array([7, 8], np.int32))
    run = OnnxBackend().compile(b.build([x, x, c, b.neg(x), b.neg(x)]), "cpu")
    outs = run(np.array([1, 2], np.int32))
    assert [o.tolist() for o in outs] == [[1, 2], [1, 2], [7, 8], [-1, -2], [-1, -2]]


def test_model_names_inputs_and_outputs_without_clashing_with_generated_names(tmp_path):
    import onnx

    b = GraphBuilder()
    x = b.input(f32[2])
    graph = b.build([b.add(x, b.constant(np.ones(2, np.float32))), x])
    model = OnnxBackend().export(graph, tmp_path / "m.onnx", input_names=["c_0"], output_names=["add_1", "same"])
    assert [i.name for i in model.graph.input] == ["c_0"] and [o.name for o in model.graph.output] == ["add_1", "same"]
    assert all(t.name != "c_0" for t in model.graph.initializer)  # the constant got another name
    session = make_session(onnx.load(tmp_path / "m.onnx"))
    assert [a.tolist() for a in session.run(None, {"c_0": np.array([1, 2], np.float32)})] == [[2, 3], [1, 2]]
    with pytest.raises(ValueError, match="must be distinct"):
        to_model(graph, input_names=["a"], output_names=["a", "b"])


def test_large_output_arrays_are_recycled_only_once_the_caller_lets_go():
    run = OnnxBackend().compile(_double(t=f32[1 << 15]), "cpu")
    x = np.arange(1 << 15, dtype=np.float32)
    first = run(x)[0]
    second = run(x)[0]  # `first` is still held: a new array
    assert not np.shares_memory(first, second)
    view = first[10:]
    del first, second
    third = run(x + 1)[0]  # `first` lives on through its view: not written again
    assert not np.shares_memory(third, view) and view[0] == 20.0
    address = third.ctypes.data
    del third
    fourth = run(x)[0]  # released: ORT writes into the array it already has
    assert fourth.ctypes.data == address
    np.testing.assert_array_equal(fourth, 2 * x)
    tensor = torch.from_numpy(fourth)
    del fourth
    fifth = run(x + 1)[0]  # the torch tensor holds it
    assert fifth.ctypes.data != tensor.data_ptr() and float(tensor[3]) == 6.0 and float(fifth[3]) == 8.0


def test_sessions_use_the_cpus_this_process_may_run_on():
    import os

    from parity.backends.onnx.backend import _session_options

    assert _session_options().intra_op_num_threads == len(os.sched_getaffinity(0))


def test_an_output_that_is_also_broadcast_keeps_its_own_shape():
    # A [2,1,8,8] mask is an output and is broadcast to [2,4,8,8] for a transpose. Its view has
    # the mask's own shape, so the Reshape is a no-op; expanding that view must not change
    # what the mask's own name means (BERT's saved mask came back [2,4,8,8]).
    b = GraphBuilder("mask")
    mask, scores = b.input(f32[2, 1, 8, 8]), b.input(f32[2, 4, 8, 8])
    cond = b.gt(mask, b.broadcast_in_dim(b.constant(np.array(0.0, np.float32)), shape=(2, 1, 8, 8),
                                         broadcast_dimensions=()))
    masked = b.select(cond, mask, b.broadcast_in_dim(b.constant(np.array(-np.inf, np.float32)), shape=(2, 1, 8, 8),
                                                     broadcast_dimensions=()))
    wide = b.broadcast_in_dim(masked, shape=(2, 4, 8, 8), broadcast_dimensions=(0, 1, 2, 3))
    graph = b.build([b.add(scores, b.transpose(wide, permutation=(0, 1, 3, 2))), masked])
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((2, 1, 8, 8)).astype(np.float32), rng.standard_normal((2, 4, 8, 8)).astype(np.float32)]
    got = OnnxBackend().compile(graph, "cpu")(*arrays)
    expected = evaluate(graph, arrays)
    assert [np.shape(g) for g in got] == [(2, 4, 8, 8), (2, 1, 8, 8)]
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(np.asarray(g), e)


def test_cpu_tensors_are_read_by_address_and_checked_as_arrays_are():
    """A contiguous CPU tensor is bound by its address (no NumPy view): ORT reads its memory
    as it is at the call, a wrong dtype or shape is refused with the array path's message,
    and a strided or bfloat16 tensor still takes the array path."""
    run = OnnxBackend().compile(_double(t=f32[2, 3]), "cpu")
    local = run._binding()
    by_pointer, by_array = [], []
    real_pointer, real_array = local.bind_pointer, local.bind_input
    local.bind_pointer = lambda name, *rest: (by_pointer.append(name), real_pointer(name, *rest))
    local.bind_input = lambda name, array: (by_array.append(name), real_array(name, array))
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    assert run(x)[0].tolist() == (2 * x).tolist() and by_pointer == ["in0"]
    x.add_(1)  # the same tensor, changed in place: bound already, read again at the run
    assert run(x)[0].tolist() == (2 * x).tolist() and by_pointer == ["in0"]
    strided = torch.arange(12, dtype=torch.float32).reshape(3, 4)[:2, 1:]
    assert run(strided)[0].tolist() == (2 * strided).tolist() and by_array == ["in0"]
    with pytest.raises(ParityError, match=r"input 0 of @\w+ is a torch.float64 tensor, expected f32"):
        run(torch.zeros(2, 3, dtype=torch.float64))
    with pytest.raises(ParityError, match=r"input 0 of @\w+ has shape \[3, 2\], expected f32\[2,3\]"):
        run(torch.zeros(3, 2))
