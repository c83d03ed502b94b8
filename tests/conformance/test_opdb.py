"""The op database: size, coverage of every op and dtype, determinism, domains, layouts,
and error inputs rejected with their messages."""

import numpy as np
import pytest

from parity.conformance import opdb
from parity.conformance.bounds import widens
from parity.conformance.case import ErrorCase
from parity.conformance.opdb.common import EDGE, LAYOUT, LONG
from parity.ir.dtypes import DType
from parity.ir.opdef import Kind
from parity.ir.ops import OP_TABLE, node_dtype
from parity.ir.passes import decompose
from parity.ir.types import TensorType

CASES = opdb.all_cases()


def _op_node(case, graph):
    return next(n for n in graph.nodes if n.op == case.op)


def test_at_least_2500_cases_with_unique_ids():
    assert len(CASES) >= 2500
    assert len({c.id for c in CASES}) == len(CASES)
    counts = opdb.counts_by_family()
    assert sum(v for k, v in counts.items() if k != "errors") == len(CASES)
    assert counts["errors"] == len(opdb.error_cases()) >= 90


def test_every_op_and_every_accepted_dtype_is_covered():
    covered = {(c.op, c.dtype) for c in CASES}
    missing = [(op.name, d.short) for op in OP_TABLE.values() for d in op.dtypes if (op.name, d) not in covered]
    assert not missing
    assert {c.op for c in CASES} == set(OP_TABLE)
    for family in opdb.FAMILIES.values():  # each op belongs to exactly one family
        assert set(family.OPS) == {c.op for c in family.cases()}
    assert sorted(op for f in opdb.FAMILIES.values() for op in f.OPS) == sorted(OP_TABLE)


def test_every_case_builds_its_graph_with_its_declared_dtype():
    for case in CASES:
        arrays = case.arrays()
        graph = case.graph(arrays)
        assert node_dtype(_op_node(case, graph)) is case.dtype, case.id


def test_cases_are_deterministic():
    for case in CASES[::97]:
        a, b = case.arrays(), case.arrays()
        assert all(x.dtype == y.dtype and x.tobytes() == y.tobytes() for x, y in zip(a, b)), case.id


def test_edge_cases_hold_special_values():
    for dtype in (DType.float16, DType.bfloat16, DType.float32, DType.float64):
        (x,) = next(c for c in CASES if c.op == "exp" and c.dtype is dtype and c.name == "specials").arrays()
        x64 = x.astype(np.float64)
        sub = float(dtype.finfo.smallest_subnormal)
        assert np.isnan(x64).any() and np.isposinf(x64).any() and np.isneginf(x64).any()
        assert (np.signbit(x64) & (x64 == 0)).any() and ((x64 == 0) & ~np.signbit(x64)).any()
        assert (x64 == sub).any() and (x64 == float(dtype.finfo.max)).any()
    (x,) = next(c for c in CASES if c.op == "neg" and c.dtype is DType.int8 and c.name == "specials").arrays()
    assert x.min() == -128 and x.max() == 127


def test_accuracy_cases_respect_the_domain_but_edge_cases_leave_it():
    for case in (c for c in CASES if c.op == "acosh" and c.name == "random"):
        (x,) = case.arrays()
        assert (x.astype(np.float64) >= 1).all()
    for case in (c for c in CASES if c.op == "log" and c.name == "random" and not c.dtype.is_complex):
        assert (case.arrays()[0].astype(np.float64) > 0).all()
    (x,) = next(c for c in CASES if c.op == "acosh" and c.dtype is DType.float32 and c.name == "specials").arrays()
    assert (x < 1).any()  # out of the domain: NaN that every backend must return


def test_layouts_empty_size1_noncontiguous_and_broadcast():
    cases = [c for c in CASES if c.op == "add" and c.dtype is DType.float32]
    by_name = {c.name: c for c in cases}
    assert by_name["empty"].arrays()[0].shape == (0, 3)
    assert by_name["size1"].arrays()[0].shape == (1, 1, 3)
    assert by_name["scalar"].arrays()[0].shape == ()
    assert not by_name["transposed"].arrays()[0].flags.c_contiguous
    assert not by_name["strided"].arrays()[0].flags.c_contiguous
    arrays = by_name["broadcast"].arrays()
    graph = by_name["broadcast"].graph(arrays)
    assert arrays[1].shape == (6,) and graph.op_counts() == {"broadcast_in_dim": 1, "add": 1}
    assert all(LAYOUT in by_name[n].tags for n in ("empty", "transposed", "broadcast"))
    assert EDGE in by_name["specials"].tags


def test_a_few_long_reductions_over_a_million_terms():
    long = [c for c in CASES if LONG in c.tags]
    assert 3 <= len(long) <= 8
    for case in long:
        assert max(a.size for a in case.arrays()) >= 10**6, case.id


def test_implementation_defined_elements_are_masked_or_not_generated():
    div = next(c for c in CASES if c.op == "div" and c.dtype is DType.int32 and c.name == "specials")
    arrays = div.arrays()
    (mask,) = div.masks(arrays, 1)
    assert not mask[arrays[1] == 0].any() and mask[arrays[1] != 0].all()
    conv = next(c for c in CASES if c.op == "convert" and c.dtype is DType.float32 and c.name == "to_i8:specials")
    (x,) = conv.arrays()
    (mask,) = conv.masks([x], 1)
    assert not mask[np.isnan(x)].any() and not mask[np.isinf(x)].any() and mask[x == 100.0].all()
    assert mask[x == 1.5].all() and not mask[x.astype(np.float64) > 127.99].any()
    for case in (c for c in CASES if c.op in ("gather", "scatter")):
        arrays = case.arrays()
        axis = case.attrs["axis"]
        assert ((arrays[1] >= 0) & (arrays[1] < arrays[0].shape[axis])).all(), case.id
        if case.attrs.get("reduce") == "replace":  # no element written twice
            idx = np.moveaxis(arrays[1], axis, 0).reshape(arrays[1].shape[axis], -1)
            assert all(len(set(col)) == len(col) for col in idx.T), case.id


def test_widened_composites_are_the_ones_whose_decomposition_converts_to_f32():
    for op in (o.name for o in OP_TABLE.values() if o.kind is Kind.COMPOSITE):
        case = next((c for c in CASES if c.op == op and c.dtype is DType.float16), None)
        if case is None:
            continue
        lowered, _ = decompose(case.graph(case.arrays()), claimed=lambda name: False)
        to_f32 = any(n.op == "convert" and n.outputs[0].type.dtype is DType.float32 for n in lowered.nodes)
        assert widens(op) == to_f32, op


@pytest.mark.parametrize("error", opdb.error_cases(), ids=lambda e: e.id)
def test_error_inputs_are_rejected_with_their_message(error):
    assert error.check() is None


def test_error_case_check_can_fail():
    f32 = DType.float32
    accepted = ErrorCase("add", (TensorType(f32, (3,)), TensorType(f32, (3,))), {}, "anything")
    assert accepted.check() == "accepted; the type rule should have rejected it"
    wrong = ErrorCase("add", (TensorType(f32, (3,)), TensorType(f32, (4,))), {}, "no such words")
    assert "expected it to contain 'no such words'" in wrong.check()
