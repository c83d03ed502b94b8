"""Generation loops: ``model.generate()`` with a compiled forward (conformance/hf/generation.py).

CI runs a subset, one cell per cause and backend; the whole matrix (13 decoder LMs × both
caches, each greedy and sampled, on onnx, xla, inductor, auto) is ``python -m parity.conformance.hf.generation
onnx xla inductor auto``.
"""

import pytest
import torch
import torch.fx.experimental._config as fx_config

import parity
from parity.conformance.hf.generation import GENERATION_MODELS, check_generation
from parity.ir.errors import ParityError

pytest.importorskip("transformers", reason="the Hugging Face models need transformers (pip install transformers)")

# GPT-2's dynamic cache on onnx: its keys and values got separate size symbols (the cause
# fixed in frontend/aten/attention.py); Mistral's sliding-window cache computes its offset
# with torch.sym_max (frontend/translate.py); a static cache on xla (Qwen2); Llama (GQA,
# RoPE) on the default, auto. parity's inductor backend runs in the matrix only (its
# compiles take minutes on CI's two cores).
CI_SUBSET = (("gpt2", "onnx", "dynamic"), pytest.param("mistral", "onnx", "dynamic", marks=pytest.mark.matrix),
             pytest.param("qwen2", "xla", "static", marks=pytest.mark.matrix), ("llama", "auto", "dynamic"))

pytestmark = pytest.mark.usefixtures("fresh_compiler")


def test_the_matrix_covers_the_issue_models_and_three_more():
    assert {"gpt2", "llama", "mistral", "qwen2", "phi3", "gemma"} <= set(GENERATION_MODELS)
    assert len(GENERATION_MODELS) >= 9


@pytest.mark.slow
@pytest.mark.parametrize("name,backend,cache", CI_SUBSET)
def test_generate_gives_eager_tokens_with_no_more_captures_than_torch_compile(name, backend, cache):
    result = check_generation(name, backend, cache)
    assert set(result.eager) == {"greedy", "sampling"}
    # sampling over the whole distribution of a random-weight model leaves the greedy path:
    # equal sampled tokens show that no random number was drawn differently
    assert not torch.equal(result.eager["greedy"], result.eager["sampling"])
    assert result.mismatches() == [], str(result)
    assert 1 <= result.captures <= result.torch_captures, str(result)
    assert not [w for w in result.warnings if "RecompileLimit" in w], str(result)


def _attend(q, k, v):
    return torch.nn.functional.scaled_dot_product_attention(q, k, v)


@pytest.mark.parametrize("backend", ["reference", "onnx"])
def test_keys_and_values_with_separate_size_symbols_must_be_equal_when_bound(backend):
    # A KV cache's keys and values are separate inputs: without duck sizing (as under
    # automatic dynamic) Dynamo gives their lengths separate symbols, and torch's CPU
    # attention never compares them. The translation assumes them equal and the
    # assumption is checked at every call: unequal lengths raise, never compute.
    torch.manual_seed(0)
    q, k, v = torch.randn(1, 2, 3, 8), torch.randn(1, 2, 5, 8), torch.randn(1, 2, 5, 8)
    torch._dynamo.mark_dynamic(k, 2)
    torch._dynamo.mark_dynamic(v, 2)
    attend = parity.compile(_attend, backend=backend)
    with fx_config.patch(use_duck_shape=False):
        torch.testing.assert_close(attend(q, k, v), _attend(q, k, v))
        longer_k, longer_v = torch.randn(1, 2, 7, 8), torch.randn(1, 2, 7, 8)
        torch.testing.assert_close(attend(q, longer_k, longer_v), _attend(q, longer_k, longer_v))
        with pytest.raises(ParityError) as caught:
            attend(q, torch.randn(1, 2, 6, 8), torch.randn(1, 2, 7, 8))
    message = str(caught.value)
    assert "scaled_dot_product" in message and "test_generation.py" in message  # the op, the user's line
    assert "the values' batch and sequence sizes must equal the keys'" in message
    assert "= 7" in message and "= 6" in message  # both sizes
