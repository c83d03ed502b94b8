"""ONNX export with a dynamic batch for the zoo's other models: encoder-decoders, vision,
audio and CLIP (the text encoders and decoder LMs are in dynamic_export.py, with seq too).

Each model's inference forward (its inputs passed positionally through a wrapper, since
torch.export cannot make keyword arguments dynamic) is exported once from the zoo's batch-2
example with dim 0 of every input dynamic, then the one file runs in plain onnxruntime
at batch 1, 3 and 7 (rows drawn from the example) and is compared with eager: error
relative to each output's scale, pass at <= 1e-4. In the same run,
``torch.onnx.export(dynamo=True, dynamic_shapes=...)`` exports the same wrapper
(:mod:`parity.conformance.hf.batch_export` holds the check).
Results: studies/dynamic_batch_export/results.md.

    $ python -m studies.dynamic_batch_export [--only vit,whisper] [--out studies/dynamic_batch_export/results.md]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import torch

from parity.conformance.hf.batch_export import BATCHES, EXPORTERS, check, models


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
            f"`python -m studies.dynamic_batch_export` (torch {torch.__version__}). One file per model and exporter, "
            f"exported from the zoo's batch-2 example with dim 0 of every input dynamic, run in plain onnxruntime at "
            f"batch {', '.join(map(str, BATCHES))} and compared with eager (max error relative to each output's "
            "scale, pass: <= 1e-4).\n\n" + "\n".join(lines) + f"\n\nPassed: {summary}.\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
