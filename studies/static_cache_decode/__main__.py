"""Decode with a static KV cache of a serving length: parity against torch.compile and eager,
interleaved in one process.

Question: the zoo's decoders generate 21 tokens into a static cache of 21 positions (caches of
a few KB), where copying a cache costs nothing measurable. A server allocates its static cache
once for the longest request (here ``--length`` positions) and decodes into it; each step then
writes one position per cache. What does parity pay there, now that parity[inductor] writes
the cache in place (backends/inductor/in_place.py), against the copy-back path it had
(the functional graph writes a new cache, AOTAutograd's wrapper copies it back)?

The model is a Llama from a small config (``--layers`` layers, hidden 256, 8 heads of 32;
random weights), one prompt of 8 tokens, ``--tokens`` greedy tokens; the caches are one
``StaticCache(max_cache_len=--length)`` per candidate, reset before each ``generate()``
(outside the timing). Round k runs each candidate once, in rotating order; a ratio is the
median of per-round ratios (torch.compile's time over the candidate's: above 1, faster).
Tokens are checked equal to eager's first. One CPU, one thread.

Run: ``python -m studies.static_cache_decode ROUNDS [--length 2048] [--tokens 32] [--layers 4]``.
Results: results.md beside this file.
"""

from __future__ import annotations

import os
import statistics
import sys
import time


def _option(argv: list[str], name: str, default: int) -> int:
    return int(argv[argv.index(name) + 1]) if name in argv else default


def main(argv: list[str]) -> None:
    import torch
    import transformers

    import parity
    from parity.backends.inductor.backend import InductorExecutable

    rounds = int(argv[0])
    length, tokens, layers = (_option(argv, "--length", 2048), _option(argv, "--tokens", 32),
                              _option(argv, "--layers", 4))
    torch.set_num_threads(1)
    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[-1]})
    transformers.logging.set_verbosity_error()
    config = transformers.LlamaConfig(vocab_size=1000, hidden_size=256, intermediate_size=512,
                                      num_hidden_layers=layers, num_attention_heads=8, num_key_value_heads=8,
                                      max_position_embeddings=length)
    prompt = torch.randint(3, 1000, (1, 8), generator=torch.Generator().manual_seed(0))

    def candidate(compile_forward, *, in_place: bool = True):
        torch.manual_seed(0)
        lm = transformers.LlamaForCausalLM(config).eval()
        lm.forward = compile_forward(lm.forward)
        cache = transformers.StaticCache(config=config, max_cache_len=length)

        def generate():
            cache.reset()
            t0 = time.perf_counter()
            with torch.no_grad():
                out = lm.generate(prompt, past_key_values=cache, max_new_tokens=tokens, min_new_tokens=tokens,
                                  do_sample=False, pad_token_id=0)
            return out, time.perf_counter() - t0

        offered = InductorExecutable.in_place
        if not in_place:  # the copy-back path: compiled (at the first call) without the offer
            InductorExecutable.in_place = lambda self, pairs: None
        try:
            first = generate()
        finally:
            InductorExecutable.in_place = offered
        return generate, first

    calls = {
        "eager": candidate(lambda f: f),
        "torch.compile": candidate(torch.compile),
        "parity[inductor]": candidate(lambda f: parity.compile(f, backend="inductor")),
        "parity[inductor], copy back": candidate(lambda f: parity.compile(f, backend="inductor"), in_place=False),
        "parity[onnx]": candidate(lambda f: parity.compile(f, backend="onnx")),
    }
    want = calls["eager"][1][0]
    for name, (generate, (out, first)) in calls.items():
        assert torch.equal(out, want), f"{name}: tokens differ from eager's"
        assert torch.equal(generate()[0], want), f"{name}: tokens differ from eager's on the second call"
        print(f"{name}: first generate() {first:.2f} s", flush=True)
    times: dict[str, list[float]] = {name: [] for name in calls}
    names = list(calls)
    for k in range(rounds):
        for name in names[k % len(names):] + names[:k % len(names)]:
            times[name].append(calls[name][0]()[1])
    anchor = times["torch.compile"]
    print(f"\nLlama {layers} layers (hidden 256), static cache of {length} positions, prompt 8 + {tokens} tokens, "
          f"{rounds} rounds (load {os.getloadavg()[0]:.1f}); tokens equal eager's")
    print("| candidate | ms per token | torch.compile's time / candidate's |\n| --- | --- | --- |")
    for name, ts in times.items():
        ratio = statistics.median(a / t for a, t in zip(anchor, ts))
        print(f"| {name} | {statistics.median(ts) / tokens * 1e3:.3f} | {ratio:.2f} |")


if __name__ == "__main__":
    main(sys.argv[1:])
