"""A frontend's static graphs are kept in Inductor's FX graph cache for the next process
(backends/program_compiles.py, backends/inductor/compiling.py: with_shape_env); a graph
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


def _run(cache_dir, graph_cache: str | None = None) -> dict:
    """PROGRAM in a new process with Inductor's FX graph cache as a user has it: on by default
    (the suite turns the default off, tests/conftest.py), or ``graph_cache`` in Inductor's switch."""
    drop = {"TORCHINDUCTOR_CACHE_DIR", "TORCHINDUCTOR_FX_GRAPH_CACHE_DEFAULT", "TORCHINDUCTOR_FX_GRAPH_CACHE"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    if graph_cache is not None:
        env["TORCHINDUCTOR_FX_GRAPH_CACHE"] = graph_cache
    env["PARITY_CACHE_DIR"] = str(cache_dir)
    done = subprocess.run([sys.executable, "-c", PROGRAM], env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_programs_static_graph_is_read_from_inductors_cache_in_the_next_process(tmp_path):
    first, second = _run(tmp_path), _run(tmp_path)
    assert first["program"] == {"fxgraph_cache_hit": 0, "fxgraph_cache_miss": 1, "fxgraph_cache_bypass": 0}
    assert second["program"] == {"fxgraph_cache_hit": 1, "fxgraph_cache_miss": 0, "fxgraph_cache_bypass": 0}
    # a backend compile outside a frontend (what conformance does) pays no cache write
    assert first["graph"]["fxgraph_cache_bypass"] == second["graph"]["fxgraph_cache_bypass"] == 1


def test_inductors_switch_for_its_graph_cache_keeps_a_programs_graph_out(tmp_path):
    """TORCHINDUCTOR_FX_GRAPH_CACHE=0 (Inductor's own switch): no program's graph is written, and the
    next process compiles it again."""
    first, second = _run(tmp_path, "0"), _run(tmp_path, "0")
    assert first["program"] == second["program"] == {"fxgraph_cache_hit": 0, "fxgraph_cache_miss": 0,
                                                      "fxgraph_cache_bypass": 0}
