"""The op × backend support table, derived from the op table and the backends' claims.

Never written by hand: adding an op or a claim changes it.

Example::

    >>> rows = op_matrix(["reference"])
    >>> next(r for r in rows if r["name"] == "add")["backends"]
    {'reference': 'native'}
"""

from __future__ import annotations

from collections.abc import Sequence

from .backends.registry import BackendNotFound, get_backend
from .ir.ops import OP_TABLE


def op_matrix(backend_names: Sequence[str]) -> list[dict]:
    backends = []
    for name in backend_names:
        try:
            backends.append((name, get_backend(name)))
        except BackendNotFound:
            backends.append((name, None))
    rows = []
    for opdef in OP_TABLE.values():
        statuses = {}
        for name, backend in backends:
            statuses[name] = "not installed" if backend is None else backend.claim_status(opdef.name)
        rows.append(
            {
                "name": opdef.name,
                "kind": opdef.kind.value,
                "groups": sorted(g.value for g in opdef.groups),
                "accuracy": opdef.accuracy.value,
                "dtypes": [d.short for d in opdef.dtypes],
                "backends": statuses,
            }
        )
    return rows
