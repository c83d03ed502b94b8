"""parity[openvino] (the plugin in examples/openvino_backend) against OpenVINO's own ONNX path.

The anchor is what an OpenVINO user does without parity: ``torch.onnx.export`` the model, then
``openvino.compile_model`` the file, same runtime, same thread count, same process. Both are
checked against eager torch before any timing; then each is warmed up and timed in interleaved
rounds, and the cell is the median per call and its ratio to the anchor.

Run (results: bench/results/openvino.md)::

    OMP_WAIT_POLICY=PASSIVE python -m parity.bench.openvino_plugin --threads 1 --markdown bench/results/openvino.md
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import numpy as np
import torch

import parity


def _mlp():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 256)).eval()
    return "MLP 256→1024→256, batch 64", model, (torch.randn(64, 256),), {}


def _bert():
    import transformers

    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=1000, hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
                                     intermediate_size=512, max_position_embeddings=128)
    ids = torch.randint(0, 1000, (4, 64))
    mask = torch.ones(4, 64, dtype=torch.long)
    mask[1, 40:] = 0
    model = transformers.BertModel(config).eval()
    return "BERT (2 layers, d=128, seq 64, batch 4) with its mask", model, (ids, mask), {}


def _first(out):
    return out.last_hidden_state if hasattr(out, "last_hidden_state") else out


def _onnx_path(model, args, threads):
    """``model`` exported to ONNX and compiled by OpenVINO (f32 precision, ``threads`` threads)."""
    import openvino as ov

    path = tempfile.mkdtemp() + "/model.onnx"
    torch.onnx.export(model, args, path, dynamo=True)
    compiled = ov.Core().compile_model(path, "CPU", {"INFERENCE_PRECISION_HINT": "f32",
                                                     "INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY"})
    request = compiled.create_infer_request()

    def run():
        request.infer([a.numpy() for a in args])
        return torch.from_numpy(np.array(request.get_output_tensor(0).data))

    return run


def _parity_path(model, args, threads):
    compiled = parity.compile(model, backend="openvino", strict=True, cache_dir=False,
                              backend_options={"threads": threads})

    def run():
        return _first(compiled(*args))

    return run


def measure(workload, threads: int, rounds: int = 15, calls: int = 20) -> dict:
    name, model, args, _ = workload()
    with torch.no_grad():
        want = _first(model(*args))
        candidates = {"parity[openvino]": _parity_path(model, args, threads),
                      "openvino (ONNX path)": _onnx_path(model, args, threads)}
        for label, run in candidates.items():
            got = run()
            if not torch.allclose(got, want, rtol=1e-4, atol=1e-4):
                raise AssertionError(f"{label} differs from eager on {name}: {(got - want).abs().max():.3g}")
            for _ in range(5):
                run()
        times = {label: [] for label in candidates}
        for r in range(rounds):
            order = list(candidates)[r % 2:] + list(candidates)[:r % 2]  # rotate who goes first
            for label in order:
                start = time.perf_counter()
                for _ in range(calls):
                    candidates[label]()
                times[label].append((time.perf_counter() - start) / calls)
    medians = {label: statistics.median(t) for label, t in times.items()}
    return {"workload": name, "medians_us": {k: v * 1e6 for k, v in medians.items()},
            "ratio": medians["parity[openvino]"] / medians["openvino (ONNX path)"]}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--markdown", help="write the table here")
    options = parser.parse_args(argv)
    torch.set_num_threads(options.threads)
    import openvino as ov

    rows = [measure(w, options.threads) for w in (_mlp, _bert)]
    lines = [f"openvino {ov.get_version()}, torch {torch.__version__}, {options.threads} thread(s); median per call "
             "after warm-up, interleaved rounds, same process; ratio = parity[openvino] / OpenVINO's ONNX path "
             "(< 1: parity faster); parity strict: every op on OpenVINO", "",
             "| workload | parity[openvino] µs | openvino ONNX path µs | ratio |", "| --- | ---: | ---: | ---: |"]
    for row in rows:
        m = row["medians_us"]
        lines.append(f"| {row['workload']} | {m['parity[openvino]']:.0f} | {m['openvino (ONNX path)']:.0f} | "
                     f"{row['ratio']:.2f}× |")
    text = "\n".join(lines)
    print(text)
    if options.markdown:
        with open(options.markdown, "w") as f:
            f.write("# parity[openvino] against OpenVINO's own ONNX path\n\n"
                    "`OMP_WAIT_POLICY=PASSIVE python -m parity.bench.openvino_plugin --threads 1 "
                    "--markdown bench/results/openvino.md` (bench/openvino_plugin.py)\n\n" + text + "\n")


if __name__ == "__main__":
    main()
