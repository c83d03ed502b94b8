"""Ops of the nn family. (Being written; see docs/ir.md for the catalogue.)"""

OPS = ()
