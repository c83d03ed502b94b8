"""parity dtypes as OpenVINO element types, and constants of an IR dtype."""

from __future__ import annotations

import numpy as np
import openvino as ov
import openvino.opset15 as ops

# By name: ov.Type(np.dtype(bool)) gives 'char', not 'boolean'.
_OV_TYPES = {
    "bool": ov.Type.boolean, "int8": ov.Type.i8, "int16": ov.Type.i16, "int32": ov.Type.i32, "int64": ov.Type.i64,
    "uint8": ov.Type.u8, "uint32": ov.Type.u32, "float16": ov.Type.f16, "bfloat16": ov.Type.bf16,
    "float32": ov.Type.f32, "float64": ov.Type.f64,
}


def ov_type(dtype) -> ov.Type:
    """The OpenVINO element type of a parity ``DType``."""
    return _OV_TYPES[dtype.name]


def const(value, like) -> ov.Output:
    """``value`` as a constant of the element type of ``like`` (an OpenVINO output)."""
    return typed_const(value, like.get_element_type())


def typed_const(value, element_type: ov.Type) -> ov.Output:
    """``value`` (a number or array) as a constant of ``element_type``."""
    array = np.asarray(value)
    if element_type == ov.Type.bf16:  # NumPy has no bfloat16: build it in float32 and convert (exact for
        return ops.convert(ops.constant(array.astype(np.float32)), ov.Type.bf16).output(0)  # bf16 values)
    return ops.constant(array, dtype=element_type).output(0)


def i64s(values) -> ov.Output:
    """A 1-D int64 constant (shapes, axes, starts)."""
    return ops.constant(np.asarray(list(values), dtype=np.int64).reshape(-1)).output(0)


def is_float(output) -> bool:
    return output.get_element_type().is_real()


def output_of(x) -> ov.Output:
    """An OpenVINO node's first output, or the output itself."""
    return x.output(0) if hasattr(x, "output") else x


def dims(x) -> list[int]:
    """The concrete shape of an OpenVINO node or output."""
    return [d.get_length() for d in output_of(x).get_partial_shape()]
