"""The command-line options of a run on workers, shared by ``parity conform`` and
``parity fuzz``: added to a parser here and read back into
:class:`.controller.WorkerOptions`, so the CLI holds no logic of its own.

Example::

    >>> import argparse
    >>> parser = argparse.ArgumentParser(); add_worker_arguments(parser)
    >>> worker_options(parser.parse_args(["--workers", "2", "--case-timeout", "30"]))
    WorkerOptions(workers=2, engine='local', case_timeout=30.0, memory_mb=None, plugins=(), journal=None, resume=False,
                  hosts=(), monarch_job=None, timeout_scale=1.0)
"""

from __future__ import annotations

import argparse

from .controller import WorkerOptions, parse_hosts
from .engine import ENGINES


def add_worker_arguments(parser: argparse.ArgumentParser, *, journal: bool = False) -> None:
    parser.add_argument("--workers", type=int, metavar="N",
                        help="run the cases on N worker processes; a case that crashes or hangs its worker becomes "
                             "a 'crashed' / 'timed out' cell and the run goes on (default: serial, in this process)")
    parser.add_argument("--engine", default="local", choices=sorted(ENGINES),
                        help="what runs the workers (default local: subprocesses of this machine)")
    parser.add_argument("--case-timeout", type=float, metavar="SECONDS",
                        help="kill a worker that spends longer than this on one op × dtype bundle on one backend; "
                             "its cases are 'timed out' (default: a limit sized from the bundle's cases, "
                             "docs/conformance.md 'Workers'; 0: no limit). Without --workers: a plugin's isolated "
                             "worker")
    parser.add_argument("--worker-memory", type=int, metavar="MIB",
                        help="cap each worker's address space (setrlimit RLIMIT_AS) at MIB mebibytes (default with "
                             "--workers: none; a plugin's isolated worker in a serial run: half the machine's memory; "
                             "0: none)")
    parser.add_argument("--hosts", metavar="HOST=B,B;HOST=B",
                        help="with workers: simulated hosts, each with --workers workers offering only the backends "
                             "listed; each target runs on the first host that offers its backend")
    parser.add_argument("--monarch-job", metavar="PATH",
                        help="with --engine monarch: a Monarch job written by job.dump(PATH) (Slurm, Kubernetes, "
                             "...); --hosts names its host meshes and the backends each offers")
    parser.add_argument("--plugin", action="append", default=[], metavar="MODULE:ATTR",
                        help="load a backend that is not installed (a Backend subclass, instance or factory), "
                             "in this process and in every worker (repeatable)")
    if journal:
        parser.add_argument("--journal", metavar="PATH",
                            help="stream every case result to PATH as JSON lines (implies --workers 1 if not given)")
        parser.add_argument("--resume", action="store_true",
                            help="with --journal: skip the cases the journal already holds (a run that was killed)")


def worker_options(args: argparse.Namespace, *, isolates: bool = False) -> WorkerOptions | None:
    """The options of a run on workers, or None for a serial run. ``isolates``: a serial run
    still runs its plugins on a worker (``parity conform``, :func:`isolation_options`), so
    ``--case-timeout`` and ``--worker-memory`` apply to it without ``--workers``."""
    journal = getattr(args, "journal", None)
    if getattr(args, "resume", False) and not journal:
        raise ValueError("--resume needs --journal PATH: the journal of the run to continue")
    if args.workers is None and not journal:
        limits = () if isolates else (("--case-timeout", args.case_timeout), ("--worker-memory", args.worker_memory))
        for flag, value in (*limits, ("--hosts", args.hosts), ("--monarch-job", args.monarch_job)):
            if value is not None:
                raise ValueError(f"{flag} applies to workers: add --workers N")
        return None
    workers = 1 if args.workers is None else args.workers
    if workers < 1:
        raise ValueError(f"--workers {workers}: give at least 1")
    hosts = parse_hosts(args.hosts) if args.hosts else ()
    if args.monarch_job and not hosts:
        raise ValueError("--monarch-job needs --hosts: which of the job's host meshes to use, and the backends each "
                         "offers, e.g. --hosts 'trainers=reference,onnx'")
    return WorkerOptions(workers, args.engine, args.case_timeout, args.worker_memory, tuple(args.plugin), journal,
                         getattr(args, "resume", False), hosts, args.monarch_job)


def isolation_options(args: argparse.Namespace) -> WorkerOptions:
    """A serial run's limits for the worker its plugins run on (``--case-timeout``,
    ``--worker-memory``; unset: the defaults of :mod:`.isolation`)."""
    return WorkerOptions(case_timeout=args.case_timeout, memory_mb=args.worker_memory)
