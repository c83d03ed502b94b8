"""``parity bench --decoders``: the decode programs run on every decoder LM of the generation
matrix (conformance/hf/generation.py), one entry per (program, model), each checked token for
token against eager, with the first run set against torch.compile's. No assertion is about time."""

import argparse

import pytest
import torch

from parity.bench.cli import add_arguments, main, program_runs
from parity.bench.decode import DECODERS, decode_program
from parity.bench.programs import run_program
from parity.conformance.hf.generation import GENERATION_MODELS

pytest.importorskip("transformers", reason="the Hugging Face models need transformers (pip install transformers)")


def _parse(*argv):
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser, parser.parse_args(list(argv))


def test_the_decoders_are_the_generation_matrix_and_the_help_names_each_in_order():
    assert DECODERS == GENERATION_MODELS and len(DECODERS) >= 9
    parser, args = _parse()
    assert args.decoders is None  # the default, GPT-2 alone, keeps the README's quick bench as it is
    (action,) = [a for a in parser._actions if a.dest == "decoders"]
    named = action.help.partition("from: ")[2].partition(" (the zoo")[0].split(", ")
    assert named == list(DECODERS)


def test_each_decode_program_runs_once_per_decoder_and_other_programs_once():
    runs = program_runs(["serving", "decode_dynamic", "decode_static"], ["llama", "gemma2"])
    assert runs == [("serving", {}), ("decode_dynamic", {"decoder": "llama"}),
                    ("decode_dynamic", {"decoder": "gemma2"}), ("decode_static", {"decoder": "llama"}),
                    ("decode_static", {"decoder": "gemma2"})]


def test_an_unknown_decoder_is_a_usage_error_that_lists_the_decoders(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--programs", "decode_static", "--decoders", "llama,gtp2", "--backends", "onnx"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "unknown name(s) ['gtp2']" in err and "decoders: ['gpt2', 'llama'," in err


def test_a_decoder_for_a_program_without_one_is_refused():
    with pytest.raises(ValueError, match="program 'serving' has no decoder model to choose; only the decode "
                                         "programs do"):
        run_program("serving", {"torch eager": lambda m: m}, quick=True, decoder="llama")
    with pytest.raises(ValueError, match="unknown model 'gtp2'; the decoders are gpt2, llama"):
        decode_program("static", True, "gtp2")


def test_the_entry_names_its_decoder_and_sets_each_first_run_against_torch_compiles():
    first_calls, models = [], []

    def slow_first_call(forward):  # stands in for a compiler whose first call compiles: eager's tokens
        models.append(type(forward.__self__).__name__)

        def call(*args, **kwargs):
            if not first_calls:
                first_calls.append(1)
                torch.ones(256, 256).matmul(torch.ones(256, 256))  # some work; no time is asserted
            return forward(*args, **kwargs)
        return call

    # "torch.compile" here is eager torch under the label: the ratio's arithmetic, without Inductor's cost
    candidates = {"torch.compile": lambda f: f, "first call slower": slow_first_call}
    entry = run_program("decode_dynamic", candidates, quick=True, repeats=1, log=lambda _: None, decoder="llama")
    assert models == ["LlamaForCausalLM"]  # the zoo's Llama, not the default GPT-2
    assert entry["decoder"] == "llama" and entry["shape"].startswith("llama (zoo config), prompt 5 + 16 tokens")
    compiled = entry["results"]["torch.compile"]
    assert compiled["status"] == "ok" and compiled["first_run_vs_torch_compile"] == 1.0
    slower = entry["results"]["first call slower"]
    assert slower["status"] == "ok", slower
    assert slower["first_run_vs_torch_compile"] == slower["first_run_s"] / compiled["first_run_s"]
