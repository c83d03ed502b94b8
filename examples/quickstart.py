"""parity in one page: compile a function and a module, look at the IR, compare with eager.

    python examples/quickstart.py [--backend xla]
"""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

import parity

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--backend", default="reference", help="any registered parity backend")
backend = parser.parse_args().backend


# 1. A function: decorate it, call it with torch tensors.
@parity.compile(backend=backend)
def gated(x, w):
    h = x @ w
    return torch.sigmoid(h) * torch.tanh(h)


# 2. A module: the wrapper shares the original's parameters; training works too.
class TinyNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


torch.manual_seed(0)
x, w = torch.randn(2, 4), torch.randn(4, 3)
net = TinyNet()
compiled_net = parity.compile(net, backend=backend)

out = gated(x, w)
expected = torch.sigmoid(x @ w) * torch.tanh(x @ w)
print(f"function on {backend}: max |parity - eager| = {(out - expected).abs().max().item():.3e}")

logits = compiled_net(x)
print(f"module on {backend}:   max |parity - eager| = {(logits - net(x)).abs().max().item():.3e}")

loss = F.cross_entropy(logits, torch.tensor([0, 2]))
loss.backward()
grad = net.fc1.weight.grad.clone()
net.zero_grad()
F.cross_entropy(net(x), torch.tensor([0, 2])).backward()
print(f"gradient:            max |parity - eager| = {(grad - net.fc1.weight.grad).abs().max().item():.3e}")

# 3. The IR: parity.capture gives the whole forward graph, with your source lines.
print("\nIR of gated():")
print(parity.capture(gated, x, w))
print("\nIR of TinyNet (parameters are the first graph inputs):")
print(parity.capture(net, x))

# 4. Before compiling for another backend: where would each op run?
print("\nparity.explain(TinyNet):")
print(parity.explain(net, x, backends=["reference", "xla"]))
