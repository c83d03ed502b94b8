"""A plugin's runtime interface through parity.compile: options from the user, parameters
bound once and refreshed when they change, DLPack tensors in and out (backends/runtime.py,
frontend/plugin_runtime.py, docs/plugins.md "The runtime interface")."""

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import parity
from parity.frontend import compiled_graph
from parity.frontend.plugin_runtime import BoundExecutable
from parity.ir import GraphBuilder, f32
from parity.ir.usage import UsageError

sys.path.insert(0, str(Path(__file__).parents[1] / "backends"))
from runtime_plugins import DeviceLike, DlpackDevice, registered  # noqa: E402


@pytest.fixture
def device_like():
    with registered(DeviceLike()) as backend:
        yield backend


@pytest.fixture
def dlpack_device():
    with registered(DlpackDevice()) as backend:
        yield backend


def _scaled(x):
    return torch.tanh(x) * 3


def test_options_reach_compile_with_defaults_and_join_the_cache_key(device_like):
    x = torch.randn(4)
    four = parity.compile(_scaled, backend="device_like", backend_options={"threads": 4}, cache_dir=False)
    torch.testing.assert_close(four(x), _scaled(x))
    assert device_like.compiles[-1]["backend_options"] == {"threads": 4, "mode": "exact"}
    assert "backend=device_like, backend_options={'threads': 4, 'mode': 'exact'}, device=cpu" in repr(four)
    two = parity.compile(_scaled, backend="device_like", backend_options={"threads": 2}, cache_dir=False)
    two(x)
    # the same graph, other options: compiled again, not served from the executable cache
    assert [c["backend_options"]["threads"] for c in device_like.compiles] == [4, 2]
    again = parity.compile(_scaled, backend="device_like", backend_options={"threads": 2}, cache_dir=False)
    again(x)
    assert len(device_like.compiles) == 2 and compiled_graph.STATS["cache_hits"] == 1


def test_options_through_torch_compile(device_like):
    f = torch.compile(_scaled, backend="parity",
                      options={"backend": "device_like", "backend_options": {"mode": "approximate"}})
    x = torch.randn(3)
    torch.testing.assert_close(f(x), _scaled(x))
    assert device_like.compiles[-1]["backend_options"] == {"threads": 1, "mode": "approximate"}


@pytest.mark.parametrize("given, expected", [
    ({"thread": 2}, "backend_options: the device_like backend takes no option 'thread'; did you mean 'threads'? "
                    "it takes: threads (int, default 1: worker threads); mode (str in ['exact', 'approximate'], "
                    "default 'exact': how it computes)"),
    ({"threads": "2"}, "backend_options: the device_like backend's option 'threads' should be int, got str '2'; "
                       "it takes: threads (int, default 1: worker threads)"),
    ({"threads": True}, "the device_like backend's option 'threads' should be int, got bool True"),
    ({"mode": "fast"}, "the device_like backend's option 'mode' is one of ['exact', 'approximate'], got 'fast'"),
])
def test_an_unknown_or_ill_typed_option_names_it_the_backend_and_what_it_takes(device_like, given, expected):
    with pytest.raises(UsageError) as err:
        parity.compile(_scaled, backend="device_like", backend_options=given)
    assert expected in str(err.value)
    assert not device_like.compiles  # refused before any capture


def test_options_for_auto_or_a_backend_without_options_are_refused():
    with pytest.raises(UsageError, match="backend='auto' picks among several; name the backend"):
        parity.compile(_scaled, backend_options={"threads": 2})
    with pytest.raises(UsageError, match="the reference backend takes no option 'threads'.* it takes: nothing"):
        parity.compile(_scaled, backend="reference", backend_options={"threads": 2})


def _linear():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 8))


PARAMETER_BYTES = (64 * 32 + 32 + 32 * 8 + 8) * 4


def test_parameters_are_bound_once_not_copied_per_call(device_like):
    model = _linear().eval()
    compiled = parity.compile(model, backend="device_like", cache_dir=False)
    x = torch.randn(2, 64)
    with torch.no_grad():
        for _ in range(5):
            torch.testing.assert_close(compiled(x), model(x))
    assert device_like.compiles[-1]["parameters"] and device_like.binds == 1
    # the parameters crossed once; each call copies only its activation (2×64 floats)
    assert device_like.copied_bytes == PARAMETER_BYTES + 5 * x.numel() * 4


def test_without_binding_every_call_copies_the_parameters(device_like, monkeypatch):
    monkeypatch.setattr(DeviceLike, "binds_parameters", False)
    model = _linear().eval()
    compiled = parity.compile(model, backend="device_like", cache_dir=False)
    x = torch.randn(2, 64)
    with torch.no_grad():
        for _ in range(5):
            compiled(x)
    assert device_like.binds == 0 and device_like.copied_bytes == 5 * (PARAMETER_BYTES + x.numel() * 4)


def test_an_optimizer_step_and_load_state_dict_are_seen(device_like):
    model = _linear()
    compiled = parity.compile(model, backend="device_like", cache_dir=False)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    x = torch.randn(2, 64)
    for _ in range(3):  # training: the forward graph binds the parameters; each step changes them
        optimizer.zero_grad()
        out = compiled(x)
        torch.testing.assert_close(out, model(x))
        out.square().sum().backward()
        optimizer.step()
    model.eval()
    model.load_state_dict(_other_weights())
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x))
    assert device_like.binds >= 4


def _other_weights():
    torch.manual_seed(1)
    return _linear().state_dict()


def test_dlpack_tensors_in_and_out_without_a_copy(dlpack_device):
    compiled = parity.compile(lambda x, y: x * y + 1, backend="dlpack_device", cache_dir=False)
    x, y = torch.randn(3, 4), torch.randn(3, 4, requires_grad=True)
    out = compiled(x, y)
    torch.testing.assert_close(out, x * y + 1)
    assert dlpack_device.seen[-1] == [("Tensor", True), ("Tensor", True)]  # torch tensors, read in place
    assert out.data_ptr() in dlpack_device.returned  # the plugin's buffer, wrapped without a copy


def test_a_result_over_an_input_or_a_bound_parameter_is_copied():
    b = GraphBuilder()
    x, w = b.input(f32[3]), b.input(f32[3])
    graph = b.build([b.neg(x), b.neg(w)])

    class Echo:  # returns its inputs themselves: a runtime handing back a view of what it got
        def __init__(self):
            self.bound = {}

        def bind(self, values):
            self.bound.update(values)

        def __call__(self, x, w):
            return [x, self.bound[1]]

    run = BoundExecutable(Echo(), graph, frozenset({1}), dlpack=True)
    x, w = torch.zeros(3), torch.ones(3)
    outs = run(x, w)
    assert [o.tolist() for o in outs] == [[0.0] * 3, [1.0] * 3]
    assert not any(np.shares_memory(o.numpy(), t.numpy()) for o in outs for t in (x, w))
