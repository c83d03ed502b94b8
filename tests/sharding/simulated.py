"""Sharded steps on 8 simulated CPU devices, against one device; prints one JSON line.

Run by test_devices.py in a subprocess with XLA_FLAGS=--xla_force_host_platform_device_count=8
(and by test_multihost.py as two processes of 4 devices): the examples of docs/sharding.md.
"""

from __future__ import annotations

import hashlib
import json
import sys

import numpy as np
import torch

import parity
from parity.frontend.compiled_graph import _EXECUTABLES

P = parity.PartitionSpec
DATA = ("data", None)


# -- example 1: a data-parallel MLP training step (forward, backward and SGD in one graph) ------


def mlp_loss(params, x, y):
    w1, b1, w2, b2 = params
    h = torch.relu(x @ w1 + b1)
    return ((h @ w2 + b2 - y) ** 2).mean()


def mlp_step(w1, b1, w2, b2, x, y):
    grads, loss = torch.func.grad_and_value(mlp_loss)((w1, b1, w2, b2), x, y)
    return (loss,) + tuple(p - 0.125 * g for p, g in zip((w1, b1, w2, b2), grads))


def mlp_args():
    # Small integers and powers of two: every sum is exact in float32 whatever its order,
    # so one device and eight must agree bit for bit (a lost or doubled term would show).
    g = torch.Generator().manual_seed(0)

    def ints(*shape, lo=-3, hi=4):
        return torch.randint(lo, hi, shape, generator=g).to(torch.float32)

    return ints(16, 32), ints(32), ints(32, 4) / 4, ints(4), ints(64, 16), ints(64, 4)


# -- example 2: a transformer block, batch over "data" and heads/hidden over "model" ------------

HEADS, D, F = 4, 32, 64


def block(x, ln1, wq, wk, wv, wo, ln2, w1, w2):
    b, s, _ = x.shape
    h = torch.nn.functional.layer_norm(x, (D,), ln1)

    def heads(w):  # [b, s, D] @ [D, D] -> [b, heads, s, D/heads]; heads split over "model"
        t = (h @ w).reshape(b, s, HEADS, D // HEADS).transpose(1, 2)
        return parity.shard(t, ("data", "model", None, None))

    att = torch.softmax(heads(wq) @ heads(wk).transpose(-1, -2) / (D // HEADS) ** 0.5, dim=-1) @ heads(wv)
    x = x + att.transpose(1, 2).reshape(b, s, D) @ wo
    h = torch.nn.functional.layer_norm(x, (D,), ln2)
    return x + torch.nn.functional.gelu(h @ w1) @ w2


BLOCK_SHARDINGS = (DATA, None, (None, "model"), (None, "model"), (None, "model"), ("model", None), None,
                   (None, "model"), ("model", None))


def block_args(dtype=torch.float32):
    g = torch.Generator().manual_seed(1)
    shapes = [(8, 16, D), (D,), (D, D), (D, D), (D, D), (D, D), (D,), (D, F), (F, D)]
    return [(torch.randn(*s, generator=g, dtype=torch.float64) / (1 if len(s) != 2 else s[0] ** 0.5)).to(dtype)
            for s in shapes]


def run(fn, args, **options):
    """Results of fn compiled on xla, and the collectives of the graphs it compiled."""
    _EXECUTABLES.clear()
    out = parity.compile(fn, backend="xla", **options)(*args)
    out = out if isinstance(out, tuple) else (out,)
    found: dict[str, int] = {}
    for executable in _EXECUTABLES.values():
        for name, count in executable.collectives().items():
            found[name] = found.get(name, 0) + count
    return [o.detach().numpy() for o in out], found


def digest(arrays) -> str:
    return hashlib.sha256(b"".join(a.tobytes() for a in arrays)).hexdigest()[:16]


def main(single: bool) -> dict:
    """Both examples on the mesh data=4 × model=2; with ``single``, also on one device."""
    mesh = parity.Mesh({"data": 4, "model": 2})
    args = mlp_args()
    steps, found = run(mlp_step, args, mesh=mesh, in_shardings=(None,) * 4 + (DATA, DATA), out_shardings=P())
    eager = [t.numpy() for t in mlp_step(*args)]
    mlp = report["mlp"] = {"collectives": found, "digest": digest(steps), "loss": float(steps[0]),
                           "max_diff_eager": max(float(np.abs(a - b).max()) for a, b in zip(steps, eager)),
                           "bitwise_eager": digest(steps) == digest(eager)}
    args = block_args()
    sharded, found = run(block, args, mesh=mesh, in_shardings=BLOCK_SHARDINGS, out_shardings=P(*DATA))
    oracle = block(*block_args(torch.float64)).numpy()
    blk = report["block"] = {"collectives": found, "digest": digest(sharded),
                             "err_sharded": float(np.abs(sharded[0] - oracle).max()),
                             "max_abs_oracle": float(np.abs(oracle).max())}
    if single:
        one, _ = run(mlp_step, mlp_args())
        mlp["bitwise_single"] = digest(one) == mlp["digest"]
        mlp["max_diff_single"] = max(float(np.abs(a - b).max()) for a, b in zip(steps, one))
        one, _ = run(block, args, mesh=parity.Mesh({"data": 1, "model": 1}))  # one device, the same graph
        blk["max_diff_single"] = float(np.abs(sharded[0] - one[0]).max())
        blk["err_single"] = float(np.abs(one[0] - oracle).max())
    return report


report: dict = {}

if __name__ == "__main__":
    # argv: nothing (one process, 8 devices), or PROCESS_ID PORT (one of two processes, 4 devices each)
    if len(sys.argv) == 3:
        parity.distributed.initialize(f"127.0.0.1:{sys.argv[2]}", num_processes=2, process_id=int(sys.argv[1]),
                                      timeout_s=30)
    try:
        main(single=len(sys.argv) != 3)
    finally:
        print("REPORT " + json.dumps(report), flush=True)
        if parity.distributed.is_initialized():
            parity.distributed.shutdown()
