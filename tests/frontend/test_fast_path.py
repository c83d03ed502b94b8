"""fast_path=True: a signature seen before skips Dynamo, only where that changes nothing."""

import torch

import parity


def _compile(fn, backend="onnx"):
    return parity.compile(fn, backend=backend, fast_path=True)


def test_a_pure_function_gets_one_entry_per_signature():
    # static sizes: with automatic dynamic the second shape's graph is symbolic, which takes Dynamo's path
    f = parity.compile(lambda x: torch.relu(x * 2 + 1), backend="onnx", fast_path=True, dynamic=False)
    for x in (torch.randn(4, 4), torch.randn(4, 4), torch.randn(3), torch.randn(3)):
        torch.testing.assert_close(f(x), torch.relu(x * 2 + 1))
    assert len(f.fast_path.entries) == 2
    xt = torch.randn(4, 4).t()  # other strides: another signature
    torch.testing.assert_close(f(xt), torch.relu(xt * 2 + 1))


def test_entries_serve_new_values_and_tuples(monkeypatch):
    f = _compile(lambda x, y: (x + y, x * y), backend="xla")
    x, y = torch.randn(5), torch.randn(5)
    f(x, y)
    (entry,) = f.fast_path.entries.values()
    a, b = torch.randn(5), torch.randn(5)
    got = f(a, b)
    assert type(got) is tuple
    torch.testing.assert_close(got, (a + b, a * b))


def test_requires_grad_keeps_dynamo_and_trains():
    f = _compile(lambda x: (x * x).sum())
    x = torch.randn(3, requires_grad=True)
    f(x).backward()
    torch.testing.assert_close(x.grad, 2 * x.detach())
    assert f.fast_path.entries == {}


def test_closure_tensors_and_graph_breaks_get_no_entry():
    w = torch.ones(4)
    closure = _compile(lambda x: x * w)
    closure(torch.randn(4))
    assert closure.fast_path.entries == {}

    seen = []

    def breaks(x):
        y = x + 1
        seen.append(1)  # Python work between graphs: must run on every call
        return y * 2

    g = _compile(breaks)
    g(torch.randn(4))
    g(torch.randn(4))
    assert len(seen) == 2 and g.fast_path.entries == {}


def bump(x):
    x.add_(1)  # an input mutation: AOTAutograd's wrapper writes it back
    return x * 2


def test_input_mutation_still_happens_on_the_fast_path():
    f = _compile(bump)
    x = torch.zeros(3)
    f(x)
    out = f(x)
    assert len(f.fast_path.entries) == 1
    assert x.tolist() == [2.0, 2.0, 2.0] and out.tolist() == [4.0, 4.0, 4.0]


def test_grad_mode_is_part_of_the_signature():
    f = _compile(lambda x: x.sin())
    x = torch.randn(3)
    f(x)
    with torch.no_grad():
        f(x)
    assert len(f.fast_path.entries) == 2


def test_a_print_before_the_graph_keeps_running():
    printed = []

    def logs(x):
        printed.append("call")  # a side effect Dynamo replays
        print("calling")  # a graph break
        return x * 2

    f = _compile(logs)
    for _ in range(3):
        torch.testing.assert_close(f(torch.ones(2)), torch.full((2,), 2.0))
    assert printed == ["call"] * 3 and f.fast_path.entries == {}


COUNTER = 0


def _counts(x):
    global COUNTER
    COUNTER += 1
    return x + 1


class _Box:
    n = 0


def test_global_and_attribute_stores_keep_running():
    global COUNTER
    COUNTER = 0
    f = _compile(_counts)
    box = _Box()

    def stores(x):
        box.n += 1
        return x - 1

    g = _compile(stores)
    for _ in range(3):
        f(torch.ones(2))
        g(torch.ones(2))
    assert COUNTER == 3 and box.n == 3
    assert f.fast_path.entries == {} and g.fast_path.entries == {}


def test_arguments_sharing_memory_take_dynamo():
    f = _compile(lambda x, y: x + 2 * y)
    x = torch.ones(3)
    f(x, x)
    f(x, x)
    assert f.fast_path.entries == {}
    a, b = torch.ones(3), torch.zeros(3)
    torch.testing.assert_close(f(a, b), a + 2 * b)
    torch.testing.assert_close(f(a, b), a + 2 * b)
    assert len(f.fast_path.entries) == 1
    torch.testing.assert_close(f(b, b[:]), 3 * b)  # a view of the same storage: not the entry's case


def test_graph_inputs_in_another_order_or_unused():
    f = _compile(lambda x, y, unused: 2 * y - x)
    for _ in range(2):
        x, y, z = torch.randn(3), torch.randn(3), torch.randn(3)
        torch.testing.assert_close(f(x, y, z), 2 * y - x)
    assert len(f.fast_path.entries) == 1


def _ran(f, *args) -> list[tuple[str, str]]:
    """(file, function) of every Python function called during f(*args)."""
    import sys

    seen = []

    def profile(frame, event, arg):
        if event == "call":
            seen.append((frame.f_code.co_filename, frame.f_code.co_name))

    sys.setprofile(profile)
    try:
        f(*args)
    finally:
        sys.setprofile(None)
    return seen


def _through_aotautograd(ran) -> bool:
    return any("_functorch" in file or "_dynamo" in file for file, _ in ran)


def test_a_plain_inference_entry_skips_aotautograds_wrapper():
    """Nothing to write back or regenerate: a hit runs parity's graph positionally (no boxed
    CompiledGraph call), with neither Dynamo nor AOTAutograd's wrapper in between."""
    f = _compile(lambda x: torch.relu(x * 2 + 1))
    x = torch.randn(4, 4)
    f(x)
    ran = _ran(f, x)
    assert not _through_aotautograd(ran)
    assert any(file.endswith("compiled_graph.py") for file, _ in ran)  # CompiledGraph.positional's call
    assert not any(file.endswith("compiled_graph.py") and name == "__call__" for file, name in ran)
    torch.testing.assert_close(f(torch.ones(4, 4)), torch.full((4, 4), 3.0))


def test_an_input_mutation_keeps_aotautograds_wrapper():
    """AOTAutograd writes the mutation back: the graph returns one more output than the
    user sees, so the entry keeps the wrapper (and the mutation still happens)."""
    f = _compile(bump)
    x = torch.zeros(3)
    f(x)
    ran = _ran(f, x)
    assert _through_aotautograd(ran)
    assert ("compiled_graph.py", "__call__") in {(file.rsplit("/", 1)[-1], name) for file, name in ran}
    assert x.tolist() == [2.0, 2.0, 2.0]
