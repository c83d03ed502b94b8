"""The decode workloads of the benchmark (bench/decode.py): generate() with a compiled
forward, checked token for token against eager before anything is timed. No assertion
here is about time."""

import numpy as np
import pytest

from parity.bench.candidates import Parity, TorchEager
from parity.bench.measure import check_outputs
from parity.bench.suite import run_suite
from parity.bench.workloads import WORKLOADS

pytest.importorskip("transformers")


class FavoursToken3(TorchEager):
    """A compiler that gets the logits wrong: token 3 always wins."""

    key, label, anchor = "favours-3", "favours token 3", False

    def compile_program(self, forward):
        def wrong(*args, **kwargs):
            out = forward(*args, **kwargs)
            out.logits[..., 3] += 1e4
            return out

        return wrong


def test_decode_workloads_report_tokens_per_second_and_flag_wrong_tokens():
    record = run_suite(["decode_static"], [TorchEager(), Parity("onnx"), FavoursToken3()], quick=True,
                       log=lambda _: None)
    (entry,) = record["workloads"]
    assert entry["name"] == "decode_static" and "static cache" in entry["shape"]
    tokens = WORKLOADS["decode_static"].build(quick=True).tokens
    for label in ("torch eager", "parity[onnx]"):
        result = entry["results"][label]
        assert result["status"] == "ok", result
        assert result["tokens_per_s"] == pytest.approx(tokens / result["median_s"])
    wrong = entry["results"]["favours token 3"]
    assert wrong["status"] == "wrong" and "tokens_per_s" not in wrong
    assert wrong["reason"].startswith(f"output 0: {tokens} of ")  # every generated token, not the prompt


def test_integer_outputs_must_be_equal():
    want = [np.array([1000, 7], np.int64)]
    assert check_outputs([np.array([1000, 7], np.int64)], want) is None
    assert check_outputs([np.array([1000, 8], np.int64)], want) == "output 0: 1 of 2 elements differ (first at [1]: 8 vs 7)"
    assert check_outputs([np.array([1001, 7], np.int64)], want) is not None  # within 1e-4 of 1000, still wrong
