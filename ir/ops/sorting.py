"""Ops of the sorting family. (Being written; see docs/ir.md for the catalogue.)"""

OPS = ()
