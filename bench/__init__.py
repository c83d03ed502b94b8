"""Benchmarks: every parity backend against the anchors, as ratios measured in one process.

``python -m parity.bench`` (or ``parity bench``) runs the workloads of
:mod:`parity.bench.workloads` on torch eager, Inductor, hand-written JAX under
``jax.jit``, ``torch.onnx.export`` + onnxruntime (IOBinding), and
``parity.compile(backend=...)`` for every installed backend; checks each result
against torch eager before timing it; prints a table of medians with ratios to the
best anchor; and writes JSON and a PNG chart. Tests never assert time.

Modules: ``workloads`` (torch + JAX definitions), ``candidates`` (anchors and parity),
``measure`` (threads, roofline, correctness, interleaved timing), ``cold`` (fresh-
process compile time and peak RSS), ``suite`` (the run), ``report`` (table, JSON,
chart), ``precision`` (the precision tiers against each runtime's anchor), ``cli``.
Importing this package imports nothing heavy. One-off studies live in ``studies/``
(not installed) and reuse these modules.
"""
