"""Warnings torch raises from parity's own calls into Inductor stay at that call site: a
user who runs with ``-W error::DeprecationWarning`` (as test suites do) still compiles."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap


def test_a_fresh_process_compiles_on_inductor_with_deprecation_warnings_as_errors():
    # importing Inductor's compile_fx imports torch.jit code that warns of its own deprecation;
    # without parity's filter at that import the compile fails as an InternalError
    script = textwrap.dedent("""
        import torch, parity
        f = parity.compile(lambda x: torch.tanh(x) * 2, backend="inductor")
        print(f(torch.zeros(3)).tolist())
    """)
    done = subprocess.run([sys.executable, "-W", "error::DeprecationWarning", "-c", script], capture_output=True,
                          text=True, env={**os.environ, "PYTHONWARNINGS": "error::DeprecationWarning"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[0.0, 0.0, 0.0]"
