"""Which forward values a training graph saves for its backward.

AOTAutograd's default partitioner saves every forward value the backward reads. For a
view of a graph input (``w.t()`` of a linear layer's weight, ``x.view(-1, d)``) that means
the forward graph returns the view as one more output, and a backend that cannot return
views (XLA, ONNX Runtime) writes it out as a copy. Eager autograd keeps such views as
views. :func:`partition_recomputing_input_views` saves the input instead and recomputes
the view in the backward, where a backend folds it into the op that reads it (a dot's
dimension numbers, a reshape): the same values, bit for bit, with fewer bytes written.

Example::

    >>> import torch
    >>> from torch._functorch.aot_autograd import aot_function
    >>> saved = []
    >>> def fw(gm, _):
    ...     saved.append(len(gm.graph.find_nodes(op="output")[0].args[0]))
    ...     return gm
    >>> f = aot_function(lambda x, w: x @ w.t(), fw, lambda gm, _: gm,
    ...                  partition_fn=partition_recomputing_input_views)
    >>> _ = f(torch.ones(2, 3, requires_grad=True), torch.ones(4, 3, requires_grad=True))
    >>> saved  # the result, then x and w (not w.t())
    [3]
"""

from __future__ import annotations

import torch
from torch import fx

_aten = torch.ops.aten

# Ops whose result is a view of their first operand's storage, with no arithmetic.
VIEW_OPS = frozenset({
    _aten.t.default, _aten.transpose.int, _aten.permute.default, _aten.view.default,
    _aten._unsafe_view.default, _aten.reshape.default, _aten.unsqueeze.default,
    _aten.squeeze.dim, _aten.squeeze.dims, _aten.expand.default, _aten.alias.default,
})


def input_views(graph: fx.Graph) -> list[fx.Node]:
    """The forward nodes that are chains of :data:`VIEW_OPS` over a primal input."""
    of_input: set[fx.Node] = set()
    for node in graph.nodes:
        if node.op == "placeholder" and node.name.startswith("primals"):
            of_input.add(node)
        elif (node.op == "call_function" and node.target in VIEW_OPS and node.args
              and isinstance(node.args[0], fx.Node) and node.args[0] in of_input):
            of_input.add(node)
    return [n for n in of_input if n.op == "call_function"]


def _recompute_is_safe(graph: fx.Graph) -> bool:
    """Tagging nodes for recomputation switches the default partitioner to its activation-
    checkpointing path, which refuses impure ops and non-functional graphs, and would merge
    with the user's own checkpoint tags: leave those graphs as they are."""
    from torch._functorch.partitioners import _is_functional_graph, must_recompute

    return (_is_functional_graph(graph)[0] is None
            and not any(must_recompute(n) for n in graph.nodes)
            and not any(n.op == "call_function" and n.is_impure(impure_random=False) for n in graph.nodes))


def partition_recomputing_input_views(joint_module: fx.GraphModule, joint_inputs, **kwargs):
    """AOTAutograd's default partition, with views of inputs recomputed in the backward
    instead of saved (module docstring)."""
    from torch._functorch.partitioners import default_partition
    from torch.utils.checkpoint import CheckpointPolicy

    if _recompute_is_safe(joint_module.graph):
        for node in input_views(joint_module.graph):
            node.meta["recompute"] = CheckpointPolicy.MUST_RECOMPUTE
    return default_partition(joint_module, joint_inputs, **kwargs)
