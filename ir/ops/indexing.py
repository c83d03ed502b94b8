"""Ops of the indexing family. (Being written; see docs/ir.md for the catalogue.)"""

OPS = ()
