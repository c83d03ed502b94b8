"""One FX graph on one named backend: translated, prepared (the composites the backend does
not claim expanded) and compiled whole, or, with ``strict=False``, split so that the nodes
the backend cannot run go to eager torch.

Example::

    >>> import torch
    >>> from torch.fx.experimental.proxy_tensor import make_fx
    >>> from parity.backends.registry import get_backend
    >>> from parity.frontend.session import CompileOptions, Session
    >>> from parity.frontend.single_backend import compile_whole
    >>> gm = make_fx(lambda x: torch.exp(x) + 1)(torch.zeros(2))
    >>> compiled = compile_whole(gm, Session(CompileOptions()), get_backend("reference"), "inference")
    >>> compiled([torch.zeros(2)])[0].tolist()
    [2.0, 2.0]
"""

from __future__ import annotations

import torch

from ..ir.graph import Graph
from .claims import ClaimCheck
from .compiled_graph import STATS, CompiledGraph, compiled_executable
from .errors import UnsupportedAtenOp
from .executables import prepare
from .partition import Fallback, PartitionReport, compile_partitioned, is_compute, rejected_nodes
from .plugin_runtime import parameter_inputs, runtime_request
from .session import Session
from .sharding import apply_sharding
from .translate import Translation, fx_to_ir


def compile_whole(gm: torch.fx.GraphModule, session: Session, backend, kind: str) -> CompiledGraph:
    """The whole FX graph as one backend executable (raises UnsupportedAtenOp if it cannot be)."""
    translation, graph = translate_for(gm, session, backend, kind)
    request = runtime_request(session.options, parameter_inputs(gm, translation.inputs))
    executable = compiled_executable(graph, backend, session.options.device, session.options.cache_dir,
                                     precision=session.options.precision, request=request)
    return CompiledGraph(translation, graph, executable)


def translate_for(gm: torch.fx.GraphModule, session: Session, backend, kind: str) -> tuple[Translation, Graph]:
    """The FX graph as the IR graph ``backend`` compiles (raises UnsupportedAtenOp if it cannot)."""
    options = session.options
    translation = fx_to_ir(gm, name=kind, claims=ClaimCheck(backend), backend=backend.name, sizes_as_inputs=True)
    STATS["translations"] += 1
    graph = apply_sharding(translation.graph, mesh=options.mesh, backend=backend, strict=options.strict,
                           site=options.site, warned=session.warned)
    return translation, prepare(graph, backend)


def compile_split(gm: torch.fx.GraphModule, session: Session, backend, kind: str, err: UnsupportedAtenOp,
                  compile_part=None):
    """strict=False: the nodes the backend cannot run go to eager torch, the rest stays on it.

    ``compile_part(sub)`` compiles one partition (default: on ``backend``; backend="auto"
    picks per partition)."""
    from torch._functorch.aot_autograd import make_boxed_func

    rejected = {} if session.options.mesh is not None else rejected_nodes(gm, backend)
    if not rejected:  # sharded, or no single node to blame: the graph runs eagerly as a whole
        session.fall_back(err.aten_op, err.loc, err.why)
        nodes = sum(is_compute(n) for n in gm.graph.nodes)  # counted as the partition reports count
        session.reports.append(PartitionReport(kind, backend.name, in_eager=nodes,
                                               fallbacks=[Fallback(err.aten_op, err.loc, err.why)]))
        return make_boxed_func(gm.forward)
    compile_part = compile_part or (lambda sub: compile_whole(sub, session, backend, kind))
    split, report = compile_partitioned(gm, backend, kind, compile_part, rejected)
    for fallback in report.fallbacks:
        session.fall_back(fallback.aten_op, fallback.loc, fallback.why)
    session.reports.append(report)
    return make_boxed_func(split.forward)


def fallback_report(compiled) -> list:
    """The :class:`~.partition.PartitionReport` of every graph ``compiled`` split (strict=False).

    ``compiled`` is what ``parity.compile`` returned; graphs that ran whole on the backend
    have no report.
    """
    return list(compiled.session.reports)
