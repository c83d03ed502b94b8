"""What parity.compile returns behaves as the user's object does under torch's conventions:
it pickles and deep-copies (the user's function or module plus the options, compiled again),
runs in DataLoader workers started with ``spawn``, and a compiled module's state dict, named
parameters and buffers use the module's own names and load both ways (frontend/api.py)."""

from __future__ import annotations

import copy
import pickle
import sys
from pathlib import Path

import pytest
import torch

import parity

sys.path.insert(0, str(Path(__file__).parent))  # compiled_workers: importable by name, in spawned workers too

import compiled_workers  # noqa: E402


def batch_norm_net() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.Tanh(), torch.nn.Linear(4, 2))


def test_state_dict_and_names_are_the_modules_own():
    net = batch_norm_net()
    compiled = parity.compile(net, backend="onnx")
    assert list(compiled.state_dict()) == list(net.state_dict()) == [
        "0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean", "1.running_var", "1.num_batches_tracked",
        "3.weight", "3.bias"]  # no "module." (torch.compile's wrapper: "_orig_mod.")
    assert [n for n, _ in compiled.named_parameters()] == [n for n, _ in net.named_parameters()]
    assert [n for n, _ in compiled.named_buffers()] == [n for n, _ in net.named_buffers()]
    assert [n for n, _ in compiled.named_modules()] == [n for n, _ in net.named_modules()]
    assert all(a is b for a, b in zip(compiled.parameters(), net.parameters()))
    # under a parent module: the same keys as the plain module there, and they load back
    parent, plain_parent = torch.nn.Sequential(compiled), torch.nn.Sequential(batch_norm_net())
    for p in plain_parent.parameters():
        torch.nn.init.normal_(p)
    assert list(parent.state_dict()) == list(plain_parent.state_dict())
    parent.load_state_dict(plain_parent.state_dict())
    assert all(torch.equal(a, b) for a, b in zip(net.state_dict().values(), plain_parent.state_dict().values()))


def test_state_dicts_load_both_ways():
    x = torch.randn(6, 3)
    source, target = batch_norm_net(), batch_norm_net()
    torch.manual_seed(1)
    for p in target.parameters():
        torch.nn.init.normal_(p)
    source(x)  # running statistics differ from the target's
    compiled_target = parity.compile(target, backend="onnx")
    compiled_target.load_state_dict(source.state_dict())  # plain → compiled
    assert all(torch.equal(a, b) for a, b in zip(target.state_dict().values(), source.state_dict().values()))
    source.eval(), compiled_target.eval()
    assert not target.training
    torch.testing.assert_close(compiled_target(x), source(x))
    fresh = batch_norm_net()
    fresh.load_state_dict(compiled_target.state_dict())  # compiled → plain
    assert all(torch.equal(a, b) for a, b in zip(fresh.state_dict().values(), source.state_dict().values()))


class Scaled(torch.nn.Module):
    """A module with extra state (not a tensor), which a parent's load_state_dict sets through it."""

    def __init__(self):
        super().__init__()
        self.linear, self.scale = torch.nn.Linear(3, 3), 1.0

    def forward(self, x):
        return self.linear(x) * self.scale

    def get_extra_state(self):
        return {"scale": self.scale}

    def set_extra_state(self, state):
        self.scale = state["scale"]


def test_a_parent_module_loads_the_compiled_modules_extra_state():
    source = Scaled()
    source.scale = 3.0
    target = Scaled()
    parent = torch.nn.Sequential(parity.compile(target, backend="onnx"))
    parent.load_state_dict(torch.nn.Sequential(source).state_dict())
    assert target.scale == 3.0 and torch.equal(target.linear.weight, source.linear.weight)


def test_an_optimizer_of_the_compiled_module_trains_the_original():
    x, y = torch.randn(8, 3), torch.randn(8, 2)
    eager, net = batch_norm_net(), batch_norm_net()
    compiled = parity.compile(net, backend="onnx")
    for model in (eager, compiled):
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        for _ in range(3):
            optimizer.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
    for (name, trained), (_, expected) in zip(net.state_dict().items(), eager.state_dict().items()):
        torch.testing.assert_close(trained, expected, msg=name)
    assert not torch.equal(net[0].weight, batch_norm_net()[0].weight)  # it moved


def test_deepcopy_of_a_compiled_module_copies_the_module_and_keeps_the_options():
    net = batch_norm_net()
    compiled = parity.compile(net, backend="onnx", strict=False, precision="fast").eval()
    x = torch.randn(4, 3)
    copied = copy.deepcopy(compiled)
    assert type(copied) is type(compiled) and repr(copied) == repr(compiled)
    assert copied.compile_arguments == compiled.compile_arguments and copied.options.strict is False
    assert copied.module is not net and not copied.training and not copied.module.training
    assert all(a is not b and torch.equal(a, b) for a, b in zip(copied.parameters(), net.parameters()))
    assert torch.equal(copied(x), compiled(x))
    with torch.no_grad():
        copied.module[0].weight.add_(1.0)  # independent parameters
    assert not torch.equal(copied.module[0].weight, net[0].weight)
    assert not torch.equal(copied(x), compiled(x))


def test_pickle_round_trips_a_compiled_module_and_functions():
    x = torch.randn(4, 3)
    compiled = parity.compile(batch_norm_net(), backend="onnx").eval()
    loaded = pickle.loads(pickle.dumps(compiled))
    assert repr(loaded) == repr(compiled) and not loaded.training
    assert torch.equal(loaded(x), compiled(x))
    function = parity.compile(compiled_workers.scaled_tanh, backend="onnx", fast_path=False)
    loaded_function = pickle.loads(pickle.dumps(function))
    assert type(loaded_function) is type(function) and loaded_function.fn is compiled_workers.scaled_tanh
    assert loaded_function.compile_arguments == function.compile_arguments
    assert torch.equal(loaded_function(x), function(x))
    # decorated at module level: pickled by name, as the function would be
    assert pickle.loads(pickle.dumps(compiled_workers.decorated_softplus)) is compiled_workers.decorated_softplus
    assert copy.deepcopy(compiled_workers.decorated_softplus) is compiled_workers.decorated_softplus


def test_a_function_pickle_cannot_find_by_name_fails_as_plain_pickle_does():
    def local(x):
        return x * 2

    for plain in (local, lambda x: x * 2):
        with pytest.raises(Exception) as by_plain_pickle:
            pickle.dumps(plain)
        with pytest.raises(type(by_plain_pickle.value)) as caught:
            pickle.dumps(parity.compile(plain, backend="onnx"))
        assert str(caught.value) == str(by_plain_pickle.value)


def test_compiled_module_and_function_run_in_spawned_dataloader_workers():
    module = parity.compile(torch.nn.Linear(3, 3), backend="onnx")
    function = parity.compile(compiled_workers.scaled_tanh, backend="xla")
    dataset = compiled_workers.ThroughCompiled(module, function, 4)
    loader = torch.utils.data.DataLoader(dataset, batch_size=None, num_workers=1, multiprocessing_context="spawn")
    items = list(loader)
    assert len(items) == 4
    for i, (module_result, function_result, parity_work) in enumerate(items):
        x = compiled_workers.row(i)
        with torch.no_grad():
            torch.testing.assert_close(module_result, module.module(x))
        torch.testing.assert_close(function_result, compiled_workers.scaled_tanh(x))
        assert parity_work > 0  # the worker ran parity's graphs, not eager torch
