"""Build a small graph by hand through the IR, print it, and run it on the reference backend.

    python examples/ir_by_hand.py
"""

import numpy as np

from parity import ir
from parity.backends import get_backend

b = ir.GraphBuilder("scaled_tanh")
x = b.input(ir.f32[2, 3])
scale = b.broadcast_in_dim(b.constant(0.5, ir.f32), shape=(2, 3), broadcast_dimensions=())
y = b.tanh(b.mul(x, scale))
graph = b.build([y])
print(graph)

run = get_backend("reference").compile(graph, "cpu")
inputs = np.arange(6, dtype=np.float32).reshape(2, 3)
(result,) = run(inputs)
print("result:\n", result)
expected = np.tanh(inputs * np.float32(0.5))
print("max |result - numpy|:", float(np.max(np.abs(result - expected))))
