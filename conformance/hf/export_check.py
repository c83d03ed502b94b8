"""ONNX export of the Hugging Face zoo: each exporter's file in plain onnxruntime, against eager.

:func:`check_export` builds one architecture (eval mode, dropout off), exports its forward
with the forward's keyword arguments (labels included, so the loss is an output too),
loads the written file in ``onnxruntime.InferenceSession`` (no parity code runs it) and
compares every output with eager torch: a tensor matches when ``max|onnx - eager| <=
RTOL * max|eager|`` (:func:`~.check.compare`, no float64 second chance). Exporters
(:data:`EXPORTERS`):

- ``parity``: ``parity.export(model, (), kwargs=inputs, format="onnx")``; outputs are named
  by their path in the model's output (``logits``, ``cache.0.key``), matched by name;
- ``torch.onnx``: ``torch.onnx.export(model, (), kwargs=inputs, dynamo=True)`` (the anchor;
  it needs ``onnxscript``); its outputs are matched by position in the flattened output.

``python bench/hf_export.py`` prints the table for the whole zoo.

Example::

    >>> from parity.conformance.hf.architectures import get_architecture
    >>> result = check_export(get_architecture("bert"), "parity")
    >>> result.passed, result.outputs
    (True, ['loss', 'logits'])
"""

from __future__ import annotations

import contextlib
import io
import logging
import re
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from .check import RTOL, build, compare
from .spec import HFSpec


@dataclass
class ExportResult:
    """One (architecture, exporter): whether the file ran and matched, and what was worst."""

    name: str
    exporter: str
    passed: bool = False
    worst: float = float("inf")  # max over outputs of max|onnx - eager| / max|eager|
    tensor: str = ""  # the output with the worst error
    error: str = ""  # the exception (export, load or run) or the mismatch; "" when passed
    seconds: float = 0.0  # export time
    outputs: list[str] = field(default_factory=list)  # the file's output names
    notes: list[str] = field(default_factory=list)  # the exporter's warnings about left-out outputs

    @property
    def first_line(self) -> str:
        """The error's first line; for torch.onnx's wrapped errors, the first line of the cause."""
        text = re.sub(r"\x1b\[[0-9;]*m", "", self.error)
        head, summary, cause = text.partition("## Exception summary")
        lines = [line.strip() for line in (cause if summary else head).splitlines() if line.strip()]
        if summary and lines:
            return f"{head.split(':')[0]}: {lines[0]}"
        return lines[0] if lines else ""


def _export_parity(model, inputs: dict, path: Path) -> list[str]:
    import parity
    from parity.export import ExportWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ExportWarning)
        parity.export(model, (), kwargs=inputs, format="onnx", path=path)
    return [str(w.message) for w in caught if issubclass(w.category, ExportWarning)]


def _export_torch_onnx(model, inputs: dict, path: Path) -> list[str]:
    logger = logging.getLogger("torch.onnx")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            torch.onnx.export(model, (), str(path), kwargs=inputs, dynamo=True, external_data=False)
    finally:
        logger.setLevel(level)
    return []


#: exporter name → (export function writing ``path`` and returning its notes, outputs matched by name?)
EXPORTERS: dict[str, tuple[Callable[[torch.nn.Module, dict, Path], list[str]], bool]] = {
    "parity": (_export_parity, True),
    "torch.onnx": (_export_torch_onnx, False),
}


def run_onnx(path: Path, inputs: dict) -> dict[str, np.ndarray]:
    """The file's outputs by name, from a plain ``onnxruntime.InferenceSession`` fed by input name."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    missing = [i.name for i in session.get_inputs() if not isinstance(inputs.get(i.name), torch.Tensor)]
    if missing:
        raise ValueError(f"the file has inputs {missing} that are not tensor arguments of the forward "
                         f"({sorted(inputs)})")
    feeds = {i.name: inputs[i.name].numpy() for i in session.get_inputs()}
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, feeds)))


def eager_outputs(model, inputs: dict) -> dict[str, torch.Tensor]:
    """Eager torch's outputs, flattened and named as parity names them."""
    from parity.frontend.outputs import flatten_outputs

    with torch.no_grad():
        return flatten_outputs(model(**inputs))


#: Forward arguments that only training or evaluation passes (the loss); left out for inference.
LOSS_INPUTS = ("labels", "return_loss")


def check_export(spec: HFSpec, exporter: str = "parity", seed: int = 0,
                 workdir: str | Path | None = None, inference: bool = False) -> ExportResult:
    """Export ``spec``'s eval-mode forward with ``exporter``, run the file in onnxruntime,
    compare with eager. Nothing raises: a failure is the result's ``error``.

    ``inference`` leaves out the loss inputs (:data:`LOSS_INPUTS`): the forward as served."""
    export, by_name = EXPORTERS[exporter]
    result = ExportResult(spec.name, exporter)
    torch._dynamo.reset()
    model = build(spec, seed).eval()
    inputs = spec.inputs(seed + 1)
    if inference:
        inputs = {k: v for k, v in inputs.items() if k not in LOSS_INPUTS}
    expected = eager_outputs(model, inputs)
    with contextlib.ExitStack() as stack:
        folder = Path(workdir) if workdir else Path(stack.enter_context(tempfile.TemporaryDirectory()))
        path = folder / f"{spec.name}.{exporter}.onnx"
        try:
            start = time.perf_counter()
            result.notes = export(model, inputs, path)
            result.seconds = time.perf_counter() - start
            got = run_onnx(path, inputs)
        except Exception as exc:  # noqa: BLE001 - an exporter that fails is a row, not a crash
            result.error = f"{type(exc).__name__}: {exc}"
            return result
    result.outputs = list(got)
    if not by_name:
        if len(got) != len(expected):
            result.error = (f"{len(got)} outputs ({', '.join(got)}), eager has {len(expected)} "
                            f"({', '.join(expected)})")
            return result
        got = dict(zip(expected, got.values()))
    check = compare({k: torch.from_numpy(np.asarray(v)) for k, v in got.items()}, expected, None)
    result.passed, result.worst, result.tensor = check.passed, check.worst, check.tensor
    if check.error:
        result.error = check.error
    elif not check.passed:
        result.error = f"{check.tensor}: off by {check.worst:.2e} of its scale (bound {RTOL:g})"
    return result
