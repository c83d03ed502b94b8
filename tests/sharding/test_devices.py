"""Sharded runs on 8 simulated CPU devices (a child process) agree with one device.

simulated.py runs the two examples of docs/sharding.md on the mesh data=4 × model=2 and
on one device and reports results, differences and the collectives in the compiled HLO.
"""

from __future__ import annotations

import numpy as np
import pytest

from .conftest import finish, report_of, start
from .simulated import HEADS, D, F

EPS32 = float(np.finfo(np.float32).eps)


def block_bound(max_abs: float) -> float:
    """The accumulation form n·ε·S for the transformer block: n counts the terms on its longest path.

    q/k/v projection D, scores D/heads, softmax 2·seq, probabilities × v seq, output projection
    D, two layer norms 4·D each (their conformance factor), MLP D and F; S = max|output|.
    """
    seq = 16
    n = D + D // HEADS + 2 * seq + seq + D + 2 * 4 * D + D + F
    return n * EPS32 * max_abs


@pytest.fixture(scope="module")
def report():
    ((code, output),) = finish([start([], devices=8)])
    assert code == 0, output[-4000:]
    return report_of(output)


def test_data_parallel_step_is_bit_exact_and_all_reduces_gradients(report):
    mlp = report["mlp"]
    # Sums of small integers are exact in any order: 8 devices, one device and eager torch agree bit for bit.
    assert mlp["bitwise_single"] and mlp["bitwise_eager"]
    assert mlp["max_diff_single"] == 0.0 and mlp["max_diff_eager"] == 0.0
    # The gradients of the replicated weights are sums over the batch, which is split: XLA all-reduces them.
    assert mlp["collectives"].get("all-reduce", 0) >= 1, mlp["collectives"]
    assert set(mlp["collectives"]) == {"all-reduce"}, mlp["collectives"]


def test_transformer_block_within_the_contract_of_one_device(report):
    block = report["block"]
    bound = block_bound(block["max_abs_oracle"])
    assert block["err_sharded"] <= bound and block["err_single"] <= bound, (block, bound)
    assert block["max_diff_single"] <= 2 * bound, (block, bound)
    # Row-parallel projections (wo, w2 split over "model" on the contracted dim) leave partial sums
    # that are all-reduced; the column-split activations are gathered back before the residuals.
    assert block["collectives"].get("all-reduce", 0) >= 1, block["collectives"]
    assert block["collectives"].get("all-gather", 0) >= 1, block["collectives"]
