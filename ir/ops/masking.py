"""Ops of the masking family. (Being written; see docs/ir.md for the catalogue.)"""

OPS = ()
