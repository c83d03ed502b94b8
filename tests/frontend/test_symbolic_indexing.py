"""Indexing, slicing and full reductions of tensors with symbolic dims: one captured graph,
run by the reference interpreter at several sizes against eager torch."""

import warnings

import numpy as np
import pytest
import torch

import parity
from parity.ir.errors import ParityError
from parity.ir.interpreter import evaluate


def _capture_and_run(fn, example, sizes, seq_min=2):
    dims = {0: torch.export.Dim("b"), 1: torch.export.Dim("s", min=seq_min)}
    graph = parity.capture(fn, example, dynamic_shapes=(dims,))
    assert not graph.inputs[0].type.is_static
    for batch, seq in sizes:
        x = torch.randn(batch, seq, 4)
        want = fn(x)
        got = evaluate(graph, [x.numpy()])
        for g, w in zip(got, want if isinstance(want, tuple) else (want,)):
            np.testing.assert_allclose(g, w.numpy(), rtol=1e-6, atol=1e-6)
    return graph


def test_advanced_indexing_of_symbolic_dims_with_negative_indices():
    """x[rows, cols] where the sizes needed to wrap -1 and to stride the flat index are symbolic."""

    def pick(x):
        rows = torch.arange(x.shape[0]).unsqueeze(1)
        cols = torch.arange(x.shape[1]).unsqueeze(0) - 1  # -1 reads the last position
        return x[rows, cols] * 2

    _capture_and_run(pick, torch.randn(2, 5, 4), [(1, 2), (2, 5), (7, 13)])


def test_index_put_into_symbolic_dims():
    def put(x):
        rows = torch.arange(x.shape[0])
        return torch.index_put(x, (rows, rows * 0), torch.ones(4), accumulate=True)

    _capture_and_run(put, torch.randn(2, 5, 4), [(1, 2), (2, 5), (7, 13)])


@pytest.mark.parametrize("window", [
    lambda x: x[:, -3:] * 2,  # a sliding-window cache keeps the last tokens
    lambda x: x[:, -3:-1] * 2,
    lambda x: x[:, :-1] * 2,
    lambda x: x[:, 0] * 2,  # a pooler's first token
    lambda x: x[:, -1] * 2,  # a decoder's last token
    lambda x: x[:, -2] * 2,
], ids=["last-3", "last-3-to-1", "all-but-last", "first", "last", "second-to-last"])
def test_slices_from_the_end_and_select_of_a_symbolic_dim(window):
    # torch guards seq >= 4 (seq == 3 would make x[:, -3:] all of x)
    _capture_and_run(window, torch.randn(2, 5, 4), [(1, 4), (2, 5), (7, 13)], seq_min=4)


def test_full_reductions_of_symbolic_dims():
    def reduce(x):
        return x.argmax(), torch.histc(x, bins=5, min=-1, max=1)

    _capture_and_run(reduce, torch.randn(2, 5, 4), [(1, 2), (2, 5), (7, 13)])


def test_the_last_token_of_a_symbolic_dim_in_every_export_format(tmp_path):
    """x[:, -1] with dynamic batch and seq: the ONNX file and the jax.export module run at
    (1, 1) and at sizes other than the example's, and match eager."""
    import jax
    import onnxruntime as ort

    def last(x):
        return x[:, -1] * 2

    dims = {"x": {0: "batch", 1: "seq"}}
    parity.export(last, (torch.randn(2, 5, 4),), path=tmp_path / "l.onnx", input_names=["x"], dynamic_dims=dims)
    module = parity.export(last, (torch.randn(2, 5, 4),), format="jax", path=tmp_path / "l.jax",
                           input_names=["x"], dynamic_dims=dims)
    session = ort.InferenceSession(str(tmp_path / "l.onnx"), providers=["CPUExecutionProvider"])
    for batch, seq in [(1, 1), (2, 7), (7, 3)]:
        x = torch.randn(batch, seq, 4)
        np.testing.assert_array_equal(session.run(None, {"x": x.numpy()})[0], last(x).numpy())
        np.testing.assert_array_equal(np.asarray(module.call(x.numpy())[0]), last(x).numpy())
    assert isinstance(module, jax.export.Exported)


def _counting_compile(fn):
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    return parity.compile(fn, backend="reference"), lambda: counters["stats"]["unique_graphs"]


def test_a_slice_whose_start_the_graph_computes_compiles_once():
    """x[k:k + 2] with k = max(0, n - 3) of another input's size: k is an i64[] value of the
    graph (torch.sym_max), so the slice is a dynamic_slice and one symbolic capture serves
    every size. Was a TranslationBug ('<' between a Value and an int)."""

    def window(x, y):
        k = max(0, y.shape[0] - 3)
        return x[k:k + 2] * 2

    x = torch.arange(16.0)
    compiled, captures = _counting_compile(window)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no PerShapeWarning: the slice has a symbolic form
        for n in (3, 4, 5, 9, 17):  # k + 2 <= 16 throughout: the same guards
            y = torch.zeros(n)
            assert torch.equal(compiled(x, y), window(x, y)), n
    assert captures() == 2  # the first static one, then one symbolic for 4, 5, 9 and 17


def test_a_length_with_max_takes_its_branch_under_a_guard_and_compiles_once_per_branch():
    """MPT's ALiBi bias cut to the keys, bias[:, :, max(0, 16 - s):]: its length is
    16 - Max(0, 16 - s), and IR dims have no Max. parity.compile takes the branch the example
    takes (16 - s >= 0, so the length is s) with a guard among the capture's guards
    (frontend/sizes.py, guarded_branches): one compile serves every s <= 16, and s > 16 fails the
    guard and compiles the other branch. It compiled per shape before (a compile per size).
    Dynamo captures it no more often than torch.compile does."""
    from parity.frontend.compiled_graph import STATS

    def alibi(bias, keys):
        return bias[:, :, max(0, bias.size(2) - keys.shape[-2]):] * 2

    sizes = (3, 4, 5, 6, 7, 8, 9, 10, 11, 16, 20, 31)
    bias = torch.randn(4, 1, 16)
    compiled, captures = _counting_compile(alibi)
    translations = STATS["translations"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no PerShapeWarning
        for s in sizes:
            keys = torch.randn(1, 4, s, 8)
            assert torch.equal(compiled(bias, keys), alibi(bias, keys)), s
    assert STATS["translations"] - translations == 3  # static at 3; symbolic for 4..16; the other branch
    ours = captures()
    anchor, captures = _counting_compile(alibi)
    anchor = torch.compile(alibi, backend="eager")
    for s in sizes:
        anchor(bias, torch.randn(1, 4, s, 8))
    assert ours == captures() == 3  # static, symbolic while s <= 16, and s > 16 (Max's other branch)


def test_a_strided_cut_with_a_max_length_keeps_eagers_numbers():
    """bias[:, :, max(0, 16 - s)::2]: the last-elements form of a symbolic-length cut holds for
    step 1 only; with step 2 it took the wrong elements (same shapes, other numbers)."""

    def every_other(bias, keys):
        return bias[:, :, max(0, bias.size(2) - keys.shape[-2])::2] * 2

    bias = torch.randn(4, 1, 16)
    compiled, _ = _counting_compile(every_other)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # its PerShapeWarning: a strided cut has no symbolic form
        for s in (3, 4, 5, 6, 9):
            keys = torch.randn(1, 4, s, 8)
            assert torch.equal(compiled(bias, keys), every_other(bias, keys)), s


def test_export_refuses_a_length_with_max_instead_of_narrowing_the_dim(tmp_path):
    """parity.export has no guards to fall back on: a dynamic dim whose slice length needs Max
    is refused naming it (here torch.export's own constraint check refuses first), never exported
    for one branch only."""

    def alibi(bias, keys):
        return bias[:, :, max(0, bias.size(2) - keys.shape[-2]):] * 2

    with pytest.raises((ParityError, torch._dynamo.exc.UserError), match="(?i)max"):
        parity.export(alibi, (torch.randn(4, 1, 16), torch.randn(1, 4, 5, 8)), path=tmp_path / "a.onnx",
                      input_names=["bias", "keys"], dynamic_dims={"keys": {2: "s"}})


def test_a_max_size_takes_the_branch_of_its_example_with_a_guard_only_where_guards_are_kept():
    """frontend/sizes.py on a ShapeEnv of its own: 16 - Max(0, 16 - s) at s = 4 is s, with the
    guard 16 - s >= 0 recorded; outside guarded_branches (export, a backward graph) it is refused
    and no guard is added."""
    from torch._dynamo.source import ConstantSource
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    from parity.frontend.sizes import UntranslatedCase, dim_of, guarded_branches

    env = ShapeEnv()
    s = env.create_symintnode(env.create_symbol(4, ConstantSource("s")), hint=4)
    size = 16 - torch.sym_max(0, 16 - s)
    with pytest.raises(UntranslatedCase, match="uses Max, which IR dims do not have"):
        dim_of(size)
    assert env.guards == []
    with guarded_branches():
        dim = dim_of(size)
    assert str(dim) == str(s.node.expr)
    assert [str(g.expr) for g in env.guards] == [f"16 - {s.node.expr} >= 0"]
    smaller = 16 - torch.sym_min(16, s + 20)  # Min's branch too: the other argument wins here
    with guarded_branches():
        assert dim_of(smaller) == 0
    env.freeze()  # its guards are built: a new one would be dropped, so the branch is refused
    later = 8 - torch.sym_max(0, 8 - s)
    with guarded_branches(), pytest.raises(UntranslatedCase, match="uses Max"):
        dim_of(later)
