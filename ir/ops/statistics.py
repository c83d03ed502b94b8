"""Ops of the statistics family. (Being written; see docs/ir.md for the catalogue.)"""

OPS = ()
