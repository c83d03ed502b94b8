"""A static KV cache of real size, one position written per step: parity[onnx] writing each cache's
new value into the cache's own memory (OnnxExecutable.in_place) against the copy-back path
(ORT writes a new cache, AOTAutograd's wrapper copies it back), interleaved in one process.

Question: the zoo's tiny decoders have caches of 1.3 KB, where writing in place saves nothing
measurable (bench/results/decoders.md); what does it save where a cache is megabytes?
Eight caches of 1×8×1024×64 float32 (2 MiB each), ``index_copy_`` of one position, one CPU.
The caches are checked equal between the two at the end. Results: results.md beside this file.

Run: ``python -m studies.static_cache_in_place ROUNDS``.
"""

from __future__ import annotations

import os
import statistics
import sys
import time

import torch

import parity
from parity.backends.onnx.executable import OnnxExecutable


class Step(torch.nn.Module):
    def __init__(self, caches: int = 8):
        super().__init__()
        self.caches = caches
        for i in range(caches):
            self.register_buffer(f"c{i}", torch.zeros(1, 8, 1024, 64))

    def forward(self, x, position):
        out = x
        for i in range(self.caches):
            cache = getattr(self, f"c{i}")
            cache.index_copy_(2, position, x)
            out = out + cache[:, :, :1]
        return out


def main(rounds: int) -> None:
    torch.set_num_threads(1)
    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[-1]})
    modules = {"in place": Step(), "copy back": Step()}
    calls = {"in place": parity.compile(modules["in place"], backend="onnx")}
    calls["in place"](torch.randn(1, 8, 1, 64), torch.tensor([0]))
    offered = OnnxExecutable.in_place
    OnnxExecutable.in_place = lambda self, pairs: None  # compiled without the offer: the copy-back path
    try:
        calls["copy back"] = parity.compile(modules["copy back"], backend="onnx")
        calls["copy back"](torch.randn(1, 8, 1, 64), torch.tensor([0]))
    finally:
        OnnxExecutable.in_place = offered
    times: dict[str, list[float]] = {name: [] for name in calls}
    for k in range(rounds):  # ABBA
        x, position = torch.randn(1, 8, 1, 64), torch.tensor([k % 1024])
        for name in (list(calls) if k % 2 == 0 else list(calls)[::-1]):
            t0 = time.perf_counter()
            calls[name](x, position)
            times[name].append(time.perf_counter() - t0)
    first, second = modules.values()
    assert all(torch.equal(getattr(first, f"c{i}"), getattr(second, f"c{i}")) for i in range(first.caches))
    ratio = statistics.median(b / a for a, b in zip(times["in place"], times["copy back"]))
    print(", ".join(f"{name} {statistics.median(ts) * 1e6:.0f} us/step" for name, ts in times.items())
          + f"; median per-round copy back / in place {ratio:.2f}x (load {os.getloadavg()[0]:.1f}, caches equal)")


if __name__ == "__main__":
    main(int(sys.argv[1]))
