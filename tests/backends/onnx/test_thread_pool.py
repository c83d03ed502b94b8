"""onnxruntime's intra-op pools wait asleep (backends/onnx/backend.py ``_session_options``):
a process holding many sessions (forward and backward graphs, auto's candidates, the
conformance suite's thousands) does not have their idle pools spinning on the cores the
next run needs; and parity leaves the process's onnxruntime as it found it, so a user's
own sessions run beside parity's."""

import os
import subprocess
import sys

import pytest

BUSY_LOOP = """
import os, time
import numpy as np
from parity.ir import GraphBuilder, f32
from parity.backends.onnx import OnnxBackend
backend = OnnxBackend()
def graph(k):
    b = GraphBuilder(); x = b.input(f32[64]); return b.build([b.add(x, b.constant(np.full(64, k, np.float32)))])
runs = [backend.compile(graph(k), "cpu") for k in range(20)]  # 20 sessions, each with its pool
x = np.ones(64, np.float32)
for run in runs:
    run(x)
wall, cpu, calls = time.perf_counter(), time.process_time(), 0
while time.perf_counter() - wall < 0.5:  # one session after another, as a test suite or a training step runs them
    runs[calls % 20](x)
    calls += 1
print(f"{(time.process_time() - cpu) / (time.perf_counter() - wall):.2f}")
"""

USERS_OWN_SESSION = """
import numpy as np, onnx, onnxruntime as ort
from onnx import TensorProto, helper
from parity.ir import GraphBuilder, f32
from parity.backends.onnx import OnnxBackend
b = GraphBuilder(); x = b.input(f32[4])
print(OnnxBackend().compile(b.build([b.neg(x)]), "cpu")(np.ones(4, np.float32))[0].tolist())
node = helper.make_node("Relu", ["x"], ["y"])
io = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [4]) for n in ("x", "y")]
model = helper.make_model(helper.make_graph([node], "g", io[:1], io[1:]), opset_imports=[helper.make_opsetid("", 17)])
session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])  # ORT's defaults
print(session.run(None, {"x": np.array([-1, 2, -3, 4], np.float32)})[0].tolist())
"""


def _run(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one CPU: onnxruntime starts no pool thread to spin")
def test_twenty_sessions_run_in_turn_keep_one_core_busy_not_every_core():
    busy = float(_run(BUSY_LOOP))
    assert busy < 1.2, f"the process used {busy:.2f} CPUs while running one session at a time"


def test_a_users_own_onnxruntime_session_runs_beside_parity_s():
    assert _run(USERS_OWN_SESSION).split("\n")[:2] == ["[-1.0, -1.0, -1.0, -1.0]", "[0.0, 2.0, 0.0, 4.0]"]
