"""The facts other layers read from the op table instead of keeping their own op lists.

Each expected value is written out here as the hand-kept list it replaces had it, so a
change to the table that would change a backend's or conformance's behaviour fails.
"""

import dataclasses

import pytest

from parity.ir import GraphBuilder, bool_, f32, i32
from parity.ir.dtypes import FLOAT_DTYPES, DType
from parity.ir.opdef import Accuracy, Group, Kind
from parity.ir.ops import (
    OP_TABLE,
    node_dtype,
    ops_accepting,
    ops_in_family,
    ops_in_group,
    ops_with_accuracy,
    transcendental,
)


def _difference(derived, expected) -> str:
    """'' when the two name collections hold the same names, else what is missing and extra."""
    missing, extra = sorted(set(expected) - set(derived)), sorted(set(derived) - set(expected))
    return f"missing {missing}, extra {extra}" if missing or extra else ""


def test_difference_names_a_planted_wrong_value():
    assert _difference(("mul", "div"), {"mul", "div"}) == ""
    assert _difference(("mul",), {"mul", "div"}) == "missing ['div'], extra []"
    assert _difference(("mul", "add"), {"mul"}) == "missing [], extra ['add']"


# -- the op's dtype ------------------------------------------------------------------------


def test_only_select_keys_its_dtype_by_another_operand_than_the_first():
    # select(pred, on_true, on_false): the predicate is always bool, on_true has the op's dtype.
    assert {name: op.dtype_operand for name, op in OP_TABLE.items() if op.dtype_operand} == {"select": 1}


def test_node_dtype_of_select_is_its_value_dtype_not_the_predicate():
    b = GraphBuilder()
    pred, x = b.input(bool_[3]), b.input(f32[3])
    b.select(pred, x, x)
    b.constant(1, DType.int32)
    select, constant = b.nodes
    assert node_dtype(select) is DType.float32
    assert node_dtype(constant) is DType.int32  # no operands: the result's dtype


def test_a_wrong_dtype_operand_would_key_select_by_its_predicate():
    planted = dataclasses.replace(OP_TABLE["select"], dtype_operand=0)
    assert planted.op_dtype([bool_[3], f32[3], f32[3]], [f32[3]]) is DType.bool


def test_op_dtype_follows_the_first_operand_by_default():
    assert OP_TABLE["add"].op_dtype([i32[2], i32[2]], [i32[2]]) is DType.int32
    assert OP_TABLE["eq"].op_dtype([f32[2], f32[2]], [bool_[2]]) is DType.float32


def test_dtype_operand_must_name_an_operand():
    with pytest.raises(ValueError, match="dtype_operand 3 is not one of its operands"):
        dataclasses.replace(OP_TABLE["select"], dtype_operand=3)


# -- groups and classes --------------------------------------------------------------------

# backends/xla/products.py's _NO_ADD: consumers that leave a product they read alone.
_NO_ADD = {"mul", "div", "max", "min", "clamp", "select", "eq", "ne", "lt", "le", "gt", "ge", "abs",
           "is_nan", "is_inf", "is_finite", "convert", "bitcast_convert", "dot_general", "convolution",
           "reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "argmax", "argmin", "sort", "top_k"}


def test_no_fused_add_group_is_the_xla_no_add_set():
    assert _difference(ops_in_group(Group.NO_FUSED_ADD), _NO_ADD) == ""
    assert _difference(ops_in_group(Group.NO_FUSED_ADD), _NO_ADD - {"reduce_sum"}) == "missing [], extra ['reduce_sum']"


# backends/xla/lowering.py's _TRANSCENDENTAL, plus log2 which it adds beside it for WIDEN.
_XLA_TRANSCENDENTAL = ("exp exp2 expm1 log log1p rsqrt sin cos tan asin acos atan sinh cosh tanh asinh acosh "
                       "atanh erf logistic pow atan2").split() + ["log2"]


def test_transcendental_is_the_accuracy_class():
    assert _difference(transcendental(), _XLA_TRANSCENDENTAL) == ""
    assert transcendental() == ops_with_accuracy(Accuracy.TRANSCENDENTAL)
    assert "sqrt" not in transcendental()  # correctly rounded, not transcendental


# -- families (conformance/opdb/elementwise.py, conformance/fuzz/generate.py) --------------

_UNARY = ("neg abs sign exp exp2 expm1 log log2 log1p sqrt rsqrt reciprocal sin cos tan asin acos atan sinh "
          "cosh tanh asinh acosh atanh erf logistic floor ceil round trunc is_nan is_inf is_finite logical_not "
          "bitwise_not").split()
_BINARY = ("add sub mul div rem pow max min atan2 eq ne lt le gt ge logical_and logical_or logical_xor "
           "bitwise_and bitwise_or bitwise_xor shift_left shift_right_logical shift_right_arithmetic").split()


def test_families_list_their_ops_in_table_order():
    assert ops_in_family("unary") == tuple(_UNARY)
    assert ops_in_family("binary") == tuple(_BINARY)
    assert ops_in_family("selection") == ("select", "clamp")
    assert ops_in_family("conversion") == ("convert", "bitcast_convert")
    assert set(ops_in_family("activations")) == {"relu", "gelu", "silu", "elu", "selu", "softplus", "mish",
                                                 "hardtanh", "hardsigmoid", "hardswish", "leaky_relu"}


def test_every_op_is_in_exactly_one_family():
    from parity.ir.ops import FAMILIES

    names = [name for family in FAMILIES for name in ops_in_family(family)]
    assert sorted(names) == sorted(OP_TABLE)


def test_an_unknown_family_names_the_known_ones():
    with pytest.raises(KeyError, match="'unary', 'binary'"):
        ops_in_family("elementwise")


def test_the_fuzzers_op_lists_follow_from_families_groups_and_dtypes():
    compare = ops_in_group(Group.COMPARISON)
    unary_float = [n for n in ops_in_family("unary") if OP_TABLE[n].dtypes == FLOAT_DTYPES and n not in compare]
    assert unary_float == ("exp exp2 expm1 log log2 log1p sqrt rsqrt reciprocal sin cos tan asin acos atan sinh "
                           "cosh tanh asinh acosh atanh erf logistic floor ceil round trunc").split()
    binary = ops_in_family("binary")
    assert [n for n in binary if n in compare] == ["eq", "ne", "lt", "le", "gt", "ge"]
    assert [n for n in binary if DType.float32 in OP_TABLE[n].dtypes and n not in compare] == [
        "add", "sub", "mul", "div", "rem", "pow", "max", "min", "atan2"]
    assert [n for n in binary if DType.float32 not in OP_TABLE[n].dtypes] == [
        "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor",
        "shift_left", "shift_right_logical", "shift_right_arithmetic"]


def test_ops_accepting_filters_by_dtype_and_kind():
    assert ops_accepting(DType.bool, Kind.PRIMITIVE)[:4] == ("logical_not", "bitwise_not", "eq", "ne")
    assert "bitcast_convert" not in ops_accepting(DType.bool)  # bool has no bit layout
    assert "softmax" in ops_accepting(DType.bfloat16) and "softmax" not in ops_accepting(DType.bfloat16,
                                                                                         Kind.PRIMITIVE)


def test_composite_rows_name_every_field():
    from parity.ir.ops import compose

    with pytest.raises(TypeError, match="positional"):
        compose.composite("twice", ("x",), OP_TABLE["relu"].infer, OP_TABLE["relu"].decompose, FLOAT_DTYPES)
    op = compose.composite(name="twice", operands=("x",), infer=OP_TABLE["relu"].infer,
                           decompose=OP_TABLE["relu"].decompose, dtypes=FLOAT_DTYPES)
    assert (op.kind, op.accuracy, op.groups, op.attrs) == (Kind.COMPOSITE, Accuracy.COMPOSITE, frozenset(), ())
