"""generate() on Hugging Face decoder LMs outside the zoo: parity's tokens against eager's, its
captures against torch.compile's (Dynamo alone, backend="eager"), greedy and sampled, with a
dynamic and a static cache. Each architecture is built from a tiny config written here (width
32, two layers) with random weights, in its own process (a crash or hang is its line).

Results: results.md. Example::

    $ python -m studies.generation_outside_zoo Olmo2 Mpt --backend onnx
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import warnings

COMMON = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
              intermediate_size=64, vocab_size=96, max_position_embeddings=64, pad_token_id=0, bos_token_id=1,
              eos_token_id=2)
EXTRA = {
    "Mpt": dict(d_model=32, n_layers=2, n_heads=4, expansion_ratio=2, max_seq_len=64),
    "XGLM": dict(d_model=32, num_layers=2, attention_heads=4, ffn_dim=64),
    "Mamba": dict(state_size=4, expand=2, conv_kernel=4, time_step_rank=4),
    "Mamba2": dict(state_size=4, expand=2, conv_kernel=4, num_heads=4, head_dim=16, n_groups=1, chunk_size=16),
    "DeepseekV3": dict(n_routed_experts=4, num_experts_per_tok=2, moe_intermediate_size=16, first_k_dense_replace=1,
                       kv_lora_rank=16, q_lora_rank=16, qk_rope_head_dim=4, qk_nope_head_dim=4, v_head_dim=8, n_group=1, topk_group=1),
    "Qwen3Moe": dict(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=16, head_dim=8),
    "Phimoe": dict(num_local_experts=4, num_experts_per_tok=2),
    "Dbrx": dict(d_model=32, n_layers=2, n_heads=4, max_seq_len=64, attn_config=dict(kv_n_heads=2), ffn_config=dict(moe_num_experts=4, moe_top_k=2, ffn_hidden_size=32)),
    "GptOss": dict(num_local_experts=4, num_experts_per_tok=2, head_dim=8, sliding_window=4, layer_types=["sliding_attention", "full_attention"]),
    "Gemma3": dict(head_dim=8, sliding_window=4, query_pre_attn_scalar=8),
    "Cohere2": dict(sliding_window=4),
    "RecurrentGemma": dict(lru_width=32, attention_window_size=8, block_types=["recurrent", "attention"], head_dim=8),
    "Jamba": dict(num_experts=2, num_experts_per_tok=1, expert_layer_period=2, attn_layer_period=2, attn_layer_offset=1, mamba_d_state=4, mamba_dt_rank=4),
    "Lfm2": dict(layer_types=["conv", "full_attention"]),
}


def check(name: str, backend: str, caches: list[str]) -> None:
    """One architecture, in this process: one RESULT line per cache."""
    import torch
    import transformers

    from parity.conformance.hf.check import compiler_for
    from parity.conformance.hf.generation import _compiled, _generate

    transformers.logging.set_verbosity_error()
    config = getattr(transformers, name + "Config")(**{**COMMON, **EXTRA.get(name, {})})
    torch.manual_seed(0)
    model = getattr(transformers, name + "ForCausalLM")(config).eval()
    prompt = torch.randint(3, 96, (1, 5), generator=torch.Generator().manual_seed(0))
    for cache in caches:
        start = time.time()
        try:
            eager = _generate(model, prompt, cache, 0)
        except Exception as exc:  # the tiny config itself: not parity's to judge
            print(f"RESULT {name} {backend} {cache}: eager fails ({type(exc).__name__}: {str(exc)[:200]})", flush=True)
            continue
        _, anchor = _compiled(model, lambda f: torch.compile(f, backend="eager"), prompt, cache, 0)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                got, captures = _compiled(model, compiler_for(backend, strict=True), prompt, cache, 0)
            except Exception as exc:
                print(f"RESULT {name} {backend} {cache}: ERROR {type(exc).__name__}: {str(exc)[:600]}", flush=True)
                continue
        differ = [mode for mode in eager if not torch.equal(eager[mode], got[mode])]
        tokens = f"TOKENS DIFFER {differ}" if differ else "tokens equal"
        print(f"RESULT {name} {backend} {cache}: {tokens}; captures {captures} (torch.compile {anchor}); "
              f"{time.time() - start:.0f} s", flush=True)
        for w in sorted({f"{w.category.__name__}: {str(w.message).splitlines()[0][:200]}" for w in caught
                         if w.category.__module__.startswith("parity")}):
            print(f"    {w}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m studies.generation_outside_zoo", description=__doc__.splitlines()[0])
    parser.add_argument("architectures", nargs="+", help="transformers names without Config/ForCausalLM, e.g. Olmo2")
    parser.add_argument("--backend", default="onnx")
    parser.add_argument("--caches", default="dynamic,static")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # the child process
    args = parser.parse_args()
    if args.one:
        check(args.architectures[0], args.backend, args.caches.split(","))
        return
    for name in args.architectures:
        child = subprocess.run([sys.executable, "-m", "studies.generation_outside_zoo", name, "--backend", args.backend,
                                "--caches", args.caches, "--one"], capture_output=True, text=True, timeout=1800,
                               env=dict(os.environ))
        lines = [line for line in child.stdout.splitlines() if line.startswith(("RESULT", "    "))]
        print("\n".join(lines) or f"RESULT {name}: exit {child.returncode}: {child.stderr.strip()[-300:]}", flush=True)


if __name__ == "__main__":
    main()
