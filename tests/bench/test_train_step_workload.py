"""The bench's whole-AdamW-step workload: every candidate steps its own copy of the model and
optimizer from the same weights, and is checked against eager's first step (loss and the
updated output bias). No assertion here is about time."""

import numpy as np
import pytest
import torch

from parity.bench.candidates import JaxJit, NotApplicable, Parity, TorchEager
from parity.bench.measure import check_outputs
from parity.bench.workloads import WORKLOADS


def _numpy(result) -> list[np.ndarray]:
    return [t.detach().numpy().copy() for t in result]


def test_the_adamw_step_runs_the_optimizer_in_the_compiled_function_and_matches_eager():
    case = WORKLOADS["adamw_step"].build(quick=True)
    eager, compiled = TorchEager().prepare(case, 1), Parity("onnx").prepare(case, 1)
    want, got = _numpy(eager()), _numpy(compiled())
    assert check_outputs(got, want) is None
    # the step updated the output bias (the second result), and each candidate keeps its own state:
    # a second compiled step moves it again while eager's first result stays as it was
    fresh = _numpy(TorchEager().prepare(case, 1)())
    np.testing.assert_array_equal(fresh[1], want[1])
    again = _numpy(compiled())
    assert not np.array_equal(again[1], got[1])
    assert again[0] < got[0]  # the loss went down: the update is a descent step


def test_jax_is_not_applicable_to_a_torch_optimizer_step():
    case = WORKLOADS["adamw_step"].build(quick=True)
    with pytest.raises(NotApplicable, match="torch optimizer's whole step"):
        JaxJit().prepare(case, 1)


def test_the_step_starts_from_the_workload_weights():
    case = WORKLOADS["adamw_step"].build(quick=True)
    mlp = WORKLOADS["mlp"].build(quick=True)
    loss, _ = TorchEager().prepare(case, 1)()
    x, target = case.inputs
    from parity.bench.workloads import mlp_torch

    expected = (mlp_torch(x, *mlp.inputs[1:]) - target).square().mean()
    torch.testing.assert_close(loss, expected, rtol=0, atol=0)
