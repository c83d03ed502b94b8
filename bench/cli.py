"""Command line of the benchmark: ``python -m parity.bench`` and ``parity bench``.

Example::

    $ python -m parity.bench --quick --chart docs/bench.png --json bench.json
    $ parity bench --workloads mlp,encoder --backends xla --anchors jax,inductor
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

# Nothing heavy at import time: `parity --help` and `parity ops` load this module too.

# What the run imports beyond the core (the anchors' stacks), installed by `parity[bench]`.
BENCH_NEEDS = ("jax", "onnxruntime", "onnxscript")


def _names(text: str) -> list[str]:
    return [n.strip() for n in text.split(",") if n.strip()]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The benchmark's options, shared by both entry points."""
    parser.add_argument("--workloads", type=_names, default=None,
                        help="comma-separated, from: tiny, mlp, encoder, encoder_train, adamw_step, chain, "
                             "sigmoid_chain, softmax_ln, convnet (default: all, unless --programs names some)")
    parser.add_argument("--backends", type=_names, default=None,
                        help="parity backends, comma-separated (default: every installed backend)")
    parser.add_argument("--anchors", type=_names, default=None,
                        help="anchors, comma-separated, from: eager, inductor, jax, ort (default: all)")
    parser.add_argument("--quick", action="store_true", help="smaller sizes and fewer rounds (~2 minutes)")
    parser.add_argument("--threads", type=int, default=None, help="threads for every runtime (default: all CPUs)")
    parser.add_argument("--cold", type=_names, default=None,
                        help="workloads whose cold compile and peak memory are measured in fresh processes "
                             "(default: encoder when selected, else the first workload; 'none' for none)")
    parser.add_argument("--programs", type=_names, default=None,
                        help="programs (loops whose shapes change), comma-separated, from: serving, decode_dynamic, "
                             "decode_static (default: all, unless --workloads names some; 'none' for none)")
    parser.add_argument("--decoders", type=_names, default=None,
                        help="the models the decode programs run, comma-separated, from: gpt2, llama, mistral, "
                             "qwen2, phi3, gemma, gpt-neox, opt, falcon, stablelm, qwen3, gemma2, mpt "
                             "(the zoo's tiny configs), or 'all' (default: gpt2)")
    parser.add_argument("--jax", type=_names, default=None,
                        help="JAX programs under parity.jax.jit against jax.jit: the JAX zoo's models, comma-separated, "
                             "from: mlp, cnn, transformer_lm, nnx_cnn_bn_dropout, nnx_vit, nnx_convnext, nnx_vae, nnx_lstm, "
                             "linen_transformer, or 'all'; each forward, gradients and an optax step (needs "
                             "parity[jax]; naming only these runs no torch workload)")
    parser.add_argument("--json", metavar="PATH", help="write the full record as JSON")
    parser.add_argument("--chart", metavar="PATH", help="write a PNG chart")
    parser.add_argument("--markdown", metavar="PATH", help="write the tables as Markdown")
    parser.add_argument("--from-json", metavar="PATH",
                        help="run nothing: print the tables (and write --chart) from a saved --json record")


def run(args: argparse.Namespace) -> int:
    """Run the suite as the parsed ``args`` ask; print the tables, write JSON/PNG."""
    if args.from_json:
        return _replay(args)
    from ..backends.registry import backend_names, missing_modules, pip_install_line

    missing = missing_modules(BENCH_NEEDS)
    if missing:
        raise SystemExit(f"parity bench: the anchors need {', '.join(missing)}, not installed here. "
                         f"Run: {pip_install_line('bench')}")
    from .candidates import ANCHORS, make_candidate
    from .programs import PROGRAMS, program_candidates, run_program
    from .suite import default_cold, run_suite
    from .workloads import WORKLOADS

    # naming only workloads runs no program, and naming only programs (or JAX programs) runs no workload
    only_jax = args.jax is not None and args.workloads is None and args.programs is None
    workloads = ([] if only_jax else list(WORKLOADS) if args.programs is None else []) \
        if args.workloads is None else args.workloads
    anchors = list(ANCHORS) if args.anchors is None else args.anchors
    unknown = [w for w in workloads if w not in WORKLOADS]
    unknown += [a for a in anchors if a not in ANCHORS]
    backends = backend_names() if args.backends is None else args.backends
    unknown += [b for b in backends if b not in (*backend_names(), "auto")]  # auto: frontend/auto.py
    cold = default_cold(workloads) if args.cold is None else [w for w in args.cold if w != "none"]
    unknown += [w for w in cold if w not in WORKLOADS and w not in unknown]
    programs = ([] if only_jax else list(PROGRAMS) if args.workloads is None else []) if args.programs is None else \
        [p for p in args.programs if p != "none"]
    cold = [] if only_jax and args.cold is None else cold
    from ..conformance.jax_zoo import MODEL_NAMES

    jax_models = [] if args.jax is None else list(MODEL_NAMES) if args.jax == ["all"] else args.jax
    unknown += [m for m in jax_models if m not in MODEL_NAMES]
    unknown += [p for p in programs if p not in PROGRAMS]
    from .decode import DECODERS, DEFAULT_DECODER

    decoders = [DEFAULT_DECODER] if args.decoders is None else \
        list(DECODERS) if args.decoders == ["all"] else args.decoders
    unknown += [d for d in decoders if d not in DECODERS]
    if unknown:  # a usage error: one line on stderr and exit status 2, as `parity bench` gives
        print(f"parity bench: unknown name(s) {unknown}; workloads: {list(WORKLOADS)}, "
              f"anchors: {list(ANCHORS)}, backends: {backend_names()}, programs: {list(PROGRAMS)}, "
              f"decoders: {list(DECODERS)}, JAX models: {list(MODEL_NAMES)}", file=sys.stderr)
        raise SystemExit(2)
    if "triton" in backends and "TRITON_INTERPRET" not in os.environ:
        import torch

        if not torch.cuda.is_available():
            # Triton's only CPU path; it is read when the first kernel is defined, so set it now.
            os.environ["TRITON_INTERPRET"] = "1"
            print("note: no GPU: parity[triton] runs in Triton's interpreter (TRITON_INTERPRET=1): checked, not timed")
    candidates = [make_candidate(k) for k in (*anchors, *(f"parity[{b}]" for b in backends))]
    record = run_suite(workloads, candidates, quick=args.quick, threads=args.threads, cold=cold)
    timed = [b for b in backends if b != "triton" or torch_has_cuda()]  # the interpreter is not timed
    record["programs"] = [run_program(p, program_candidates(timed), quick=args.quick, **choice)
                          for p, choice in program_runs(programs, decoders)]
    if jax_models:
        from .jax_zoo import run_jax_zoo

        record["jax"] = run_jax_zoo(jax_models, backends, quick=args.quick)
    _output(record, args)
    return 0


def program_runs(programs: Sequence[str], decoders: Sequence[str]) -> list[tuple[str, dict]]:
    """``(program, run_program options)`` in run order: each decode program once per decoder model,
    the others once.

    Example::

        >>> program_runs(["serving", "decode_static"], ["gpt2", "llama"])
        [('serving', {}), ('decode_static', {'decoder': 'gpt2'}), ('decode_static', {'decoder': 'llama'})]
    """
    from .programs import PROGRAMS

    return [(p, {"decoder": d} if d else {}) for p in programs
            for d in (decoders if PROGRAMS[p].takes_decoder else [None])]


def torch_has_cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def _replay(args: argparse.Namespace) -> int:
    import json

    with open(args.from_json) as f:
        record = json.load(f)
    _output(record, args)
    return 0


def _output(record: dict, args: argparse.Namespace) -> None:
    from .report import print_report, to_markdown, write_chart, write_json

    print_report(record)
    if args.json and not args.from_json:
        write_json(record, args.json)
    if args.chart:
        write_chart(record, args.chart)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(to_markdown(record))


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m parity.bench [options]``."""
    parser = argparse.ArgumentParser(prog="python -m parity.bench", description=__doc__.splitlines()[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))
