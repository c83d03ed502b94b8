"""Ops of the shape family. (Being written; see docs/ir.md for the catalogue.)"""

OPS = ()
