"""Activation checkpointing around random ops (studies/torch_features_probe): the backward
recomputes a checkpointed dropout or noise op, and must draw the numbers the forward drew
(aten/rng_state.py), as torch does by saving and restoring its generator's state. The numbers
differ from eager torch's (parity's own threefry keys), so each gradient is checked against the
forward's own draw, which its output shows."""

import pytest
import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

import parity

BACKENDS = ["reference", "onnx", "xla"]


def _checkpointed(fn, x, backend):
    """The output, d sum(w * out) / d scale and (scale, w) of ``fn(x, scale)`` checkpointed, compiled."""
    torch._dynamo.reset()
    scale = torch.nn.Parameter(torch.rand(x.shape[-1]) + 0.5)
    w = torch.randn(x.shape)
    out = parity.compile(lambda t: checkpoint(fn, t, scale, use_reentrant=False), backend=backend,
                         cache_dir=False)(x)
    (out * w).sum().backward()
    return out.detach(), scale.grad, scale.detach(), w


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_checkpointed_dropout_gets_the_gradient_of_the_mask_the_forward_drew(backend):
    x = torch.rand(32, 8) + 0.1  # no zero: a zero output is a dropped element
    out, grad, _, w = _checkpointed(lambda t, s: F.dropout(t * s, 0.5, training=True), x, backend)
    kept = (out != 0).float()
    assert 0.3 < float(kept.mean()) < 0.7  # dropout ran
    torch.testing.assert_close(grad, (kept * 2 * x * w).sum(0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_two_random_ops_in_one_checkpoint_each_replay_their_own_numbers(backend):
    def noisy(t, s):
        a = t * s * torch.rand_like(t)  # an op that reads its own result type at the replay
        return F.dropout(a, 0.25, training=True)

    x = torch.rand(32, 8) + 0.1
    torch.manual_seed(1)
    out, grad, scale, w = _checkpointed(noisy, x, backend)
    assert 0.1 < float((out == 0).float().mean()) < 0.4
    # out = x * s * u * mask / 0.75 is linear in s: d/ds_j sum(w * out) = sum_i w_ij out_ij / s_j
    torch.testing.assert_close(grad, (w * out).sum(0) / scale, rtol=1e-5, atol=1e-5)
    torch.manual_seed(1)
    again, grad_again, _, _ = _checkpointed(noisy, x, backend)
    torch.testing.assert_close(again, out)  # torch.manual_seed reproduces it, the backward included
    torch.testing.assert_close(grad_again, grad)
