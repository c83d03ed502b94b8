"""The per-call converters between torch tensors and backend arrays (frontend/tensors.py)."""

import ml_dtypes
import numpy as np
import torch

from parity.frontend.tensors import array_converter, result_converter
from parity.ir import DType


def test_input_views_share_memory_and_strided_or_grad_inputs_still_convert():
    x = torch.tensor([1.5, -0.0, float("inf")])
    a = array_converter(DType.float32)(x)
    assert a.dtype == np.float32 and np.shares_memory(a, x.numpy())
    assert a.tolist() == [1.5, 0.0, float("inf")] and np.signbit(a[1])
    strided = torch.arange(6, dtype=torch.int64).reshape(2, 3).t()
    b = array_converter(DType.int64)(strided)
    assert b.flags.c_contiguous and b.tolist() == [[0, 3], [1, 4], [2, 5]]
    leaf = torch.ones(2, requires_grad=True)
    assert array_converter(DType.float32)(leaf).tolist() == [1.0, 1.0]
    empty = array_converter(DType.float32)(torch.empty(0, 3))
    assert empty.shape == (0, 3)


def test_bfloat16_inputs_cross_as_raw_bits():
    x = torch.tensor([1.5, -2.0, 3.0e38], dtype=torch.bfloat16)
    a = array_converter(DType.bfloat16)(x)
    assert a.dtype == ml_dtypes.bfloat16
    assert a.view(np.int16).tolist() == x.view(torch.int16).tolist()


def test_fresh_results_are_wrapped_without_a_copy():
    result = np.array([1.0, np.nan], np.float32)
    t = result_converter(DType.float32)(result, [np.zeros(2, np.float32)])
    assert t.dtype == torch.float32 and t.data_ptr() == result.ctypes.data
    assert torch.isnan(t[1]) and t[0].item() == 1.0


def test_results_aliasing_an_input_read_only_or_strided_are_copied():
    convert = result_converter(DType.float32)
    x = np.arange(4, dtype=np.float32)
    view = convert(x[1:], [x])  # a view of an input: the caller may overwrite the input
    assert view.tolist() == [1.0, 2.0, 3.0]
    x[1] = 99.0
    assert view[0].item() == 1.0
    frozen = np.arange(3, dtype=np.float32)
    frozen.flags.writeable = False
    t = convert(frozen, [])
    t[0] = 5.0  # writable, and not the frozen buffer
    assert frozen[0] == 0.0 and t.tolist() == [5.0, 1.0, 2.0]
    fortran = np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    assert convert(fortran, []).tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert convert(fortran, []).is_contiguous()


def test_results_of_another_dtype_or_kind_become_the_ir_dtype():
    wide = np.array([2**31, -1], np.int64)
    t = result_converter(DType.int32)(wide, [])
    assert t.dtype == torch.int32 and t.tolist() == [-2**31, -1]  # wraps like astype
    scalar = result_converter(DType.float64)(np.float64(0.25), [])
    assert scalar.dtype == torch.float64 and scalar.shape == () and scalar.item() == 0.25
    tensor = torch.tensor([True, False])
    assert result_converter(DType.bool)(tensor, []) is tensor
    bf = np.array([1.5, -0.0], ml_dtypes.bfloat16)
    out = result_converter(DType.bfloat16)(bf, [])
    assert out.dtype == torch.bfloat16 and out.tolist() == [1.5, -0.0] and torch.signbit(out[1])


def test_dlpack_results_are_wrapped_without_a_copy_unless_they_alias_an_input():
    import jax

    convert = result_converter(DType.float32)
    fresh = jax.numpy.arange(1 << 17, dtype=np.float32) * 2
    t = convert(fresh, [np.zeros(2, np.float32)])
    assert t.data_ptr() == fresh.unsafe_buffer_pointer() and t[3].item() == 6.0
    t[0] = 7.0  # torch tensors are writable; the JAX array was the only other owner
    assert t[0].item() == 7.0
    source = torch.arange(1 << 17, dtype=torch.float32).numpy()  # torch's 64-byte alignment
    over_input = jax.device_put(source)
    assert over_input.unsafe_buffer_pointer() == source.ctypes.data  # JAX viewed it, no copy
    u = convert(over_input, [source])
    assert u.data_ptr() != source.ctypes.data and u[5].item() == 5.0
