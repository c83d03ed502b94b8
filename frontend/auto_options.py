"""``AutoOptions``: how ``backend="auto"`` chooses (frontend/auto.py); importing it needs no torch.

Example::

    >>> AutoOptions(budget_s=5).budget_s
    5
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

ENV_VAR = "PARITY_BACKEND"


@dataclass(frozen=True)
class AutoOptions:
    """How ``backend="auto"`` chooses.

    ``budget_s``: seconds auto may spend choosing for one graph: compiling the candidates
    (the first is always compiled; another is not raced once it is known to compile slower
    than what is left), checking, warming up and timing them (frontend/auto.py).
    ``candidates``: the backends to consider (None: every backend the registry lists,
    built-in or plugin, but :data:`NEVER_AUTO`'s). ``matrix``: path of a
    ``parity conform --json`` report to take conformance from (None: the backends'
    recorded deviations). ``forced``: one backend to use, no choosing (``$PARITY_BACKEND``).
    """

    budget_s: float = 10.0
    candidates: tuple[str, ...] | None = None
    matrix: str | None = None
    forced: str | None = None


def resolve_auto_options(auto: AutoOptions | None) -> AutoOptions:
    """The options layer's one read of ``$PARITY_BACKEND`` (the variable wins over ``auto.forced``)."""
    auto = auto or AutoOptions()
    forced = os.environ.get(ENV_VAR) or auto.forced
    return replace(auto, forced=forced) if forced != auto.forced else auto
