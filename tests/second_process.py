"""Disk-cache tests in two processes: the first run is the test's own process (it only has to
store the entries), the second a fresh interpreter (the point: it loads them). Both run one
source that defines ``compile_each(cache_dir) -> dict`` (its outputs, and as "stats" the compile
counters it moved): exec'd here and given to ``python -c`` there, its code objects are the same,
file "<string>" included, so keys that follow code (the fast path's) are the same too."""

import json
import subprocess
import sys

import torch


def first_run_here(source: str, cache_dir) -> dict:
    from parity.frontend import compiled_graph

    torch._dynamo.reset()
    compiled_graph.reset_caches()  # nothing compiled earlier in this process may stand in for the store
    scope: dict = {}
    exec(source, scope)
    return scope["compile_each"](str(cache_dir))


def second_process(code: str, cache_dir) -> dict:
    """Run ``code`` (which prints a JSON object last) in a fresh interpreter, ``cache_dir`` its argument."""
    proc = subprocess.run([sys.executable, "-c", code, str(cache_dir)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])
