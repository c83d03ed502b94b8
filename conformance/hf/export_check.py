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

``python -m studies.hf_export`` prints the table for the whole zoo.

:func:`check_dynamic_export` exports a text model (encoder or decoder LM) once with
dynamic batch and sequence and runs the one file at every (batch, seq) of
:func:`dynamic_sizes`: 1, 2, a prime, and the longest sequence the config allows
(``python -m studies.dynamic_export`` prints that table).

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
from .spec import VOCAB, HFSpec


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

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", parity.ExportWarning)
        parity.export(model, (), kwargs=inputs, format="onnx", path=path)
    return [str(w.message) for w in caught if issubclass(w.category, parity.ExportWarning)]


@contextlib.contextmanager
def _quiet_torch_onnx():
    """torch.onnx.export without its progress prints, warnings and info logs."""
    logger = logging.getLogger("torch.onnx")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            yield
    finally:
        logger.setLevel(level)


def _export_torch_onnx(model, inputs: dict, path: Path) -> list[str]:
    with _quiet_torch_onnx():
        torch.onnx.export(model, (), str(path), kwargs=inputs, dynamo=True, external_data=False)
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


def inference_inputs(model, inputs: dict) -> dict:
    """``inputs`` without the loss inputs. An encoder-decoder served without labels is
    given the decoder's tokens instead (the labels' ids, as teacher forcing would)."""
    served = {k: v for k, v in inputs.items() if k not in LOSS_INPUTS}
    if getattr(model.config, "is_encoder_decoder", False) and "labels" in inputs:
        served["decoder_input_ids"] = inputs["labels"]
    return served


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
        inputs = inference_inputs(model, inputs)
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


# -- dynamic batch and sequence ------------------------------------------------------------

#: Input kinds whose forward takes (input_ids, attention_mask): the encoders and decoder LMs.
TEXT_KINDS = ("causal-lm", "masked-lm", "text-cls")
DYNAMIC_DIMS = {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"}}


class TextForward(torch.nn.Module):
    """``model(input_ids=..., attention_mask=...)`` with both tensors positional, for eager and
    torch.onnx.export (torch 2.13's export fails on dynamic dims of keyword arguments: 'Must
    provide a tree_name'); parity.export is given the model and keyword inputs as users call it.
    ``use_cache=False`` asks a decoder LM for no cache among its outputs."""

    def __init__(self, model: torch.nn.Module, use_cache: bool | None = None):
        super().__init__()
        self.model, self.options = model, {} if use_cache is None else {"use_cache": use_cache}

    def forward(self, input_ids, attention_mask):
        return self.model(input_ids=input_ids, attention_mask=attention_mask, **self.options)


#: Position tables whose first rows are reserved: RoBERTa and MPNet count positions from pad_token_id + 1.
POSITION_OFFSET = {"roberta": 2, "mpnet": 2}


def longest_sequence(spec: HFSpec) -> int:
    """The longest sequence the config allows (its position table), 64 when it sets none."""
    settings = spec.settings
    table = int(settings.get("max_position_embeddings", settings.get("n_positions", 64)))
    return table - POSITION_OFFSET.get(spec.name, 0)


def dynamic_sizes(spec: HFSpec) -> list[tuple[int, int]]:
    """(batch, seq) to run a dynamic export at: 1, 2, a prime (7, 13), the longest sequence."""
    return [(1, 1), (2, 2), (7, 13), (4, longest_sequence(spec))]


def text_inputs(spec: HFSpec, batch: int, seq: int, seed: int = 1) -> dict[str, torch.Tensor]:
    """Token ids and a mask of one (batch, seq); the second sequence padded at the end as in the zoo."""
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, spec.settings.get("vocab_size", VOCAB), (batch, seq), generator=generator)
    mask = torch.ones(batch, seq, dtype=torch.long)
    if batch > 1 and seq > 2:
        mask[1, -2:] = 0
    return {"input_ids": ids, "attention_mask": mask}


def _export_parity_dynamic(model, inputs: dict, path: Path, max_seq: int) -> None:
    import parity

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # called as Hugging Face models are: keyword tensors (TextForward's options among them)
        parity.export(model.model, (), kwargs={**inputs, **model.options}, path=path,
                      dynamic_dims={k: DYNAMIC_DIMS[k] for k in inputs})


def _export_torch_onnx_dynamic(model, inputs: dict, path: Path, max_seq: int) -> None:
    batch, seq = torch.export.Dim("batch"), torch.export.Dim("seq", max=max_seq)
    with _quiet_torch_onnx():
        torch.onnx.export(model, tuple(inputs.values()), str(path), input_names=list(inputs), dynamo=True,
                          external_data=False, dynamic_shapes=tuple({0: batch, 1: seq} for _ in inputs))


def _export_parity_jax_dynamic(model, inputs: dict, path: Path, max_seq: int) -> None:
    import parity

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        parity.export(model.model, (), kwargs={**inputs, **model.options}, format="jax", path=path,
                      dynamic_dims={k: DYNAMIC_DIMS[k] for k in inputs})


def run_jax_export(path: Path, inputs: dict) -> dict[str, np.ndarray]:
    """The outputs of a ``jax.export`` file (``parity.export(format="jax")``), in order,
    keyed ``output0..``: the file is deserialized and called with the inputs positionally."""
    import jax

    module = jax.export.deserialize(Path(path).read_bytes())
    try:
        with jax.enable_x64(True):
            outputs = module.call(*(t.numpy() for t in inputs.values()))
    except ValueError as exc:  # "Error refining shapes": the reason is in the cause's first line
        cause = exc.__cause__ or exc.__context__
        if cause is None:
            raise
        reason = str(cause).splitlines()[0]
        raise ValueError(f"shape refinement: {reason.split('error: ', 1)[-1]}") from exc
    return {f"output{i}": np.asarray(o) for i, o in enumerate(outputs)}


#: exporter name → (export with dynamic batch and seq, run the file, outputs matched by name?)
DYNAMIC_EXPORTERS: dict[str, tuple[Callable[[torch.nn.Module, dict, Path, int], None],
                                   Callable[[Path, dict], dict[str, np.ndarray]], bool]] = {
    "parity": (_export_parity_dynamic, run_onnx, True),
    "parity.jax": (_export_parity_jax_dynamic, run_jax_export, False),
    "torch.onnx": (_export_torch_onnx_dynamic, run_onnx, False),
}


def check_dynamic_export(spec: HFSpec, exporter: str = "parity", seed: int = 0,
                         sizes: list[tuple[int, int]] | None = None, use_cache: bool | None = None) -> ExportResult:
    """Export ``spec``'s inference forward once from a (2, 8) example with batch and seq
    dynamic, then run the one file at every (batch, seq) of ``sizes`` (default
    :func:`dynamic_sizes`) against eager; ``worst`` is the worst over sizes and outputs.
    ``use_cache`` is passed to the forward when set (False: a decoder without its cache).
    Nothing raises: a failure is the result's ``error``, naming the size."""
    if spec.kind not in TEXT_KINDS:
        raise ValueError(f"{spec.name} takes {spec.kind} inputs; dynamic export covers {TEXT_KINDS}")
    export, run, by_name = DYNAMIC_EXPORTERS[exporter]
    result = ExportResult(spec.name, exporter, worst=0.0)
    torch._dynamo.reset()
    model = TextForward(build(spec, seed), use_cache).eval()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"{spec.name}.{exporter}.{'jax' if exporter.endswith('.jax') else 'onnx'}"
        try:
            start = time.perf_counter()
            export(model, text_inputs(spec, 2, 8, seed + 1), path, longest_sequence(spec))
            result.seconds = time.perf_counter() - start
        except Exception as exc:  # noqa: BLE001 - an exporter that fails is a row, not a crash
            result.worst, result.error = float("inf"), f"export: {type(exc).__name__}: {exc}"
            return result
        for batch, seq in sizes or dynamic_sizes(spec):
            inputs = text_inputs(spec, batch, seq, seed + 1)
            try:
                expected = eager_outputs(model, inputs)
                got = run(path, inputs)
            except Exception as exc:  # noqa: BLE001
                result.worst, result.error = float("inf"), f"at ({batch}, {seq}): {type(exc).__name__}: {exc}"
                return result
            result.outputs = list(got)
            if not by_name:
                got = dict(zip(expected, got.values()))
            check = compare({k: torch.from_numpy(np.asarray(v)) for k, v in got.items()}, expected, None)
            if check.worst > result.worst or not check.passed:
                result.worst, result.tensor = check.worst, check.tensor
            if check.error or not check.passed:
                why = check.error or f"{check.tensor}: off by {check.worst:.2e} of its scale (bound {RTOL:g})"
                result.error = f"at ({batch}, {seq}): {why}"
                return result
    result.passed = True
    return result
