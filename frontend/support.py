"""Whether one aten node of an FX graph can run on a backend, and why not.

One verdict, used in two places: ``parity.explain`` reports it per op, and the
partitioned fallback (:mod:`.partition`) sends exactly the nodes it rejects to eager
torch. A node is translated *alone* (its tensor operands become placeholders with the
same fake values), so its verdict depends only on the node, never on its neighbours.

Example::

    >>> import torch
    >>> from torch.fx.experimental.proxy_tensor import make_fx
    >>> from parity.backends.registry import get_backend
    >>> from parity.frontend.claims import ClaimCheck
    >>> gm = make_fx(lambda x: torch.tanh(x))(torch.ones(2))
    >>> node = [n for n in gm.graph.nodes if n.op == "call_function"][0]
    >>> backend = get_backend("reference")
    >>> classify(translate_alone(node), backend, ClaimCheck(backend))
    ('native', '')
"""

from __future__ import annotations

import operator

import torch

from ..ir.opdef import Kind
from ..ir.ops import OP_TABLE
from .errors import TranslationBug, UnsupportedAtenOp
from .translate import fx_to_ir

NATIVE, DECOMPOSED, UNSUPPORTED, UNTRANSLATABLE = "native", "decomposed", "unsupported", "untranslatable"
#: How a DECOMPOSED verdict's why begins its note of a composite the claim's predicate declined
#: (``parity.explain`` shows such a why, as it shows an unsupported one).
PREDICATE_DECLINES = "; the claim's predicate declines "
#: The verdicts under which a node runs on the backend.
RUNS = (NATIVE, DECOMPOSED)


def translate_alone(node: torch.fx.Node):
    """The IR graph of one aten node translated alone, or (a string) why it does not translate."""
    try:
        return fx_to_ir(single_node_module(node)).graph
    except UnsupportedAtenOp as err:
        return err.why
    except TranslationBug as err:
        return f"parity's translation is wrong here (a bug in parity; please report it): {err}"


def classify(translated, backend, check) -> tuple[str, str]:
    """(status, why) of one translated aten node (or the reason it has none) on ``backend``.

    ``check`` is the backend's ``ClaimCheck``: why an IR node cannot run there, or None.
    """
    if isinstance(translated, str):
        return UNTRANSLATABLE, translated
    claims = backend.claims()
    composites, declined = [], {}
    for ir_node in translated.nodes:
        why = check(ir_node)
        if why is not None:
            return UNSUPPORTED, why
        if OP_TABLE[ir_node.op].kind is not Kind.COMPOSITE:
            continue
        reason = check.declined_by_predicate(ir_node)
        if reason is not None:  # claimed, but this node decomposes as if it were not
            declined.setdefault(ir_node.op, reason)
        if ir_node.op not in claims or reason is not None:
            composites.append(ir_node.op)
    if composites:
        notes = "".join(f"{PREDICATE_DECLINES}{op}: {why}" for op, why in declined.items())
        return DECOMPOSED, "runs the decomposition of " + ", ".join(sorted(set(composites))) + notes
    return NATIVE, ""


def single_node_module(node: torch.fx.Node) -> torch.fx.GraphModule:
    """An FX graph holding just ``node`` (its tensor operands become placeholders)."""
    graph = torch.fx.Graph()
    placeholders: dict = {}

    def operand(arg):
        if arg not in placeholders:
            placeholder = graph.placeholder(f"in{len(placeholders)}")
            placeholder.meta["val"] = arg.meta.get("val")
            placeholders[arg] = placeholder
        return placeholders[arg]

    copy = graph.node_copy(node, operand)
    val = node.meta.get("val")
    if isinstance(val, (tuple, list)):
        results = []
        for i, v in enumerate(val):
            if isinstance(v, torch.Tensor):
                item = graph.call_function(operator.getitem, (copy, i))
                item.meta["val"] = v
                results.append(item)
        graph.output(tuple(results))
    else:
        graph.output(copy)
    return torch.fx.GraphModule(torch.nn.Module(), graph)
