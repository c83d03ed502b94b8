"""The numerics debugger: which node makes a backend's answer differ (``parity.diff``, ``parity diff``).

For every node of the graphs ``parity.compile`` captures (forward and backward), the
**local** error (the node run on the backend, fed the backend's own inputs, against the
float64 oracle on those same inputs, relative to the op's contract) and the **carried**
error (the node's backend value against the oracle run end to end). Nodes are ranked by
local error: a node over its bound is a backend bug; a large carried error with small
local errors is ill-conditioning in the model. See docs/diff.md.

Example::

    >>> import torch
    >>> import parity
    >>> report = parity.diff(lambda x: torch.tanh(x) * 2, torch.ones(3), backend="reference")
    >>> report.exit_code, report.ranked()[0].op in ("tanh", "mul", "constant", "broadcast_in_dim")
    (0, True)
"""

from .capture import capture_graphs
from .engine import diff_graph, diff_graphs
from .report import DiffReport, NodeRow
from .result import DiffResult

__all__ = ["DiffReport", "DiffResult", "NodeRow", "capture_graphs", "diff_graph", "diff_graphs"]
