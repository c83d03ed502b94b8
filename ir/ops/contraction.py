"""Ops of the contraction family. (Being written; see docs/ir.md for the catalogue.)"""

OPS = ()
