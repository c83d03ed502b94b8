"""A graph's C++ kernels are built as one library by one g++ run (backends/inductor/one_library.py),
with the numbers of Inductor's own one-library-per-kernel build; a kernel the file cannot take, and
a library that fails to build, fall back to Inductor's build; Inductor outside parity is untouched."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

from parity.backends.inductor import InductorBackend, one_library
from parity.backends.inductor import compiling as inductor_compiling
from parity.ir import GraphBuilder, f32


def _three_kernel_graph():
    """A map before a matrix product (an external call) and maps after it: kernels Inductor cannot fuse."""
    b = GraphBuilder()
    x, y = b.input(f32[4, 8]), b.input(f32[3])
    w = b.constant(np.linspace(-1, 1, 24, dtype=np.float32).reshape(8, 3))
    hidden = b.dot_general(b.tanh(x), w, lhs_contracting_dims=(1,), rhs_contracting_dims=(0,),
                           lhs_batch_dims=(), rhs_batch_dims=())
    scaled = b.mul(b.exp(hidden), b.constant(np.full((4, 3), 0.731, np.float32)))
    shifted = b.add(b.sqrt(y), b.constant(np.full(3, 1.917, np.float32)))
    return b.build([scaled, shifted])


def _inputs():
    rng = np.random.default_rng(7)
    return rng.standard_normal((4, 8)).astype(np.float32), rng.uniform(0.5, 4, 3).astype(np.float32)


def _delta(before: dict) -> dict:
    return {k: one_library.counts[k] - before[k] for k in before}


def _compiles_with_every_kernel_built_by_inductor():
    """The graph compiles and runs right, with one failure counted and no library built."""
    before = dict(one_library.counts)
    out = InductorBackend().compile(_three_kernel_graph(), "cpu")(*_inputs())
    built = _delta(before)
    assert built["failed"] == 1 and built["libraries"] == 0 and built["alone"] >= 2, built
    np.testing.assert_allclose(np.asarray(out[1]), np.sqrt(_inputs()[1].astype(np.float64)) + np.float32(1.917),
                               rtol=1e-6)


def test_a_graphs_kernels_build_as_one_library_with_the_per_kernel_builds_numbers(monkeypatch, tmp_path):
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "one"))
    before = dict(one_library.counts)
    combined = InductorBackend().compile(_three_kernel_graph(), "cpu")(*_inputs())
    built = _delta(before)
    assert built["libraries"] == 1 and built["kernels"] >= 2, built
    assert built["alone"] == 0 and built["failed"] == 0, built

    # Inductor's own build, one library per kernel, from a cold cache: bit for bit the same numbers
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "per_kernel"))
    monkeypatch.setattr(inductor_compiling, "one_library_per_graph", contextlib.nullcontext)
    before = dict(one_library.counts)
    alone = InductorBackend().compile(_three_kernel_graph(), "cpu")(*_inputs())
    assert _delta(before) == {"libraries": 0, "kernels": 0, "alone": 0, "failed": 0}
    for a, b in zip(combined, alone, strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    x, y = _inputs()
    w = np.linspace(-1, 1, 24).reshape(8, 3)
    np.testing.assert_allclose(np.asarray(combined[0]), np.exp(np.tanh(x.astype(np.float64)) @ w) * 0.731, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(combined[1]), np.sqrt(y.astype(np.float64)) + np.float32(1.917), rtol=1e-6)


def test_a_library_that_fails_to_build_leaves_each_kernel_to_inductor(monkeypatch, tmp_path):
    from torch._inductor.codecache import CppPythonBindingsCodeCache

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))
    real = CppPythonBindingsCodeCache.load_async.__func__

    def failing(cls, main_code, *args, **kwargs):
        if "parity_kernel_0" in main_code:
            raise RuntimeError("planted: the combined library does not build")
        return real(cls, main_code, *args, **kwargs)

    monkeypatch.setattr(CppPythonBindingsCodeCache, "load_async", classmethod(failing))
    _compiles_with_every_kernel_built_by_inductor()


KERNEL = one_library.KERNEL


@pytest.mark.parametrize("source, ok", [
    (KERNEL, True),
    (KERNEL.replace('extern "C"  void  kernel', 'extern "C" void C10_ALWAYS_INLINE_ATTRIBUTE kernel'), True),
    ("#define N 4\n" + KERNEL, False),  # a macro would reach the kernels after it in one file
    (KERNEL + 'extern "C" void helper() {}\n', False),  # a second C entry: its name could clash
    (KERNEL.replace("kernel(", "other("), False),  # not Inductor's entry
])
def test_only_a_kernel_with_inductors_one_entry_and_no_macro_shares_the_file(source, ok):
    assert one_library.combinable(source) is ok


def test_the_combined_source_makes_each_entry_a_namespaced_function_with_its_binding():
    source = one_library.combined_source([(("const float*", "int64_t"), KERNEL), (("float*",), KERNEL)])
    assert 'extern "C"' not in source.split("PY_SSIZE_T_CLEAN")[0]
    assert source.count("#include <torch/csrc/inductor/cpp_prefix.h>") == 1
    assert "parity_kernel_0::kernel(parity_arg<float*>(args, 0), parity_arg<int64_t>(args, 1))" in source
    assert "parity_kernel_1::kernel(parity_arg<float*>(args, 0))" in source
    assert 'PyTuple_GET_SIZE(args) != 2' in source and '{"kernel_1", kernel_1_py' in source


def test_inductor_outside_paritys_compile_builds_its_kernels_as_it_always_did(monkeypatch, tmp_path):
    from torch._inductor import config
    from torch._inductor.async_compile import AsyncCompile

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))
    with one_library.one_library_per_graph():
        pass  # installs the hook, as parity's first compile does
    before = dict(one_library.counts)
    with config.patch(compile_threads=1):  # parity's setting, where the hook could act
        kernel = AsyncCompile().cpp_pybinding(["float*"], KERNEL.replace("1.0f", "2.5f"))
    out = np.zeros(1, np.float32)
    import torch

    kernel(torch.from_numpy(out))
    assert out[0] == 2.5
    assert _delta(before) == {"libraries": 0, "kernels": 0, "alone": 0, "failed": 0}


def test_an_unexpected_error_in_the_hook_never_fails_the_compile(monkeypatch, tmp_path):
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))

    def broken(path):
        raise KeyError("planted: the hook itself breaks")

    monkeypatch.setattr(one_library, "_build", broken)
    _compiles_with_every_kernel_built_by_inductor()
