"""Ops of the reduction family. (Being written; see docs/ir.md for the catalogue.)"""

OPS = ()
