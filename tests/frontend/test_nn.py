"""NN translations, forward and backward: the gradient ops torch's autograd records
(convolution_backward, max_pool2d_with_indices_backward, avg_pool2d_backward, norms,
embedding_dense_backward, the fused attention pair) run through the IR and match eager."""

import pytest
import torch
import torch.nn.functional as F

RTOL, ATOL = 1e-4, 1e-5


def _check_forward_and_grads(via_ir, fn, *inputs):
    """fn(*inputs) and d(sum(fn * w))/d(inputs) through the IR equal eager torch's."""
    leaves = [t.detach().clone().requires_grad_(t.is_floating_point()) for t in inputs]
    torch.manual_seed(1)
    weight = torch.randn_like(fn(*leaves))

    def fwd_bwd(*args):
        out = fn(*args)
        wanted = [a for a in args if a.requires_grad]
        return (out, *torch.autograd.grad((out * weight).sum(), wanted))

    got = via_ir(fwd_bwd, *leaves)
    expected = fwd_bwd(*leaves)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e.detach(), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("stride,padding,dilation,groups", [(1, 0, 1, 1), (2, 1, 1, 1), (1, 2, 2, 1), (2, 1, 1, 2),
                                                             (3, 0, 1, 4), (2, 2, 2, 4), (1, 1, 2, 2)])
def test_conv2d_forward_and_backward(via_ir, stride, padding, dilation, groups):
    x, w, b = torch.randn(2, 4, 7, 6), torch.randn(4, 4 // groups, 3, 3), torch.randn(4)
    _check_forward_and_grads(via_ir, lambda x, w, b: F.conv2d(x, w, b, stride, padding, dilation, groups), x, w, b)


def test_conv1d_and_transposed_conv_forward(via_ir):
    x, w = torch.randn(2, 3, 9), torch.randn(5, 3, 4)
    (out,) = via_ir(lambda x, w: F.conv1d(x, w, stride=2, padding=1), x, w)
    torch.testing.assert_close(out, F.conv1d(x, w, stride=2, padding=1), rtol=RTOL, atol=ATOL)
    xt, wt = torch.randn(1, 4, 5, 5), torch.randn(4, 3, 3, 3)
    (out,) = via_ir(lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1), xt, wt)
    torch.testing.assert_close(out, F.conv_transpose2d(xt, wt, stride=2, padding=1, output_padding=1), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("kwargs", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                    dict(kernel_size=3, stride=2, ceil_mode=True), dict(kernel_size=2, dilation=2)])
def test_max_pool2d_values_indices_and_gradient(via_ir, kwargs):
    x = torch.randn(2, 3, 7, 6)
    x[0, 0, 0, :2] = 5.0  # a tie inside one window: the first maximum wins, as in torch
    _check_forward_and_grads(via_ir, lambda t: F.max_pool2d(t, **kwargs), x)
    _, idx = via_ir(lambda t: F.max_pool2d(t, return_indices=True, **kwargs), x)
    assert torch.equal(idx, F.max_pool2d(x, return_indices=True, **kwargs)[1])


@pytest.mark.parametrize("kwargs", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                    dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
                                    dict(kernel_size=3, stride=2, ceil_mode=True),
                                    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
                                    dict(kernel_size=2, divisor_override=3)])
def test_avg_pool2d_forward_and_gradient(via_ir, kwargs):
    _check_forward_and_grads(via_ir, lambda t: F.avg_pool2d(t, **kwargs), torch.randn(2, 3, 7, 6))


def test_batch_norm_training_forward_and_gradient(via_ir):
    x, w, b = torch.randn(4, 3, 5, 5) * 3 + 1, torch.randn(3), torch.randn(3)
    _check_forward_and_grads(via_ir, lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True), x, w, b)


def test_batch_norm_eval_and_layer_and_group_norm(via_ir):
    x = torch.randn(2, 4, 3, 3)
    rm, rv = torch.randn(4), torch.rand(4) + 0.5
    (out,) = via_ir(lambda x, rm, rv: F.batch_norm(x, rm, rv, training=False), x, rm, rv)
    torch.testing.assert_close(out, F.batch_norm(x, rm, rv, training=False), rtol=RTOL, atol=ATOL)
    w, b = torch.randn(3), torch.randn(3)
    _check_forward_and_grads(via_ir, lambda x, w, b: F.layer_norm(x, (3,), w, b), x, w, b)
    gw, gb = torch.randn(4), torch.randn(4)
    _check_forward_and_grads(via_ir, lambda x, w, b: F.group_norm(x, 2, w, b), x, gw, gb)


def test_embedding_backward_accumulates_repeats_and_skips_padding(via_ir):
    weight = torch.randn(6, 4)
    idx = torch.tensor([[1, 2, 1], [0, 5, 1]])

    def fn(w):
        return F.embedding(idx, w, padding_idx=0)

    _check_forward_and_grads(via_ir, fn, weight)


@pytest.mark.parametrize("case", ["causal", "bool_mask", "float_mask", "plain"])
def test_attention_gradients_match_eager(via_ir, case):
    q, k, v = torch.randn(2, 2, 4, 8), torch.randn(2, 2, 6, 8), torch.randn(2, 2, 6, 5)
    masks = {"bool_mask": torch.rand(4, 6) > 0.3, "float_mask": torch.randn(2, 1, 4, 6)}
    mask = masks.get(case)
    if case == "causal":
        k, v = k[:, :, :4], v[:, :, :4]

    def attention(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=case == "causal")

    _check_forward_and_grads(via_ir, attention, q, k, v)


def test_advanced_indexing_and_index_put(via_ir):
    x = torch.randn(4, 5, 6)
    i = torch.tensor([[0, 3], [-1, 2]])
    j = torch.tensor([1, 4])
    fns = [lambda t: t[i], lambda t: t[:, j], lambda t: t[i, :, j], lambda t: t[:, i, j], lambda t: t[1:, [0, 2]]]
    for fn in fns:
        (out,) = via_ir(fn, x)
        assert torch.equal(out, fn(x))
    _check_forward_and_grads(via_ir, lambda t: t[:, i, j] * 2, x)

    def put(t, v):
        return torch.index_put(t, (torch.tensor([1, 1, 3]), torch.tensor([0, 0, 4])), v, accumulate=True)

    v = torch.randn(3, 6)
    (out,) = via_ir(put, x, v)
    torch.testing.assert_close(out, put(x, v))


def test_gather_scatter_and_cross_entropy_gradient(via_ir):
    logits = torch.randn(5, 7)
    target = torch.tensor([0, 6, 3, 3, -100])
    _check_forward_and_grads(via_ir, lambda t: F.cross_entropy(t, target), logits)
    idx = torch.tensor([[0, 1], [2, 0]])
    (out,) = via_ir(lambda t: torch.gather(t, 1, idx), logits[:2])
    assert torch.equal(out, torch.gather(logits[:2], 1, idx))


def test_group_norm_backward_op_and_upsampling(via_ir):
    x, w, _ = torch.randn(2, 4, 3, 3), torch.randn(4), torch.randn(4)
    mean, rstd = torch.randn(2, 2), torch.rand(2, 2) + 0.5
    grad = torch.randn(2, 4, 3, 3)
    op = torch.ops.aten.native_group_norm_backward.default

    def backward(g, x, mean, rstd, w):
        return op(g, x, mean, rstd, w, 2, 4, 9, 2, [True, True, True])

    for got, expected in zip(via_ir(backward, grad, x, mean, rstd, w), backward(grad, x, mean, rstd, w)):
        torch.testing.assert_close(got, expected, rtol=RTOL, atol=ATOL)
    for mode in ("nearest", "bilinear"):
        def up(t):
            return torch.ops.aten.upsample_nearest2d.vec(t, [6, 5], None) if mode == "nearest" else \
                torch.ops.aten.upsample_bilinear2d.vec(t, [6, 5], False, None)
        (out,) = via_ir(up, x)
        torch.testing.assert_close(out, up(x), rtol=RTOL, atol=ATOL)


def test_max_pool_values_are_the_max_pool_composite_and_unused_indices_vanish():
    import parity

    x = torch.randn(2, 3, 8, 8)
    x[0, 1, 2, 3] = float("nan")
    graph = parity.capture(lambda t: F.max_pool2d(t, 3, stride=2, padding=1, ceil_mode=True), x)
    ops = [node.op for node in graph.nodes]
    assert ops.count("max_pool") == 1 and "argmax" not in ops and "concatenate" not in ops
    got = parity.compile(lambda t: F.max_pool2d(t, 3, stride=2, padding=1, ceil_mode=True), backend="onnx")(x)
    want = F.max_pool2d(x, 3, stride=2, padding=1, ceil_mode=True)
    assert torch.equal(got.isnan(), want.isnan()) and bool(got.isnan().any())
    assert torch.equal(got.nan_to_num(), want.nan_to_num())
