"""Sharding in the PyTorch frontend: ``parity.shard``, in/out shardings, and the mesh check.

``shard(tensor, spec)`` is the torch op ``parity::shard`` — the identity eagerly (a copy,
as custom ops may not alias), with a gradient that is the incoming gradient sharded the
same way. Dynamo and AOTAutograd keep it as one node, which :data:`TABLE` translates to
the IR's ``sharding_constraint``. ``parity.compile(..., in_shardings=, out_shardings=)``
shards the arguments and results with the same op (:func:`with_shardings`), and
:func:`apply_sharding` turns the constraints on graph inputs and outputs into the graph's
input and output specs, checks every spec against the mesh (naming the user's line), and
for a backend that cannot shard raises — or, with ``strict=False``, warns once and runs
the graph unsharded.

Example::

    >>> import torch
    >>> shard(torch.ones(4, 2), ("data", None)).sum().item()  # eager: the identity
    8.0
"""

from __future__ import annotations

import functools
import warnings
from typing import Any

import torch

from ..ir.errors import ParityError
from ..ir.graph import Graph, SourceLoc
from ..ir.sharding import GraphSharding, Mesh, PartitionSpec, ShardingError, spec_problem

__all__ = ["ShardingUnsupported", "apply_sharding", "configure", "shard", "with_shardings"]

OP = "sharding_constraint"
WARNING_KEY = "<sharding>"  # in a session's set of warnings given (the others are aten op names)


@torch.library.custom_op("parity::shard", mutates_args=())
def _shard_op(x: torch.Tensor, spec: str) -> torch.Tensor:
    return x.clone()


@_shard_op.register_fake
def _shard_fake(x, spec):
    return torch.empty_like(x)


def _shard_setup(ctx, inputs, output):
    ctx.spec = inputs[1]


def _shard_backward(ctx, grad):
    # The gradient of a value is laid out like the value (JAX transposes its constraint the same way).
    return _shard_op(grad, ctx.spec), None


_shard_op.register_autograd(_shard_backward, setup_context=_shard_setup)


def shard(tensor: torch.Tensor, spec: Any) -> torch.Tensor:
    """Pin how ``tensor`` is split over the mesh of ``parity.compile(..., mesh=)``.

    ``spec`` is a :class:`parity.PartitionSpec`, a tuple with one entry per dimension
    (``None``, a mesh axis name, or a tuple of names), or its text (``"[data, _]"``).
    Eagerly (outside compiled code) it returns a copy of ``tensor``; inside, XLA's
    partitioner lays the value out as asked and propagates the layout.

    Example::

        >>> import torch
        >>> shard(torch.arange(4.0), ("data",)).tolist()
        [0.0, 1.0, 2.0, 3.0]
    """
    return _shard_op(tensor, str(PartitionSpec.of(spec)))


def _translate_shard(ctx, x, spec: str):
    return ctx.b.sharding_constraint(x, spec=PartitionSpec.parse(spec))


#: Translations of parity's own torch ops (keyed like the aten table).
TABLE = {"parity.shard.default": _translate_shard}


# -- parity.compile(..., in_shardings=, out_shardings=) ---------------------------------


def _spec(entry: Any) -> PartitionSpec | None:
    return None if entry is None else PartitionSpec.of(entry)


def _apply(tree: Any, spec: PartitionSpec | None) -> Any:
    """shard() every tensor in ``tree`` (a tensor, or tuples/lists/dicts of them) with ``spec``."""
    if spec is None:
        return tree
    if isinstance(tree, torch.Tensor):
        return shard(tree, spec)
    if isinstance(tree, (tuple, list)):
        return type(tree)(_apply(t, spec) for t in tree)
    if isinstance(tree, dict):
        return {k: _apply(v, spec) for k, v in tree.items()}
    return tree


def with_shardings(fn, in_shardings: Any = None, out_shardings: Any = None):
    """``fn`` with its positional arguments and its results passed through :func:`shard`.

    ``in_shardings``: one entry per positional argument. ``out_shardings``: one entry per
    result (when ``fn`` returns a tuple or list), or a single ``PartitionSpec`` (or its
    text) for every result. An entry is a spec, a tuple like ``("data", None)``, spec
    text, or None (unspecified); it applies to every tensor inside a tuple/list/dict.
    """
    ins = None if in_shardings is None else [_spec(s) for s in in_shardings]
    per_result = out_shardings is not None and not isinstance(out_shardings, (PartitionSpec, str))
    outs = [_spec(s) for s in out_shardings] if per_result else _spec(out_shardings)

    @functools.wraps(fn)
    def sharded(*args, **kwargs):
        if ins is not None:
            if len(ins) != len(args):
                raise ShardingError(f"in_shardings has {len(ins)} entries for {len(args)} positional "
                                    f"arguments; give one per argument (None: unspecified)")
            args = tuple(_apply(a, s) for a, s in zip(args, ins))
        result = fn(*args, **kwargs)
        if not per_result:
            return _apply(result, outs)
        if not isinstance(result, (tuple, list)) or len(result) != len(outs):
            got = f"{len(result)} results" if isinstance(result, (tuple, list)) else "one result"
            raise ShardingError(f"out_shardings has {len(outs)} entries but the function returns {got}; give one "
                                f"per result, or a single parity.PartitionSpec for all of them")
        return type(result)(_apply(r, s) for r, s in zip(result, outs))

    return sharded


# -- graphs: lift, check, or refuse ---------------------------------------------------------


class ShardingUnsupported(ParityError):
    """A sharded graph on a backend that cannot shard (strict mode)."""


def _where(loc: SourceLoc | None, site: SourceLoc | None) -> str:
    from .source import is_user_file

    if loc is not None and is_user_file(loc.file):
        return f" at {loc}"
    return f" (parity.compile at {site})" if site is not None else ""


def apply_sharding(graph: Graph, *, mesh: Mesh | None, backend, strict: bool, site: SourceLoc | None,
                   warned: set) -> Graph:
    """The graph with its mesh and lifted input/output specs, checked; or unsharded (see module doc).

    ``site`` is where the user called ``parity.compile`` (for constraints parity inserted
    itself); ``warned`` is the session's set of warnings already given.
    """
    constraints = [n for n in graph.nodes if n.op == OP]
    if mesh is None and not constraints:
        return graph
    if not getattr(backend, "supports_sharding", False):
        where = _where(constraints[0].loc if constraints else None, site)
        what = "parity.shard" if constraints and constraints[0].loc and where.startswith(" at") else "a mesh"
        why = f"sharding{where} needs the xla backend: backend {backend.name!r} runs a graph on one device"
        if strict:
            raise ShardingUnsupported(f"{what}{where} cannot run on backend {backend.name!r}\n  why: {why}\n"
                                      f"  fix: use backend='xla', or pass strict=False to run unsharded")
        warn_once(warned, WARNING_KEY, f"parity: {why}; running unsharded (strict=False)")
        return strip_sharding(graph)
    if mesh is None:
        node = constraints[0]
        raise ShardingError(f"parity.shard{_where(node.loc, site)} needs a device mesh: pass "
                            f"mesh=parity.Mesh({{...}}) to parity.compile")
    in_specs: dict = {}
    out_specs: dict = {}
    for node in constraints:
        spec, x = node.attrs["spec"], node.inputs[0]
        problem = spec_problem(spec, x.type, mesh)
        if problem:
            raise ShardingError(f"sharding{_where(node.loc, site)} as {spec} on the mesh {mesh}: {problem}")
        if x.producer is None:
            in_specs.setdefault(x, spec)
        out_specs.setdefault(node.outputs[0], spec)
    sharding = GraphSharding(mesh, [in_specs.get(v) for v in graph.inputs], [out_specs.get(v) for v in graph.outputs])
    return graph.with_sharding(sharding)


def strip_sharding(graph: Graph) -> Graph:
    """``graph`` without mesh, specs or sharding_constraint nodes (what runs on one device)."""
    from ..ir.passes import decompose

    stripped, _ = decompose(graph.with_sharding(None), claimed=lambda op: op != OP)
    return stripped


def warn_once(warned: set, key: str, message: str) -> None:
    """Warn with ``message`` unless ``key`` was already warned about in this session."""
    if key not in warned:
        warned.add(key)
        warnings.warn(message, UserWarning, stacklevel=3)


# -- parity.compile's arguments ------------------------------------------------------------


def caller_site() -> SourceLoc | None:
    """The user's line that called into parity (the first frame outside torch and parity)."""
    import sys

    from .source import is_user_file

    frame = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if is_user_file(code.co_filename):
            return SourceLoc(code.co_filename, frame.f_lineno, code.co_name)
        frame = frame.f_back
    return None


def configure(target, backend, *, mesh: Any, in_shardings: Any, out_shardings: Any, strict: bool, warned: set):
    """Check ``parity.compile``'s sharding arguments; return ``(mesh, site, traced)``.

    ``traced`` is what torch.compile should trace (``target`` with its in/out shardings
    applied) or None when there are none. A backend that cannot shard gets a
    :class:`ShardingUnsupported` naming the compile call (strict) or one warning (recorded
    in ``warned``, the session's set) and no mesh (``strict=False``).
    """
    sharded = in_shardings is not None or out_shardings is not None
    if mesh is None and not sharded:
        return None, None, None
    site = caller_site()
    at = f" at {site}" if site else ""
    if mesh is None:
        raise ShardingError(f"parity.compile{at}: in_shardings/out_shardings need a device mesh; pass "
                            f"mesh=parity.Mesh({{'data': 4}}) too")
    mesh = mesh if isinstance(mesh, Mesh) else Mesh(mesh)
    if not getattr(backend, "supports_sharding", False):
        why = f"sharding needs the xla backend: backend {backend.name!r} runs a graph on one device"
        if strict:
            raise ShardingUnsupported(f"parity.compile{at} with mesh={mesh} cannot run on backend "
                                      f"{backend.name!r}\n  why: {why}\n  fix: use backend='xla', or pass "
                                      f"strict=False to run unsharded")
        warn_once(warned, WARNING_KEY, f"parity: {why}; parity.compile{at} runs unsharded (strict=False)")
        return None, site, None
    traced = with_shardings(target, in_shardings, out_shardings) if sharded else None
    return mesh, site, traced
