"""The decode workloads: ``model.generate()`` of a small GPT-2 (or Llama) with its forward compiled.

What a user does: ``model.forward = compile(model.forward)``, then ``model.generate(...)``.
The timed call is one greedy ``generate()`` of :data:`NEW_TOKENS` tokens from a fixed prompt
(prefill + one forward per token), with transformers' dynamic KV cache (it grows by one
token per step: the shapes change every call) or ``cache_implementation="static"`` (fixed
shapes). The result is the tokens, which must equal eager's exactly. A candidate compiles
the forward its own way (bench/programs.py: ``compile_with``).

Example::

    >>> program, tokens, shape = decode_program("static", quick=True)
    >>> tokens, shape
    (16, 'GPT-2 2×64, prompt 8 + 16 tokens, static cache')
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

NEW_TOKENS = {True: 16, False: 32}  # by quick
PROMPT = 8


def _gpt2(quick: bool):
    import transformers

    transformers.logging.set_verbosity_error()
    layers, width = (2, 64) if quick else (4, 128)
    config = transformers.GPT2Config(n_layer=layers, n_embd=width, n_head=4, vocab_size=512, n_positions=128,
                                     bos_token_id=0, eos_token_id=1)
    torch.manual_seed(0)
    return transformers.GPT2LMHeadModel(config).eval()


def _llama(quick: bool):
    import transformers

    transformers.logging.set_verbosity_error()
    layers, width = (2, 64) if quick else (4, 128)
    config = transformers.LlamaConfig(num_hidden_layers=layers, hidden_size=width, intermediate_size=2 * width,
                                      num_attention_heads=4, num_key_value_heads=2, vocab_size=512,
                                      max_position_embeddings=128, bos_token_id=0, eos_token_id=1)
    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(config).eval()


#: The decoder models by name: GPT-2 (learned positions, MHA) and a Llama (RoPE, GQA, RMSNorm).
MODELS = {"gpt2": ("GPT-2", _gpt2), "llama": ("Llama", _llama)}


def decode_program(cache: str, quick: bool = False, model: str = "gpt2") -> tuple[Callable, int, str]:
    """``(program, tokens, shape)``: ``program(compile)`` compiles a fresh ``model``'s forward
    (:data:`MODELS`) with ``compile`` and returns the call that generates ``tokens`` tokens."""
    title, make = MODELS[model]
    tokens = NEW_TOKENS[quick]
    kwargs: dict[str, Any] = dict(max_new_tokens=tokens, min_new_tokens=tokens, do_sample=False, pad_token_id=0)
    if cache == "static":
        kwargs["cache_implementation"] = "static"

    def program(compile_forward: Callable[[Callable], Callable]) -> Callable[[], torch.Tensor]:
        lm = make(quick)
        prompt = torch.randint(2, 512, (1, PROMPT), generator=torch.Generator().manual_seed(0))
        lm.forward = compile_forward(lm.forward)

        def generate():
            with torch.no_grad():
                return lm.generate(prompt, **kwargs)

        return generate

    size = "2×64" if quick else "4×128"
    return program, tokens, f"{title} {size}, prompt {PROMPT} + {tokens} tokens, {cache} cache"
