"""Sharding as data: a device mesh, partition specs, and the checks that tie them to types.

A :class:`Mesh` names the axes of a grid of devices (``data=4, model=2``: 8 devices). A
:class:`PartitionSpec` says, per tensor dimension, which mesh axes split it; a dimension
with no axes is replicated. A graph carries a :class:`GraphSharding` (its mesh and one
optional spec per input and per output); inside a graph, the ``sharding_constraint`` op
pins one intermediate. Backends that shard (XLA's SPMD partitioner) propagate the rest.

Text forms (the graph text format uses them): a mesh prints as ``[data=4, model=2]``; a
spec as ``[data, _]`` (``_``: replicated; ``(data, model)``: one dimension split over two
axes, major first). Trailing replicated dimensions are dropped, so equal specs print
equally: ``[data, _]`` is ``[data]``.

Example::

    >>> from parity.ir import f32
    >>> mesh = Mesh({"data": 4, "model": 2})
    >>> spec = PartitionSpec("data", None)
    >>> str(mesh), str(spec), spec_problem(spec, f32[8, 16], mesh)
    ('[data=4, model=2]', '[data]', None)
    >>> spec_problem(PartitionSpec(None, ("data", "model")), f32[8, 12], mesh)
    'dimension 1 (size 12) is split over data×model = 8 devices; 12 is not a multiple of 8'
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import ParityError
from .types import DimExpr, TensorType

__all__ = ["GraphSharding", "Mesh", "PartitionSpec", "ShardingError", "spec_problem"]

_AXIS_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
REPLICATED = "_"  # how a replicated dimension prints in a spec
_SPEC_TOKEN = re.compile(r"\s*(?:(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<punct>[\[\](),]))")


class ShardingError(ParityError, ValueError):
    """A mesh or partition spec that is malformed or does not fit the tensor it shards."""


def _check_axis_name(name: Any) -> str:
    if not isinstance(name, str) or not _AXIS_NAME.match(name) or name == REPLICATED:
        raise ShardingError(f"mesh axis name {name!r} must be an identifier other than {REPLICATED!r}")
    return name


@dataclass(frozen=True)
class Mesh:
    """Named mesh axes and their sizes, in order (major to minor); devices = their product.

    ``Mesh({"data": 4, "model": 2})`` or ``Mesh([("data", 4), ("model", 2)])``.
    """

    axes: tuple[tuple[str, int], ...]

    def __init__(self, axes: Mapping[str, int] | Iterable[tuple[str, int]]):
        if isinstance(axes, (str, bytes)) or not isinstance(axes, (Mapping, Iterable)):
            raise ShardingError(f"a mesh is given as {{axis name: size}}, e.g. Mesh({{'data': 8}}), got {axes!r}")
        items = tuple(axes.items() if isinstance(axes, Mapping) else axes)
        bad = [item for item in items if not (isinstance(item, tuple) and len(item) == 2)]
        if bad:
            raise ShardingError(f"a mesh's axes are (name, size) pairs, e.g. Mesh([('data', 4), ('model', 2)]), "
                                f"got {bad[0]!r}")
        if not items:
            raise ShardingError("a mesh needs at least one axis, e.g. Mesh({'data': 8})")
        seen = set()
        out = []
        for name, size in items:
            _check_axis_name(name)
            if name in seen:
                raise ShardingError(f"mesh axis {name!r} is named twice")
            seen.add(name)
            if isinstance(size, bool) or not isinstance(size, int) or size < 1:
                raise ShardingError(f"mesh axis {name!r} has size {size!r}; sizes are ints >= 1")
            out.append((name, int(size)))
        object.__setattr__(self, "axes", tuple(out))

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.axes)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(size for _, size in self.axes)

    @property
    def num_devices(self) -> int:
        return math.prod(self.shape)

    def size(self, axis: str) -> int:
        """The size of one axis (raises :class:`ShardingError` naming the known axes)."""
        for name, size in self.axes:
            if name == axis:
                return size
        raise ShardingError(f"the mesh {self} has no axis {axis!r}")

    def __str__(self) -> str:
        return "[" + ", ".join(f"{name}={size}" for name, size in self.axes) + "]"

    def __repr__(self) -> str:
        return f"Mesh({dict(self.axes)!r})"


@dataclass(frozen=True)
class PartitionSpec:
    """Per tensor dimension, the mesh axes that split it (``()``: replicated).

    Entries are ``None`` (replicated), an axis name, or a tuple of axis names (the
    dimension is split over their product, the first axis major). Dimensions past the
    spec's length are replicated; trailing replicated entries are dropped.
    """

    dims: tuple[tuple[str, ...], ...]

    def __init__(self, *entries: str | Sequence[str] | None):
        dims = []
        for entry in entries:
            if entry is None or entry == REPLICATED:
                dims.append(())
            elif isinstance(entry, str):
                dims.append((_check_axis_name(entry),))
            elif isinstance(entry, (tuple, list)):
                dims.append(tuple(_check_axis_name(a) for a in entry))
            else:
                raise ShardingError(f"a partition spec entry is None, an axis name or a tuple of names, "
                                    f"not {entry!r}")
        while dims and not dims[-1]:
            dims.pop()
        used = [a for d in dims for a in d]
        twice = sorted({a for a in used if used.count(a) > 1})
        if twice:
            raise ShardingError(f"mesh axis {twice[0]!r} is used twice in one partition spec; an axis can split "
                                f"only one dimension")
        object.__setattr__(self, "dims", tuple(dims))

    @classmethod
    def of(cls, value: Any) -> PartitionSpec:
        """A spec from a spec, a tuple/list of entries, or the text form (``"[data, _]"``)."""
        if isinstance(value, PartitionSpec):
            return value
        if isinstance(value, str):
            return cls.parse(value)
        if isinstance(value, (tuple, list)):
            return cls(*value)
        raise ShardingError(f"expected a partition spec (parity.PartitionSpec, a tuple like ('data', None), or "
                            f"text like '[data, _]'), got {value!r}")

    @classmethod
    def parse(cls, text: str) -> PartitionSpec:
        """Read the text form: ``[data, _]``, ``[(data, model)]``, ``[]``."""
        tokens, pos = [], 0
        while pos < len(text.rstrip()):
            m = _SPEC_TOKEN.match(text, pos)
            if m is None:
                raise ShardingError(f"unexpected {text[pos:].strip()[:1]!r} in partition spec {text!r}")
            tokens.append(m.group("name") or m.group("punct"))
            pos = m.end()
        tokens.append("")
        it = iter(tokens)
        entries: list[Any] = []

        def fail(found):
            return ShardingError(f"partition spec {text!r} does not read as [axis or _ or (axis, ...), ...] "
                                 f"(at {found or 'the end'!r})")

        def name(tok):
            if tok in "[](),":
                raise fail(tok)
            return tok

        if next(it) != "[":
            raise fail(tokens[0])
        tok = next(it)
        while tok != "]":
            if tok == "(":
                group = [name(next(it))]
                tok = next(it)
                while tok == ",":
                    group.append(name(next(it)))
                    tok = next(it)
                if tok != ")":
                    raise fail(tok)
                entries.append(tuple(group))
            else:
                entries.append(name(tok))
            tok = next(it)
            if tok == ",":
                tok = next(it)
                if tok == "]":
                    raise fail(tok)
            elif tok != "]":
                raise fail(tok)
        if next(it) != "":
            raise fail(tokens[-2])
        return cls(*entries)

    @property
    def axes(self) -> tuple[str, ...]:
        """Every mesh axis the spec uses."""
        return tuple(a for d in self.dims for a in d)

    def entries(self) -> tuple[str | tuple[str, ...] | None, ...]:
        """The spec as JAX writes one: ``None``, a name, or a tuple of names per dimension."""
        return tuple(None if not d else d[0] if len(d) == 1 else d for d in self.dims)

    def __str__(self) -> str:
        def entry(d):
            if not d:
                return REPLICATED
            return d[0] if len(d) == 1 else "(" + ", ".join(d) + ")"

        return "[" + ", ".join(entry(d) for d in self.dims) + "]"

    def __repr__(self) -> str:
        return f"PartitionSpec{self.entries()!r}" if len(self.dims) != 1 else f"PartitionSpec({self.entries()[0]!r})"


def spec_problem(spec: PartitionSpec, t: TensorType, mesh: Mesh | None) -> str | None:
    """Why ``spec`` cannot shard a value of type ``t`` on ``mesh`` (None when it can).

    Checks: no more entries than dimensions; with a mesh, every axis exists and every
    static dimension is a multiple of the devices splitting it (a symbolic dimension is
    checked when its size is known, by the backend).
    """
    if len(spec.dims) > t.rank:
        return f"the spec {spec} has {len(spec.dims)} entries but the value {t} has rank {t.rank}"
    if mesh is None:
        return None
    for axis in spec.axes:
        if axis not in mesh.names:
            return f"the spec {spec} names axis {axis!r}, which the mesh {mesh} does not have"
    for i, (dim, axes) in enumerate(zip(t.shape, spec.dims)):
        devices = math.prod(mesh.size(a) for a in axes)
        if isinstance(dim, DimExpr) or devices == 1 or dim % devices == 0:
            continue
        return (f"dimension {i} (size {dim}) is split over {'×'.join(axes)} = {devices} devices; "
                f"{dim} is not a multiple of {devices}")
    return None


@dataclass(frozen=True)
class GraphSharding:
    """A graph's mesh and one optional spec per input and per output.

    ``None`` for a value means unspecified: inputs are then replicated and outputs take
    whatever layout the partitioner chooses.
    """

    mesh: Mesh
    inputs: tuple[PartitionSpec | None, ...]
    outputs: tuple[PartitionSpec | None, ...]

    def __init__(self, mesh: Mesh, inputs: Sequence[Any] = (), outputs: Sequence[Any] = ()):
        if not isinstance(mesh, Mesh):
            raise ShardingError(f"a graph's mesh must be a parity Mesh, got {mesh!r}")
        object.__setattr__(self, "mesh", mesh)
        object.__setattr__(self, "inputs", tuple(None if s is None else PartitionSpec.of(s) for s in inputs))
        object.__setattr__(self, "outputs", tuple(None if s is None else PartitionSpec.of(s) for s in outputs))

    def padded(self, num_inputs: int, num_outputs: int) -> GraphSharding:
        """The same sharding with unspecified entries added up to the given counts."""
        return GraphSharding(self.mesh, self.inputs + (None,) * (num_inputs - len(self.inputs)),
                             self.outputs + (None,) * (num_outputs - len(self.outputs)))
