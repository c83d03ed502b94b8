"""ONNX export with dynamic batch and sequence: ``parity.export`` against ``torch.onnx.export(dynamo=True)``.

Each model is exported once with both dims dynamic, then the one file runs in plain
onnxruntime at several (batch, seq) and is compared with eager torch; the table gives
pass/fail, the worst error over the sizes, the export seconds (and for the two small
models the file's input dims). Results: studies/dynamic_export/results.md (ONNX) and results_stablehlo.md (``--jax``).

- ``encoder_layer``, ``attention``: from a (2, 7) example, run at (1, 1), (2, 7), (7, 33),
  (33, 2); absolute error, pass at <= 1e-5.
- The Hugging Face encoders and decoder LMs of the zoo (``input_ids`` and
  ``attention_mask`` passed positionally, inference forward, caches included): from a
  (2, 8) example, run at (1, 1), (2, 2), (7, 13) and (4, the longest sequence the config
  allows); error relative to each output's scale, pass at <= 1e-4
  (:func:`parity.conformance.hf.export_check.check_dynamic_export`). torch.onnx cannot
  output a decoder's DynamicCache, so a third column exports the decoders again with
  ``use_cache=False`` (torch.onnx only).

    $ python -m studies.dynamic_export [--only encoder_layer,attention,bert,gpt2] [--jax] [--out studies/dynamic_export/results.md]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import traceback

import numpy as np
import torch
from torch import nn

from parity.conformance.models.attention import Attention

SIZES = [(1, 1), (2, 7), (7, 33), (33, 2)]
TOLERANCE = 1e-5  # absolute, float32 outputs of scale ~1


MODELS = {
    "encoder_layer": lambda: nn.TransformerEncoderLayer(32, 4, 64, batch_first=True),
    "attention": Attention,
}


def export_parity(model, x, path):
    import parity

    parity.export(model, (x,), path=path, input_names=["x"], dynamic_dims={"x": {0: "batch", 1: "seq"}})


def export_torch(model, x, path):
    batch, seq = torch.export.Dim("batch"), torch.export.Dim("seq")
    program = torch.onnx.export(model, (x,), dynamo=True, input_names=["x"],
                                dynamic_shapes={"src" if isinstance(model, nn.TransformerEncoderLayer) else "x":
                                                {0: batch, 1: seq}})
    program.save(path)


def export_parity_jax(model, x, path):
    import parity

    parity.export(model, (x,), format="jax", path=path, input_names=["x"],
                  dynamic_dims={"x": {0: "batch", 1: "seq"}})


EXPORTERS = {"parity": export_parity, "torch.onnx": export_torch, "parity.jax": export_parity_jax}


def loaded(path: str, exporter: str):
    """(the file's input dims, run(x) -> its one output) in plain onnxruntime or jax.export."""
    if exporter == "parity.jax":
        import jax

        module = jax.export.deserialize(open(path, "rb").read())
        return [str(d) for d in module.in_avals[0].shape], lambda x: np.asarray(module.call(x)[0])
    import onnx
    import onnxruntime as ort

    dims = [d.dim_param or d.dim_value for d in onnx.load(path).graph.input[0].type.tensor_type.shape.dim]
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return dims, lambda x: session.run(None, {session.get_inputs()[0].name: x})[0]


def check(name: str, exporter: str, folder: str) -> str:
    torch.manual_seed(0)
    model = MODELS[name]().eval()
    path = os.path.join(folder, f"{name}-{exporter}.{'jax' if exporter == 'parity.jax' else 'onnx'}")
    start = time.perf_counter()
    try:
        EXPORTERS[exporter](model, torch.randn(2, 7, 32), path)
    except Exception as exc:
        return f"fail: export: {type(exc).__name__}: {str(exc).splitlines()[0][:100]}"
    seconds = time.perf_counter() - start
    dims, run = loaded(path, exporter)
    worst = 0.0
    for batch, seq in SIZES:
        x = torch.randn(batch, seq, 32)
        with torch.no_grad():
            want = model(x).numpy()
        try:
            got = run(x.numpy())
        except Exception as exc:
            return f"fail at ({batch}, {seq}): {type(exc).__name__}: {str(exc).splitlines()[0][:100]}"
        if got.shape != want.shape:
            return f"fail at ({batch}, {seq}): shape {got.shape}, eager {want.shape}"
        worst = max(worst, float(np.abs(got - want).max()))
    verdict = "pass" if worst <= TOLERANCE else "fail"
    return f"{verdict} (max error {worst:.1e}, export {seconds:.1f} s, input dims {dims})"


def hf_models() -> list[str]:
    """The zoo's encoders and decoder LMs: the models whose forward takes token ids and a mask."""
    from parity.conformance.hf.architectures import ARCHITECTURES
    from parity.conformance.hf.export_check import TEXT_KINDS

    return [s.name for s in ARCHITECTURES if s.kind in TEXT_KINDS and s.family in ("encoder", "decoder")]


#: The anchor once more on the decoder LMs without their cache (torch.onnx cannot output a DynamicCache).
NO_CACHE = "torch.onnx, use_cache=False"
ONNX_COLUMNS = ["parity", "torch.onnx", NO_CACHE]


def check_hf(name: str, column: str) -> str:
    from parity.conformance.hf.architectures import get_architecture
    from parity.conformance.hf.export_check import check_dynamic_export

    spec = get_architecture(name)
    if column == NO_CACHE and spec.family != "decoder":
        return "(no cache)"
    exporter = "torch.onnx" if column == NO_CACHE else column
    result = check_dynamic_export(spec, exporter, use_cache=False if column == NO_CACHE else None)
    if not result.passed:
        return f"fail: {result.first_line[:120]}"
    return f"pass (max error {result.worst:.1e}, export {result.seconds:.1f} s)"


def cell(name: str, column: str, folder: str) -> str:
    if name not in MODELS:
        return check_hf(name, column)
    return "(no cache)" if column == NO_CACHE else check(name, column, folder)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join([*MODELS, *hf_models()]))
    parser.add_argument("--out", default="")
    parser.add_argument("--jax", action="store_true",
                        help="parity.export(format='jax') instead: symbolic StableHLO run by jax.export")
    args = parser.parse_args(argv)
    columns = ["parity.jax"] if args.jax else ONNX_COLUMNS
    lines = ["| model | " + " | ".join(columns) + " |", "| --- | " + " | ".join("---" for _ in columns) + " |"]
    with tempfile.TemporaryDirectory() as folder:
        for name in args.only.split(","):
            cells = []
            for column in columns:
                try:
                    cells.append(cell(name, column, folder))
                except Exception:  # a bench row never stops the table
                    cells.append("fail: " + traceback.format_exc().strip().splitlines()[-1][:100])
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
            print(lines[-1], flush=True)
    if args.out and args.jax:
        with open(args.out, "w") as f:
            f.write("# StableHLO export with dynamic batch and sequence\n\n"
                    f"`python -m studies.dynamic_export --jax` (torch {torch.__version__}). "
                    "`parity.export(format=\"jax\")` writes jax.export's serialized module (StableHLO with "
                    "symbolic dims, the size constraints as shape assertions); each file is deserialized and "
                    "called at every size, compared with eager at the sizes and bounds of the ONNX table "
                    "(dynamic_export.md). There is no torch anchor: torch_xla is not installed here.\n\n"
                    + "\n".join(lines) + "\n")
    elif args.out:
        with open(args.out, "w") as f:
            f.write("# ONNX export with dynamic batch and sequence\n\n"
                    f"`python -m studies.dynamic_export` (torch {torch.__version__}). One file per model and "
                    f"exporter, run in plain onnxruntime at every size and compared with eager.\n\n"
                    f"- encoder_layer, attention: from a (2, 7) example, at (batch, seq) = "
                    f"{', '.join(map(str, SIZES))}; max absolute error (pass: <= {TOLERANCE:g}).\n"
                    "- Hugging Face encoders and decoder LMs (input_ids and attention_mask positional, "
                    "inference forward, caches included): from a (2, 8) example, at (1, 1), (2, 2), "
                    "(7, 13) and (4, the longest sequence the config allows: 64, 62 for roberta and mpnet); "
                    "max error relative to each output's scale (pass: <= 1e-4). The last column exports "
                    "the decoder LMs again with use_cache=False: torch.onnx cannot output their DynamicCache.\n\n"
                    + "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
