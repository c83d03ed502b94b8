"""Ops of the binary family. (Being written; see docs/ir.md for the catalogue.)"""

OPS = ()
