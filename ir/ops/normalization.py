"""Ops of the normalization family. (Being written; see docs/ir.md for the catalogue.)"""

OPS = ()
