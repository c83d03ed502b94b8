"""An op torch has no derivative for, on a path that needs one: the user's line and the fix.

Eager torch runs ``a // b`` with ``a.requires_grad`` and fails only if a backward goes through
it. AOTAutograd traces the backward of every output that requires grad at the first call, so
under ``parity.compile`` (as under ``torch.compile``) the call itself fails, with Dynamo's
``backend='...' raised: RuntimeError: derivative for aten::floor_divide is not implemented``
and no line of the user's. :func:`no_derivative_error` turns that into a
:class:`NoDerivativeError` at the line of the Dynamo graph's node that calls the op.

Example::

    >>> import operator, torch
    >>> gm = torch.fx.symbolic_trace(lambda a, b: a // b)
    >>> err = no_derivative_error(RuntimeError("derivative for aten::floor_divide is not implemented"), gm)
    >>> print(str(err).splitlines()[0])
    aten.floor_divide (source line unknown) has no derivative in torch, and its result requires grad
"""

from __future__ import annotations

import re

import torch

from .errors import FrontendError
from .source import loc_from_stack_trace

_NO_DERIVATIVE = re.compile(r"derivative for (?:aten::)?(?P<op>\w+) is not implemented")


class NoDerivativeError(FrontendError):
    """A call needs the gradient of an op that torch does not differentiate."""

    def __init__(self, op: str, loc):
        self.op, self.loc = op, loc
        where = f" at {loc}" if loc else " (source line unknown)"
        super().__init__(
            f"aten.{op}{where} has no derivative in torch, and its result requires grad\n"
            f"  why: parity.compile traces the backward of every output that requires grad at the first call "
            f"(as torch.compile does); eager torch fails the same way once a backward goes through it\n"
            f"  fix: detach what needs no gradient there (e.g. `(a // b).detach()` or `a.detach() // b`), or "
            f"compute it under torch.no_grad()")


def _bare(name: str) -> str:
    return name.strip("_").replace("_", "").lower()


def _calls(node: torch.fx.Node, op: str) -> bool:
    """Whether a Dynamo graph node calls ``op`` (an aten name): ``operator.floordiv``,
    ``Tensor.__floordiv__`` and ``torch.floor_divide`` all call ``floor_divide``."""
    if node.op not in ("call_function", "call_method"):
        return False
    name = _bare(node.target if isinstance(node.target, str) else getattr(node.target, "__name__", ""))
    wanted = _bare(op)
    return len(name) >= 3 and (wanted.startswith(name) or name.startswith(wanted))


def no_derivative_error(err: BaseException, gm: torch.fx.GraphModule) -> NoDerivativeError | None:
    """The :class:`NoDerivativeError` for autograd's "derivative ... is not implemented", at the
    first node of ``gm`` (the Dynamo graph) that calls the op; None for any other error."""
    found = _NO_DERIVATIVE.search(str(err)) if isinstance(err, RuntimeError) else None
    if found is None:
        return None
    op = found["op"]
    loc = next((loc_from_stack_trace(n.meta.get("stack_trace")) for n in gm.graph.nodes
                if _calls(n, op) and n.meta.get("stack_trace")), None)
    return NoDerivativeError(op, loc)
