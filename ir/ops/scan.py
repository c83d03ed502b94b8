"""Ops of the scan family. (Being written; see docs/ir.md for the catalogue.)"""

OPS = ()
