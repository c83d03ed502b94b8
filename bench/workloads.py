"""The benchmark workloads: each one written once in torch and once directly in JAX.

A workload builds a :class:`Case` for a size (``quick`` shrinks the big ones so the
whole suite fits in about two minutes on two cores). The torch function is what torch
eager, Inductor, ``torch.onnx.export`` and ``parity.compile`` run; the JAX function is
the same computation written by hand for the ``jax.jit`` anchor. Every candidate gets
the same input tensors (parameters are inputs too, so the JAX and ONNX anchors use the
same weights). ``flops`` and ``bytes`` (the least memory traffic: every input read and
every output written once, float32) give the roofline.

Example::

    >>> case = WORKLOADS["tiny"].build(quick=True)
    >>> case.torch_fn(*case.inputs).tolist()
    [1.0, 2.0, 3.0, 4.0]
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import jax
import jax.numpy as jnp
import torch
import torch.nn.functional as F
from jax import lax

from .decode import decode_program

HEADS = 4  # the transformer block's attention heads (d=256 → 64 per head)
F32 = 4  # bytes per float32 element


@dataclass(frozen=True)
class Case:
    """One workload at one size: functions, inputs and the roofline's operands."""

    torch_fn: Callable
    jax_fn: Callable
    inputs: tuple[torch.Tensor, ...]
    flops: float | None  # None: not meaningful (per-call overhead)
    bytes: float | None
    n_data: int  # inputs[n_data:] are parameters (what a training step differentiates)
    training: bool = False
    shape: str = ""  # human-readable sizes for the report
    # A whole program instead of one function call (bench/decode.py): ``program(compile)``
    # compiles its hot function with ``compile`` and returns the call that is timed.
    program: Callable | None = None
    tokens: int | None = None  # tokens one call generates: the report gives tokens/s


@dataclass(frozen=True)
class Workload:
    """A named workload; ``build(quick)`` makes its :class:`Case`."""

    name: str
    description: str
    build: Callable[..., Case]
    report_gbps: bool = False  # memory-bound: report achieved GB/s


def _randn(*shape, scale=1.0, seed=0):
    g = torch.Generator().manual_seed(seed + sum(shape))
    return torch.randn(*shape, generator=g) * scale


def _nbytes(tensors) -> float:
    return float(sum(F32 * t.numel() for t in tensors))


# -- tiny: per-call overhead ------------------------------------------------------------


def tiny_torch(x):
    return x + 1


def tiny_jax(x):
    return x + 1


def _tiny(quick=False) -> Case:
    x = torch.arange(4, dtype=torch.float32)
    return Case(tiny_torch, tiny_jax, (x,), None, None, n_data=1, shape="f32[4]")


# -- MLP forward ------------------------------------------------------------------------


def mlp_torch(x, w1, b1, w2, b2):
    return F.linear(F.gelu(F.linear(x, w1, b1)), w2, b2)


def mlp_jax(x, w1, b1, w2, b2):
    return jax.nn.gelu(x @ w1.T + b1, approximate=False) @ w2.T + b2


def _mlp(quick=False) -> Case:
    n, d, h = (64, 512, 2048) if quick else (256, 1024, 4096)
    x = _randn(n, d)
    params = (_randn(h, d, scale=d**-0.5), _randn(h, scale=0.1), _randn(d, h, scale=h**-0.5), _randn(d, scale=0.1))
    flops = 2 * n * d * h * 2
    return Case(mlp_torch, mlp_jax, (x, *params), flops, _nbytes((x, *params)) + F32 * n * d, n_data=1,
                shape=f"{n}×{d}→{h}→{d}")


# -- transformer encoder block (post-norm, like nn.TransformerEncoderLayer, GELU) ------


def encoder_torch(x, wqkv, bqkv, wo, bo, g1, c1, w1, b1, w2, b2, g2, c2):
    bsz, seq, d = x.shape
    qkv = F.linear(x, wqkv, bqkv).view(bsz, seq, 3, HEADS, d // HEADS).permute(2, 0, 3, 1, 4)
    a = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2]).transpose(1, 2).reshape(bsz, seq, d)
    h = F.layer_norm(x + F.linear(a, wo, bo), (d,), g1, c1)
    return F.layer_norm(h + F.linear(F.gelu(F.linear(h, w1, b1)), w2, b2), (d,), g2, c2)


def _layer_norm_jax(x, g, b, eps=1e-5):
    mean = jnp.mean(x, -1, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), -1, keepdims=True)
    return (x - mean) * lax.rsqrt(var + eps) * g + b


def encoder_jax(x, wqkv, bqkv, wo, bo, g1, c1, w1, b1, w2, b2, g2, c2):
    bsz, seq, d = x.shape
    qkv = (x @ wqkv.T + bqkv).reshape(bsz, seq, 3, HEADS, d // HEADS).transpose(2, 0, 3, 1, 4)
    scores = jnp.einsum("bhqd,bhkd->bhqk", qkv[0], qkv[1]) / math.sqrt(d // HEADS)
    a = jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(scores, axis=-1), qkv[2])
    a = a.transpose(0, 2, 1, 3).reshape(bsz, seq, d)
    h = _layer_norm_jax(x + a @ wo.T + bo, g1, c1)
    return _layer_norm_jax(h + jax.nn.gelu(h @ w1.T + b1, approximate=False) @ w2.T + b2, g2, c2)


def _encoder(quick=False) -> Case:
    bsz, seq, d = (2, 128, 256) if quick else (8, 128, 256)
    ff = 4 * d
    x = _randn(bsz, seq, d)
    ones, zeros = torch.ones(d), torch.zeros(d)
    params = (_randn(3 * d, d, scale=d**-0.5), _randn(3 * d, scale=0.02), _randn(d, d, scale=d**-0.5),
              _randn(d, scale=0.02), ones, zeros, _randn(ff, d, scale=d**-0.5), _randn(ff, scale=0.02),
              _randn(d, ff, scale=ff**-0.5), _randn(d, scale=0.02), ones.clone(), zeros.clone())
    tokens = bsz * seq
    flops = 2 * tokens * d * (3 * d + d + 2 * ff) + 4 * bsz * seq * seq * d
    return Case(encoder_torch, encoder_jax, (x, *params), flops, _nbytes((x, *params)) + F32 * tokens * d,
                n_data=1, shape=f"b{bsz} s{seq} d{d} h{HEADS}")


def encoder_loss_torch(x, target, *params):
    return (encoder_torch(x, *params) - target).square().mean()


def encoder_loss_jax(x, target, *params):
    return jnp.mean(jnp.square(encoder_jax(x, *params) - target))


def _encoder_train(quick=False) -> Case:
    fwd = _encoder(quick)
    x, params = fwd.inputs[0], fwd.inputs[1:]
    target = _randn(*x.shape, seed=1)
    jax_step = jax.value_and_grad(encoder_loss_jax, argnums=tuple(range(2, 2 + len(params))))
    # backward ≈ 2× forward FLOPs; traffic: read inputs and params, write one gradient per param
    return replace(fwd, torch_fn=encoder_loss_torch, jax_fn=jax_step, inputs=(x, target, *params),
                   flops=3 * fwd.flops, bytes=_nbytes((x, target, *params)) + _nbytes(params), n_data=2,
                   training=True)


# -- 16M-element elementwise chain (memory-bound) ---------------------------------------


def chain_torch(x):
    return torch.relu(x * 2.0 + 1.0) * x - 0.5


def chain_jax(x):
    return jnp.maximum(x * 2.0 + 1.0, 0.0) * x - 0.5


def _chain(quick=False) -> Case:
    n = (1 << 22) if quick else (1 << 24)
    x = _randn(n)
    return Case(chain_torch, chain_jax, (x,), 5.0 * n, 2.0 * F32 * n, n_data=1, shape=f"{n >> 20}M f32")


def sigmoid_chain_torch(x):
    return torch.sigmoid(x * 1.5 + 2.0) * x - torch.sqrt(torch.abs(x))


def sigmoid_chain_jax(x):
    return jax.nn.sigmoid(x * 1.5 + 2.0) * x - jnp.sqrt(jnp.abs(x))


def _sigmoid_chain(quick=False) -> Case:
    n = (1 << 22) if quick else (1 << 24)
    x = _randn(n)
    return Case(sigmoid_chain_torch, sigmoid_chain_jax, (x,), 9.0 * n, 2.0 * F32 * n, n_data=1,
                shape=f"{n >> 20}M f32")


# -- row softmax + layer norm -------------------------------------------------------------


def softmax_ln_torch(x, g, b):
    return F.layer_norm(torch.softmax(x, -1), (x.shape[-1],), g, b)


def softmax_ln_jax(x, g, b):
    return _layer_norm_jax(jax.nn.softmax(x, axis=-1), g, b)


def _softmax_ln(quick=False) -> Case:
    rows, cols = (2048, 1024) if quick else (8192, 1024)
    x, g, b = _randn(rows, cols), _randn(cols, scale=0.1) + 1, _randn(cols, scale=0.1)
    return Case(softmax_ln_torch, softmax_ln_jax, (x, g, b), 15.0 * rows * cols, 2.0 * F32 * rows * cols,
                n_data=3, shape=f"{rows}×{cols}")


# -- small conv net forward ---------------------------------------------------------------


def convnet_torch(x, w1, b1, w2, b2, w3, b3):
    h = F.max_pool2d(F.relu(F.conv2d(x, w1, b1, padding=1)), 2)
    h = F.max_pool2d(F.relu(F.conv2d(h, w2, b2, padding=1)), 2)
    return F.linear(h.mean((2, 3)), w3, b3)


def _conv_jax(x, w, b):
    y = lax.conv_general_dilated(x, w, (1, 1), ((1, 1), (1, 1)), dimension_numbers=("NCHW", "OIHW", "NCHW"))
    return y + b[None, :, None, None]


def _max_pool_jax(x):
    return lax.reduce_window(x, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")


def convnet_jax(x, w1, b1, w2, b2, w3, b3):
    h = _max_pool_jax(jax.nn.relu(_conv_jax(x, w1, b1)))
    h = _max_pool_jax(jax.nn.relu(_conv_jax(h, w2, b2)))
    return jnp.mean(h, (2, 3)) @ w3.T + b3


def _convnet(quick=False) -> Case:
    bsz, hw = (4, 32) if quick else (16, 64)
    c1, c2, classes = 32, 64, 10
    x = _randn(bsz, 3, hw, hw)
    params = (_randn(c1, 3, 3, 3, scale=27**-0.5), _randn(c1, scale=0.1), _randn(c2, c1, 3, 3, scale=(9 * c1) ** -0.5),
              _randn(c2, scale=0.1), _randn(classes, c2, scale=c2**-0.5), _randn(classes, scale=0.1))
    flops = 2 * bsz * (3 * 9 * c1 * hw * hw + c1 * 9 * c2 * (hw // 2) ** 2)
    return Case(convnet_torch, convnet_jax, (x, *params), flops, _nbytes((x, *params)) + F32 * bsz * classes,
                n_data=1, shape=f"b{bsz} 3×{hw}×{hw}")


# -- decode: generate() with a compiled forward (bench/decode.py) ----------------------------


def _decode(cache: str):
    def build(quick=False) -> Case:
        program, tokens, shape = decode_program(cache, quick)
        return Case(None, None, (), None, None, n_data=0, shape=shape, program=program, tokens=tokens)

    return build


WORKLOADS: dict[str, Workload] = {w.name: w for w in (
    Workload("tiny", "x + 1 on 4 floats (per-call overhead)", _tiny),
    Workload("mlp", "MLP forward, GELU", _mlp),
    Workload("encoder", "transformer encoder block forward", _encoder),
    Workload("encoder_train", "encoder block training step (loss + grads)", _encoder_train),
    Workload("chain", "elementwise chain relu(2x+1)·x−0.5", _chain, report_gbps=True),
    # the exact sigmoid costs more than ORT's Sigmoid, which is 4000 ULP off at -8 (onnx_logistic.md)
    Workload("sigmoid_chain", "elementwise chain sigmoid(1.5x+2)·x−√|x|", _sigmoid_chain, report_gbps=True),
    Workload("softmax_ln", "row softmax + layer norm", _softmax_ln, report_gbps=True),
    Workload("convnet", "conv net forward (2 conv+relu+pool, linear)", _convnet),
    Workload("decode_dynamic", "GPT-2 generate(), greedy, dynamic KV cache (grows per token)", _decode("dynamic")),
    Workload("decode_static", "GPT-2 generate(), greedy, static KV cache", _decode("static")),
)}
