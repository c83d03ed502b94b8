"""parity.shard and parity.compile(mesh=...) in this process (one CPU device): the API, the
translation to sharding_constraint, and the errors/fallback on backends that cannot shard."""

from __future__ import annotations

import inspect

import pytest
import torch

import parity
from parity.backends.xla.sharding import ShardedDeviceError
from parity.frontend import reset_caches
from parity.frontend.compiled_graph import _EXECUTABLES
from parity.frontend.sharding import ShardingUnsupported, strip_sharding, with_shardings
from parity.ir import GraphBuilder, f32, verify
from parity.ir.sharding import GraphSharding, Mesh, PartitionSpec, ShardingError

THIS = __file__
P = PartitionSpec


@pytest.fixture(autouse=True)
def fresh():
    reset_caches()
    torch._dynamo.reset()
    yield
    reset_caches()


def line_of(fn, text: str) -> int:
    """The line number of the first line of ``fn`` containing ``text``."""
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


def pinned(x):
    y = parity.shard(x * 2, ("data", None))
    return y + 1


def test_shard_is_the_identity_eagerly_with_the_identity_gradient():
    x = torch.tensor([[1.5, -0.0], [float("nan"), 3.0]], requires_grad=True)
    y = parity.shard(x, "[data, _]")
    assert y.data_ptr() != x.data_ptr()  # a copy: custom ops may not alias their input
    assert torch.equal(y.isnan(), x.isnan()) and y[0, 1].item() == 0.0 and str(y[0, 1].item()) == "-0.0"
    (y * torch.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
    assert x.grad.tolist() == [[1.0, 2.0], [3.0, 4.0]]


def test_shard_translates_to_sharding_constraint_on_the_users_line():
    mesh = parity.Mesh({"data": 1})
    out = parity.compile(pinned, backend="xla", mesh=mesh)(torch.ones(4, 3))
    assert out.tolist() == [[3.0] * 3] * 4
    (executable,) = _EXECUTABLES.values()
    graph = executable.graph
    (node,) = [n for n in graph.nodes if n.op == "sharding_constraint"]
    assert node.attrs["spec"] == PartitionSpec("data")
    assert node.loc.file == THIS and node.loc.line == line_of(pinned, "parity.shard")
    assert graph.sharding.mesh == mesh and graph.sharding.inputs == (None,)
    assert executable.collectives() == {}  # one device: nothing to communicate


def test_in_and_out_shardings_become_input_and_output_specs():
    mesh = parity.Mesh({"data": 1, "model": 1})
    fn = parity.compile(lambda x, w: (x @ w, w.sum()), backend="xla", mesh=mesh,
                        in_shardings=(("data", None), None), out_shardings=[P("data", "model"), None])
    x, w = torch.arange(6.0).reshape(2, 3), torch.ones(3, 2)
    y, s = fn(x, w)
    assert y.tolist() == [[3.0, 3.0], [12.0, 12.0]] and s.item() == 6.0
    (graph,) = [e.graph for e in _EXECUTABLES.values()]
    assert graph.sharding.inputs == (PartitionSpec("data"), None)
    assert graph.sharding.outputs == (PartitionSpec("data", "model"), None)
    text = graph.to_text(locations=False)
    assert "sharding[data]" in text and "sharding[data, model]" in text and "mesh[data=1, model=1]" in text


def test_training_through_backward_keeps_the_constraint_on_the_gradient():
    w = torch.tensor([[1.0, -2.0], [0.5, 4.0]], requires_grad=True)
    fn = parity.compile(lambda x: (pinned(x) @ w).sum(), backend="xla", mesh=parity.Mesh({"data": 1}))
    x = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    fn(x).backward()
    assert x.grad.tolist() == [[-2.0, 9.0], [-2.0, 9.0]] and w.grad.tolist() == [[10.0, 10.0], [14.0, 14.0]]
    graphs = {e.graph.name: e.graph for e in _EXECUTABLES.values()}
    assert set(graphs) == {"forward", "backward"}
    assert graphs["backward"].op_counts().get("sharding_constraint") == 1  # shard's gradient is sharded alike


def test_a_mesh_larger_than_the_devices_says_how_to_simulate_more():
    fn = parity.compile(pinned, backend="xla", mesh=parity.Mesh({"data": 8}))
    with pytest.raises(ShardedDeviceError, match=r"needs 8 cpu devices, but JAX sees 1\. On CPU, simulate devices "
                                                 r"by setting XLA_FLAGS=--xla_force_host_platform_device_count=8"):
        fn(torch.ones(8, 2))


def test_shard_without_a_mesh_names_the_line():
    fn = parity.compile(pinned, backend="xla")
    with pytest.raises(ShardingError, match=rf"parity.shard at {THIS}:{line_of(pinned, 'parity.shard')} in pinned "
                                            r"needs a device mesh"):
        fn(torch.ones(4, 2))


def test_a_spec_that_does_not_divide_names_the_line():
    fn = parity.compile(pinned, backend="xla", mesh=parity.Mesh({"data": 1, "model": 1}))
    fn(torch.ones(3, 2))  # size-1 axes divide everything
    fn = parity.compile(pinned, backend="xla", mesh=parity.Mesh({"model": 1}))
    with pytest.raises(ShardingError, match=rf"at {THIS}:{line_of(pinned, 'parity.shard')} .*names axis 'data', "
                                            r"which the mesh \[model=1\] does not have"):
        fn(torch.ones(3, 2))


def test_in_shardings_need_a_mesh_and_the_right_count():
    with pytest.raises(ShardingError, match=r"parity.compile at .*test_frontend.py:\d+ in .*need a device mesh"):
        parity.compile(pinned, backend="xla", in_shardings=[None])
    fn = with_shardings(lambda x, y: x, in_shardings=[None])
    with pytest.raises(ShardingError, match="in_shardings has 1 entries for 2 positional arguments"):
        fn(torch.ones(1), torch.ones(1))
    fn = with_shardings(lambda x: (x, x), out_shardings=[None])
    with pytest.raises(ShardingError, match="out_shardings has 1 entries but the function returns 2 results"):
        fn(torch.ones(1))


# -- backends that cannot shard ------------------------------------------------------------------


def test_a_mesh_on_a_backend_that_cannot_shard_names_the_compile_line():
    line = inspect.currentframe().f_lineno + 2
    with pytest.raises(ShardingUnsupported) as info:
        parity.compile(pinned, backend="reference", mesh=parity.Mesh({"data": 2}))
    message = str(info.value)
    assert message.splitlines()[0] == (f"parity.compile at {THIS}:{line} in "
                                       f"test_a_mesh_on_a_backend_that_cannot_shard_names_the_compile_line with "
                                       f"mesh=[data=2] cannot run on backend 'reference'")
    assert "sharding needs the xla backend" in message and "fix: use backend='xla', or pass strict=False" in message


def test_shard_on_a_backend_that_cannot_shard_names_the_shard_line():
    fn = parity.compile(pinned, backend="reference")
    with pytest.raises(ShardingUnsupported) as info:
        fn(torch.ones(2, 2))
    where = f"{THIS}:{line_of(pinned, 'parity.shard')} in pinned"
    assert str(info.value).splitlines()[0] == f"parity.shard at {where} cannot run on backend 'reference'"
    assert f"why: sharding at {where} needs the xla backend" in str(info.value)


def test_strict_false_runs_unsharded_with_one_warning():
    with pytest.warns(UserWarning) as caught:
        fn = parity.compile(pinned, backend="reference", strict=False, mesh=parity.Mesh({"data": 2}),
                            in_shardings=[("data",)])
        first = fn(torch.ones(2, 2))
        second = fn(torch.full((3, 2), 2.0))  # a new shape recompiles: still no second warning
    assert first.tolist() == [[3.0, 3.0]] * 2 and second.tolist() == [[5.0, 5.0]] * 3
    assert [str(w.message) for w in caught] == [
        f"parity: sharding needs the xla backend: backend 'reference' runs a graph on one device; parity.compile "
        f"at {THIS}:{line_of(test_strict_false_runs_unsharded_with_one_warning, 'parity.compile')} in "
        f"test_strict_false_runs_unsharded_with_one_warning runs unsharded (strict=False)"]


def test_strict_false_strips_constraints_with_one_warning_naming_the_line():
    fn = parity.compile(pinned, backend="reference", strict=False)
    with pytest.warns(UserWarning) as caught:
        assert fn(torch.ones(2, 2)).tolist() == [[3.0, 3.0]] * 2
        assert fn(torch.ones(5, 2)).tolist() == [[3.0, 3.0]] * 5
    assert len(caught) == 1
    assert f"sharding at {THIS}:{line_of(pinned, 'parity.shard')} in pinned needs the xla backend" \
        in str(caught[0].message)


def test_strip_sharding_leaves_a_one_device_graph():
    b = GraphBuilder()
    x = b.input(f32[4])
    y = b.neg(b.sharding_constraint(x, spec=("d",)))
    graph = b.build([y]).with_sharding(GraphSharding(Mesh({"d": 2}), [("d",)], [("d",)]))
    stripped = strip_sharding(graph)
    verify(stripped)
    assert stripped.sharding is None and stripped.op_counts() == {"neg": 1}
    assert stripped.to_text() == "graph @main(%0: f32[4]) -> (f32[4]) {\n  %1: f32[4] = neg(%0)\n  return %1\n}"
