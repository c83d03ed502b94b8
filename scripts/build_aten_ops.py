"""Regenerate ``conformance/hf/aten_ops.json``: the Hugging Face zoo's aten ops, and the OpInfo entries that cover them.

    TRITON_INTERPRET=1 python scripts/build_aten_ops.py              # every architecture, then the OpInfo mapping
    TRITON_INTERPRET=1 python scripts/build_aten_ops.py bert llama   # only these, merged into the file
    python scripts/build_aten_ops.py --opinfo-only                   # the OpInfo mapping alone

**The zoo's ops.** :func:`zoo_aten_usage` runs every architecture of ``ARCHITECTURES``
through ``parity.compile(model, backend="reference")``: an eval-mode forward under
``no_grad`` (AOTAutograd's *inference* graph) and a train-mode forward plus
``loss.backward()`` (its *forward* and *backward* graphs). Inside
``parity.conformance.hf.aten_ops.recording`` every translated graph's aten ops (after
torch's core decompositions, e.g. ``aten.mm.default``) are recorded with the
architecture and the graph kind. Nothing is compared here: ``check.run_entry`` does that.

**The OpInfo mapping.** :func:`opinfo_mapping` connects the zoo's aten overloads and the
user-level calls of its Dynamo graphs (``torch.nn.functional.layer_norm``) to entries of
``torch.testing._internal.common_methods_invocations.op_db``:

* **user**: an OpInfo whose function (or method / operator variant) is a call the zoo
  makes (``nn.functional.layer_norm`` for ``torch.nn.functional.layer_norm``);
* **name**: an OpInfo whose ``aten_name`` / ``name`` / function name is the packet of a
  zoo aten op (``mm`` for ``aten.mm.default``);
* **traced**: every OpInfo's first float32 sample is traced with ``make_fx`` and
  parity's decomposition table, forward and (where it supports autograd) backward; an
  op the first two rules leave uncovered is mapped to the OpInfos with the fewest other
  ops whose trace produces it.

The mapping is written under ``"opinfo"`` (OpInfo → how it was matched and which zoo ops
its first sample produces) and ``"op_to_opinfo"`` (zoo op → OpInfos).
"""

from __future__ import annotations

import argparse
import json
import sys
import types
from collections.abc import Iterable

import torch

from parity.conformance.hf.aten_ops import JSON_PATH, call_name, load, recording
from parity.conformance.hf.check import build
from parity.conformance.hf.opinfo import (
    cotangents_for,
    differentiable,
    float32_samples,
    grad_function,
    op_db,
    opinfo_id,
    sample_function,
)
from parity.conformance.hf.spec import HFSpec

#: how many OpInfos the "traced" rule adds per zoo op left uncovered by "user"/"name"
TRACED_PER_OP = 2

#: OpInfo namespaces of semantics the zoo does not use (masked reductions over a mask argument)
OTHER_NAMESPACES = ("masked.", "sparse.", "_refs.")

#: how many samples of a mapped OpInfo are traced to say which zoo ops it produces
SAMPLES_TRACED = 6


def architecture_ops(spec: HFSpec, strict: bool = True) -> dict[str, set[str]]:
    """{graph kind: aten ops} of one architecture's inference forward and training step,
    and under ``"user"`` the calls of its Dynamo graphs (:func:`user_calls`). With
    ``strict=False`` the ops the backend refuses run in eager torch and are not listed."""
    import parity

    torch._dynamo.reset()
    model = build(spec)
    inputs = spec.inputs()
    graphs: list = []
    calls: set = set()
    with recording(graphs, calls):
        compiled = parity.compile(model, backend="reference", strict=strict)
        model.eval()
        with torch.no_grad():
            compiled(**inputs)
        model.train()
        compiled(**inputs).loss.backward()
    ops: dict[str, set[str]] = {}
    for kind, names in graphs:
        ops.setdefault(kind, set()).update(names)
    ops["user"] = calls
    return ops

def zoo_aten_usage(specs: Iterable[HFSpec] | None = None, log=None) -> dict:
    """The JSON document: ``ops`` (op → {kind: [architectures]}) and ``errors`` (architecture → why)."""
    from parity.conformance.hf.architectures import ARCHITECTURES

    ops: dict[str, dict[str, set[str]]] = {}
    calls: dict[str, set[str]] = {}
    errors: dict[str, str] = {}
    names = []
    for spec in ARCHITECTURES if specs is None else specs:
        names.append(spec.name)
        try:
            found = architecture_ops(spec)
        except Exception as exc:  # noqa: BLE001 - an architecture that fails is recorded, not fatal
            errors[spec.name] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]
            try:  # the rest of its graphs, with what the backend refuses left to eager torch
                found = architecture_ops(spec, strict=False)
                errors[spec.name] += " (its other ops recorded with strict=False)"
            except Exception:  # noqa: BLE001
                found = {}
        for call in found.pop("user", ()):
            calls.setdefault(call, set()).add(spec.name)
        for kind, names_ in found.items():
            for op in names_:
                ops.setdefault(op, {}).setdefault(kind, set()).add(spec.name)
        if log is not None:
            log(f"{spec.name}: {sum(len(v) for v in found.values())} (kind, op) pairs"
                + (f"  ERROR {errors[spec.name]}" if spec.name in errors else ""))
    return {
        "regenerate": "TRITON_INTERPRET=1 python scripts/build_aten_ops.py",
        "torch": torch.__version__,
        "architectures": names,
        "errors": errors,
        "ops": {op: {kind: sorted(archs) for kind, archs in sorted(kinds.items())} for op, kinds in sorted(ops.items())},
        "user_calls": {call: sorted(archs) for call, archs in sorted(calls.items())},
    }

def dumps(usage: dict) -> str:
    """The JSON text, one line per op / call / architecture (diffs stay readable)."""
    lines = ["{"]
    items = list(usage.items())
    for i, (key, value) in enumerate(items):
        end = "," if i < len(items) - 1 else ""
        if isinstance(value, dict) and value:
            lines.append(f" {json.dumps(key)}: {{")
            rows = list(value.items())
            lines += [f"  {json.dumps(k)}: {json.dumps(v)}{',' if j < len(rows) - 1 else ''}" for j, (k, v) in enumerate(rows)]
            lines.append(f" }}{end}")
        else:
            lines.append(f" {json.dumps(key)}: {json.dumps(value)}{end}")
    return "\n".join(lines + ["}"]) + "\n"

def merge(doc: dict, update: dict) -> dict:
    """``doc`` with the architectures of ``update`` replaced by what ``update`` recorded."""
    from parity.conformance.hf.architectures import ARCHITECTURES

    names = set(update["architectures"])
    known = names | set(doc["architectures"])  # an architecture new to the file joins the list, in the zoo's order
    merged = {"regenerate": doc["regenerate"], "torch": update["torch"],
              "architectures": [spec.name for spec in ARCHITECTURES if spec.name in known]}
    merged["errors"] = {k: v for k, v in doc["errors"].items() if k not in names} | update["errors"]
    ops: dict = {}
    for source in (doc["ops"], update["ops"]):
        for op, kinds in source.items():
            for kind, archs in kinds.items():
                keep = [a for a in archs if a not in names] if source is doc["ops"] else archs
                if keep:
                    ops.setdefault(op, {}).setdefault(kind, set()).update(keep)
    merged["ops"] = {op: {k: sorted(a) for k, a in sorted(kinds.items())} for op, kinds in sorted(ops.items())}
    calls: dict = {}
    for source in (doc["user_calls"], update["user_calls"]):
        for call, archs in source.items():
            keep = [a for a in archs if a not in names] if source is doc["user_calls"] else archs
            if keep:
                calls.setdefault(call, set()).update(keep)
    merged["user_calls"] = {call: sorted(a) for call, a in sorted(calls.items())}
    return merged


def traced_ops(info, samples: int = 1) -> dict[str, list[str]]:
    """{"forward": aten ops, "backward": aten ops} of ``info``'s first ``samples`` float32
    samples, traced as AOTAutograd would: functionalized (in-place updates removed, so
    batch norm's running statistics give ``_native_batch_norm_legit_functional``) with
    parity's decomposition table. A sample that cannot be traced is skipped; if the
    first one cannot, its error is raised."""
    from torch.fx.experimental.proxy_tensor import make_fx

    from parity.frontend.aten_decompositions import decomposition_table

    table = decomposition_table()
    found = {"forward": set(), "backward": set()}
    torch.manual_seed(0)
    for n, sample in enumerate(float32_samples(info)):
        if n == samples:
            break
        try:
            fn, tensors = sample_function(info, sample)
            functional = torch.func.functionalize(fn, remove="mutations")
            found["forward"] |= set(_ops(make_fx(functional, decomposition_table=table)(*tensors)))
            wrt = differentiable(tensors)
            if info.supports_autograd and wrt:
                # (not functionalized: autograd does not see through functionalize's wrappers)
                grads = grad_function(fn, wrt, cotangents_for(fn, tensors))
                found["backward"] |= set(_ops(make_fx(grads, decomposition_table=table)(*tensors)))
        except Exception:
            if n == 0:
                raise
    found["backward"] -= found["forward"]
    return {kind: sorted(ops) for kind, ops in found.items() if ops or kind == "forward"}

def _ops(gm) -> list[str]:
    return sorted({str(n.target) for n in gm.graph.nodes
                   if n.op == "call_function" and isinstance(n.target, torch._ops.OpOverload)})

def _names(info) -> set[str]:
    names = {info.name, getattr(info, "aten_name", None) or ""}
    names.add(getattr(info.op, "__name__", ""))
    return {n for n in names if n}

def _calls(info) -> set[str]:
    calls = {f"torch.{info.name}"}  # an OpInfo whose op is a lambda around the function it is named by
    for fn in (info.op, info.method_variant, info.operator_variant, getattr(info, "inplace_variant", None)):
        if fn is None:
            continue
        if isinstance(fn, types.MethodDescriptorType) or type(fn).__name__ == "method_descriptor":
            calls.add(f"Tensor.{fn.__name__}")
        else:
            calls.add(call_name(fn))
    return calls

def all_traces(keys=None, samples: int = 1, log=None) -> dict[str, dict]:
    """:func:`traced_ops` of every OpInfo with float32 CPU samples (or those named in ``keys``);
    ``{"error": why}`` for one whose first sample cannot be traced (data-dependent, sparse...)."""
    traces = {}
    for info in op_db():
        key = opinfo_id(info)
        if torch.float32 not in info.supported_dtypes("cpu") or (keys is not None and key not in keys):
            continue
        try:
            traces[key] = traced_ops(info, samples)
        except Exception as exc:  # noqa: BLE001 - an untraceable OpInfo is simply not traced
            traces[key] = {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:200]}
            if log:
                log(f"{key}: not traced ({traces[key]['error']})")
    return traces

def _produced(trace: dict) -> set[str]:
    return set(trace.get("forward", ())) | set(trace.get("backward", ()))

def opinfo_mapping(usage: dict, traces: dict | None = None, log=None) -> tuple[dict, dict]:
    """``(opinfo, op_to_opinfo)`` for the zoo ``usage`` (the aten_ops.json document).

    ``traces`` are the first-sample traces of every OpInfo (:func:`all_traces`, computed
    when not given). An OpInfo whose first sample cannot be traced is left out (sparse,
    CUDA-only, data-dependent ``item``/``equal``), and so is a variant matched only by
    its user-level call whose forward uses an aten op the zoo never does (the zoo calls
    ``interpolate``, but not in bicubic mode). What a mapped OpInfo ``produces`` is
    traced over its first :data:`SAMPLES_TRACED` samples.
    """
    zoo = set(usage["ops"])
    packet_ops: dict[str, set[str]] = {}
    for op in zoo:
        packet_ops.setdefault(op.split(".")[1], set()).add(op)
    user = set(usage.get("user_calls", {}))
    traces = all_traces(log=log) if traces is None else traces
    table: dict[str, dict] = {}
    for info in op_db():
        key = opinfo_id(info)
        if key not in traces or "error" in traces[key]:
            continue
        entry = {}
        matched_calls = sorted(_calls(info) & user)
        if matched_calls:
            entry["user"] = matched_calls
        by_name = sorted(op for name in _names(info) for op in packet_ops.get(name, ()))
        if by_name:
            entry["name"] = by_name
        if info.name.startswith(OTHER_NAMESPACES):
            entry.pop("name", None)
        foreign = set(traces[key].get("forward", ())) - zoo
        if set(entry) == {"user"} and info.variant_test_name and foreign:
            continue
        if entry:
            table[key] = entry
    produced = {key: _produced(t) for key, t in all_traces(set(table), SAMPLES_TRACED, log).items()}
    covered = set()
    for key, entry in table.items():
        covered |= produced[key] | set(entry.get("name", ()))
    for op in sorted(zoo - covered):
        candidates = sorted((len(_produced(t) - zoo), len(_produced(t)), key) for key, t in traces.items()
                            if op in _produced(t) and key not in table)
        for _, _, key in candidates[:TRACED_PER_OP]:
            table.setdefault(key, {}).setdefault("traced", []).append(op)
            produced.setdefault(key, _produced(traces[key]))
    for key, entry in table.items():
        entry["produces"] = sorted(produced[key] & zoo)
    op_to_opinfo = {}
    for op in sorted(zoo):
        op_to_opinfo[op] = sorted(k for k, e in table.items() if op in e["produces"] or op in e.get("name", ()))
    return dict(sorted(table.items())), op_to_opinfo


def main(argv: list[str] | None = None) -> int:
    """Regenerate ``aten_ops.json`` (all architectures, or only those named, merged into it)."""
    from parity.conformance.hf.architectures import ARCHITECTURES, get_architecture

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("architectures", nargs="*", help="only these, merged into the file (default: all)")
    parser.add_argument("--opinfo-only", action="store_true", help="recompute the OpInfo mapping alone")
    args = parser.parse_args(argv)
    log = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    if args.opinfo_only:
        usage = load()
        usage.pop("opinfo", None)
        usage.pop("op_to_opinfo", None)
    else:
        specs = [get_architecture(name) for name in args.architectures] if args.architectures else ARCHITECTURES
        usage = zoo_aten_usage(specs, log=log)
        if args.architectures:
            usage = merge(load(), usage)
    usage["opinfo"], usage["op_to_opinfo"] = opinfo_mapping(usage, log=log)
    JSON_PATH.write_text(dumps(usage))
    unmapped = [op for op, keys in usage["op_to_opinfo"].items() if not keys]
    print(f"{len(usage['opinfo'])} OpInfo entries mapped to {len(usage['ops']) - len(unmapped)} of "
          f"{len(usage['ops'])} zoo ops; unmapped: {', '.join(unmapped) or 'none'}")
    print(f"{len(usage['ops'])} aten ops over {len(usage['architectures'])} architectures "
          f"({len(usage.get('errors', []))} failed) -> {JSON_PATH}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
