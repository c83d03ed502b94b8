"""Every onnxruntime session parity makes shares one intra-op pool (backends/onnx/backend.py
``_share_one_thread_pool``): a process holding many sessions (forward and backward graphs,
auto's candidates, the conformance suite's thousands) holds one pool, not one per session
whose idle threads spin on the cores the next run needs."""

import subprocess
import sys

COUNT_THREADS = """
import os
import numpy as np
from parity.ir import GraphBuilder, f32
from parity.backends.onnx import OnnxBackend
threads = lambda: len(os.listdir("/proc/self/task"))
backend = OnnxBackend()
run = lambda k: backend.compile(_graph(k), "cpu")(np.ones(4, np.float32))
def _graph(k):
    b = GraphBuilder(); x = b.input(f32[4]); return b.build([b.add(x, b.constant(np.full(4, k, np.float32)))])
run(0)
before = threads()
outs = [run(k)[0][0] for k in range(1, 21)]  # 20 more graphs: 20 more sessions, all alive in the cache
print(threads() - before, len(os.sched_getaffinity(0)), outs == [1.0 + k for k in range(1, 21)])
"""


def test_twenty_sessions_add_no_thread_pool():
    out = subprocess.run([sys.executable, "-c", COUNT_THREADS], capture_output=True, text=True, check=True).stdout
    added, cpus, right = out.split()
    assert right == "True"
    assert int(added) == 0, f"20 sessions started {added} threads on a {cpus}-CPU mask"
