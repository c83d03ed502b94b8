"""Generation loops: ``model.generate()`` with a compiled forward gives eager's tokens.

What a user does with a decoder LM: ``model.forward = parity.compile(model.forward,
backend=B)``, then ``model.generate(...)``, greedy or sampling, with transformers' default
dynamic KV cache (it grows by one token per step) or ``cache_implementation="static"``.
:func:`check_generation` runs both decoding modes on one compiled forward and compares

- the tokens with eager's, exactly (sampling draws from torch's generator in generate's
  logits processors, outside the compiled forward, so equal logits give equal tokens
  when both runs start from the same ``torch.manual_seed``);
- the captures (Dynamo's ``unique_graphs``) with ``torch.compile``'s on the same model
  and calls. torch's count uses ``backend="eager"``: its captures are Dynamo's alone, the
  same with every torch.compile backend, so Inductor's compile time is not paid for it.

The matrix: ``python -m parity.conformance.hf.generation onnx xla`` (every model of
:data:`GENERATION_MODELS`, both caches; one line per cell). CI runs a subset
(tests/models/test_generation.py).

Example::

    >>> from parity.conformance.hf.generation import GENERATION_MODELS
    >>> "llama" in GENERATION_MODELS and "gpt2" in GENERATION_MODELS
    True
"""

from __future__ import annotations

import sys
import warnings
from dataclasses import dataclass, field

import torch

from .architectures import get_architecture
from .check import build, compiler_for

#: Decoder LMs of the zoo that generate() is checked on (their tiny configs: architectures.py).
GENERATION_MODELS = ("gpt2", "llama", "mistral", "qwen2", "phi3", "gemma", "gpt-neox", "opt", "falcon",
                     "stablelm", "qwen3", "gemma2", "mpt")
CACHES = ("dynamic", "static")
PROMPT_LENGTH, NEW_TOKENS = 5, 12


@dataclass
class GenerationCheck:
    """One (model, backend, cache) cell: tokens per decoding mode and both capture counts."""

    model: str
    backend: str
    cache: str
    eager: dict[str, torch.Tensor] = field(default_factory=dict)
    compiled: dict[str, torch.Tensor] = field(default_factory=dict)
    captures: int = 0
    torch_captures: int = 0
    warnings: list[str] = field(default_factory=list)

    def mismatches(self) -> list[str]:
        """The decoding modes whose tokens differ from eager's (empty: every one matches)."""
        return [mode for mode, tokens in self.eager.items()
                if not torch.equal(tokens, self.compiled.get(mode, torch.empty(0)))]

    @property
    def ok(self) -> bool:
        return not self.mismatches() and self.captures <= self.torch_captures

    def __str__(self) -> str:
        tokens = "tokens equal" if not self.mismatches() else f"tokens differ: {', '.join(self.mismatches())}"
        return (f"{self.model:9} {self.backend:9} {self.cache:7} {tokens}; captures {self.captures} "
                f"(torch.compile {self.torch_captures})" + "".join(f"\n    warning: {w}" for w in self.warnings))


def generation_kwargs(cache: str, sample: bool) -> dict:
    kwargs = dict(max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS, do_sample=sample, pad_token_id=0)
    if sample:
        kwargs.update(top_k=0, top_p=1.0, temperature=1.0)  # the whole distribution: every logit counts
    if cache == "static":
        kwargs["cache_implementation"] = "static"
    return kwargs


def _generate(model, prompt, cache: str, seed: int) -> dict[str, torch.Tensor]:
    tokens = {}
    for mode, sample in (("greedy", False), ("sampling", True)):
        torch.manual_seed(seed)
        with torch.no_grad():
            tokens[mode] = model.generate(prompt, **generation_kwargs(cache, sample))
    return tokens


def _captures() -> int:
    from torch._dynamo.utils import counters

    return counters["stats"]["unique_graphs"]


def _compiled(model, compile_forward, prompt, cache: str, seed: int):
    """Tokens and captures with ``model.forward`` replaced by ``compile_forward(forward)``."""
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    forward = model.forward
    model.forward = compile_forward(forward)
    try:
        return _generate(model, prompt, cache, seed), _captures()
    finally:
        model.forward = forward
        torch._dynamo.reset()


def build_decoder(name: str, seed: int = 0):
    """The zoo's tiny ``name`` model in eval mode, and a prompt of :data:`PROMPT_LENGTH` tokens."""
    import transformers

    transformers.logging.set_verbosity_error()
    spec = get_architecture(name)
    model = build(spec, seed).eval()
    generator = torch.Generator().manual_seed(seed)
    prompt = torch.randint(3, spec.settings.get("vocab_size", 96), (1, PROMPT_LENGTH), generator=generator)
    return model, prompt


def check_generation(name: str, backend: str, cache: str = "dynamic", seed: int = 0) -> GenerationCheck:
    """Greedy and sampled ``generate()`` of model ``name`` with its forward compiled by parity on
    ``backend`` (strict: an op that would run in eager torch is an error), against eager's tokens and torch.compile's captures (module docstring)."""
    model, prompt = build_decoder(name, seed)
    result = GenerationCheck(name, backend, cache)
    result.eager = _generate(model, prompt, cache, seed)
    _, result.torch_captures = _compiled(model, lambda f: torch.compile(f, backend="eager"), prompt, cache, seed)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result.compiled, result.captures = _compiled(
            model, compiler_for(backend, strict=True), prompt, cache, seed)
    result.warnings = [f"{w.category.__name__}: {str(w.message).splitlines()[0]}" for w in caught
                       if w.category.__module__.startswith("parity")]
    return result


def main(argv: list[str]) -> int:
    """``python -m parity.conformance.hf.generation BACKEND... [--models a,b]``: the matrix."""
    models = GENERATION_MODELS
    if "--models" in argv:
        at = argv.index("--models")
        models, argv = tuple(argv[at + 1].split(",")), argv[:at] + argv[at + 2:]
    failed = 0
    for backend in argv or ["onnx"]:
        for name in models:
            for cache in CACHES:
                try:
                    result = check_generation(name, backend, cache)
                    line, failed = str(result), failed + (not result.ok)
                except Exception as exc:  # a cell that crashes is a cell: report it, go on
                    line, failed = f"{name:9} {backend:9} {cache:7} ERROR {type(exc).__name__}: " \
                                   f"{str(exc).splitlines()[0][:300]}", failed + 1
                print(line, flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
