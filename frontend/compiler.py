"""The Dynamo backend behind ``parity.compile``: AOTAutograd graphs → IR → a parity backend.

For every FX graph AOTAutograd hands over (forward, backward, or inference), this
module translates it to IR (:func:`~parity.frontend.translate.fx_to_ir`), checks that
the chosen backend claims every op (else strict error or eager fallback), expands the
composites the backend does not claim, compiles it through an executable cache keyed
by (IR content hash, backend, device), and returns a boxed callable that takes and
returns torch tensors.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from ..backends.base import precision_for
from ..backends.registry import get_backend
from ..ir.dims import evaluate as evaluate_dim
from ..ir.dims import free_symbols
from ..ir.errors import ParityError
from ..ir.expand import decomposition
from ..ir.graph import Graph, Node
from ..ir.opdef import Kind
from ..ir.ops import OP_TABLE, node_dtype
from ..ir.precision import Precision
from .errors import FallbackWarning, InternalError, UnsupportedAtenOp, fallbacks_text
from .saved_tensors import partition_recomputing_input_views
from .status import slow_work
from .sharding import apply_sharding
from .source import in_user_code, warn_at
from .tensors import array_converter, result_converter
from .translate import Translation, fx_to_ir

#: Counters of the work done: "translations" (FX graphs translated to IR),
#: "backend_compiles" (calls of backend.compile), "cache_hits" (executables reused) and
#: "disk_loads" (executables read from the disk cache instead of compiled).
STATS: collections.Counter = collections.Counter()

_EXECUTABLES: dict[tuple[str, str, str, str], Any] = {}

AUTO = "auto"  # the backend name that picks, per graph, the fastest conformant backend (frontend/auto.py)
_LOCK = threading.Lock()


@dataclass(frozen=True)
class CompileOptions:
    """What ``parity.compile`` was asked for; one object passed down (no hidden globals)."""

    backend: str = "reference"
    device: str = "cpu"
    strict: bool = True
    dynamic: bool | None = None
    mesh: Any = None  # an ir.sharding.Mesh: graphs run sharded on it (frontend/sharding.py)
    site: Any = None  # the SourceLoc of the parity.compile call, for sharding errors
    cache_dir: str | None = None  # the disk cache's directory (backends/disk_cache.py); None: off
    auto: Any = None  # backend="auto": its AutoOptions (frontend/auto.py)
    precision: Precision = Precision.EXACT  # the tier asked for; a backend without it runs EXACT (base.compile_at)
    fullgraph: bool = False  # every piece on the backend: a graph break is an error (frontend/graph_breaks.py)


@dataclass
class Session:
    """State of one ``parity.compile`` call: its options and the fallbacks already warned about."""

    options: CompileOptions
    warned: set[str] = field(default_factory=set)
    reports: list = field(default_factory=list)  # a PartitionReport per graph split by strict=False
    auto_choices: list = field(default_factory=list)  # backend="auto": an AutoChoice per graph
    on_compiled: Any = None  # called with (compiled graph, kind) after each FX graph compiles (fast_path)
    pending: list = field(default_factory=list)  # (aten op, loc, why) not yet in a warning: flush_fallbacks

    def fall_back(self, aten_op: str, loc, why: str) -> None:
        """Note (once per aten op) that ``aten_op`` runs in eager torch, not on the backend: the
        next :meth:`flush_fallbacks` warns about every op noted since the last one."""
        if aten_op in self.warned:
            return
        self.warned.add(aten_op)
        self.pending.append((aten_op, in_user_code(loc, self.options.site), why))

    def flush_fallbacks(self) -> None:
        """One warning for the ops noted since the last flush, at the first one's line: a call of
        the compiled function gives one, however many of its ops run eagerly."""
        pending, self.pending = self.pending, []
        if pending:
            warn_at(pending[0][1], fallbacks_text(pending, self.options.backend), FallbackWarning)


def reset_caches() -> None:
    """Forget compiled executables and zero :data:`STATS` (tests, notebooks)."""
    with _LOCK:
        _EXECUTABLES.clear()
        STATS.clear()


def decomposition_table() -> dict:
    """The ATen decompositions AOTAutograd applies: torch's core ATen set, except attention.

    The fused CPU flash-attention forward stays whole: its core decomposition returns a
    logsumexp of the wrong shape, which the fused backward then reads (silently wrong
    gradients). frontend/aten/attention.py translates the forward/backward pair instead.
    """
    from torch._decomp import core_aten_decompositions

    table = dict(core_aten_decompositions())
    table.pop(torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default, None)
    pow_scalar = torch.ops.aten.pow.Tensor_Scalar
    table[pow_scalar] = functools.partial(_pow_small_exponent, fallback=table.get(pow_scalar))
    select_backward = torch.ops.aten.select_backward.default
    table[select_backward] = functools.partial(_select_backward_as_pad, fallback=table.get(select_backward))
    for scatter in (torch.ops.aten.slice_scatter.default, torch.ops.aten.select_scatter.default):
        table[scatter] = functools.partial(_complex_scatter_by_parts, scatter, fallback=table.get(scatter))
    return table


def _complex_scatter_by_parts(op, x, src, *args, fallback=None):
    """``op`` (slice_scatter, select_scatter) of complex tensors as the same op on their real
    and imaginary parts: the IR's scatter takes no complex operands, and the FFT's gradients
    write into complex zeros this way (``rfft``'s backward pads its half-spectrum)."""
    if x.is_complex():
        src = src.to(x.dtype)
        real = op(torch.ops.aten.real.default(x), torch.ops.aten.real.default(src), *args)
        imag = op(torch.ops.aten.imag.default(x), torch.ops.aten.imag.default(src), *args)
        return torch.ops.aten.complex.default(real, imag)
    return fallback(x, src, *args) if fallback is not None else NotImplemented


def _pow_small_exponent(x, exponent, *, fallback=None):
    """``x ** 1`` and ``x ** 2`` of a float tensor as ``x`` and ``x * x``, as eager torch computes them.

    Both are exact rewrites (x² correctly rounded is x·x; x¹ is x, NaN and -0 included), so
    every backend gives the same bits as before. The point is the backward of a square
    (``pow_backward``: ``grad * (2 * x.pow(1))``): ONNX Runtime runs Pow(x, 1) through the
    generic powf, 4.2 ms of a 65 ms backward on f32[8,128,256] (encoder_train, one thread;
    bench/results/train_breakdown.md). Other exponents keep torch's own path.
    """
    if isinstance(x, torch.Tensor) and x.is_floating_point() and type(exponent) in (int, float):
        if exponent == 1:
            return torch.ops.aten.clone.default(x)
        if exponent == 2:
            return torch.ops.aten.mul.Tensor(x, x)
    return fallback(x, exponent) if fallback is not None else NotImplemented


def _select_backward_as_pad(grad, input_sizes, dim, index, *, fallback=None):
    """The gradient of ``x.select(dim, index)``: ``grad`` zero-padded back to ``input_sizes``.

    torch's core decomposition builds the same tensor as ``where(arange == index, grad, 0)``
    over the whole input (an iota, a compare and a select, each a pass over it); a pad is
    one pass and gives the same bits (+0 where the mask was off, ``grad`` itself where on).
    The encoder's ``qkv[0], qkv[1], qkv[2]`` have three of them in the backward, on
    f32[3,8,4,128,64]. A symbolic size works too (``x[:, -1]`` under ``dynamic=True``: the
    pad before it is ``seq - 1``); a symbolic index keeps torch's decomposition.
    """
    sizes = list(input_sizes)
    if fallback is not None and not (type(dim) is int and type(index) is int):
        return fallback(grad, input_sizes, dim, index)
    rank = len(sizes)
    dim %= rank
    if index < 0:  # x[:, -1]: counted from the end (torch guarded size >= -index)
        index = sizes[dim] + index
    if not all(type(size) is int for size in sizes):
        # The IR's pad takes static widths, and zeros built here in torch would make it guard
        # on the sizes (a contiguity check specializes a dim of size 2): the op stays whole,
        # for frontend/aten/indexing.py's select_backward (zeros of symbolic widths around it).
        return NotImplemented
    row = torch.ops.aten.unsqueeze.default(grad, dim)
    pad = []
    for d in reversed(range(rank)):  # constant_pad_nd: (low, high) pairs from the last dim
        pad += [index, sizes[d] - 1 - index] if d == dim else [0, 0]
    return torch.ops.aten.constant_pad_nd.default(row, pad, 0.0)


# How AOTAutograd splits a training graph into forward and backward (frontend/saved_tensors.py);
# a dict so that a benchmark can compare partitions in one process.
PARTITION = {"fn": partition_recomputing_input_views}


def make_dynamo_backend(session: Session):
    """A ``torch.compile`` backend: AOTAutograd with parity's forward/backward compilers."""
    from torch._dynamo.backends.common import aot_autograd

    compile_fw = functools.partial(compile_fx_graph, session=session, kind="forward")
    compile_bw = functools.partial(compile_fx_graph, session=session, kind="backward")
    compile_inference = functools.partial(compile_fx_graph, session=session, kind="inference")
    aot = aot_autograd(fw_compiler=compile_fw, bw_compiler=compile_bw, inference_compiler=compile_inference,
                       decompositions=decomposition_table(), partition_fn=PARTITION["fn"])

    def parity(gm, example_inputs):
        with mkldnn_off():
            return aot(gm, example_inputs)

    return parity


@contextlib.contextmanager
def mkldnn_off():
    """Trace with mkldnn off: with it on, torch's aten.lstm decomposition emits the fused
    aten.mkldnn_rnn_layer for a layer whose input needs no grad; with it off, plain
    matmuls and pointwise ops, which translate. (Set directly: torch.backends.mkldnn.flags()
    also resets TF32 and warns about it.)"""
    enabled = torch._C._get_mkldnn_enabled()
    torch._C._set_mkldnn_enabled(False)
    try:
        yield
    finally:
        torch._C._set_mkldnn_enabled(enabled)


# -- claims -----------------------------------------------------------------------------


class ClaimCheck:
    """Why a backend cannot run an IR node (None when it can), looking through composites."""

    def __init__(self, backend):
        self.backend = backend
        self.claims = backend.claims()
        self._composites: dict[tuple, str | None] = {}

    def __call__(self, node: Node) -> str | None:
        op = node.op
        claim = self.claims.get(op)
        dtype = node_dtype(node)  # the op's dtype as claims key it (select: on_true's, not the predicate's)
        if claim is not None and dtype in claim.dtypes:
            return None
        opdef = OP_TABLE[op]
        # Plugins may predate the declined fields: getattr.
        if claim is not None and opdef.kind is Kind.PRIMITIVE:
            why = getattr(self.backend, "declined_dtypes", {}).get(dtype)
            return (f"backend {self.backend.name!r} claims the IR op {op!r} but not for dtype {dtype.short}"
                    + (f": {why}" if why else ""))
        if opdef.kind is Kind.PRIMITIVE:
            why = getattr(self.backend, "declined", {}).get(op) or getattr(self.backend, "declined_dtypes", {}).get(dtype)
            return f"backend {self.backend.name!r} does not claim the IR op {op!r}" + (f": {why}" if why else "")
        # A composite not claimed (in this dtype) runs if its decomposition does.
        key = (op, tuple(str(v.type) for v in node.inputs), repr(sorted(node.attrs.items())))
        if key not in self._composites:
            self._composites[key] = self._check_decomposition(node)
        return self._composites[key]

    def _check_decomposition(self, node: Node) -> str | None:
        expanded = decomposition(node.op, node.attrs, [v.type for v in node.inputs],
                                 out_types=[v.type for v in node.outputs], loc=node.loc)
        for inner in expanded.nodes:
            why = self(inner)
            if why is not None:
                return f"{why} (needed by the decomposition of {node.op!r})"
        return None


def backends_that_run(nodes: list[Node], exclude: str | None = None) -> list[str]:
    """The registered backends (other than ``exclude``) that claim every IR node of ``nodes``.

    Used by error messages, so that a fix line only suggests backends that would work;
    a backend that cannot be loaded here is left out.
    """
    from ..backends.registry import backend_names

    found = []
    for name in backend_names():
        if name == exclude:
            continue
        try:
            check = ClaimCheck(get_backend(name))
        except (ParityError, ImportError):
            continue
        if all(check(node) is None for node in nodes):
            found.append(name)
    return found


# -- compiling one FX graph ---------------------------------------------------------


def compile_fx_graph(gm: torch.fx.GraphModule, example_inputs, *, session: Session, kind: str):
    """AOTAutograd's compiler hook: one FX graph → a boxed callable on torch tensors.

    AOTAutograd calls it with its fake-tensor mode still active; parity's work here is on
    real tensors (constants the graph holds become IR constants), so that mode is lifted.
    """
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    with unset_fake_temporarily(), slow_work(_status_message(session, kind)):
        try:
            compiled = _compile_fx_graph(gm, session, kind)
            if kind == "backward":  # compiled at the first backward(), after the call that flushes
                session.flush_fallbacks()
            if session.on_compiled is not None:
                session.on_compiled(compiled, kind)
            return compiled
        except UnsupportedAtenOp as err:
            loc = in_user_code(err.loc, session.options.site)
            if loc is err.loc:
                raise
            raise UnsupportedAtenOp(err.aten_op, loc, err.why, backend=err.backend,
                                    alternatives=err.alternatives) from None
        except ParityError:
            raise
        except Exception as exc:  # not ours on purpose: a bug report, never Dynamo's opaque wrapper
            raise InternalError(kind, session.options.backend, _user_locs(gm), exc) from exc


def _status_message(session: Session, kind: str) -> str:
    """The terminal's status line while a graph compiles (shown only when it takes a while)."""
    backend = session.options.backend
    why = " (auto: timing the candidate backends)" if backend == AUTO else f" for backend {backend!r}"
    return f"parity: compiling the {kind} graph{why}"


def _user_locs(gm: torch.fx.GraphModule) -> list:
    from .source import loc_from_stack_trace

    locs = (loc_from_stack_trace(n.meta.get("stack_trace")) for n in gm.graph.nodes)
    return [loc for loc in locs if loc is not None]


def _compile_fx_graph(gm: torch.fx.GraphModule, session: Session, kind: str):
    if session.options.backend == AUTO:
        from .auto import compile_auto

        return compile_auto(gm, session, kind)
    backend = get_backend(session.options.backend)
    try:
        return _compile_whole(gm, session, backend, kind)
    except UnsupportedAtenOp as err:
        if session.options.strict:
            raise
        return compile_split(gm, session, backend, kind, err)


def _compile_whole(gm: torch.fx.GraphModule, session: Session, backend, kind: str) -> CompiledGraph:
    """The whole FX graph as one backend executable (raises UnsupportedAtenOp if it cannot be)."""
    translation, graph = translate_for(gm, session, backend, kind)
    executable = compiled_executable(graph, backend, session.options.device, session.options.cache_dir,
                                     precision=session.options.precision)
    return CompiledGraph(translation, graph, executable)


def translate_for(gm: torch.fx.GraphModule, session: Session, backend, kind: str) -> tuple[Translation, Graph]:
    """The FX graph as the IR graph ``backend`` compiles (raises UnsupportedAtenOp if it cannot)."""
    options = session.options
    translation = fx_to_ir(gm, name=kind, claims=ClaimCheck(backend), backend=backend.name)
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

    from .partition import Fallback, PartitionReport, compile_partitioned, is_compute, rejected_nodes

    rejected = {} if session.options.mesh is not None else rejected_nodes(gm, backend)
    if not rejected:  # sharded, or no single node to blame: the graph runs eagerly as a whole
        session.fall_back(err.aten_op, err.loc, err.why)
        nodes = sum(is_compute(n) for n in gm.graph.nodes)  # counted as the partition reports count
        session.reports.append(PartitionReport(kind, backend.name, in_eager=nodes,
                                               fallbacks=[Fallback(err.aten_op, err.loc, err.why)]))
        return make_boxed_func(gm.forward)
    compile_part = compile_part or (lambda sub: _compile_whole(sub, session, backend, kind))
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


def prepare(graph: Graph, backend) -> Graph:
    """Expand the composites ``backend`` does not claim, then drop dead nodes."""
    from ..ir.passes import dce, decompose

    claims = backend.claims()
    graph, _ = decompose(graph, claimed=lambda op: op in claims)
    graph, _ = dce(graph)
    return graph


def compiled_executable(graph: Graph, backend, device: str, cache_dir: str | None = None, *,
                        precision: Precision = Precision.EXACT):
    """backend.compile(graph, device) at the tier the backend runs ``precision`` at
    (backends.base.precision_for), cached by (content hash, backend, device, tier) in this
    process and, with a ``cache_dir``, on disk across processes."""
    from ..backends.disk_cache import compile_cached

    precision = precision_for(backend, precision)
    key = (graph.content_hash(), backend.name, device, precision.value)
    with _LOCK:
        cached = _EXECUTABLES.get(key)
        if cached is not None:
            STATS["cache_hits"] += 1
            return cached
    executable, loaded = compile_cached(graph, backend, device, cache_dir, precision)
    STATS["disk_loads" if loaded else "backend_compiles"] += 1
    with _LOCK:
        _EXECUTABLES[key] = executable
    return executable


def draw_keys(n: int) -> list:
    """``n`` u32[2] random keys from torch's default generator (reproducible with manual_seed)."""
    import numpy as np

    bits = torch.randint(0, 2**32, (n, 2), dtype=torch.int64).numpy().astype(np.uint32)
    return [bits[i] for i in range(n)]


class CompiledGraph:
    """A compiled FX graph in AOTAutograd's boxed calling convention (a list of args in).

    Everything a call needs that does not depend on the argument values — which argument
    feeds which IR input, how each crosses to NumPy (by its static IR dtype), where each
    output comes from — is worked out here, once, so a call only converts and runs.
    """

    def __init__(self, translation: Translation, graph: Graph, executable):
        # an instance attribute: torch's wrappers copy __dict__, not class attributes
        self._boxed_call = True
        self.translation = translation
        self.graph = graph
        self.executable = executable
        t = translation
        # An executable that takes torch tensors gets them as they are (it converts, and may
        # keep a binding across calls: OnnxExecutable); its results never alias its inputs.
        self._takes_tensors = getattr(executable, "takes_torch_tensors", False)
        self._inputs = tuple((j, _as_is if self._takes_tensors else array_converter(v.type.dtype))
                             for j, v in zip(t.inputs, graph.inputs))
        self._num_keys = t.num_keys
        # sizes only integer arguments give: an empty i8[0, *sizes] input carries them (translate.py)
        self._carrier = tuple(t.symbols[name][0] for name in t.size_carrier)
        convert = [result_converter(v.type.dtype) for v in graph.outputs]
        plan = []
        for kind, what in t.outputs:
            if kind == "ir":
                plan.append((_IR, what, convert[what]))
            elif kind == "input":
                plan.append((_INPUT, what, None))
            elif kind == "sym" and isinstance(what, str):
                plan.append((_SYM, *t.symbols[what]))
            elif kind == "sym":  # a size expression (s0*s1, saved for the backward)
                plan.append((_SYM_EXPR, what, {name: t.symbols[name] for name in free_symbols(what)}))
            else:
                plan.append((_CONST, what, None))
        self._outputs = tuple(plan)
        # The common case: the FX outputs are the IR outputs, in order.
        self._direct = tuple(convert) if [p[:2] for p in plan] == [(_IR, k) for k in range(len(convert))] else None
        self.recorder: list | None = None  # while fast_path records a call: the outputs returned

    def __call__(self, args: list) -> list:
        arrays = [convert(args[j]) for j, convert in self._inputs]
        if self._carrier:
            arrays.append(np.empty((0, *(int(args[i]) for i in self._carrier)), np.int8))
        if self._num_keys:
            arrays += draw_keys(self._num_keys)
        results = self.executable(*arrays)
        if self._takes_tensors:
            arrays = ()  # nothing to check the results against: they never alias the inputs
        if self._direct is not None:
            outputs = [convert(r, arrays) for convert, r in zip(self._direct, results)]
        else:
            outputs = [self._output(spec, args, results, arrays) for spec in self._outputs]
        args.clear()  # the boxed convention: the callee frees its inputs
        if self.recorder is not None:
            self.recorder.append(outputs)
        return outputs

    @property
    def returns_ir_outputs(self) -> bool:
        """Whether the FX graph's outputs are exactly the IR graph's, in order (no input
        passed through, no size): what fast_path's direct entries need."""
        return self._direct is not None

    @staticmethod
    def _output(spec: tuple, args: list, results, arrays: list):
        kind, a, b = spec
        if kind is _IR:
            return b(results[a], arrays)
        if kind is _INPUT:
            return args[a]
        if kind is _SYM:  # a symbolic size, read off the argument that carries it
            return int(args[a]) if b is None else int(args[a].shape[b])
        if kind is _SYM_EXPR:  # evaluated from its symbols' sizes, each read off its argument
            return evaluate_dim(a, {name: int(args[i]) if d is None else int(args[i].shape[d])
                                    for name, (i, d) in b.items()})
        return a


def _as_is(tensor):
    return tensor


# Output kinds of CompiledGraph's plan (Translation.outputs' kinds, compared by identity).
_IR, _INPUT, _SYM, _SYM_EXPR, _CONST = "ir", "input", "sym", "sym_expr", "const"
