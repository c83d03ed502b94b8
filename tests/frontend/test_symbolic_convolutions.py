"""Convolutions trained at a batch size that changes: one capture with a symbolic batch serves
every size, forward and backward. The weight gradient sums over the batch, which the IR's
convolution needs static, so under a symbolic batch it is built by kernel taps
(frontend/conv_weight_gradient.py); every gradient is compared with eager torch's."""

import warnings

import pytest
import torch
from torch._dynamo.utils import counters

import parity
from parity.backends.registry import get_backend
from parity.frontend.graph_breaks import GraphBreakWarning
from parity.frontend.per_shape import PerShapeWarning

RTOL, ATOL = 1e-4, 1e-5  # the model zoo's (tests/models/test_zoo.py): float32 sums in another order

CONVOLUTIONS = {
    "stride 2, padded": lambda: torch.nn.Conv2d(3, 4, 3, stride=2, padding=1),
    "dilated": lambda: torch.nn.Conv2d(2, 4, 3, dilation=2, padding=2),
    "grouped": lambda: torch.nn.Conv2d(4, 6, 3, groups=2, padding=(1, 0)),
    "depthwise": lambda: torch.nn.Conv2d(4, 4, 3, groups=4, bias=False),
    "1-d, stride 3": lambda: torch.nn.Conv1d(3, 5, 4, stride=3),
    "transposed": lambda: torch.nn.ConvTranspose2d(4, 3, 3, stride=2, padding=1, output_padding=1),
}
BATCHES = (2, 5, 3)


def _inputs(conv, batches=BATCHES):
    spatial = (11,) if isinstance(conv, torch.nn.Conv1d) else (7, 6)
    return [torch.randn(batch, conv.in_channels, *spatial) for batch in batches]


def _trains_like_eager(conv, backend, dynamic, inputs):
    compiled = parity.compile(conv, backend=backend, dynamic=dynamic, cache_dir=False)
    eager = {name: p.detach().clone().requires_grad_() for name, p in conv.named_parameters()}
    for x in inputs:
        batch = len(x)
        ours, theirs = x.clone().requires_grad_(), x.clone().requires_grad_()
        conv.zero_grad()
        compiled(ours).square().sum().backward()
        for p in eager.values():
            p.grad = None
        torch.func.functional_call(conv, eager, (theirs,)).square().sum().backward()
        torch.testing.assert_close(ours.grad, theirs.grad, rtol=RTOL, atol=ATOL)
        for name, p in conv.named_parameters():
            torch.testing.assert_close(p.grad, eager[name].grad, rtol=RTOL, atol=ATOL,
                                       msg=lambda m, name=name, batch=batch: f"grad {name} at batch {batch}: {m}")


# CI: dilation (taps at their dilated offsets), groups (the dot's batch) and the transposed form; the rest -m matrix
@pytest.mark.parametrize("name", [pytest.param(n, marks=() if n in ("dilated", "grouped", "transposed")
                                               else pytest.mark.matrix) for n in CONVOLUTIONS])
def test_a_symbolic_batch_trains_every_convolution_like_eager(name):
    torch.manual_seed(0)
    torch._dynamo.reset()  # automatic dynamic remembers changed dims per code object
    counters.clear()
    conv = CONVOLUTIONS[name]()
    _trains_like_eager(conv, "reference", dynamic=None, inputs=_inputs(conv))
    # the first batch static, the second captured with a symbolic batch that serves the third
    assert counters["stats"]["unique_graphs"] == 2


@pytest.mark.parametrize("backend", [
    "onnx", pytest.param("xla", marks=pytest.mark.matrix), pytest.param("inductor", marks=pytest.mark.matrix),
    pytest.param("triton", marks=pytest.mark.matrix)])
@pytest.mark.parametrize("name", ["grouped", "transposed"])
def test_the_backends_train_convolutions_at_a_symbolic_batch(name, backend):
    if "cpu" not in get_backend(backend).available_devices():
        pytest.skip(f"backend {backend!r} has no CPU device in this process (triton: TRITON_INTERPRET=1)")
    torch.manual_seed(0)
    torch._dynamo.reset()
    conv = CONVOLUTIONS[name]()
    _trains_like_eager(conv, backend, dynamic=None, inputs=_inputs(conv))


def test_a_cnn_whose_batch_changes_is_captured_twice_and_trains_at_every_size():
    """The default (automatic dynamic): the first batch static, the second captured with a
    symbolic batch that serves every later size; before, that second backward failed to
    translate (a convolution contracting over the symbolic batch)."""
    torch.manual_seed(0)
    cnn = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                              torch.nn.Flatten(), torch.nn.Linear(8 * 3 * 3, 10))
    torch._dynamo.reset()  # automatic dynamic remembers changed dims per code object
    counters.clear()
    _trains_like_eager(cnn, "onnx", dynamic=None, inputs=[torch.randn(batch, 3, 7, 6) for batch in (4, 6, 8, 3)])
    assert counters["stats"]["unique_graphs"] == 2


def _warnings_of(run):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run()
    return [w for w in caught if issubclass(w.category, GraphBreakWarning)]


def test_a_sequence_length_that_changes_compiles_the_convolutions_per_shape_with_one_warning():
    """The IR's convolution needs static spatial sizes: a Conv1d over a sequence whose length
    changes compiles per length (frontend/per_shape.py), forward and backward, never failing."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv1d(4, 6, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv1d(6, 2, 3))
    torch._dynamo.reset()
    caught = _warnings_of(lambda: _trains_like_eager(
        net, "onnx", dynamic=None, inputs=[torch.randn(2, 4, length) for length in (10, 13, 17, 13)]))
    (warning,) = caught  # one, though forward and backward both compile per shape
    assert warning.category is PerShapeWarning
    assert ("aten.convolution.default has no form with symbolic sizes in parity's IR (on every backend) (convolution and pooling need "
            "static spatial sizes): it compiles again for each new shape") in str(warning.message)


def test_a_type_rule_that_refuses_symbolic_sizes_makes_the_graph_compile_per_shape(monkeypatch):
    """Where an IR type rule refuses symbolic sizes (here the weight gradient's old convolution
    over the batch, brought back), the graph compiles per shape with a warning: automatic dynamic
    never turns a program that compiled into one that fails (it was a TranslationBug)."""
    from parity.frontend.aten import contraction

    monkeypatch.setattr(contraction, "is_symbolic", lambda dim: False)
    torch.manual_seed(0)
    conv = CONVOLUTIONS["grouped"]()
    torch._dynamo.reset()
    (warning,) = _warnings_of(lambda: _trains_like_eager(conv, "onnx", dynamic=None, inputs=_inputs(conv)))
    assert warning.category is PerShapeWarning
    message = str(warning.message)
    assert "the sizes of the backward graph" in message and "aten.convolution_backward.default has no form with " \
        "symbolic sizes in parity's IR (on every backend) (the IR has no form of it at these symbolic sizes: convolution (operand 0): " \
        "channel and spatial dims of lhs must be static" in message, message


class _ConvBatchNorm(torch.nn.Module):
    """conv, batch norm (training: running statistics move by the batch's unbiased variance),
    bilinear upsampling and a global average pool."""

    def __init__(self):
        super().__init__()
        self.conv, self.norm = torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.BatchNorm2d(4)

    def forward(self, x):
        y = torch.nn.functional.interpolate(torch.relu(self.norm(self.conv(x))), scale_factor=2, mode="bilinear")
        return torch.nn.functional.adaptive_avg_pool2d(y, 1).flatten(1)


def test_batch_norm_trains_at_a_batch_that_changes_with_one_symbolic_capture():
    """Batch norm's statistics divide by N*H*W, and its backward (torch's decomposition) computes
    1.0 / (numel / channels) in Python floats on the sizes: both become graph values under a
    symbolic batch, so nothing compiles per shape."""
    torch.manual_seed(0)
    net, eager = _ConvBatchNorm(), _ConvBatchNorm()
    eager.load_state_dict(net.state_dict())
    torch._dynamo.reset()
    counters.clear()
    compiled = parity.compile(net, backend="onnx", cache_dir=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", GraphBreakWarning)  # a per-shape fallback would warn
        for batch in (3, 5, 6, 4):
            x = torch.randn(batch, 3, 8, 8)
            net.zero_grad(), eager.zero_grad()
            compiled(x).square().sum().backward()
            eager(x).square().sum().backward()
            for (name, p), q in zip(net.named_parameters(), eager.parameters()):
                torch.testing.assert_close(p.grad, q.grad, rtol=RTOL, atol=ATOL, msg=lambda m, name=name: f"{name}: {m}")
            for name in ("running_mean", "running_var"):
                torch.testing.assert_close(getattr(net.norm, name), getattr(eager.norm, name), rtol=RTOL, atol=ATOL)
    assert counters["stats"]["unique_graphs"] == 2


def test_python_float_arithmetic_on_symbolic_sizes_is_exact():
    def scaled(x):
        return x * (1.0 / (x.numel() / x.shape[1])) + x.shape[0] * 0.5 - x.shape[0] / 3

    torch._dynamo.reset()
    compiled = parity.compile(scaled, backend="reference", cache_dir=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", GraphBreakWarning)
        for batch in (3, 7, 10):
            x = torch.randn(batch, 6)
            torch.testing.assert_close(compiled(x), scaled(x), rtol=0, atol=0)


@pytest.mark.parametrize("pool", [
    torch.nn.AvgPool2d(3, stride=2, padding=1),
    torch.nn.AvgPool2d(2, ceil_mode=True, count_include_pad=False),
    torch.nn.AvgPool1d(3, stride=2)], ids=["2d-padded", "2d-ceil", "1d"])
def test_average_pooling_trains_at_a_batch_that_changes_without_compiling_per_shape(pool):
    """avg_pool's backward spreads each gradient over its window by a transposed convolution
    with ones, the channels as its groups and the (symbolic) batch as its batch."""
    torch.manual_seed(0)
    conv = torch.nn.Conv1d(3, 4, 2) if isinstance(pool, torch.nn.AvgPool1d) else torch.nn.Conv2d(3, 4, 2)
    net = torch.nn.Sequential(conv, pool)
    spatial = (9,) if isinstance(pool, torch.nn.AvgPool1d) else (9, 8)
    torch._dynamo.reset()
    counters.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error", GraphBreakWarning)  # a per-shape fallback would warn
        _trains_like_eager(net, "onnx", dynamic=None, inputs=[torch.randn(batch, 3, *spatial) for batch in (2, 5, 3)])
    assert counters["stats"]["unique_graphs"] == 2


def test_a_per_shape_warning_with_no_line_to_name_says_none_of_at_none(monkeypatch):
    """Compiled where no source line is known (a REPL, stdin): the warning names no line, rather
    than "the forward graph at None"."""
    from parity.frontend import pipeline

    monkeypatch.setattr(pipeline, "in_user_code", lambda loc, site: None)
    net = torch.nn.Conv1d(2, 2, 3)
    torch._dynamo.reset()
    compiled = parity.compile(net, backend="onnx", cache_dir=False)
    (warning,) = _warnings_of(lambda: [compiled(torch.randn(1, 2, length)) for length in (6, 9)])
    assert str(warning.message).startswith("parity.compile: the sizes of the forward graph change between calls, "
                                           "but aten.convolution.default has no form with symbolic sizes"), warning
