"""Helpers for the sharding tests: run a script in fresh Python processes, with simulated devices."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).with_name("simulated.py")
TIMEOUT_S = 120  # per process; the whole run takes ~15 s on two busy cores


def device_env(count: int) -> dict:
    """The environment of a child process that sees ``count`` CPU devices (this process is untouched)."""
    env = dict(os.environ)
    env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={count}"
    env["JAX_PLATFORMS"] = "cpu"
    return env


def start(args: list[str], devices: int) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(SCRIPT), *args], env=device_env(devices), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)


def finish(procs: list[subprocess.Popen]) -> list[tuple[int, str]]:
    """Wait for every process (bounded), kill any left over, and return (exit code, output) of each."""
    results = []
    try:
        for proc in procs:
            try:
                out, _ = proc.communicate(timeout=TIMEOUT_S)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                out, _ = proc.communicate()
                out += f"\n(killed after {TIMEOUT_S} s)"
            results.append((proc.returncode, out))
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    return results


def report_of(output: str) -> dict:
    """The JSON line simulated.py prints last (``REPORT {...}``)."""
    lines = [line for line in output.splitlines() if line.startswith("REPORT ")]
    assert lines, f"no report in the output:\n{output[-4000:]}"
    return json.loads(lines[-1][len("REPORT "):])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
