"""The aten ops the Hugging Face zoo's translated graphs use, as recorded in ``aten_ops.json``.

:func:`load` reads the committed ``aten_ops.json`` (op → architectures using it, per
graph kind; the user-level calls of the Dynamo graphs; the OpInfo entries mapped to
them). ``scripts/build_aten_ops.py`` regenerates it, running every architecture through
``parity.compile`` inside :func:`recording`. ``tests/frontend/test_opinfo_zoo_ops.py``
reads it and runs torch's OpInfo samples of the ops it lists.

Example::

    >>> "aten.mm.default" in load()["ops"]
    True
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import torch

#: Where the zoo's aten ops are kept (op → architectures using it, per graph kind).
JSON_PATH = Path(__file__).with_name("aten_ops.json")

@contextlib.contextmanager
def recording(into: list, calls: set | None = None):
    """Append ``(graph kind, aten_ops)`` for every graph ``parity.compile`` translates meanwhile.

    ``calls``, when given, collects the user-level calls of every Dynamo graph (before
    AOTAutograd): ``torch.nn.functional.layer_norm``, ``operator.add``, ``Tensor.view``.
    Only compiles started inside the block are seen (the wrapped functions are looked up
    at ``parity.compile`` time and at translation time).
    """
    from ...frontend import api, single_backend

    original, original_backend = single_backend.fx_to_ir, api.make_dynamo_backend

    def fx_to_ir(gm, *args, **kwargs):
        translation = original(gm, *args, **kwargs)
        into.append((kwargs.get("name", "main"), list(translation.aten_ops)))
        return translation

    def make_dynamo_backend(session):
        backend = original_backend(session)

        def parity(gm, example_inputs):
            if calls is not None:
                calls.update(user_calls(gm))
            return backend(gm, example_inputs)

        return parity

    single_backend.fx_to_ir, api.make_dynamo_backend = fx_to_ir, make_dynamo_backend
    try:
        yield into
    finally:
        single_backend.fx_to_ir, api.make_dynamo_backend = original, original_backend

def user_calls(gm: torch.fx.GraphModule) -> set[str]:
    """The calls of a Dynamo graph by name: ``module.function`` or ``Tensor.method``."""
    found = set()
    for node in gm.graph.nodes:
        if node.op == "call_function":
            found.add(call_name(node.target))
        elif node.op == "call_method":
            found.add(f"Tensor.{node.target}")
        elif node.op == "call_module":
            found.add(f"module {type(gm.get_submodule(node.target)).__name__}")
    return found

def call_name(fn) -> str:
    """``torch.nn.functional.layer_norm``, ``operator.add``, ``torch.matmul`` for a callable.

    A builtin that a public torch namespace exports is named by that namespace
    (``torch._C._nn.gelu`` is ``torch.nn.functional.gelu``).
    """
    name = getattr(fn, "__name__", None)
    for prefix, namespace in _PUBLIC:
        if name and getattr(namespace, name, None) is fn:
            return f"{prefix}.{name}"
    module = getattr(fn, "__module__", None) or ""
    qualname = getattr(fn, "__qualname__", None) or name or str(fn)
    module = {"_operator": "operator"}.get(module, module)
    return f"{module}.{qualname}" if module else qualname

_PUBLIC = (("torch.nn.functional", torch.nn.functional), ("torch", torch), ("torch.linalg", torch.linalg),
           ("torch.special", torch.special), ("torch.fft", torch.fft))

def load() -> dict:
    """The committed ``aten_ops.json``."""
    return json.loads(JSON_PATH.read_text())
