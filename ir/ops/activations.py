"""Ops of the activations family. (Being written; see docs/ir.md for the catalogue.)"""

OPS = ()
