"""Inputs a graph updates in place, and the IR outputs that may be written into them.

AOTAutograd hands parity a functional graph: an input the user's code mutates (a static KV
cache's ``index_copy_``, a step counter's ``+= 1``) becomes an extra output, its new value,
which AOTAutograd's runtime wrapper writes back with ``input.copy_(output)`` after the call.
:func:`mark_input_updates` records on the FX graph which outputs those are (from
AOTAutograd's ``fw_metadata``, as plugin_runtime.py records the parameters), and
:func:`in_place_pairs` turns them into IR terms for :class:`~.compiled_graph.CompiledGraph`,
which offers them to an executable that can compute such an output straight into the
input's memory (``executable.in_place(pairs)``: backends/onnx/executable.py,
backends/inductor/in_place.py). The executable then returns the input tensor itself, and the
wrapper's ``copy_`` of a tensor onto itself copies nothing.

Only data mutations count (not ``set_``, not a resize or restride), only for inference
graphs whose placeholders are the flat arguments, and only where the output feeds nothing
but that one write-back (an output the user also receives must be a tensor of its own).

Example::

    >>> from parity.frontend.translate import Translation
    >>> t = Translation(graph=None, inputs=[0, 1], outputs=[("ir", 0), ("ir", 1)], updates={0: 1})
    >>> in_place_pairs(t)
    {0: 1}
    >>> in_place_pairs(Translation(graph=None, inputs=[0, 1], outputs=[("ir", 0), ("ir", 0)], updates={0: 1}))
    {}
"""

from __future__ import annotations

from collections import Counter

import torch

#: the FX graph's ``meta`` key under which compile_fx_graph records the input updates:
#: {FX output index: placeholder name}
UPDATES_META = "parity_input_updates"


def mark_input_updates(gm: torch.fx.GraphModule, kind: str) -> None:
    """Record on ``gm`` which of its outputs are new values of inputs AOTAutograd writes back
    (``input.copy_(output)``): the first outputs of an inference graph, one per mutated input."""
    if kind != "inference":
        return
    from torch._guards import TracingContext

    metadata = getattr(TracingContext.try_get(), "fw_metadata", None)
    mutated = getattr(metadata, "mutated_inp_runtime_indices", None)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if not mutated or getattr(metadata, "tokens", None) or len(placeholders) != len(metadata.input_info):
        return  # no mutation, effect tokens, or not the flat arguments (a synthetic base merged some)
    updates = {}
    for m, i in enumerate(mutated):
        info = metadata.input_info[i]
        if info.mutates_data and not info.mutates_metadata and not info.mutates_storage_metadata:
            updates[m] = placeholders[i].name
    gm.meta[UPDATES_META] = updates


def in_place_pairs(translation) -> dict[int, int]:
    """``{IR output k: IR input i}``: output ``k`` is only the new value of the input that feeds
    IR input ``i``, so it may be computed into that input's memory (``translation.updates``
    maps FX outputs to the placeholders they update)."""
    uses = Counter(what for kind, what in translation.outputs if kind == "ir")
    feeds = Counter(translation.inputs)
    pairs = {}
    for m, j in translation.updates.items():
        kind, k = translation.outputs[m]
        if kind == "ir" and uses[k] == 1 and feeds[j] == 1:
            pairs[k] = translation.inputs.index(j)
    return pairs
