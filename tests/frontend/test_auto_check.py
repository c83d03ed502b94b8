"""auto's check of a candidate's first outputs against eager torch: values within the dtype's
rtol, integers exactly, and the indices of an unstable sort or a top-k up to the order of
equal keys (torch's CPU sort does not keep ties in input order; the IR's sort does)."""

import pytest
import torch

from parity.frontend.auto_check import (
    eager_outputs,
    float64_outputs,
    mismatch,
    mismatch_past_float64,
    stable_outputs,
    underflow_scale,
)

aten = torch.ops.aten
KEYS = torch.tensor([[3.0, 1.0, 3.0, 1.0, 2.0]])


def _graph(fn):
    return torch.fx.symbolic_trace(fn)


def _both(op):
    """A graph returning both results of ``op`` (values, indices), each through a getitem as
    AOTAutograd's graphs return them."""
    def fn(x):
        result = op(x)
        return result[0], result[1]
    return _graph(fn)


def _swap_ties(indices: torch.Tensor) -> torch.Tensor:
    """Reverse the order within every run of equal keys: another valid unstable sort."""
    out = indices.clone()
    keys = KEYS.gather(1, indices)[0]
    start = 0
    for end in range(1, len(keys) + 1):
        if end == len(keys) or keys[end] != keys[start]:
            out[0, start:end] = indices[0, start:end].flip(0)
            start = end
    return out


@pytest.mark.parametrize("fn", [lambda x: aten.sort.default(x, 1), lambda x: aten.sort.stable(x, stable=False, dim=1),
                                lambda x: aten.topk.default(x, 4, 1)])
def test_indices_that_order_ties_otherwise_match(fn):
    (values, indices), ties = eager_outputs(_both(fn), [KEYS])
    assert set(ties) == {1}
    swapped = _swap_ties(indices)
    assert not torch.equal(swapped, indices)  # the case really reorders ties
    assert mismatch([values, swapped], [values, indices], ties) is None


def test_indices_that_pick_other_keys_or_repeat_do_not_match():
    (values, indices), ties = eager_outputs(_both(lambda x: aten.sort.default(x, 1)), [KEYS])
    wrong = indices.flip(1)
    assert mismatch([values, wrong], [values, indices], ties) == \
        "output 1: indices pick other keys than eager torch sorted (4 of 5 positions)"
    repeated = indices.clone()
    repeated[0, 1] = repeated[0, 0]  # keys 1.0 and 1.0: the same keys picked, one index twice
    assert mismatch([values, repeated], [values, indices], ties) == \
        "output 1: an index repeats along the sorted dimension"
    outside = indices.clone()
    outside[0, 0] = 5
    assert mismatch([values, outside], [values, indices], ties) == "output 1: indices outside [0, 5)"


def test_a_stable_sort_s_indices_are_exact():
    (values, indices), ties = eager_outputs(_both(lambda x: aten.sort.stable(x, stable=True, dim=1)), [KEYS])
    assert ties == {}
    assert mismatch([values, _swap_ties(indices)], [values, indices], ties).startswith("output 1: ")


def test_values_and_integers_are_compared_as_before():
    (out,), ties = eager_outputs(_graph(lambda x: (x * 2,)), [KEYS])
    assert ties == {} and mismatch([out * (1 + 1e-6)], [out], ties) is None
    assert mismatch([out * (1 + 1e-3)], [out], ties).startswith("output 0: 5 of 5 elements off")
    assert mismatch([torch.tensor([1, 2])], [torch.tensor([1, 3])]) == "output 0: 1 of 2 elements off (max abs error 1)"


def test_sorted_indices_that_feed_further_ops_match_eager_with_stable_sorts():
    # from 64 elements on torch's CPU sort orders ties otherwise than input order
    keys = torch.arange(64).remainder(3).float()
    gm = _graph(lambda x: aten.sort.default(x, 0)[1] * 2)
    eager, _ = eager_outputs(gm, [keys])
    stable = stable_outputs(gm, [keys])
    in_input_order = torch.sort(keys, stable=True).indices * 2
    assert torch.equal(stable, in_input_order) and not torch.equal(eager, in_input_order)
    assert stable_outputs(_graph(lambda x: aten.sort.stable(x, stable=True, dim=0)[1] * 2), [keys]) is None


def test_auto_keeps_backends_whose_sort_orders_ties_in_input_order():
    import parity

    torch._dynamo.reset()
    keys = torch.arange(64).remainder(3).float()
    for fn in (lambda x: torch.sort(x), lambda x: torch.sort(x).indices * 2 + 1):
        compiled = parity.compile(fn, backend="auto", auto=parity.AutoOptions(budget_s=2))
        compiled(keys)
        (choice,) = parity.auto_choices(compiled)
        dropped = [line for line in str(choice).splitlines() if "differs from eager torch" in line]
        assert dropped == [] and choice.choice is not None, str(choice)


def test_a_stable_top_k_is_contiguous_as_top_k_is():
    """MoE routing views top-k's indices (Mixtral: ``topk(probs, 2)[1].view(-1)``); the stable
    stand-in must give top-k's contiguous layout, or that view fails in auto's check (it made
    Mixtral and Qwen2-MoE fail on backend='auto')."""
    probs = torch.tensor([[0.1, 0.4, 0.4, 0.1], [0.3, 0.3, 0.2, 0.2]])
    gm = _graph(lambda x: aten.view.default(aten.topk.default(x, 2)[1], [-1]))
    eager, _ = eager_outputs(gm, [probs])
    stable = stable_outputs(gm, [probs])
    assert stable.tolist() == [1, 2, 0, 1]  # ties in input order
    assert sorted(eager.tolist()[:2]) == [1, 2] and sorted(eager.tolist()[2:]) == [0, 1]


# -- the float64 second chance: eager's own error sets the bar ---------------------------------

def test_noise_against_noise_passes_the_float64_second_chance():
    """An analytically zero output (BERT's key-bias gradient): eager's float32 and a
    candidate's give rounding noise of different sizes, each as far from float64's zero."""
    exact = [torch.zeros(3, dtype=torch.float64)]
    eager, other = [torch.tensor([3e-8, -1e-8, 2e-8])], [torch.tensor([-5e-8, 4e-8, 0.0])]
    assert mismatch(other, eager) is not None
    assert mismatch_past_float64(other, eager, exact) is None
    wrong = [torch.tensor([1e-5, 0.0, 0.0])]  # planted: 333x eager's noise, past 16x
    why = mismatch_past_float64(wrong, eager, exact)
    assert why.startswith("output 0: 3 of 3 elements off") and "333x eager's distance" in why and "at most 16x" in why


@pytest.mark.parametrize("off, passes", [(1.5e-6, True), (3e-6, False)])
def test_an_ill_conditioned_output_may_be_twice_as_far_from_float64_as_eager(off, passes):
    exact = [torch.tensor([1e-3, 2e-3], dtype=torch.float64)]
    eager = [torch.tensor([1e-3 + 1e-6, 2e-3])]  # eager's own error: 1e-6, past RTOL (3e-7 here)
    got = [torch.tensor([1e-3 - off, 2e-3])]
    assert mismatch(got, eager) is not None
    assert (mismatch_past_float64(got, eager, exact) is None) is passes


def test_the_float64_run_widens_casts_and_constants():
    """Every dtype argument is widened too: a cast back to float32 or a float32 constant would
    round the oracle down to eager's precision."""
    gm = _graph(lambda x: aten._to_copy.default(x * 3, dtype=torch.float32)
                + aten.full_like.default(x, 0.1, dtype=torch.float32))
    (out,) = float64_outputs(gm, [torch.tensor([0.1, 0.2])])
    assert out.dtype == torch.float64
    x64 = torch.tensor([0.1, 0.2], dtype=torch.float32).double()
    assert torch.equal(out, x64 * 3 + 0.1)  # 0.1 as a float64, x * 3 not rounded to float32
    assert float64_outputs(_graph(lambda x: aten.div.Tensor_mode(x, x, rounding_mode="nope")),
                           [torch.ones(2)]) is None  # an op that cannot run: no second chance


def test_the_check_runs_views_on_layouts_the_trace_did_not_see():
    """A backward graph is traced with the forward's activations in eager's layouts, but runs on
    what the chosen backend returned (contiguous): a view of a permuted activation (ConvNeXt,
    SegFormer) must still give its values in the check's eager, stable and float64 runs."""
    gm = _graph(lambda x: aten.view.default(x, [-1]) * 2)
    x = torch.arange(6.0).reshape(2, 3).t()  # a layout view() cannot flatten
    want = torch.arange(6.0).reshape(2, 3).t().reshape(-1) * 2
    assert torch.equal(eager_outputs(gm, [x])[0], want)
    assert torch.equal(float64_outputs(gm, [x])[0], want.double())


# -- the underflow floor ----------------------------------------------------------------------------

TINY = torch.finfo(torch.float32).tiny


def test_an_output_at_underflow_scale_passes_within_its_floor_and_fails_past_it():
    want = torch.tensor([2.3e-36, -8.8e-36, 1.7e-36])
    got = want + 7e-39  # XLA:CPU's logits on EfficientNet, flushing the subnormal products
    assert mismatch([got], [want]) == "output 0: 3 of 3 elements off (max abs error 7e-39)"
    assert mismatch([got], [want], floors={torch.float32: TINY}) is None
    assert mismatch([got], [want], floors={torch.float32: TINY / 1000}) is not None
    assert mismatch([got], [want], floors={torch.float16: 1.0}) is not None  # the floor of another dtype


def test_a_nan_or_an_infinity_is_never_within_the_floor():
    want = torch.tensor([1e-39, 2e-39])
    for wrong in (float("nan"), float("inf")):
        got = torch.tensor([1e-39, wrong])
        why = mismatch([got], [want], floors={torch.float32: 1e30})
        assert why is not None and why.startswith("output 0: 1 of 2 elements off"), why


def test_the_floor_does_not_excuse_a_relative_error_on_normal_values():
    want = torch.linspace(-3.0, 3.0, 64)
    got = want * (1 + 1e-3)
    assert mismatch([got], [want], floors={torch.float32: TINY * 1e6}) is not None


class _KeepValues(torch.fx.Interpreter):
    """Records each node's value in its meta, as AOTAutograd's graphs carry their fake tensors."""

    def run_node(self, node):
        node.meta["val"] = super().run_node(node)
        return node.meta["val"]


def test_the_underflow_scale_is_the_largest_operand_times_the_largest_input_magnitude():
    gm = torch.fx.symbolic_trace(lambda x, w: torch.sum(x * w))  # sums an 8x8 product of an 8x1 and a 1x8
    x, w = torch.ones(8, 1), torch.full((1, 8), -4.0)
    _KeepValues(gm).run(x, w)
    assert underflow_scale(gm, [x, w]) == 64 * 4.0
    assert underflow_scale(gm, [x * 1e-3, w * 1e-3]) == 64 * 1.0  # magnitudes below 1 do not shrink it
