"""The frontend-conformance case set: one entry per primitive of the rule table.

Each family module maps a primitive name to a zero-argument function returning its cases
(:class:`~.spec.FrontendCase`, or :class:`~.spec.Refusal` for a rule that refuses). Names
of the table this JAX never emits on the concrete shapes cases trace are :data:`NOT_EMITTED`. A registry test fails when a
primitive has a rule and no entry, or an entry and no rule: a new rule needs its entry here.

Example::

    >>> sorted({c.dtype.short for c in cases_of("neg")})[:4]
    ['bf16', 'c64', 'f16', 'f32']
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

from ...ir.dtypes import DType
from ..opdb.common import EDGE
from . import (
    cases_bits,
    cases_control,
    cases_elementwise,
    cases_fft,
    cases_indexing,
    cases_jvp,
    cases_random,
    cases_scatter,
    cases_shape,
    cases_special,
)
from .spec import ROW_PREFIX, FrontendCase, NotEmitted, Refusal, row_of

FAMILIES = (cases_elementwise, cases_shape, cases_indexing, cases_control, cases_random, cases_fft, cases_special,
            cases_bits, cases_jvp, cases_scatter)

NOT_EMITTED = {n.primitive: n for n in (
    NotEmitted("copy_p", "copy", "the primitive's name before JAX 0.4.36 (now `copy`)"),
    NotEmitted("scatter_add", "scatter-add", "an older spelling of `scatter-add`"),
    NotEmitted("scatter_sub", "scatter-sub", "an older spelling of `scatter-sub`"),
    NotEmitted("expand_dims", None, "JAX 0.10.2 expands dims with broadcast_in_dim; no primitive of this name"),
    # emitted, but never on the concrete shapes these cases trace
    NotEmitted("dim_as_value", None, "emitted only where a size is symbolic (jax.export.symbolic_shape), and these "
               "cases trace concrete shapes; tests/jax/test_export.py checks it (a mean over a symbolic batch, "
               "exported and run at several sizes)"),
)}


@functools.lru_cache(maxsize=1)
def entries() -> dict:
    """primitive name → its case builder, over every family (a name in two families is an error)."""
    names = [name for family in FAMILIES for name in family.CASES]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ValueError(f"two families give cases for {twice}")
    return {name: build for family in FAMILIES for name, build in family.CASES.items()}


@functools.lru_cache(maxsize=None)
def cases_of(primitive: str) -> tuple[FrontendCase | Refusal, ...]:
    found = tuple(entries()[primitive]())
    ids = [c.id for c in found]
    if len(set(ids)) != len(ids):
        raise ValueError(f"duplicate case ids for {primitive}: {sorted(i for i in ids if ids.count(i) > 1)}")
    return found


def find(case_id: str) -> FrontendCase | Refusal:
    """The case whose id is ``case_id`` (``jax:neg[f32]:random``); KeyError naming the row's ids if none."""
    primitive = case_id.removeprefix(ROW_PREFIX).partition("[")[0]
    mine = cases_of(primitive) if primitive in entries() else ()
    for case in mine:
        if case.id == case_id:
            return case
    raise KeyError(f"no JAX frontend case {case_id!r}" + (f"; the cases of {row_of(primitive)}: "
                                                          f"{', '.join(c.id for c in mine)}" if mine else
                                                          f"; the rows: {', '.join(row_of(n) for n in entries())}"))


def all_cases() -> list[FrontendCase | Refusal]:
    return [c for name in entries() for c in cases_of(name)]


def select(*, ops: str | None = None, dtypes: Iterable[DType] = (), quick: bool = False) -> list:
    """The cases a run covers: rows (``jax:NAME``) matching ``ops``, in ``dtypes``; ``quick``
    keeps, per primitive, its first edge case in its first dtype and the first other case, or
    else its first case."""
    pattern = re.compile(ops) if ops else None
    wanted = set(dtypes)
    chosen = []
    for name in entries():
        if pattern is not None and not pattern.search(row_of(name)):
            continue
        mine = [c for c in cases_of(name) if not wanted or c.dtype in wanted]
        if quick:
            edge = next((c for c in mine if EDGE in getattr(c, "tags", ())), None)
            mine = [edge] if edge is not None else mine[:1]
        chosen += mine
    return chosen
