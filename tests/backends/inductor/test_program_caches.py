"""A frontend's static graphs are kept in Inductor's FX graph cache for the next process
(backends/program_compiles.py, backends/inductor/backend.py: _with_shape_env); a graph
compiled for anything else (a conformance case) is not written there."""

import json
import os
import subprocess
import sys

PROGRAM = """
import json, torch, parity
from torch._dynamo.utils import counters
from parity.backends.inductor.backend import InductorBackend
from parity.ir import GraphBuilder, f32
KEYS = ("fxgraph_cache_hit", "fxgraph_cache_miss", "fxgraph_cache_bypass")
f = parity.compile(lambda x: torch.exp(x) * 2 + 1, backend="inductor")
out = f(torch.ones(4, 8))
assert torch.allclose(out, torch.exp(torch.ones(4, 8)) * 2 + 1)
program = {k: counters["inductor"][k] for k in KEYS}
counters.clear()
b = GraphBuilder(); x = b.input(f32[3, 5]); InductorBackend().compile(b.build([b.tanh(x)]), "cpu")
print(json.dumps({"program": program, "graph": {k: counters["inductor"][k] for k in KEYS}}))
"""


def _run(cache_dir) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "TORCHINDUCTOR_CACHE_DIR"}
    env["PARITY_CACHE_DIR"] = str(cache_dir)
    done = subprocess.run([sys.executable, "-c", PROGRAM], env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_programs_static_graph_is_read_from_inductors_cache_in_the_next_process(tmp_path):
    first, second = _run(tmp_path), _run(tmp_path)
    assert first["program"] == {"fxgraph_cache_hit": 0, "fxgraph_cache_miss": 1, "fxgraph_cache_bypass": 0}
    assert second["program"] == {"fxgraph_cache_hit": 1, "fxgraph_cache_miss": 0, "fxgraph_cache_bypass": 0}
    # a backend compile outside a frontend (what conformance does) pays no cache write
    assert first["graph"]["fxgraph_cache_bypass"] == second["graph"]["fxgraph_cache_bypass"] == 1
