"""Claims with predicates (OpClaim.when, backends/claim_predicates.py) through parity.compile and
parity.explain: a node the predicate declines is handled as if its op were unclaimed (a primitive
is unsupported, with the predicate's reason; a composite decomposes), and a node it takes runs
on the backend's own kernel."""

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

import parity
from parity.backends.claim_predicates import (
    all_of,
    attr_in,
    int64_within_int32,
    result_dtypes,
    static_int_range,
)
from parity.frontend.claims import ClaimCheck
from parity.frontend.errors import UnsupportedAtenOp
from parity.ir import GraphBuilder, f32
from parity.ir.dtypes import DType

sys.path.insert(0, str(Path(__file__).parents[1] / "backends"))
from claim_plugins import PredicateClaims  # noqa: E402
from runtime_plugins import registered  # noqa: E402

LHS_DILATION = "its lhs_dilation is (2, 2); the backend takes only 1 in every entry"


@pytest.fixture
def plugin():
    with registered(PredicateClaims()) as backend:
        yield backend


def _transposed_conv():
    torch.manual_seed(0)
    return torch.nn.ConvTranspose2d(1, 1, 2, stride=2), torch.randn(1, 1, 3, 3)  # lhs_dilation (2, 2)


def test_declined_primitive_is_unsupported_in_strict_mode_with_the_reason(plugin):
    conv, x = _transposed_conv()
    with pytest.raises(UnsupportedAtenOp) as err:
        parity.compile(conv, backend="predicate_claims")(x)
    text = str(err.value)
    assert "aten.convolution.default" in text and "cannot run on backend 'predicate_claims'" in text
    assert f"its claim's predicate declines this node: {LHS_DILATION}" in text
    assert "strict=False" in text  # what to do


def test_declined_primitive_runs_eagerly_with_strict_false(plugin):
    conv, x = _transposed_conv()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = parity.compile(conv, backend="predicate_claims", strict=False)(x)
    torch.testing.assert_close(got, conv(x), rtol=0, atol=0)  # eager torch ran it: the same bits
    assert any(LHS_DILATION in str(w.message) and "runs eagerly in torch" in str(w.message) for w in caught)
    assert not any("convolution" in ops for ops in plugin.compiled)


def test_explain_shows_the_predicates_reason(plugin):
    conv, x = _transposed_conv()
    text = str(parity.explain(conv, x, backends=["predicate_claims"]))
    assert "aten.convolution.default x1  predicate_claims: unsupported" in text
    assert LHS_DILATION in text


def test_declined_composite_decomposes_and_explain_says_why(plugin):
    def two_softmaxes(x):
        return torch.softmax(x, 0) + torch.softmax(x, -1)

    x = torch.randn(2, 3)
    torch.testing.assert_close(parity.compile(two_softmaxes, backend="predicate_claims")(x), two_softmaxes(x))
    (ops,) = plugin.compiled
    assert ops.count("softmax") == 1 and "exp" in ops  # the last-axis one native, the other decomposed
    text = str(parity.explain(two_softmaxes, x, backends=["predicate_claims"]))
    assert "aten._softmax.default x2  predicate_claims: decomposed" in text
    assert "the claim's predicate declines softmax: its axis is 0; the backend's softmax kernel runs over the " \
           "last axis only" in text


def test_int64_within_int32_takes_only_what_the_graph_proves():
    b = GraphBuilder()
    x = b.input(DType.int64[3])
    small = b.constant(np.array([1, -7, 2**31 - 1], np.int64))
    large = b.constant(np.array([0, 2**31], np.int64))
    index = b.iota(dtype=DType.int64, shape=(5,), dimension=0)
    widened = b.convert(b.input(DType.int32[3]), dtype=DType.int64)
    graph = b.build([b.add(x, small), b.add(small, small), b.neg(large), b.neg(index), widened, b.neg(widened)])
    add_input, add_small, neg_large, neg_index, convert, neg_widened = (v.producer for v in graph.outputs)
    assert static_int_range(small) == (-7, 2**31 - 1) and static_int_range(index) == (0, 4)
    assert "an int64 operand is of unknown range" in int64_within_int32(add_input)
    # a sum of values in range may leave it: the result's range is not proven
    assert "its int64 result is of unknown range" in int64_within_int32(add_small)
    assert "an int64 operand is spanning [0, 2147483648]" in int64_within_int32(neg_large)
    assert int64_within_int32(convert) is None
    assert "its int64 result is of unknown range" in int64_within_int32(neg_index)
    assert static_int_range(widened) == (-2**31, 2**31 - 1) and "result" in int64_within_int32(neg_widened)


def test_predicates_over_attrs_and_result_dtypes():
    b = GraphBuilder()
    x = b.input(f32[2, 3])
    graph = b.build([b.convert(x, dtype=DType.int64), b.reduce_sum(x, axes=(1,))])
    convert, total = graph.nodes
    assert result_dtypes(DType.float32)(convert) == "its result is i64; the backend makes only f32"
    assert result_dtypes(DType.float32, DType.int64)(convert) is None
    both = all_of(result_dtypes(DType.float32), attr_in("axes", (0,), (0, 1)))
    assert both(total) == "its axes is (1,); the backend takes only (0,) or (0, 1)"
    assert both(convert) == "its result is i64; the backend makes only f32"  # the first refusal


class _NoExp(PredicateClaims):
    def claims(self):
        return {op: claim for op, claim in super().claims().items() if op != "exp"}


def test_a_declined_composite_whose_decomposition_cannot_run_names_both_reasons():
    b = GraphBuilder()
    x = b.input(f32[2, 3])
    graph = b.build([b.softmax(x, axis=0), b.softmax(x, axis=1)])
    check = ClaimCheck(_NoExp())
    assert check(graph.nodes[0]) == (
        "the claim's predicate of backend 'predicate_claims' declines 'softmax' (its axis is 0; the backend's "
        "softmax kernel runs over the last axis only), and backend 'predicate_claims' does not claim the IR op "
        "'exp' (needed by the decomposition of 'softmax')")
    assert check(graph.nodes[1]) is None  # the last axis: its own kernel, no exp needed
