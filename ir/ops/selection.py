"""Ops of the selection family. (Being written; see docs/ir.md for the catalogue.)"""

OPS = ()
