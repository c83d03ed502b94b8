"""The host a compiled artifact was made for: its CPU model and the CPUs this process may use.

Native code depends on both: XLA:CPU compiles for the host's instruction set (an executable
built on one CPU model may not run on another) and splits loops over as many partitions as
its thread pool has threads, which it sizes from the CPU affinity mask. So an executable
stored under one mask and loaded under another runs with the wrong parallelism: a
1-CPU bench run's sigmoid chain loaded at 2 CPUs took 2.1 ms against 1.1 ms compiled there.

Example::

    >>> sorted(host())
    ['cpu', 'cpus']
"""

from __future__ import annotations

import functools
import os
import platform


def host() -> dict:
    """The CPU model and the count of CPUs in this process's affinity mask (read each call:
    a bench or a worker may narrow the mask after start-up)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"cpu": cpu_model(), "cpus": cpus}


@functools.cache
def cpu_model() -> str:
    """The CPU's model name (read once: it does not change while the process runs)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()
