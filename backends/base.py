"""The Backend protocol: what a backend declares and what it must do.

A backend declares its name, the devices it can run on, the ops it claims (every
primitive it implements, and any composite it implements natively) with the dtypes per
op, and its known deviations as data. ``compile(graph, device)`` returns an
:class:`Executable`. Composites the backend does not claim reach it already expanded by
the decompose pass, so a backend that claims every primitive runs every op.

Example (a complete, if slow, backend)::

    >>> from parity.backends.base import Backend, OpClaim
    >>> from parity.ir import evaluate, primitives
    >>> class NumpyBackend(Backend):
    ...     name = "numpy"
    ...     devices = ("cpu",)
    ...     def claims(self):
    ...         return {op.name: OpClaim(frozenset(op.dtypes)) for op in primitives()}
    ...     def compile(self, graph, device):
    ...         return lambda *arrays: evaluate(graph, arrays)
    >>> NumpyBackend().claim_status("softmax")
    'decomposed'
"""

from __future__ import annotations

import abc
import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..ir.dtypes import COMPLEX_DTYPES, DType
from ..ir.errors import UnsupportedOpError
from ..ir.graph import Graph, Node
from ..ir.opdef import Kind
from ..ir.ops import OP_TABLE, node_dtype, ops_in_family
from ..ir.precision import Precision
from .runtime import BackendOption, RuntimeRequest, compile_keywords
from .subgraph_claims import compile_by_regions

Executable = Callable[..., Sequence[Any]]


class ClaimStatus(enum.Enum):
    NATIVE = "native"  # lowered by the backend's own rule
    EXTERN = "extern"  # the backend calls a library kernel for it (e.g. cuDNN conv)
    DECOMPOSED = "decomposed"  # a composite the backend runs through its decomposition
    UNSUPPORTED = "unsupported"


@dataclass(frozen=True)
class OpClaim:
    """A backend's claim on one op: the dtypes it supports, whether it is extern, and ``when``:
    an optional predicate over the IR node (its attrs, static shapes and dtypes) that returns
    None when the backend takes that node and otherwise why not (backends/claim_predicates.py
    has ready ones). A node the predicate declines is handled as if the op were unclaimed: a
    composite is decomposed, a primitive is unsupported with that reason.

    Example::

        >>> from parity.backends.claim_predicates import attr_all_equal
        >>> claim = OpClaim(frozenset(DType), when=attr_all_equal("lhs_dilation", 1))
        >>> from parity.ir import GraphBuilder, f32
        >>> b = GraphBuilder(); x = b.input(f32[1, 1, 4, 4]); w = b.input(f32[1, 1, 2, 2])
        >>> y = b.convolution(x, w, window_strides=(1, 1), padding=((0, 0), (0, 0)),
        ...                   lhs_dilation=(2, 2), rhs_dilation=(1, 1))
        >>> node = b.build([y]).nodes[0]
        >>> claim.declines(node)
        'its lhs_dilation is (2, 2); the backend takes only 1 in every entry'
    """

    dtypes: frozenset[DType]
    extern: bool = False
    when: Callable[[Node], str | None] | None = None

    def declines(self, node: Node) -> str | None:
        """Why this claim's predicate turns ``node`` down (None: it takes it, or there is none)."""
        return self.when(node) if self.when is not None else None


@dataclass(frozen=True)
class Deviation:
    """A known, measured difference from the spec, published in the conformance matrix.

    ``max_error`` is what was measured, and it starts with the number conformance holds
    the backend to: "5 ulp (measured 4.2)". A deviation without that number explains
    nothing (the cell fails), and no deviation excuses an exception or an output of the
    wrong shape or dtype. ``op`` may be :data:`ANY_OP`. ``flush_to_zero``: in ``dtype``
    (measured per dtype and device; None is not allowed for it) the backend reads subnormal
    inputs as ±0 and flushes subnormal results to ±0; conformance then excuses a failing
    case of that dtype only if it passes once subnormals are zero on both sides
    (docs/conformance.md).
    """

    op: str
    reason: str
    max_error: str
    dtype: DType | None = None
    device: str | None = None
    flush_to_zero: bool = False


def declined_by_predicate(claims: Mapping[str, OpClaim], node: Node) -> str | None:
    """Why the predicate of ``node``'s claim in ``claims`` turns the node down (None: the op is
    not claimed, its claim has no predicate, or the predicate takes it)."""
    claim = claims.get(node.op)
    return claim.declines(node) if claim is not None else None


ANY_OP = "*"  # a Deviation's op that matches every op (with flush_to_zero: a property of the runtime)


@dataclass(frozen=True)
class Summation:
    """How a backend sums, where it sums in longer sequential chains than the contract's.

    The contract bounds a sum of ``n`` terms by ``(ceil(log2 n) + B)·ε·Σ|terms|``: chains of
    at most ``B`` terms added one after another, combined by a tree (B is
    ``conformance.bounds.CONTRACT_BLOCK``). A backend whose kernel adds longer chains
    declares the longest here, measured: ``block`` terms, or None for one sequential pass
    over all ``n`` terms (then the bound is the classic ``n·ε·Σ|terms|``). ``op`` may be
    :data:`ANY_OP`; an entry for the op itself wins over an ``ANY_OP`` one.
    """

    op: str
    block: int | None
    reason: str
    dtype: DType | None = None
    device: str | None = None


@dataclass(frozen=True)
class CompilePrior:
    """What a backend declares one cold compile costs on ``device``, before any is measured:
    ``per_graph_s + per_node_s × (IR nodes)`` seconds. ``backend="auto"`` leaves out a
    candidate whose prior exceeds what is left of its budget; once a compile of the
    backend is measured (in this process or in the disk cache), the measurement replaces
    the prior (frontend/auto_compile_times.py). ``basis`` says where the numbers come from
    (docs/frontend.md has the measurements).

    Example::

        >>> CompilePrior("cpu", per_graph_s=2.0, per_node_s=0.5, basis="example").seconds(4)
        4.0
    """

    device: str
    per_graph_s: float
    per_node_s: float
    basis: str

    def seconds(self, nodes: int) -> float:
        return self.per_graph_s + self.per_node_s * nodes


class Backend(abc.ABC):
    """Subclass this (or duck-type it) to add a backend; register it by entry point."""

    name: str = ""
    devices: tuple[str, ...] = ()
    deviations: tuple[Deviation, ...] = ()
    summation: tuple[Summation, ...] = ()  # only where it sums in longer chains than the contract
    # The precision tiers compile() takes (as its ``precision=`` keyword); a backend that lists
    # only EXACT is compiled without the keyword, so plugins written before tiers keep working.
    precisions: tuple[Precision, ...] = (Precision.EXACT,)
    # Primitives the backend knowingly does not claim, each with why: the error a user gets
    # for one says so, and the walk of docs/adding-an-op.md accepts it instead of a lowering.
    declined: Mapping[str, str] = {}
    # Dtypes no op of the backend takes, each with why (its claims leave them out).
    declined_dtypes: Mapping[DType, str] = {}
    # (op, dtype) cells the backend knowingly does not claim, each with why (a measured failure):
    # the error a user gets for one says so.
    declined_cells: Mapping[tuple[str, DType], str] = {}
    # Declared cold-compile cost per device (CompilePrior); a device with none is of unknown cost.
    compile_priors: tuple[CompilePrior, ...] = ()
    # Whether a graph with symbolic dims is compiled again for each concrete shape it is called
    # with (XLA's executables have static shapes). backend="auto" prefers a backend whose one
    # executable serves every size for such a graph (a decode loop's sizes change every token).
    # A backend that can tell per graph defines compiles_per_shape_for(graph, device) -> bool, which
    # auto asks instead (inductor: only a graph with no symbolic form compiles per shape).
    compiles_per_shape: bool = False
    # The runtime interface (backends/runtime.py, docs/plugins.md "The runtime interface"), all opt-in:
    # what parity.compile(..., backend_options={...}) may pass; compile() then takes backend_options= (a dict).
    backend_options: tuple[BackendOption, ...] = ()
    # compile() takes parameters= (the input indices that are module parameters or buffers) and its
    # executable has bind({index: array}): parity binds them once and again only when they change.
    binds_parameters: bool = False
    # The executable takes objects that speak DLPack (torch tensors from parity.compile, zero-copy) and
    # may return any DLPack object; by default it takes and returns host (NumPy) arrays.
    takes_dlpack: bool = False
    # A non-empty string: executables go to parity's disk cache as bytes (save_artifact/load_artifact);
    # bump it whenever the bytes change meaning. artifact_native_code: the bytes are code for this host.
    artifact_version: str | None = None
    artifact_native_code: bool = False
    # How many op × dtype bundles of conformance cases the runner may compile as one graph, side by
    # side (conformance/execute.py, run_batch): more than 1 where a compile's fixed cost dominates
    # (Inductor's C++ build); a bundle with a case that does not pass there runs again on its own.
    compile_batch: int = 1
    # Optional, not defined here: claim_subgraphs(graph) -> the connected regions of graph (collections
    # of node indices) to compile whole, each as its own graph (backends/subgraph_claims.py).

    @abc.abstractmethod
    def claims(self) -> Mapping[str, OpClaim]:
        """op name → claim. Must cover every primitive the backend runs."""

    @abc.abstractmethod
    def compile(self, graph: Graph, device: str) -> Executable:
        """Return a callable taking the graph's inputs as arrays and returning its outputs."""

    def save_artifact(self, executable) -> bytes | None:
        """``executable`` (what this backend's ``compile`` returned) as bytes for the disk cache, or
        None when this one cannot be kept; called only if ``artifact_version`` is set."""
        return None

    def load_artifact(self, graph: Graph, device: str, payload: bytes, **keywords) -> Executable:
        """The executable ``payload`` (from :meth:`save_artifact`, in an earlier process) holds, given
        the keywords ``compile`` took; raise if it cannot be read (parity then compiles again)."""
        raise NotImplementedError(f"the {self.name} backend sets artifact_version but has no load_artifact")

    def available_devices(self) -> tuple[str, ...]:
        """Devices present on this machine (a subset of ``devices``)."""
        return tuple(d for d in self.devices if d == "cpu")

    def claim_status(self, op: str) -> str:
        """native / extern / decomposed / unsupported, derived from the claims alone."""
        claims = self.claims()
        claim = claims.get(op)
        if claim is not None:
            return (ClaimStatus.EXTERN if claim.extern else ClaimStatus.NATIVE).value
        opdef = OP_TABLE[op]
        if opdef.kind is Kind.COMPOSITE and all(p.name in claims or p.name in self.declined for p in _primitives()):
            return ClaimStatus.DECOMPOSED.value
        if opdef.kind is Kind.COMPOSITE:
            # A partial backend: decomposition runs only if every primitive it reaches is
            # claimed; that depends on the operands, so conformance decides per case.
            return ClaimStatus.DECOMPOSED.value + "?"
        return ClaimStatus.UNSUPPORTED.value

    def supports(self, op: str, dtype: DType | None = None) -> bool:
        claim = self.claims().get(op)
        return claim is not None and (dtype is None or dtype in claim.dtypes)


def compile_prior(backend, device: str) -> CompilePrior | None:
    """``backend``'s declared :class:`CompilePrior` on ``device`` (None: it declares none)."""
    return next((p for p in getattr(backend, "compile_priors", ()) if p.device == device), None)


def precision_for(backend, requested: Precision) -> Precision:
    """The tier ``backend`` compiles at when ``requested`` is asked for: that tier if the
    backend declares it in ``precisions``, else EXACT (every backend meets the IR's contract)."""
    return requested if requested in getattr(backend, "precisions", (Precision.EXACT,)) else Precision.EXACT


def precision_keywords(backend, precision: Precision) -> dict:
    """``{"precision": tier}`` for a tier other than EXACT (at EXACT the keyword is never passed)."""
    tier = precision_for(backend, precision)
    return {} if tier is Precision.EXACT else {"precision": tier}


def compile_at(backend, graph: Graph, device: str, precision: Precision = Precision.EXACT,
               request: RuntimeRequest | None = None) -> Executable:
    """``backend.compile(graph, device)`` at the tier :func:`precision_for` gives: EXACT
    calls it exactly as before tiers existed (no keyword); another tier is passed as
    ``precision=``, only to a backend that declares it. ``request`` adds ``backend_options=`` and
    ``parameters=``, each only to a backend that declares it (backends/runtime.py). A backend
    with ``claim_subgraphs`` gets each region it claims compiled on its own, with the same
    keywords (backends/subgraph_claims.py).

    Example::

        >>> from parity.backends.registry import get_backend
        >>> from parity.ir import GraphBuilder, f32
        >>> b = GraphBuilder(); x = b.input(f32[2])
        >>> import numpy as np
        >>> run = compile_at(get_backend("reference"), b.build([b.neg(x)]), "cpu", Precision.FAST)
        >>> run(np.ones(2, np.float32))[0].tolist()
        [-1.0, -1.0]
        >>> precision_for(get_backend("reference"), Precision.FAST)  # the reference runs the spec
        <Precision.EXACT: 'exact'>
    """
    keywords = {**precision_keywords(backend, precision), **compile_keywords(backend, request)}

    def compile_piece(piece: Graph, parameters: frozenset[int]):
        # a region's (or the rest's) parameters are those among its own inputs
        return backend.compile(piece, device, **(keywords | {"parameters": parameters} if "parameters" in keywords
                                                 else keywords))

    return compile_by_regions(backend, graph, compile_piece, keywords.get("parameters", frozenset()))


def declining_complex(reason: str) -> tuple[dict[str, str], dict[DType, str]]:
    """``(declined, declined_dtypes)`` for a backend that lowers no complex numbers: the ops
    of the complex-number and Fourier-transform families and every complex dtype, each with
    ``reason``."""
    return dict.fromkeys(ops_in_family("complex") + ops_in_family("fft"), reason), dict.fromkeys(COMPLEX_DTYPES, reason)


def check_not_declined(backend: Backend, graph: Graph) -> None:
    """Raise :class:`UnsupportedOpError` at the first node of ``graph`` whose op or dtype
    ``backend`` declines (so that compiling one fails with the reason, not deep in a lowering)."""
    for node in graph.nodes:
        dtypes = [v.type.dtype for v in (*node.inputs, *node.outputs)]
        why = backend.declined.get(node.op) or next(
            (backend.declined_dtypes[d] for d in dtypes if d in backend.declined_dtypes), None)
        if why is not None:
            where = f" (at {node.loc})" if node.loc else ""
            raise UnsupportedOpError(f"the {backend.name} backend does not run {node.op!r} on "
                                     f"{node_dtype(node).short}{where}: {why}; use backend='xla' or 'reference'")


def _primitives():
    return [op for op in OP_TABLE.values() if op.kind is Kind.PRIMITIVE]
