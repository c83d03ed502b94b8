"""Ops of the conversion family. (Being written; see docs/ir.md for the catalogue.)"""

OPS = ()
