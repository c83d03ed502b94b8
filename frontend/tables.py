"""Assembling a frontend's translation table from its family modules (each has a ``TABLE``);
importing it needs neither torch nor jax.

Example::

    >>> from types import SimpleNamespace
    >>> merge_tables([SimpleNamespace(TABLE={"a": 1}, __name__="f")], "op")
    {'a': 1}
"""

from __future__ import annotations

from collections.abc import Iterable


def merge_tables(families: Iterable, what: str) -> dict:
    """One dict of every family's ``TABLE``; a key translated twice is an error naming ``what`` and the family."""
    table: dict = {}
    for family in families:
        for key, fn in family.TABLE.items():
            if key in table:
                raise ValueError(f"{what} {key} is translated twice ({family.__name__})")
            table[key] = fn
    return table
