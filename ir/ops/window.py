"""Ops of the window family. (Being written; see docs/ir.md for the catalogue.)"""

OPS = ()
