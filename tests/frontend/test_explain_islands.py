"""Every warning parity gives about code that runs in eager torch promises that
``parity.explain`` lists it: here each kind's promise is checked against explain's list (same
line, same reason, as many islands as warnings). frontend/graph_breaks.py, explain.py,
recompile_limit.py."""

import warnings

import pytest
import torch

import parity
from parity.frontend.graph_breaks import GraphBreakWarning, RecompileLimitWarning

from .test_partition import _NoTanh, backend  # noqa: F401 - the fixture registers the no-tanh backend


@pytest.fixture(autouse=True)
def _fresh():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _warned(fn, *args, category=GraphBreakWarning):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn(*args)
    return [w for w in caught if issubclass(w.category, category)]


def _kept(islands, kind):
    return [i for i in islands if i.kind == kind]


def _promise_kept(warned, islands, kind):
    """As many islands of ``kind`` as warnings, each at the warning's line, with its reason."""
    listed = _kept(islands, kind)
    assert len(listed) == len(warned) >= 1, (kind, [str(w.message) for w in warned], islands)
    for w, island in zip(warned, listed):
        assert (w.filename, w.lineno) == (island.loc.file, island.loc.line)
        assert island.why in str(w.message)


def unique_values(x):
    return torch.unique(x)  # a break with no graph on either side: explain once said "0 graph break(s)"


def test_a_graph_break_with_no_graph_around_it_is_listed():
    compiled, x = parity.compile(unique_values, backend="reference"), torch.tensor([3.0, 1.0, 3.0])
    warned = _warned(compiled, x)
    assert "parity.explain(fn, *args) lists every break" in str(warned[0].message)
    report = parity.explain(compiled, x)
    _promise_kept(warned, report.islands, "graph break")
    assert "1 graph break(s)" in str(report) and "eager islands: 1 graph break" in str(report)


def two_breaks(x):
    print("", end="")  # Dynamo breaks at print
    y = torch.nonzero(x).sum() + x.sum()
    return y


def test_every_break_of_a_function_is_listed_once():
    compiled, x = parity.compile(two_breaks, backend="reference"), torch.tensor([0.0, 2.0, 3.0])
    warned = _warned(compiled, x)
    _promise_kept(warned, parity.explain(compiled, x).islands, "graph break")


def scatter_rows(x, v, mask):
    return torch.index_put(x, (mask,), v).sin()  # its gradient is grad[mask]: a data-dependent size


def test_a_frame_skipped_for_a_data_dependent_gradient_is_listed():
    args = (torch.randn(5, 3, requires_grad=True), torch.randn(3, requires_grad=True),
            torch.tensor([True, False, True, False, False]))
    compiled = parity.compile(scatter_rows, backend="reference")
    warned = _warned(compiled, *args)
    assert "has an output whose size depends on the data" in str(warned[0].message)
    _promise_kept(warned, parity.explain(compiled, *args).islands, "skipped frame")


def two_tanhs(x):
    return torch.tanh(x) + torch.tanh(x * 2)


def test_strict_false_fallbacks_are_listed_per_op_with_their_nodes(backend):  # noqa: F811
    compiled, x = parity.compile(two_tanhs, backend=backend.name, strict=False), torch.randn(3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled(x)
    warned = [w for w in caught if str(w.message).startswith("parity:")]
    report = parity.explain(compiled, x, backends=[backend.name])
    _promise_kept(warned, report.islands, "strict=False fallback")
    (island,) = _kept(report.islands, "strict=False fallback")
    # the warning names the op once; its two nodes are what the share line counts
    assert (island.op, island.count) == ("aten.tanh.default", 2) and island.op in str(warned[0].message)
    assert f"{backend.name} 2/4 (1 op (2 aten nodes) in eager torch with strict=False)" in str(report)
    assert "strict=False fallback at" in str(report) and "aten.tanh.default (2 aten nodes)" in str(report)


def scaled(x, k):
    return x * k


def test_a_recompile_limit_is_listed_at_the_warned_line():
    # dynamic=False: by default the number becomes symbolic at the second call, with no limit to reach
    compiled, x = parity.compile(scaled, backend="reference", dynamic=False), torch.ones(2)
    warned = []
    with torch._dynamo.config.patch(recompile_limit=2):
        for k in (2, 3, 4, 5):  # each new Python number recompiles; the third reaches the limit
            warned += _warned(compiled, x, k, category=RecompileLimitWarning)
        report = parity.explain(compiled, x, 6)
    _promise_kept(warned, report.islands, "recompile limit")


def test_a_function_that_runs_whole_on_the_backend_has_no_island():
    report = parity.explain(parity.compile(lambda x: x * 2, backend="reference"), torch.ones(2))
    assert report.islands == [] and "eager islands: none" in str(report)


def tanhs_and_exp(x):
    return torch.tanh(x) + torch.tanh(x * 2) + torch.exp(x)


@pytest.fixture
def no_tanh_nor_exp():
    from parity.backends.base import OpClaim
    from parity.backends.reference import ReferenceBackend
    from parity.backends.registry import register_backend, unregister_backend

    class NoTanhNorExp(ReferenceBackend):
        name = "islands_no_tanh_exp"

        def claims(self):
            return {op: c for op, c in super().claims().items() if op not in ("tanh", "exp")} | {
                "add": OpClaim(super().claims()["add"].dtypes)}

    register_backend(NoTanhNorExp())
    yield NoTanhNorExp.name
    unregister_backend(NoTanhNorExp.name)


def test_the_warning_and_explain_count_eager_fallbacks_the_same_way(no_tanh_nor_exp):
    """Three aten nodes of two ops run eagerly: the warning and parity.explain both say
    "2 ops (3 aten nodes)" (frontend/errors.py eager_count_text), in its islands and its share line."""
    compiled, x = parity.compile(tanhs_and_exp, backend=no_tanh_nor_exp, strict=False), torch.randn(3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled(x)
    (warned,) = [str(w.message) for w in caught if str(w.message).startswith("parity:")]
    assert warned.splitlines()[0] == f"parity: 2 ops (3 aten nodes) run eagerly in torch, not on backend " \
                                     f"{no_tanh_nor_exp!r}"
    text = str(parity.explain(compiled, x, backends=[no_tanh_nor_exp]))
    assert "strict=False fallback of 2 ops (3 aten nodes)" in text
    assert "(2 ops (3 aten nodes) in eager torch with strict=False)" in text


class _Tagger(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed, self.lstm, self.head = torch.nn.Embedding(20, 8), torch.nn.LSTM(8, 8, batch_first=True), \
            torch.nn.Linear(8, 3)

    def forward(self, tokens):
        hidden, _ = self.lstm(self.embed(tokens))
        return self.head(hidden)


def test_an_lstm_dynamo_leaves_to_eager_torch_is_named_at_compile_and_listed():
    """Dynamo leaves nn.LSTM to eager torch (here the whole forward: no graph, no graph break on
    record, so torch.compile says nothing); parity names it and explain lists it."""
    tagger, tokens = _Tagger(), torch.randint(0, 20, (2, 5))
    made = []
    warned = _warned(lambda: made.append(parity.compile(tagger, backend="onnx")))
    (warning,) = warned
    assert warning.filename == __file__  # the parity.compile line
    message = str(warning.message)
    assert message.startswith("parity.compile: 1 recurrent module(s) will run in eager torch, not on 'onnx'")
    assert "'lstm' (nn.RNN/GRU/LSTM): Dynamo leaves nn.RNN, nn.GRU and nn.LSTM to eager torch" in message
    assert "fix: set torch._dynamo.config.allow_rnn = True before the first call" in message
    report = parity.explain(made[0], tokens)
    _promise_kept(warned, report.islands, "skipped frame")
    assert "0 graph(s)" in str(report)


def test_with_allow_rnn_the_lstm_compiles_and_nothing_is_said():
    tagger, tokens = _Tagger(), torch.randint(0, 20, (2, 5))
    with torch._dynamo.config.patch(allow_rnn=True):
        assert _warned(lambda: parity.compile(tagger, backend="onnx")(tokens)) == []
        report = parity.explain(parity.compile(tagger, backend="onnx"), tokens)
    assert report.islands == [] and "1 graph(s)" in str(report)
    with torch._dynamo.config.patch(allow_rnn=True):
        torch.testing.assert_close(parity.compile(tagger, backend="onnx")(tokens), tagger(tokens), rtol=1e-5,
                                   atol=1e-6)
