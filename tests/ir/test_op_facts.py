"""The facts other layers read from the op table instead of keeping their own op lists.

Each expected value is written out here as the hand-kept list it replaced had it, so a
change to the table that would change a backend's or conformance's behaviour fails; a
new op joining a family or class is not such a change (see _keeps).
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


# The lists below are what the hand-kept lists held when they were replaced by queries. A
# new op may join a family, group or class (adding one edits no file here); an op of these
# lists leaving it, or moving within its family (the fuzzer draws by position), fails.


def _keeps(derived, known) -> str:
    """'' when ``known`` appears in ``derived`` in the same order (other names may be
    between), else the first known name that is missing or out of order."""
    rest = iter(derived)
    for name in known:
        if name not in rest:  # advances the iterator past name
            where = "missing" if name not in derived else "out of order"
            return f"{name} {where}"
    return ""


def test_keeps_names_a_planted_wrong_value():
    assert _keeps(("a", "new", "b", "c"), ["a", "b", "c"]) == ""
    assert _keeps(("a", "c"), ["a", "b", "c"]) == "b missing"
    assert _keeps(("b", "a", "c"), ["a", "b", "c"]) == "b out of order"


# backends/xla/lowering.py's _TRANSCENDENTAL, plus log2 which it added beside it for WIDEN.
_XLA_TRANSCENDENTAL = ("exp exp2 expm1 log log2 log1p rsqrt sin cos tan asin acos atan sinh cosh tanh asinh "
                       "acosh atanh erf logistic pow atan2").split()


def test_transcendental_is_the_accuracy_class():
    assert transcendental() == ops_with_accuracy(Accuracy.TRANSCENDENTAL)
    assert _keeps(transcendental(), _XLA_TRANSCENDENTAL) == ""
    # correctly rounded or exact, never transcendental:
    assert not {"sqrt", "reciprocal", "div", "mul", "floor", "round", "convert"} & set(transcendental())


# -- families (conformance/opdb/elementwise.py, conformance/fuzz/generate.py) --------------

_UNARY = ("neg abs sign exp exp2 expm1 log log2 log1p sqrt rsqrt reciprocal sin cos tan asin acos atan sinh "
          "cosh tanh asinh acosh atanh erf logistic floor ceil round trunc is_nan is_inf is_finite logical_not "
          "bitwise_not").split()
_BINARY = ("add sub mul div rem pow max min atan2 eq ne lt le gt ge logical_and logical_or logical_xor "
           "bitwise_and bitwise_or bitwise_xor shift_left shift_right_logical shift_right_arithmetic").split()
_ACTIVATIONS = "relu leaky_relu elu selu gelu silu mish softplus hardtanh hardsigmoid hardswish".split()


def test_families_list_their_ops_in_table_order():
    assert _keeps(ops_in_family("unary"), _UNARY) == ""
    assert _keeps(ops_in_family("binary"), _BINARY) == ""
    assert _keeps(ops_in_family("activations"), _ACTIVATIONS) == ""
    assert ops_in_family("selection") == ("select", "clamp")
    assert ops_in_family("conversion") == ("convert", "bitcast_convert")


def test_every_op_is_in_exactly_one_family():
    from parity.ir.ops import FAMILIES

    names = [name for family in FAMILIES for name in ops_in_family(family)]
    assert sorted(names) == sorted(OP_TABLE)


def test_an_unknown_family_names_the_known_ones():
    with pytest.raises(KeyError, match="'unary', 'binary'"):
        ops_in_family("elementwise")


def test_the_fuzzers_op_lists_follow_from_families_groups_and_dtypes():
    compare = ops_in_group(Group.COMPARISON)
    unary_float = [n for n in ops_in_family("unary")
                   if tuple(d for d in OP_TABLE[n].dtypes if not d.is_complex) == FLOAT_DTYPES and n not in compare]
    assert _keeps(unary_float, "exp exp2 expm1 log log2 log1p sqrt rsqrt reciprocal sin cos tan asin acos atan "
                               "sinh cosh tanh asinh acosh atanh erf logistic floor ceil round trunc".split()) == ""
    assert not {"neg", "abs", "is_nan", "logical_not", "bitwise_not"} & set(unary_float)
    binary = ops_in_family("binary")
    assert _keeps([n for n in binary if n in compare], ["eq", "ne", "lt", "le", "gt", "ge"]) == ""
    arith = [n for n in binary if DType.float32 in OP_TABLE[n].dtypes and n not in compare]
    assert _keeps(arith, ["add", "sub", "mul", "div", "rem", "pow", "max", "min", "atan2"]) == ""
    bits = [n for n in binary if DType.float32 not in OP_TABLE[n].dtypes]
    assert _keeps(bits, ["logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor",
                         "shift_left", "shift_right_logical", "shift_right_arithmetic"]) == ""
    assert not set(arith) & set(bits) and not set(arith) & set(compare)


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


def test_multiplicative_and_selecting_ops_are_groups_of_the_table():
    # conformance/bounds.py's PRODUCTS and xla's product widening read MULTIPLICATIVE; xla's
    # products pass follows SELECTS like shape ops (the three lists were typed by hand).
    assert ops_in_group(Group.MULTIPLICATIVE) == ("reduce_prod", "cumprod")
    assert ops_in_group(Group.SELECTS) == ("gather", "dynamic_slice")
    assert not {"cumsum", "reduce_sum", "scatter", "dynamic_update_slice"} & set(
        ops_in_group(Group.MULTIPLICATIVE) + ops_in_group(Group.SELECTS))


def test_composites_that_compute_wide_without_the_wrapper_are_a_group():
    # conformance/bounds.py's widens() read a hand list {normal, interpolate}; now the group.
    from parity.conformance.bounds import widens

    assert ops_in_group(Group.COMPUTES_WIDE) == ("normal", "interpolate")
    assert widens("normal") and widens("interpolate") and not widens("uniform") and not widens("max_pool")
