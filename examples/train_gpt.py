"""Train the zoo's GPT language model with parity for a few steps, next to eager torch.

Both copies start from the same weights and learn one fixed batch of random tokens by
heart (so the loss visibly falls); each step prints the compiled model's loss next to
eager's. Both use SGD with momentum (an update linear in
the gradients, so the two runs stay comparable step after step).

    python examples/train_gpt.py --backend reference --steps 5
"""

import argparse
import copy

import torch

import parity
from parity.conformance.models.gpt import GPT, GPTConfig, batch, train_step

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--backend", default="reference", help="any registered parity backend")
parser.add_argument("--steps", type=int, default=10)
parser.add_argument("--lr", type=float, default=0.3)
parser.add_argument("--seed", type=int, default=0)
args = parser.parse_args()

torch.manual_seed(args.seed)
cfg = GPTConfig()
model = GPT(cfg)
eager = copy.deepcopy(model)
compiled = parity.compile(model, backend=args.backend)
optimizers = [torch.optim.SGD(m.parameters(), lr=args.lr, momentum=0.9) for m in (model, eager)]
tokens, targets = batch(cfg, torch.Generator().manual_seed(args.seed + 1))

print(f"GPT: {sum(p.numel() for p in model.parameters())} parameters, backend {args.backend!r}")
print(f"{'step':>4}  {'parity':>10}  {'eager':>10}  {'|diff|':>9}")
worst = 0.0
for step in range(1, args.steps + 1):
    ours = train_step(compiled, optimizers[0], tokens, targets)
    theirs = train_step(eager, optimizers[1], tokens, targets)
    worst = max(worst, abs(ours - theirs))
    print(f"{step:>4}  {ours:>10.6f}  {theirs:>10.6f}  {abs(ours - theirs):>9.2e}")
print(f"max |loss difference| = {worst:.3e}")
