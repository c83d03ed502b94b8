"""Fuzzer regressions: minimised graphs that once showed a mismatch, replayed by the suite.

Each regression is three files in this directory, named ``NAME``:

- ``NAME.ir`` — the graph in the text format (``parity.ir.parse`` reads it; every value
  is an output, so each node is measured on its own, see ``conformance/local.py``);
- ``NAME.npz`` — its inputs, ``arr_0 .. arr_{n-1}`` in input order (bfloat16 stored as
  its uint16 bits; the graph's input types say how to read them back);
- ``NAME.json`` — where it came from: ``op`` and ``dtype`` of the node that failed (the
  matrix cell the regression joins), ``backend``, ``device``, ``found`` (seed and graph
  index of the fuzz run), ``error`` (what was measured), ``status`` and ``note``.

:func:`cases` turns every regression into a :class:`~..case.Case` with the
:data:`~..bounds.LOCAL` bound; the runner adds them to every run (tag ``regression``).

Example::

    >>> import tempfile, numpy as np
    >>> from parity.ir import GraphBuilder, f32
    >>> b = GraphBuilder(); x = b.input(f32[2]); g = b.build([b.exp(x)])
    >>> d = tempfile.mkdtemp()
    >>> _ = save("demo", g, [np.ones(2, np.float32)], {"op": "exp", "dtype": "f32"}, directory=d)
    >>> [c.id for c in cases(d)]
    ['exp[f32]:regression:demo']
"""

from __future__ import annotations

import json
import pathlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ...ir.dtypes import DType
from ...ir.graph import Graph
from ...ir.parser import parse
from ..bounds import LOCAL
from ..case import Case

DIRECTORY = pathlib.Path(__file__).resolve().parent
REGRESSION = "regression"  # the tag of replayed regressions (--quick keeps them)


@dataclass
class Regression:
    name: str
    graph: Graph
    arrays: list[np.ndarray]
    meta: dict

    def case(self) -> Case:
        arrays = self.arrays
        return Case(self.meta["op"], DType.from_short(self.meta["dtype"]), lambda rng: arrays, {},
                    f"regression:{self.name}", (REGRESSION,), build=replay(self.graph), bound=LOCAL)


def replay(graph: Graph):
    """A ``Case.build`` that re-emits ``graph``'s nodes on the case's inputs."""
    def build(b, operands, attrs):
        env = dict(zip(graph.inputs, operands))
        for node in graph.nodes:
            out = b.op(node.op, *[env[v] for v in node.inputs], **node.attrs)
            env.update(zip(node.outputs, out if isinstance(out, tuple) else (out,)))
        return tuple(env[v] for v in graph.outputs)

    return build


def save(name: str, graph: Graph, arrays: Sequence[np.ndarray], meta: dict, directory=DIRECTORY) -> pathlib.Path:
    """Write ``NAME.ir``, ``NAME.npz`` and ``NAME.json``; return the ``.ir`` path."""
    directory = pathlib.Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.ir"
    path.write_text(graph.to_text(locations=False) + "\n", encoding="utf-8")
    raw = [np.asarray(a).view(np.uint16) if np.asarray(a).dtype == DType.bfloat16.numpy else np.asarray(a)
           for a in arrays]
    np.savez(directory / f"{name}.npz", *raw)
    (directory / f"{name}.json").write_text(json.dumps({"name": name, **meta}, indent=1, sort_keys=True) + "\n",
                                            encoding="utf-8")
    return path


def load(path) -> Regression:
    """The regression whose ``.ir`` file is ``path``."""
    path = pathlib.Path(path)
    graph = parse(path.read_text(encoding="utf-8"))
    with np.load(path.with_suffix(".npz")) as npz:
        raw = [npz[f"arr_{i}"] for i in range(len(graph.inputs))]
    arrays = [a.view(v.type.dtype.numpy) if a.dtype != v.type.dtype.numpy else a for a, v in zip(raw, graph.inputs)]
    meta = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
    return Regression(path.stem, graph, arrays, meta)


def load_all(directory=DIRECTORY) -> list[Regression]:
    """Every regression in ``directory``, sorted by name."""
    return [load(p) for p in sorted(pathlib.Path(directory).glob("*.ir"))]


def cases(directory=DIRECTORY) -> list[Case]:
    """The regressions as conformance cases."""
    return [r.case() for r in load_all(directory)]
