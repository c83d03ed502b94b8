"""The decode programs of the benchmark (bench/decode.py, bench/programs.py): generate() with a
compiled forward, checked token for token against eager before anything is timed. No assertion
here is about time."""

import numpy as np
import pytest

import parity
from parity.bench.measure import check_outputs
from parity.bench.programs import PROGRAMS, run_program

pytest.importorskip("transformers", reason="the Hugging Face models need transformers (pip install transformers)")


def favours_token_3(forward):
    """A compiler that gets the logits wrong: token 3 always wins."""

    def wrong(*args, **kwargs):
        out = forward(*args, **kwargs)
        out.logits[..., 3] += 1e4
        return out

    return wrong


def test_decode_programs_report_tokens_per_second_and_flag_wrong_tokens():
    candidates = {"torch eager": lambda f: f, "parity[onnx]": lambda f: parity.compile(f, backend="onnx"),
                  "favours token 3": favours_token_3}
    entry = run_program("decode_static", candidates, quick=True, repeats=1, log=lambda _: None)
    assert entry["name"] == "decode_static" and "static cache" in entry["shape"] and entry["unit"] == "tokens"
    _, tokens = PROGRAMS["decode_static"].build(quick=True).setup(lambda f: f)()
    for label in ("torch eager", "parity[onnx]"):
        result = entry["results"][label]
        assert result["status"] == "ok", result
        assert result["throughput"] == pytest.approx(tokens / result["median_s"])
    assert entry["results"]["parity[onnx]"]["captures"] == 2  # prefill, then the one-token step
    wrong = entry["results"]["favours token 3"]
    assert wrong["status"] == "wrong" and "throughput" not in wrong
    assert wrong["reason"].startswith(f"output 0: {tokens} of ")  # every generated token, not the prompt


def test_integer_outputs_must_be_equal():
    want = [np.array([1000, 7], np.int64)]
    assert check_outputs([np.array([1000, 7], np.int64)], want) is None
    assert check_outputs([np.array([1000, 8], np.int64)], want) == "output 0: 1 of 2 elements differ (first at [1]: 8 vs 7)"
    assert check_outputs([np.array([1001, 7], np.int64)], want) is not None  # within 1e-4 of 1000, still wrong
