"""The dependency rules of ../shared/DESIGN.md, checked on every import statement.

An AST scan of every module under the folders pyproject maps into ``parity`` (imports
inside functions included; relative imports resolved against the importing package):

* ``ir/`` imports no other layer, and none of torch, jax, onnx, onnxruntime, triton;
* ``backends/NAME/`` imports ``ir/``, the backend API (``backends/*.py``: base, registry,
  cache) and its own folder, never another backend, the frontend or conformance;
* the backend API (``backends/*.py``) imports ``ir/`` and itself;
* ``frontend/`` imports ``ir/`` and the backend API (to look a backend up by name), never
  a specific backend;
* ``conformance/`` imports ``ir/``, the backend API and itself;
* ``diff/`` (the numerics debugger, ``parity.debugger``) imports ``ir/``, the backend API,
  ``conformance/``, the frontend's public package (``parity.frontend``, none of its
  modules) and itself.

The public face (``parity/``) and ``bench/`` sit on top and may import anything. Imports
written as strings (``importlib.import_module``, the registry's "module:Class") are
lookups by name, the point of the registry, and are not scanned.

Known violations are listed in :data:`ALLOWED`, each with its reason; the test fails on
any other violation and on an allowance that no longer matches one (delete it then).

No import cycles among the modules of one layer, imports inside functions (deferred ones)
included: a deferred import hides a cycle from Python's import machinery, not from the
design. Imports under ``if TYPE_CHECKING:`` never run and are left out. A cycle is a
strongly connected component of the import graph; the few allowed are listed in
:data:`ALLOWED_CYCLES`, each with its reason, and go stale the same way.
"""

from __future__ import annotations

import ast
import pathlib
import tomllib
from dataclasses import dataclass

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE_DIRS: dict[str, str] = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
    "package-dir"]

# Third-party stacks the IR must never import (it is the spec every backend shares).
IR_FORBIDDEN = ("torch", "jax", "jaxlib", "onnx", "onnxruntime", "onnxscript", "triton")

# (importing file, imported module) -> why it is allowed for now. Exactly the violations the
# tree had when the test was written (all in conformance/: its model checks run whole models
# through the public face, which DESIGN.md's rule does not foresee). Each is to be removed by
# its file's owner, or the rule widened in DESIGN.md for model conformance.
_RUNS_MODELS = "model conformance runs whole models through parity.compile (the public face)"
_READS_FRONTEND = "model conformance reports the frontend's own numbers (translation stats, fallbacks, aten ops)"
_TESTS_RULES = "frontend conformance runs each JAX translation rule against JAX (conformance/jax_frontend)"
ALLOWED: dict[tuple[str, str], str] = {
    ("conformance/hf/aten_ops.py", "parity.frontend.api"): _READS_FRONTEND,
    ("conformance/hf/aten_ops.py", "parity.frontend.single_backend"): _READS_FRONTEND,
    ("conformance/hf/check.py", "parity"): _RUNS_MODELS,
    ("conformance/hf/check.py", "parity.frontend"): _READS_FRONTEND,
    ("conformance/hf/check.py", "parity.frontend.single_backend"): _READS_FRONTEND,
    ("conformance/hf/batch_export.py", "parity"): "the batch export check runs parity.export against torch.onnx.export",
    ("conformance/hf/export_check.py", "parity"): "the HF export check runs parity.export against torch.onnx.export",
    ("conformance/hf/export_check.py", "parity.frontend.outputs"): "names eager outputs as parity.export names them",
    ("conformance/models/check.py", "parity"): _RUNS_MODELS,
    ("conformance/models/check.py", "parity.frontend"): _READS_FRONTEND,
    ("conformance/reports.py", "parity"): "the report records parity.__version__ (importlib.metadata would do)",
    ("conformance/zoo.py", "parity.frontend.compiled_graph"): _READS_FRONTEND,
    # the JAX frontend's conformance measures its translation rules, so it captures through them (one file)
    ("conformance/jax_frontend/bridge.py", "parity.frontend.jax"): _TESTS_RULES,
    ("conformance/jax_frontend/bridge.py", "parity.frontend.jax.rules"): _TESTS_RULES,
    ("conformance/jax_frontend/bridge.py", "parity.frontend.jax.compat"): _TESTS_RULES,
}


@dataclass(frozen=True)
class Violation:
    path: str  # relative to the repository root
    line: int
    imported: str  # the resolved module name
    rule: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: imports {self.imported}: {self.rule}"


# -- modules and their layers ------------------------------------------------------------------

def module_name(relpath: str) -> tuple[str, bool]:
    """``ir/ops/core.py`` -> (``parity.ir.ops.core``, False); ``ir/__init__.py`` -> (``parity.ir``, True)."""
    path = pathlib.PurePosixPath(relpath)
    for package, folder in sorted(PACKAGE_DIRS.items(), key=lambda item: -len(item[1])):
        try:
            rest = path.relative_to(folder)
        except ValueError:
            continue
        parts = list(rest.with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        return ".".join([package, *parts]), is_package
    raise ValueError(f"{relpath} is under no package folder of pyproject's package-dir")


def _tree_modules() -> dict[str, bool]:
    """Every module of the tree -> whether it is a package."""
    found = {}
    for folder in PACKAGE_DIRS.values():
        for path in (ROOT / folder).rglob("*.py"):
            name, is_package = module_name(path.relative_to(ROOT).as_posix())
            found[name] = is_package
    return found


TREE_MODULES = _tree_modules()


def layer(module: str) -> str | None:
    """The layer of a parity module ("ir", "backend-api", "backends/xla", "frontend",
    "conformance", "debugger", "top"), or None for anything outside parity."""
    parts = module.split(".")
    if parts[0] != "parity":
        return None
    if len(parts) == 1 or parts[1] not in ("ir", "backends", "frontend", "conformance", "debugger"):
        return "top"  # parity/ (the public face) and bench/
    if parts[1] != "backends":
        return parts[1]
    if len(parts) >= 3 and TREE_MODULES.get(f"parity.backends.{parts[2]}", False):
        return f"backends/{parts[2]}"  # a backend's own package
    return "backend-api"


# -- imports ----------------------------------------------------------------------------------

def imported_modules(relpath: str, source: str) -> list[tuple[int, str]]:
    """(line, absolute module name) for every import in ``source``, at any depth.

    ``from .x import y`` resolves against the file's package; ``from pkg import sub`` names
    ``pkg.sub`` when that is a module of the tree (importing a submodule), else ``pkg``.
    """
    name, is_package = module_name(relpath)
    package = name if is_package else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(source, filename=relpath)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                if node.level - 1 > len(anchor) - 1:
                    raise ValueError(f"{relpath}:{node.lineno}: relative import beyond the top package")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.append((node.lineno, sub if sub in TREE_MODULES else base))
    return found


# -- cycles -----------------------------------------------------------------------------------

# The modules of a cycle (sorted) -> why it stays for now. The test fails on any other cycle,
# and on an allowance that no longer matches one.
ALLOWED_CYCLES: dict[tuple[str, ...], str] = {
    ("parity.ir.dtypes", "parity.ir.types"):
        "a TensorType holds a DType, and `f32[8, 16]` (DType.__getitem__) builds a TensorType: the IR's notation "
        "for a type in docs, tests and the parser; the sugar must be a method of DType, so the two name each other",
}


@dataclass(frozen=True)
class Edge:
    importer: str  # module names
    imported: str
    path: str  # the importing file, relative to the repository root
    line: int
    deferred: bool  # inside a function

    def __str__(self) -> str:
        where = "inside a function" if self.deferred else "at module level"
        return f"{self.path}:{self.line}: {self.importer} imports {self.imported} ({where})"


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def import_edges(relpath: str, source: str) -> list[Edge]:
    """Every import of a parity module in ``source`` that runs (so not under TYPE_CHECKING)."""
    importer = module_name(relpath)[0]
    edges = []

    def visit(node: ast.AST, deferred: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if _is_type_checking(child):
                continue
            inside = deferred or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                for imported in dict.fromkeys(m for _, m in imported_modules(relpath, ast.unparse(child))):
                    if imported.split(".")[0] == "parity" and imported != importer:
                        edges.append(Edge(importer, imported, relpath, child.lineno, inside))
            visit(child, inside)

    visit(ast.parse(source, filename=relpath), False)
    return edges


def cycles_among(edges: list[Edge]) -> dict[tuple[str, ...], list[Edge]]:
    """The import cycles within one layer: each strongly connected component of two or
    more modules (sorted) -> the edges that run inside it (Tarjan's algorithm)."""
    graph: dict[str, set[str]] = {}
    for edge in edges:
        if layer(edge.importer) == layer(edge.imported):
            graph.setdefault(edge.importer, set()).add(edge.imported)
            graph.setdefault(edge.imported, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    components = []

    def connect(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for other in sorted(graph[module]):
            if other not in index:
                connect(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            component = []
            while not component or component[-1] != module:
                component.append(stack.pop())
            if len(component) > 1:
                components.append(tuple(sorted(component)))

    for module in sorted(graph):
        if module not in index:
            connect(module)
    return {c: [e for e in edges if e.importer in c and e.imported in c] for c in components}


def tree_edges() -> list[Edge]:
    found = []
    for folder in sorted(set(PACKAGE_DIRS.values())):
        for path in sorted((ROOT / folder).rglob("*.py")):
            found += import_edges(path.relative_to(ROOT).as_posix(), path.read_text(encoding="utf-8"))
    return found


# -- the rules --------------------------------------------------------------------------------

def broken_rule(importer: str, imported: str) -> str | None:
    """Why ``importer`` (a layer) may not import ``imported`` (a module), or None if it may."""
    target = layer(imported)
    top_level = imported.split(".")[0]
    if importer == "ir":
        if target is None:
            return "ir/ imports none of torch, jax, onnx, onnxruntime, triton" if top_level in IR_FORBIDDEN else None
        return None if target == "ir" else "ir/ imports no other layer"
    if target is None or target == "ir" or target == importer:
        return None
    if importer.startswith("backends/"):
        if target == "backend-api":
            return None
        return f"{importer}/ imports only ir/, the backend base/registry and its own folder"
    if importer == "backend-api":
        return "the backend API (backends/*.py) imports only ir/ and itself"
    if importer == "frontend":
        if target == "backend-api":
            return None
        return "frontend/ imports ir/ and the backend registry, never a specific backend"
    if importer == "conformance":
        if target == "backend-api":
            return None
        return "conformance/ imports ir/ and the public backend API"
    if importer == "debugger":
        if target in ("backend-api", "conformance") or imported == "parity.frontend":
            return None
        return "diff/ imports ir/, the backend API, conformance/ and the frontend's public package"
    return None  # the public face and bench sit on top


def violations_in(relpath: str, source: str) -> list[Violation]:
    importer = layer(module_name(relpath)[0])
    found = []
    for line, imported in imported_modules(relpath, source):
        rule = broken_rule(importer, imported)
        if rule is not None:
            found.append(Violation(relpath, line, imported, rule))
    return found


def tree_violations() -> list[Violation]:
    found = []
    for folder in sorted(set(PACKAGE_DIRS.values())):
        for path in sorted((ROOT / folder).rglob("*.py")):
            relpath = path.relative_to(ROOT).as_posix()
            found += violations_in(relpath, path.read_text(encoding="utf-8"))
    return found


# -- the tests --------------------------------------------------------------------------------

def test_the_tree_keeps_the_dependency_rules():
    found = tree_violations()
    new = [v for v in found if (v.path, v.imported) not in ALLOWED]
    assert not new, "imports that break ../shared/DESIGN.md's dependency rules:\n" + "\n".join(map(str, new))


def test_every_allowance_still_matches_a_violation():
    found = {(v.path, v.imported) for v in tree_violations()}
    stale = [key for key in ALLOWED if key not in found]
    assert not stale, f"fixed: delete these from ALLOWED in tests/test_layering.py: {stale}"


def test_no_import_cycles_within_a_layer():
    cycles = cycles_among(tree_edges())
    new = {c: edges for c, edges in cycles.items() if c not in ALLOWED_CYCLES}
    assert not new, "import cycles within a layer (move the function or data to where it belongs):\n" + "\n".join(
        " <-> ".join(c) + "\n" + "\n".join(f"    {e}" for e in edges) for c, edges in new.items())


def test_every_allowed_cycle_is_still_a_cycle():
    stale = [c for c in ALLOWED_CYCLES if c not in cycles_among(tree_edges())]
    assert not stale, f"gone or changed: delete or update these in ALLOWED_CYCLES: {stale}"


def test_a_planted_deferred_cycle_is_caught_with_its_lines():
    sources = {
        "frontend/planted_a.py": "from .planted_b import helper\n",
        "frontend/planted_b.py": "def helper():\n    from .planted_c import other\n    return other\n",
        "frontend/planted_c.py": "import typing\n\ndef other():\n    from .planted_a import helper\n",
        "frontend/planted_d.py": "from .planted_a import helper\n",  # imports the cycle, is not in it
    }
    edges = [e for relpath, source in sources.items() for e in import_edges(relpath, source)]
    ((modules, inside),) = cycles_among(edges).items()
    assert modules == ("parity.frontend.planted_a", "parity.frontend.planted_b", "parity.frontend.planted_c")
    assert [str(e) for e in inside] == [
        "frontend/planted_a.py:1: parity.frontend.planted_a imports parity.frontend.planted_b (at module level)",
        "frontend/planted_b.py:2: parity.frontend.planted_b imports parity.frontend.planted_c (inside a function)",
        "frontend/planted_c.py:4: parity.frontend.planted_c imports parity.frontend.planted_a (inside a function)",
    ]


def test_a_cycle_across_layers_or_under_type_checking_is_not_a_layer_cycle():
    sources = {
        # across layers: the layering rules judge that import, not the cycle check
        "conformance/planted.py": "from ..frontend import planted\n",
        "frontend/planted.py": "def f():\n    from ..conformance import planted\n",
        # annotations only: the import never runs
        "ir/planted_a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .planted_b import B\n",
        "ir/planted_b.py": "from .planted_a import A\n",
    }
    edges = [e for relpath, source in sources.items() for e in import_edges(relpath, source)]
    assert len(edges) == 3
    assert cycles_among(edges) == {}


@pytest.mark.parametrize("relpath,source,imported,rule_words", [
    ("ir/planted.py", "def f():\n    import torch\n", "torch", "ir/ imports none of torch"),
    ("ir/ops/planted.py", "from ...backends import registry\n", "parity.backends.registry", "no other layer"),
    ("ir/planted.py", "from jax import lax\n", "jax", "none of torch, jax"),
    ("backends/xla/planted.py", "from ..onnx import emitter\n", "parity.backends.onnx.emitter", "its own folder"),
    ("backends/xla/planted.py", "from ...frontend.api import make_compiled\n", "parity.frontend.api", "its own folder"),
    ("backends/registry.py", "from .xla import XlaBackend\n", "parity.backends.xla", "only ir/ and itself"),
    ("frontend/planted.py", "from ..backends.xla.backend import XlaBackend\n", "parity.backends.xla.backend",
     "never a specific backend"),
    ("frontend/aten/planted.py", "from parity.backends import triton\n", "parity.backends.triton",
     "never a specific backend"),
    ("conformance/planted.py", "from ..backends.onnx import lowering\n", "parity.backends.onnx.lowering",
     "public backend API"),
    ("conformance/planted.py", "def f():\n    from ..frontend import api\n", "parity.frontend.api", "public backend API"),
    ("diff/planted.py", "def f():\n    from ..frontend.session import Session\n", "parity.frontend.session",
     "the frontend's public package"),
    ("diff/planted.py", "from .. import validate\n", "parity.validate", "the frontend's public package"),
])
def test_a_planted_bad_import_is_caught_and_named(relpath, source, imported, rule_words):
    (violation,) = violations_in(relpath, source)
    assert violation.imported == imported
    assert rule_words in violation.rule
    assert str(violation).startswith(f"{relpath}:")


@pytest.mark.parametrize("relpath,source", [
    ("ir/planted.py", "import numpy as np\nfrom .graph import Graph\nfrom . import dtypes\n"),
    ("backends/xla/planted.py", "import jax\nfrom ..base import Backend\nfrom ...ir import Graph\nfrom . import lowering\n"),
    ("backends/registry.py", "from .base import Backend\nfrom ..ir.errors import ParityError\n"),
    ("frontend/planted.py", "import torch\nfrom ..backends.registry import get_backend\nfrom ..backends import Backend\n"),
    ("conformance/planted.py", "from ..backends import get_backend\nfrom ..ir import evaluate\n"),
    ("parity/planted.py", "from .frontend.api import make_compiled\nfrom .backends.xla import XlaBackend\n"),
    ("diff/planted.py", "from ..frontend import recording_backend\nfrom ..conformance.local import measure_local\n"
                        "from ..backends.registry import get_backend\nfrom . import report\n"),
])
def test_allowed_imports_pass(relpath, source):
    assert violations_in(relpath, source) == []


def test_relative_imports_resolve_through_the_package_dir_mapping():
    assert module_name("backends/xla/lowering.py") == ("parity.backends.xla.lowering", False)
    assert module_name("ir/__init__.py") == ("parity.ir", True)
    assert imported_modules("ir/ops/core.py", "from ..graph import Graph\n") == [(1, "parity.ir.graph")]
    assert imported_modules("ir/__init__.py", "from .ops import OP_TABLE\n") == [(1, "parity.ir.ops")]
    assert imported_modules("backends/xla/x.py", "from .. import registry\n") == [(1, "parity.backends.registry")]
