"""The plugin template (examples/plugin_template) on the runtime interface, through parity.compile:
its option, its parameters bound once and refreshed, DLPack inputs, and its artifact in the disk cache."""

import numpy as np
import pytest
import torch

import parity
from parity.backends import disk_cache
from parity.backends.registry import get_backend
from parity.frontend import compiled_graph
from parity.ir import GraphBuilder, f32
from parity.ir.usage import UsageError

parity_numpy_backend = pytest.importorskip(
    "parity_numpy_backend", reason="install the template: pip install --no-deps -e examples/plugin_template")


def _divide(x, y):
    return x / y


def test_its_check_finite_option_reaches_the_executable():
    x, zero = torch.ones(2), torch.zeros(2)
    assert parity.compile(_divide, backend="numpy", cache_dir=False)(x, zero).tolist() == [float("inf")] * 2
    checked = parity.compile(_divide, backend="numpy", backend_options={"check_finite": True}, cache_dir=False)
    with pytest.raises(FloatingPointError,
                       match=r"check_finite\): div at .*test_template_runtime.py:\d+ in _divide made NaN"):
        checked(x, zero)
    with pytest.raises(UsageError, match=r"option 'check_finite' should be bool, got str 'yes'"):
        parity.compile(_divide, backend="numpy", backend_options={"check_finite": "yes"})


def test_a_module_binds_its_parameters_once_and_sees_a_step():
    compiled_graph.reset_caches()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2)).eval()
    compiled = parity.compile(model, backend="numpy", cache_dir=False)
    x = torch.randn(3, 8)
    with torch.no_grad():
        for _ in range(3):
            torch.testing.assert_close(compiled(x), model(x))
        executable, = [e for e in compiled_graph._EXECUTABLES.values() if hasattr(e, "binds")]
        assert executable.binds == 1 and len(executable.parameters) == 4
        model[0].weight.mul_(-1)  # an in-place update: the next call binds that one again
        torch.testing.assert_close(compiled(x), model(x))
        assert executable.binds == 2
        # new tensors (the template's binding views the old ones' memory): bound again too
        model.load_state_dict({k: torch.randn_like(v) for k, v in model.state_dict().items()}, assign=True)
        torch.testing.assert_close(compiled(x), model(x))
    assert executable.binds == 3


def test_its_executable_reads_dlpack_tensors_in_place():
    b = GraphBuilder()
    x = b.input(f32[3])
    run = get_backend("numpy").compile(b.build([b.neg(x)]), "cpu")
    tensor = torch.arange(3.0)
    assert run(tensor)[0].tolist() == [-0.0, -1.0, -2.0]
    bf16 = parity.compile(lambda t: t * 2, backend="numpy", cache_dir=False)
    assert bf16(torch.tensor([1.5, -3.0], dtype=torch.bfloat16)).tolist() == [3.0, -6.0]


def test_its_artifact_is_loaded_from_the_disk_cache(tmp_path):
    b = GraphBuilder()
    x = b.input(f32[3])
    graph = b.build([b.exp(x)])
    first, loaded = disk_cache.compile_cached(graph, parity_numpy_backend.NumpyBackend(), "cpu", str(tmp_path))
    assert not loaded and len(list(tmp_path.rglob("*.bin"))) == 1
    again, loaded = disk_cache.compile_cached(graph, parity_numpy_backend.NumpyBackend(), "cpu", str(tmp_path))
    assert loaded
    np.testing.assert_array_equal(again(np.zeros(3, np.float32))[0], first(np.zeros(3, np.float32))[0])


def test_a_batch_that_changes_runs_on_the_symbolic_graph():
    """parity recaptures a function whose batch changed with symbolic sizes (automatic dynamic);
    the template's executable binds the symbols from each call's inputs. (It raised TypeError:
    'Symbol' object cannot be interpreted as an integer, in the full suite, where an earlier
    test had called the same Sequential with another batch.)"""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2)).eval()
    compiled = parity.compile(model, backend="numpy", dynamic=True, cache_dir=False)
    with torch.no_grad():
        for batch in (3, 5, 1, 7):
            x = torch.randn(batch, 8)
            torch.testing.assert_close(compiled(x), model(x))
