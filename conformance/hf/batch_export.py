"""ONNX export with a dynamic batch, for the zoo's encoder-decoders, vision, audio and CLIP models.

:func:`check` wraps a model's inference forward so that its inputs are positional
(torch.export cannot make keyword arguments dynamic), exports it once from the zoo's
batch-2 example with dim 0 of every input dynamic, runs the one file in plain
onnxruntime at each of :data:`BATCHES` (rows drawn from the example) and compares it
with eager: error relative to each output's scale, pass at ``RTOL``. The exporter is
``parity`` (``parity.export``) or ``torch.onnx`` (``dynamo=True, dynamic_shapes=...``).

Example (the check itself exports a whole model: ``check("vit", "parity", folder)``
returns ``'pass (max error ..., export ... s)'`` or ``'fail...'`` with the reason)::

    >>> "vit" in models(), "bert" in models()  # bert is a text encoder: dynamic_export checks it
    (True, False)
"""

from __future__ import annotations

import re
import time
import warnings
from pathlib import Path

import numpy as np
import torch

from .architectures import ARCHITECTURES, get_architecture
from .check import build
from .export_check import TEXT_KINDS, _quiet_torch_onnx, compare, eager_outputs, inference_inputs, run_onnx

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
    """The zoo's models other than the text encoders and decoder LMs."""
    return [s.name for s in ARCHITECTURES if not (s.kind in TEXT_KINDS and s.family in ("encoder", "decoder"))]


def export(exporter: str, model: Positional, inputs: dict, path: Path) -> None:
    dims = {k: {0: "batch"} for k in inputs}
    if exporter == "parity":
        import parity

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            parity.export(model, tuple(inputs.values()), path=path, input_names=list(inputs), dynamic_dims=dims)
        return
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
    """``"pass (max error E, export S s)"``, or ``"fail..."`` with the first failure: export or a batch."""
    spec = get_architecture(name)
    torch._dynamo.reset()
    model = build(spec, 0).eval()
    example = inference_inputs(model, spec.inputs(1))
    wrapped = Positional(model, list(example))
    path = Path(folder) / f"{name}.{exporter}.onnx"
    start = time.perf_counter()
    try:
        export(exporter, wrapped, example, path)
    except Exception as exc:  # a failed export is a verdict, not a crash
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
