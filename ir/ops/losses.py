"""Ops of the losses family. (Being written; see docs/ir.md for the catalogue.)"""

OPS = ()
