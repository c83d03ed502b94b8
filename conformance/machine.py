"""The CPU a conformance run ran on, for its report: kernels differ per vector ISA.

Third-party runtimes pick their kernels by the CPU's vector instructions, and their answers
can differ: on an AVX-512 AMD EPYC, OpenVINO's Greater returned true for a NaN operand and
Inductor's 8-bit sum was right, where their AVX2 kernels did the opposite
(examples/openvino_backend/README.md, backends/inductor/deviations.py). A report that names
the ISA says which certification a reader's machine shares.

Example::

    >>> cpu_of("model name\\t: AMD EPYC\\nflags\\t\\t: fpu sse2 avx avx2 avx512f avx512_bf16 vnni\\n")
    {'model': 'AMD EPYC', 'vector_isa': ['avx', 'avx2', 'avx512f', 'avx512_bf16']}
"""

from __future__ import annotations

import platform
from pathlib import Path

# The x86 and Arm extensions whose kernels runtimes choose between, in the order listed
VECTOR_FLAGS = ("avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16",
                "avx512_fp16", "amx_tile", "amx_bf16", "amx_int8", "asimd", "sve", "sve2", "bf16")
_CPUINFO = Path("/proc/cpuinfo")


def cpu_of(cpuinfo: str) -> dict:
    """The model and vector extensions named in ``cpuinfo`` (the text of Linux's /proc/cpuinfo)."""
    fields: dict[str, str] = {}
    for line in cpuinfo.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() not in fields:  # the first processor's entry
            fields[key.strip()] = value.strip()
    flags = set((fields.get("flags") or fields.get("Features") or "").split())
    model = fields.get("model name") or fields.get("Hardware") or platform.processor() or platform.machine()
    return {"model": model, "vector_isa": [f for f in VECTOR_FLAGS if f in flags]}


def this_cpu() -> dict:
    """:func:`cpu_of` this machine (outside Linux: the platform's processor name, no extensions)."""
    try:
        text = _CPUINFO.read_text()
    except OSError:
        text = ""
    return cpu_of(text)


def differing_cpus(cpus: dict | None) -> str | None:
    """A sentence naming each report's CPU where the merged reports (``cpus``: report name →
    ``environment.cpu``, a merged run's ``options["cpus"]``) ran on CPUs with different vector
    extensions (CPU runtimes choose their kernels by them: OpenVINO's comparisons and
    Inductor's 8-bit sums differ between AVX2 and AVX-512), else None."""
    known = {name: cpu for name, cpu in (cpus or {}).items() if cpu}
    if len({tuple(cpu["vector_isa"]) for cpu in known.values()}) < 2:
        return None
    listed = "; ".join(f"{name}: {cpu['model']} ({', '.join(cpu['vector_isa']) or 'no vector extension named'})"
                       for name, cpu in known.items())
    return (f"the reports ran on CPUs with different vector extensions ({listed}). CPU runtimes choose their "
            f"kernels by these, so each report's cpu cells certify its own machine; a (backend, cpu) target that "
            f"more than one report ran keeps the first one's cells, and the device agreement compares them")
