"""The decode workloads: ``model.generate()`` of a decoder LM with its forward compiled.

What a user does: ``model.forward = compile(model.forward)``, then ``model.generate(...)``.
The timed call is one greedy ``generate()`` of :data:`NEW_TOKENS` tokens from a fixed prompt
(prefill + one forward per token), with transformers' dynamic KV cache (it grows by one
token per step: the shapes change every call) or ``cache_implementation="static"`` (fixed
shapes). The result is the tokens, which must equal eager's exactly. A candidate compiles
the forward its own way (bench/programs.py: ``compile_with``).

The models are the Hugging Face zoo's decoder LMs that generation is checked on
(conformance/hf/generation.py: :data:`DECODERS`, built from the zoo's tiny configs, prompt
included), so one place defines each model.

Example::

    >>> program, tokens, shape = decode_program("static", quick=True, model="llama")
    >>> tokens, shape
    (16, 'llama (zoo config), prompt 5 + 16 tokens, static cache')
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from ..conformance.hf.generation import GENERATION_MODELS, PROMPT_LENGTH, build_decoder

NEW_TOKENS = {True: 16, False: 32}  # by quick
PROMPT = PROMPT_LENGTH
#: The decoder models by name, in the generation matrix's order; the bench's default is the first.
DECODERS = GENERATION_MODELS
DEFAULT_DECODER = "gpt2"


def decode_program(cache: str, quick: bool = False, model: str = DEFAULT_DECODER) -> tuple[Callable, int, str]:
    """``(program, tokens, shape)``: ``program(compile)`` compiles a fresh ``model``'s forward
    (one of :data:`DECODERS`) with ``compile`` and returns the call that generates ``tokens`` tokens."""
    if model not in DECODERS:
        raise ValueError(f"decode: unknown model {model!r}; the decoders are {', '.join(DECODERS)}")
    tokens = NEW_TOKENS[quick]
    kwargs: dict[str, Any] = dict(max_new_tokens=tokens, min_new_tokens=tokens, do_sample=False, pad_token_id=0)
    if cache == "static":
        kwargs["cache_implementation"] = "static"

    def program(compile_forward: Callable[[Callable], Callable]) -> Callable[[], torch.Tensor]:
        lm, prompt = build_decoder(model)  # the same weights and prompt for every candidate
        lm.forward = compile_forward(lm.forward)

        def generate():
            with torch.no_grad():
                return lm.generate(prompt, **kwargs)

        return generate

    return program, tokens, f"{model} (zoo config), prompt {PROMPT} + {tokens} tokens, {cache} cache"
