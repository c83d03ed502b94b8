"""ONNX export with a dynamic batch for the zoo's other models: encoder-decoders, vision,
audio and CLIP (the text encoders and decoder LMs are in dynamic_export.py, with seq too).

Each model's inference forward (its inputs passed positionally through a wrapper, since
torch.export cannot make keyword arguments dynamic) is exported once from the zoo's batch-2
example with dim 0 of every input dynamic, then the one file runs in plain onnxruntime
at batch 1, 3 and 7 (rows drawn from the example) and is compared with eager: error
relative to each output's scale, pass at <= 1e-4. In the same run,
``torch.onnx.export(dynamo=True, dynamic_shapes=...)`` exports the same wrapper.
Results: bench/results/dynamic_batch_export.md.

    $ python bench/dynamic_batch_export.py [--only vit,whisper] [--out bench/results/dynamic_batch_export.md]
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import torch

BATCHES = (1, 3, 7)
EXPORTERS = ("parity", "torch.onnx")


class Positional(torch.nn.Module):
    """``model(**dict(zip(names, inputs)))`` called with the inputs positionally."""

    def __init__(self, model: torch.nn.Module, names: list[str]):
        super().__init__()
        self.model, self.names = model, names

    def forward(self, *inputs):
        return self.model(**dict(zip(self.names, inputs)))


def models() -> list[str]:
    from parity.conformance.hf.architectures import ARCHITECTURES
    from parity.conformance.hf.export_check import TEXT_KINDS

    return [s.name for s in ARCHITECTURES if not (s.kind in TEXT_KINDS and s.family in ("encoder", "decoder"))]


def export(exporter: str, model: Positional, inputs: dict, path: Path) -> None:
    dims = {k: {0: "batch"} for k in inputs}
    if exporter == "parity":
        import parity

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            parity.export(model, tuple(inputs.values()), path=path, input_names=list(inputs), dynamic_dims=dims)
        return
    from parity.conformance.hf.export_check import _quiet_torch_onnx

    batch = torch.export.Dim("batch")
    with _quiet_torch_onnx():
        torch.onnx.export(model, tuple(inputs.values()), str(path), input_names=list(inputs), dynamo=True,
                          external_data=False, dynamic_shapes={"inputs": tuple({0: batch} for _ in inputs)})


def reason(exc: BaseException) -> str:
    """An exception's own words: torch.onnx wraps the cause in a banner, so its line that
    names the underlying error (``<class 'RuntimeError'>: ...``) is used when there is one."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(exc))
    cause = re.search(r"^<class '[\w.]*?(\w+)'>: (.+)$", text, re.M)
    return f"{cause.group(1)}: {cause.group(2)}" if cause else f"{type(exc).__name__}: {text.splitlines()[0]}"


def check(name: str, exporter: str, folder: str) -> str:
    from parity.conformance.hf.architectures import get_architecture
    from parity.conformance.hf.check import build
    from parity.conformance.hf.export_check import compare, eager_outputs, inference_inputs, run_onnx

    spec = get_architecture(name)
    torch._dynamo.reset()
    model = build(spec, 0).eval()
    example = inference_inputs(model, spec.inputs(1))
    wrapped = Positional(model, list(example))
    path = Path(folder) / f"{name}.{exporter}.onnx"
    start = time.perf_counter()
    try:
        export(exporter, wrapped, example, path)
    except Exception as exc:  # a bench row never stops the table
        return f"fail: export: {reason(exc)[:150]}"
    seconds, worst = time.perf_counter() - start, 0.0
    for batch in BATCHES:
        rows = torch.randint(0, 2, (batch,), generator=torch.Generator().manual_seed(batch))
        inputs = {k: v[rows] for k, v in example.items()}
        try:
            expected = eager_outputs(model, inputs)
            got = run_onnx(path, inputs)
        except Exception as exc:
            return f"fail at batch {batch}: {reason(exc)[:150]}"
        if exporter != "parity":  # torch.onnx names outputs its own way: match them in order
            got = dict(zip(expected, got.values()))
        result = compare({k: torch.from_numpy(np.asarray(v)) for k, v in got.items()}, expected, None)
        worst = max(worst, result.worst)
        if result.error or not result.passed:
            return f"fail at batch {batch}: {result.error or f'{result.tensor} off by {result.worst:.1e}'}"[:160]
    return f"pass (max error {worst:.1e}, export {seconds:.1f} s)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(models()))
    parser.add_argument("--out", default="")
    args = parser.parse_args(argv)
    lines = ["| model | " + " | ".join(EXPORTERS) + " |", "| --- | " + " | ".join("---" for _ in EXPORTERS) + " |"]
    with tempfile.TemporaryDirectory() as folder:
        for name in args.only.split(","):
            lines.append(f"| {name} | " + " | ".join(check(name, e, folder) for e in EXPORTERS) + " |")
            print(lines[-1], flush=True)
    passed = {e: sum(1 for line in lines[2:] if line.split(" | ")[1 + i].startswith("pass"))
              for i, e in enumerate(EXPORTERS)}
    summary = ", ".join(f"{e} {n}/{len(lines) - 2}" for e, n in passed.items())
    print(summary)
    if args.out:
        Path(args.out).write_text(
            "# ONNX export with a dynamic batch: encoder-decoders, vision, audio, CLIP\n\n"
            f"`python bench/dynamic_batch_export.py` (torch {torch.__version__}). One file per model and exporter, "
            f"exported from the zoo's batch-2 example with dim 0 of every input dynamic, run in plain onnxruntime at "
            f"batch {', '.join(map(str, BATCHES))} and compared with eager (max error relative to each output's "
            "scale, pass: <= 1e-4).\n\n" + "\n".join(lines) + f"\n\nPassed: {summary}.\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
