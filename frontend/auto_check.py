"""``backend="auto"``'s check: are a candidate's outputs on the first inputs eager torch's?

Each output is compared with what eager torch gives running the same FX graph: floats
within :data:`RTOL` of their dtype (``|got - want| <= rtol·|want| + rtol·max|want|``),
integers and booleans exactly. One exception is implementation-defined and compared as
such: the indices of a sort that is not asked to be stable, or of a top-k, may order
equal keys either way (torch's CPU sort does not keep ties in input order from 64 elements
on; the IR's sort does). Such an output passes when it is a permutation along its dimension
that picks the same keys, position by position, as eager's (:func:`eager_outputs` records
the keys). Where the indices feed further ops, the outputs pass when they match eager
torch's with every sort made stable (:func:`stable_outputs`). A float output off eager's gets
a second chance against the graph run in float64 (:func:`mismatch_past_float64`): eager's own
float32 error sets the bar, so an ill-conditioned or analytically zero output (rounding noise
in every backend) does not drop every candidate. At underflow scale, a difference below the
caller's ``floors`` (per dtype: what float arithmetic there does not resolve,
:func:`underflow_scale`) is none.

Example::

    >>> import torch
    >>> gm = torch.fx.symbolic_trace(lambda x: torch.ops.aten.sort.default(x, 0)[1])
    >>> want, ties = eager_outputs(gm, [torch.tensor([2.0, 1.0, 1.0])])
    >>> mismatch([torch.tensor([2, 1, 0])], [want], ties) is None  # ties 1 and 2 swapped
    True
    >>> mismatch([torch.tensor([1, 0, 2])], [want], ties)
    'output 0: indices pick other keys than eager torch sorted (2 of 3 positions)'
"""

from __future__ import annotations

import operator

import numpy as np
import torch
from torch.utils._pytree import tree_map

from .auto_contract import NOISE_FACTOR, NOISE_LEVEL_FACTOR, RTOL_BY_DTYPE
from .tensors import IR_TO_TORCH

# How close a candidate's outputs must be to eager torch's on the first inputs, per output
# dtype (|got − want| ≤ rtol·|want| + rtol·max|want|); integers and booleans are exact.
RTOL = {IR_TO_TORCH[dtype]: rtol for dtype, rtol in RTOL_BY_DTYPE.items()}  # frontend/auto_contract.py


_aten = torch.ops.aten
_TIES_UNORDERED = (_aten.sort.default, _aten.sort.stable, _aten.topk.default)


class _Values(torch.fx.Interpreter):
    """Runs the graph as eager torch does, with its shape views as reshapes. The check runs a
    backward graph on the tensors the chosen forward returned, whose layouts are the backend's
    (contiguous), not the ones the graph was traced with: ConvNeXt's and SegFormer's backward
    graphs view a permuted activation, which failed on the contiguous one."""

    def call_function(self, target, args, kwargs):
        if target is _aten.view.default:
            target = _aten.reshape.default
        return super().call_function(target, args, kwargs)


def eager_graph(gm):
    """``gm`` as eager torch runs it, for a graph no candidate matched: a boxed callable
    (AOTAutograd's convention: one list of inputs, which it empties), with the shape views as
    reshapes for the reason :class:`_Values` gives.

    Example::

        >>> gm = torch.fx.symbolic_trace(lambda x: _aten.view.default(x.t(), [4]))
        >>> eager_graph(gm)([torch.arange(4.0).reshape(2, 2)])
        [tensor([0., 2., 1., 3.])]
    """
    graph = torch.fx.Graph()
    graph.output(graph.graph_copy(gm.graph, {}))
    for node in graph.nodes:
        if node.op == "call_function" and node.target is _aten.view.default:
            node.target = _aten.reshape.default
    module = torch.fx.GraphModule(gm, graph)

    def run(args: list) -> list:
        inputs = list(args)
        args.clear()
        outputs = module(*inputs)
        return list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]

    run._boxed_call = True
    return run


class _KeyRecorder(_Values):
    """Runs the graph as eager torch does, keeping the keys of every sort and top-k."""

    def __init__(self, gm):
        super().__init__(gm)
        self.keys: dict[torch.fx.Node, torch.Tensor] = {}

    def run_node(self, node):
        result = super().run_node(node)
        if node.op == "call_function" and node.target in _TIES_UNORDERED:
            self.keys[node] = self.env[node.args[0]]
        return result


def _tie_dim(node) -> int | None:
    """The dimension along which ``node`` (a sort or top-k) may order equal keys either way, or
    None when it may not (a sort asked to be stable)."""
    if node.target is _aten.sort.stable:
        return None if node.kwargs.get("stable") else node.kwargs.get("dim", -1)
    if node.target is _aten.topk.default:
        return node.args[2] if len(node.args) > 2 else node.kwargs.get("dim", -1)
    return node.args[1] if len(node.args) > 1 else node.kwargs.get("dim", -1)


def eager_outputs(gm, inputs: list) -> tuple[list, dict[int, tuple[torch.Tensor, int]]]:
    """``gm``'s outputs on ``inputs`` (eager torch) and, for each output that is the indices of a
    sort or top-k free to order ties: ``{output index: (keys, dim)}``."""
    recorder = _KeyRecorder(gm)
    with torch.no_grad():
        outputs = recorder.run(*inputs)
    (returned,) = [n.args[0] for n in gm.graph.nodes if n.op == "output"]
    ties = {}
    for i, node in enumerate(returned if isinstance(returned, (list, tuple)) else [returned]):
        source = node.args[0] if isinstance(node, torch.fx.Node) and node.target is operator.getitem else None
        if isinstance(source, torch.fx.Node) and source in recorder.keys and node.args[1] == 1:
            dim = _tie_dim(source)
            if dim is not None:
                ties[i] = (recorder.keys[source], dim)
    return outputs, ties


class _StableSorts(_Values):
    """Runs the graph as eager torch does, but with every sort and top-k keeping equal keys in
    input order (the order the IR's sort defines)."""

    def call_function(self, target, args, kwargs):
        if target in (_aten.sort.default, _aten.sort.stable):
            x, dim, descending = _sort_arguments(target, args, kwargs)
            return _aten.sort.stable(x, stable=True, dim=dim, descending=descending)
        if target is _aten.topk.default:
            x, k = args[0], args[1]
            dim = args[2] if len(args) > 2 else kwargs.get("dim", -1)
            largest = args[3] if len(args) > 3 else kwargs.get("largest", True)
            values, indices = _aten.sort.stable(x, stable=True, dim=dim, descending=largest)
            # contiguous, as topk's own results are: the graph may view them (MoE routing's
            # topk(...)[1].view(-1) in Mixtral and Qwen2-MoE failed on the narrowed strides)
            return values.narrow(dim, 0, k).contiguous(), indices.narrow(dim, 0, k).contiguous()
        return super().call_function(target, args, kwargs)


def _sort_arguments(target, args, kwargs):
    if target is _aten.sort.stable:
        return args[0], kwargs.get("dim", -1), kwargs.get("descending", False)
    dim = args[1] if len(args) > 1 else kwargs.get("dim", -1)
    descending = args[2] if len(args) > 2 else kwargs.get("descending", False)
    return args[0], dim, descending


def stable_outputs(gm, inputs: list):
    """``gm``'s outputs on ``inputs`` with its sorts and top-ks made stable, or None when it has
    none free to order ties: the second answer a candidate may give when the sort's indices
    feed further ops (a gather, arithmetic), where :func:`eager_outputs`' ties cannot follow."""
    free = [n for n in gm.graph.nodes if n.op == "call_function" and n.target in _TIES_UNORDERED
            and _tie_dim(n) is not None]
    if not free:
        return None
    with torch.no_grad():
        return _StableSorts(gm).run(*inputs)


def underflow_scale(gm, inputs: list) -> float:
    """How far the graph can carry what its arithmetic loses at underflow, as a factor on one
    value's loss: the most terms any of its ops can accumulate into one output element (at most
    its largest operand's size) times the largest magnitude among its float inputs (at least 1).

    The contract bounds an accumulation's absolute error by n·η (η the dtype's smallest
    subnormal), and by n·(smallest normal) for a runtime that declares flush-to-zero
    (docs/conformance.md); an output that differs from eager's by less than that unit times
    this scale is one that float arithmetic at underflow does not resolve (:func:`mismatch`'s
    ``floors``). A float32 logit of 1e-36 off by 7e-39 on XLA:CPU (which flushes subnormal
    products) is such an output; 1e-3 of a normal value never is.

    Example::

        >>> gm = torch.fx.symbolic_trace(lambda x, w: x @ w)
        >>> underflow_scale(gm, [torch.ones(2, 8), torch.full((8, 3), -4.0)])
        96.0
    """
    terms = max((_numel(arg.meta.get("val")) for node in gm.graph.nodes if node.op == "call_function"
                 for arg in node.all_input_nodes), default=0)
    terms = max(terms, *(_numel(x) for x in inputs), 1)
    magnitude = max((float(x.detach().abs().nan_to_num(nan=0.0, posinf=0.0).max()) for x in inputs
                     if isinstance(x, torch.Tensor) and x.is_floating_point() and x.numel()), default=0.0)
    return float(terms) * max(magnitude, 1.0)


def _numel(value) -> int:
    try:
        return int(value.numel()) if isinstance(value, torch.Tensor) else 0
    except (TypeError, RuntimeError):  # a symbolic size
        return 0


def mismatch(got, want, ties: dict | None = None, floors: dict | None = None) -> str | None:
    """Why outputs ``got`` are not ``want`` (None when they agree), output by output; ``ties``
    from :func:`eager_outputs`; ``floors``: per float dtype, an absolute difference no element is
    held to below (the underflow floor, :func:`underflow_scale`)."""
    got = list(got) if isinstance(got, (list, tuple)) else [got]
    want = list(want) if isinstance(want, (list, tuple)) else [want]
    if len(got) != len(want):
        return f"{len(got)} outputs, expected {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        if not isinstance(w, torch.Tensor):
            if g != w:
                return f"output {i} is {g}, expected {w}"
            continue
        if not isinstance(g, torch.Tensor) or g.shape != w.shape or g.dtype != w.dtype:
            return f"output {i} is {_describe(g)}, expected {_describe(w)}"
        why = _index_mismatch(g, w, *ties[i]) if ties and i in ties else \
            _value_mismatch(g, w, (floors or {}).get(w.dtype, 0.0))
        if why is not None:
            return f"output {i}: {why}"
    return None


def _index_mismatch(got: torch.Tensor, want: torch.Tensor, keys: torch.Tensor, dim: int) -> str | None:
    """Indices that may order equal keys either way: distinct along ``dim``, in range, and
    picking the same key as ``want`` at every position."""
    size = keys.shape[dim] if keys.dim() else 1
    if got.numel() and (int(got.min()) < 0 or int(got.max()) >= size):
        return f"indices outside [0, {size})"
    ordered, n = got.sort(dim).values, got.shape[dim] if got.dim() else 1
    if n > 1 and bool((ordered.narrow(dim, 1, n - 1) == ordered.narrow(dim, 0, n - 1)).any()):
        return "an index repeats along the sorted dimension"
    picked, expected = keys.gather(dim, got), keys.gather(dim, want)
    same = (picked == expected) | (picked.isnan() & expected.isnan()) if picked.is_floating_point() \
        else picked == expected
    if not bool(same.all()):
        return f"indices pick other keys than eager torch sorted ({int((~same).sum())} of {same.numel()} positions)"
    return None


def _value_mismatch(g: torch.Tensor, w: torch.Tensor, floor: float = 0.0) -> str | None:
    rtol = RTOL.get(w.dtype)
    g64, w64 = g.detach().double().numpy(), w.detach().double().numpy()
    if rtol is None:
        bad = ~((g64 == w64) | (np.isnan(g64) & np.isnan(w64)))
    else:
        scale = float(np.max(np.abs(w64), initial=0.0, where=np.isfinite(w64)))
        bad = ~np.isclose(g64, w64, rtol=rtol, atol=rtol * scale, equal_nan=True)
        if floor and bad.any():  # a NaN difference is never within the floor
            with np.errstate(invalid="ignore"):
                bad &= ~(np.abs(g64 - w64) <= floor)
    if bad.any():
        return f"{int(bad.sum())} of {bad.size} elements off (max abs error {float(np.nanmax(np.abs(g64 - w64))):.3g})"
    return None


class _Float64(_Values):
    """Runs the graph with every floating and complex value widened to 64 bits: the inputs,
    and every dtype an op is given (a cast, a ``full``), so no op rounds back down."""

    def run(self, *args, **kwargs):
        return super().run(*[_widen(a) for a in args], **kwargs)

    def get_attr(self, target, args, kwargs):  # a lifted constant, in float64 like the rest
        return _widen(super().get_attr(target, args, kwargs))

    def call_function(self, target, args, kwargs):
        return super().call_function(target, tree_map(_widen, args), tree_map(_widen, kwargs))


def _widen(value):
    if isinstance(value, torch.dtype):
        return torch.float64 if value.is_floating_point else torch.complex128 if value.is_complex else value
    if isinstance(value, torch.Tensor):
        return value.double() if value.is_floating_point() else value.to(torch.complex128) if value.is_complex() \
            else value
    return value


def float64_outputs(gm, inputs: list) -> list | None:
    """``gm``'s outputs computed in float64 (:class:`_Float64`), or None when the graph cannot
    run so (an op without a float64 kernel): the second chance is then not given."""
    try:
        with torch.no_grad():
            outputs = _Float64(gm).run(*inputs)
    except Exception:
        return None
    return list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]


def mismatch_past_float64(got, want, exact: list, ties: dict | None = None, floors: dict | None = None) -> str | None:
    """:func:`mismatch`, with the float64 second chance (:data:`NOISE_FACTOR`) for each float
    output that is off eager's.

    Example::

        >>> exact = [torch.tensor([0.0], dtype=torch.float64)]  # analytically zero
        >>> eager, other = [torch.tensor([3e-8])], [torch.tensor([-5e-8])]  # two roundings' noise
        >>> mismatch(other, eager) is None, mismatch_past_float64(other, eager, exact) is None
        (False, True)
    """
    got = list(got) if isinstance(got, (list, tuple)) else [got]
    want = list(want) if isinstance(want, (list, tuple)) else [want]
    if len(got) != len(want) or len(exact) != len(want):
        return mismatch(got, want, ties, floors)
    for i, (g, w, x) in enumerate(zip(got, want, exact)):
        why = mismatch([g], [w], {0: ties[i]} if ties and i in ties else None, floors)
        if why is None:
            continue
        why = why.replace("output 0", f"output {i}", 1)
        if not (isinstance(g, torch.Tensor) and isinstance(x, torch.Tensor) and g.shape == w.shape == x.shape
                and w.is_floating_point() and g.dtype == w.dtype):
            return why
        x64 = x.detach().double()
        own = float((w.detach().double() - x64).abs().nan_to_num(nan=0.0).max()) if x64.numel() else 0.0
        off = float((g.detach().double() - x64).abs().nan_to_num(nan=float("inf")).max()) if x64.numel() else 0.0
        noise = own >= float(x64.abs().max())
        factor = NOISE_LEVEL_FACTOR if noise else NOISE_FACTOR
        if own == 0.0 or off > factor * own:
            ratio = "inf" if own == 0.0 else f"{off / own:.3g}"
            return f"{why}; {ratio}x eager's distance from a float64 run (at most {factor:g}x)"
    return None


def _describe(value) -> str:
    if isinstance(value, torch.Tensor):
        return f"{str(value.dtype).removeprefix('torch.')}{list(value.shape)}"
    return type(value).__name__
