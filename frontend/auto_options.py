"""``AutoOptions``: how ``backend="auto"`` chooses (frontend/auto.py); importing it needs no torch.

Example::

    >>> AutoOptions(budget_s=0.5).budget_s
    0.5
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

ENV_VAR = "PARITY_BACKEND"


@dataclass(frozen=True)
class AutoOptions:
    """How ``backend="auto"`` chooses.

    ``budget_s``: seconds of timed runs per graph. ``candidates``: the backends to consider
    (None: every installed one but :data:`NEVER_AUTO`'s). ``matrix``: path of a
    ``parity conform --json`` report to take conformance from (None: the backends'
    recorded deviations). ``forced``: one backend to use, no choosing (``$PARITY_BACKEND``).
    """

    budget_s: float = 1.0
    candidates: tuple[str, ...] | None = None
    matrix: str | None = None
    forced: str | None = None


def resolve_auto_options(auto: AutoOptions | None) -> AutoOptions:
    """The options layer's one read of ``$PARITY_BACKEND`` (the variable wins over ``auto.forced``)."""
    auto = auto or AutoOptions()
    forced = os.environ.get(ENV_VAR) or auto.forced
    return replace(auto, forced=forced) if forced != auto.forced else auto
