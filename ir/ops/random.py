"""Ops of the random family. (Being written; see docs/ir.md for the catalogue.)"""

OPS = ()
