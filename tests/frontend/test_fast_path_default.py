"""The fast path is on by default, and only where Dynamo's guards show that a function reads
nothing but its tensor arguments: each kind of other state, planted and then changed, is
noticed (Dynamo's path, the new value), never served stale from an entry."""

import pytest
import torch

import parity

SCALE = 2.0


class _Config:
    k = 3.0


CONFIG = _Config()


def _scaled(x):
    return x * SCALE


def _configured(x):
    return x * CONFIG.k


def _helper(x):
    return x + 1


def _calls_helper(x):
    return _helper(x) * 2


def _twice(f, *args):
    f(*args)
    return f(*args)


def test_a_pure_function_takes_the_fast_path_by_default():
    f = parity.compile(lambda x: torch.relu(x * 2 + 1), backend="onnx")
    x = torch.randn(4, 4)
    torch.testing.assert_close(_twice(f, x), torch.relu(x * 2 + 1))
    assert len(f.fast_path.entries) == 1
    off = parity.compile(lambda x: torch.relu(x * 2 + 1), backend="onnx", fast_path=False)
    assert not hasattr(off, "fast_path")


def test_a_function_without_an_entry_asks_the_disk_cache_once_per_signature(monkeypatch):
    """A function the fast path declines (it calls a helper through a global) runs Dynamo's path
    on every call; asking the disk cache for an entry on each of them cost milliseconds a call."""
    from parity.frontend import fast_path_disk

    asked = []
    real = fast_path_disk.load
    monkeypatch.setattr(fast_path_disk, "load", lambda *a: asked.append(a[1]) or real(*a))
    f = parity.compile(_calls_helper, backend="onnx")
    for n in (3, 3, 3, 5, 5):
        assert f(torch.ones(n)).tolist() == [4.0] * n
    assert f.fast_path.entries == {} and len(asked) == 2  # one per signature


def test_a_changed_global_is_seen():
    """A module-level constant (here a float) is watched by the entry: a hit checks its value
    again, so a new value takes Dynamo's path, which retraces with it; the old value back
    is served again."""
    global SCALE
    f = parity.compile(_scaled, backend="onnx")
    x = torch.ones(3)
    assert _twice(f, x).tolist() == [2.0] * 3
    assert len(f.fast_path.entries) == 1 and f.fast_path.last is not None
    try:
        for value in (5.0, 2.0, 7.0, 7.0):
            SCALE = value
            assert f(x).tolist() == [value] * 3
    finally:
        SCALE = 2.0
    assert f(x).tolist() == [2.0] * 3


HEADS, SHAPE = 2, (2, 3)


def _split_heads(x):
    return x.reshape(SHAPE[0], HEADS, -1).sum(-1) * len(SHAPE)


@pytest.mark.parametrize("change", ["int", "tuple", "type"])
def test_global_constants_get_an_entry_and_a_change_is_seen(change):
    """Module-level ints and tuples (a head count, a shape) are what real code reads: such a
    function gets an entry (a hit skips Dynamo) and a changed value, even one that compares
    equal under another type (2 and 2.0), is seen."""
    global HEADS, SHAPE
    f = parity.compile(_split_heads, backend="onnx")
    x = torch.arange(12.0)
    assert torch.equal(_twice(f, x), _split_heads(x)) and f.fast_path.last is not None
    saved = HEADS, SHAPE
    try:
        if change == "int":
            HEADS = 3
        elif change == "tuple":
            SHAPE = (2, 3, 1)
        else:
            HEADS = 2.0  # reshape refuses a float: eager's error, not the stale entry's result
        if change == "type":
            with pytest.raises(TypeError):
                f(x)
        else:
            assert torch.equal(f(x), _split_heads(x))
    finally:
        HEADS, SHAPE = saved
    assert torch.equal(f(x), _split_heads(x))


def test_a_changed_closure_value_is_seen():
    scale = 2.0
    f = parity.compile(lambda x: x * scale, backend="onnx")
    x = torch.ones(3)
    assert _twice(f, x).tolist() == [2.0] * 3
    scale = 7.0  # noqa: F841 - the closure cell the compiled lambda reads
    assert f(x).tolist() == [7.0] * 3
    assert f.fast_path.entries == {}


def test_a_changed_object_attribute_is_seen():
    f = parity.compile(_configured, backend="onnx")
    x = torch.ones(3)
    assert _twice(f, x).tolist() == [3.0] * 3
    _Config.k = 4.0
    try:
        assert f(x).tolist() == [4.0] * 3
    finally:
        _Config.k = 3.0
    assert f.fast_path.entries == {}


def test_a_rebound_helper_function_is_seen():
    global _helper
    f = parity.compile(_calls_helper, backend="onnx")
    x = torch.ones(3)
    assert _twice(f, x).tolist() == [4.0] * 3
    original, _helper = _helper, (lambda x: x - 1)
    try:
        assert f(x).tolist() == [0.0] * 3
    finally:
        _helper = original
    assert f.fast_path.entries == {}


def _mkldnn_flag(x):
    return x * 3 if torch.backends.mkldnn.enabled else x * 5


def test_a_changed_torch_flag_is_seen():
    """torch itself is trusted only for what its names are, not for the values of its flags."""
    f = parity.compile(_mkldnn_flag, backend="onnx")
    x = torch.ones(3)
    assert torch.backends.mkldnn.enabled and _twice(f, x).tolist() == [3.0] * 3
    # flags(): torch's own tests (OpInfo's imports) freeze plain assignment of backend flags
    with torch.backends.mkldnn.flags(enabled=False):
        assert f(x).tolist() == [5.0] * 3
    assert f.fast_path.entries == {}


def test_a_modules_training_mode_is_seen():
    drop = torch.nn.Dropout(0.5).eval()
    f = parity.compile(lambda x: drop(x) + 0, backend="onnx")
    x = torch.ones(256)
    assert torch.equal(_twice(f, x), x)
    drop.train()
    out = f(x)
    assert set(out.unique().tolist()) == {0.0, 2.0}  # dropout applied: zeros and 1/(1-p)
    assert f.fast_path.entries == {}


def test_requires_grad_and_grad_mode_are_seen():
    f = parity.compile(lambda x: (x * x).sum(), backend="onnx")
    x = torch.randn(3)
    _twice(f, x)
    assert len(f.fast_path.entries) == 1
    w = x.clone().requires_grad_()
    f(w).backward()
    torch.testing.assert_close(w.grad, 2 * x)
    with torch.no_grad():
        torch.testing.assert_close(f(x), (x * x).sum())
    assert len(f.fast_path.entries) == 2  # grad mode is part of the signature


def _matmul_and_ones(x, w):
    return x @ w, torch.ones(2)  # autocast changes the first dtype, the default dtype the second


def _dtypes(outputs):
    return [o.dtype for o in outputs]


@pytest.mark.parametrize("state", ["autocast", "default dtype"])
def test_torch_global_state_is_seen(state):
    f = parity.compile(_matmul_and_ones, backend="onnx")
    x, w = torch.randn(2, 3), torch.randn(3, 2)
    first = _dtypes(_twice(f, x, w))
    assert first == [torch.float32] * 2 and len(f.fast_path.entries) == 1
    if state == "autocast":
        with torch.autocast("cpu", dtype=torch.bfloat16):
            want, got = _matmul_and_ones(x, w), f(x, w)
    else:
        torch.set_default_dtype(torch.float64)
        try:
            want, got = _matmul_and_ones(x, w), f(x, w)
        finally:
            torch.set_default_dtype(torch.float32)
    assert _dtypes(want) != first and _dtypes(got) == _dtypes(want)
    assert _dtypes(f(x, w)) == first  # back in the first state: the first state's results again


def test_a_bare_compile_calls_autos_pick_directly():
    """No backend, no flag: after auto's first call chose, a seen signature reaches the chosen
    graph's positional call (CompiledGraph.positional), without Dynamo, AOTAutograd's wrapper
    or the boxed call."""
    import sys

    f = parity.compile(lambda x: torch.relu(x * 2 + 1))
    x = torch.randn(4, 4)
    _twice(f, x)
    ran = []
    sys.setprofile(lambda frame, event, arg: ran.append((frame.f_code.co_filename, frame.f_code.co_name))
                   if event == "call" else None)
    try:
        got = f(x)
    finally:
        sys.setprofile(None)
    torch.testing.assert_close(got, torch.relu(x * 2 + 1))
    assert not any("_functorch" in file or "_dynamo" in file for file, _ in ran)
    assert any(file.endswith("compiled_graph.py") for file, _ in ran)
    assert not any(file.endswith(("compiled_graph.py", "auto.py")) and name == "__call__" for file, name in ran)


class _Scaler:
    def __init__(self, k):
        self.k = k

    def scale(self, x):
        return x * self.k


def test_a_bound_methods_self_is_state_not_an_argument():
    scaler = _Scaler(2.0)
    f = parity.compile(scaler.scale, backend="onnx")
    x = torch.ones(3)
    assert _twice(f, x).tolist() == [2.0] * 3
    scaler.k = 6.0
    assert f(x).tolist() == [6.0] * 3
    assert f.fast_path.entries == {}


def _ones_plus_sum(x):
    return torch.ones(3) + x.sum()  # the result's dtype is the default dtype


def test_a_disk_entry_is_only_for_the_default_dtype_it_was_made_under():
    """A second compile of the same function reads the first's fast-path entry from disk, as a
    new process would; under another default dtype that entry is not the right one."""
    from parity.frontend import compiled_graph

    x = torch.ones(3)
    _twice(parity.compile(_ones_plus_sum, backend="onnx"), x)
    loads = compiled_graph.STATS["fast_path_disk_loads"]
    assert parity.compile(_ones_plus_sum, backend="onnx")(x).dtype == torch.float32
    assert compiled_graph.STATS["fast_path_disk_loads"] == loads + 1  # the control: same state, loaded
    torch.set_default_dtype(torch.float64)
    try:
        want, got = _ones_plus_sum(x), parity.compile(_ones_plus_sum, backend="onnx")(x)
    finally:
        torch.set_default_dtype(torch.float32)
    assert want.dtype == got.dtype == torch.float64
    assert compiled_graph.STATS["fast_path_disk_loads"] == loads + 1


def test_an_unchecked_disk_entry_never_serves_the_default():
    """fast_path=True stores an entry for a function that reads a global; a default compile of
    the same function (as in a new process) must not load it, and sees the global change."""
    global SCALE
    from parity.frontend import compiled_graph

    x = torch.ones(3)
    _twice(parity.compile(_scaled, backend="onnx", fast_path=True), x)
    loads = compiled_graph.STATS["fast_path_disk_loads"]
    assert parity.compile(_scaled, backend="onnx", fast_path=True)(x).tolist() == [2.0] * 3
    assert compiled_graph.STATS["fast_path_disk_loads"] == loads + 1  # the control: the unchecked entry is there
    default = parity.compile(_scaled, backend="onnx")
    assert default(x).tolist() == [2.0] * 3
    SCALE = 5.0
    try:
        assert default(x).tolist() == [5.0] * 3
    finally:
        SCALE = 2.0
    assert compiled_graph.STATS["fast_path_disk_loads"] == loads + 1


def test_an_entry_watching_constants_stays_off_disk():
    """An entry that watches global constants is not stored: loaded in another process it would
    not watch them, and a later change there would be served stale."""
    global SCALE
    from parity.frontend import compiled_graph

    x = torch.ones(3)
    first = parity.compile(_scaled, backend="onnx")
    _twice(first, x)
    assert first.fast_path.last is not None  # an entry in this process
    loads = compiled_graph.STATS["fast_path_disk_loads"]
    second = parity.compile(_scaled, backend="onnx")  # as in a new process
    assert second(x).tolist() == [2.0] * 3
    assert compiled_graph.STATS["fast_path_disk_loads"] == loads
    SCALE = 5.0
    try:
        assert second(x).tolist() == [5.0] * 3
    finally:
        SCALE = 2.0


# -- the hit path: the entry last made, tried before any signature is computed -----------------

def _gram(x):
    return torch.relu(x @ x.T + 1)


class _Doubling(torch.overrides.TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        return out * 2 if func is torch.Tensor.__add__ or func is torch.add else out


def _variant(name):
    """(argument, context) of a call the last entry (made for a plain f32[4, 4]) must not serve."""
    import contextlib

    x = torch.randn(4, 4)
    plain = contextlib.nullcontext()
    return {
        "same": (x, plain),  # the control: served by the entry
        "shape": (torch.randn(3, 4), plain),
        "dtype": (x.double(), plain),
        "strides": (torch.randn(4, 8)[:, ::2], plain),
        "requires_grad": (x.clone().requires_grad_(), plain),
        "parameter": (torch.nn.Parameter(x.clone(), requires_grad=False), plain),
        "no_grad": (x, torch.no_grad()),
        "inference_mode": (x, torch.inference_mode()),
        "autocast": (x, torch.autocast("cpu", dtype=torch.bfloat16)),
        "torch_function_mode": (x, _Doubling()),
    }[name]


@pytest.mark.parametrize("name", ["same", "shape", "dtype", "strides", "requires_grad", "parameter", "no_grad",
                                  "inference_mode", "autocast", "torch_function_mode"])
def test_the_last_entry_serves_only_its_own_signature(name):
    """Each way a call can differ from the one that made the entry (what frontend/fast_path.py's
    signature keys on, checked on a hit by torch's C++ tensor guards and global-state guard)
    is refused by the hit path: the call gives eager's dtype, values, grad and inference-ness."""
    f = parity.compile(_gram, backend="onnx")
    _twice(f, torch.randn(4, 4))
    n, guards, state, depth, entry = f.fast_path.last
    served = []
    f.fast_path.last = (n, guards, state, depth, lambda a: served.append(a) or entry(a))
    x, context = _variant(name)
    with context:
        got, want = f(x), _gram(x)
    assert served == ([(x,)] if name == "same" else [])
    assert got.dtype == want.dtype and got.is_inference() == want.is_inference()
    assert (got.grad_fn is None) == (want.grad_fn is None)
    torch.testing.assert_close(got, want, rtol=1e-2 if name == "autocast" else 1e-5, atol=1e-2)


def test_a_hit_raising_reads_as_the_users_error():
    """An error raised on the hit path (a planted one, raised in this file as a user's custom op
    would) reads as on Dynamo's path: the user's call, one line of parity, the failing line."""
    f = parity.compile(_gram, backend="onnx")
    x = torch.randn(4, 4)
    _twice(f, x)
    n, guards, state, depth, _ = f.fast_path.last

    def failing(a):
        raise ValueError("planted: the call failed")

    f.fast_path.last = (n, guards, state, depth, lambda a: failing(a))
    with pytest.raises(ValueError, match="planted") as caught:
        f(x)
    files = [entry.frame.code.path for entry in caught.traceback]
    names = [str(p).rsplit("/", 1)[-1] for p in files]
    assert names[1] == "api.py" and set(names[:1] + names[2:]) == {"test_fast_path_default.py"}, names
