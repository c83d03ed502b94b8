"""backend="auto" never fails a program a backend can run, whatever the cache holds: when every
candidate raced within the budget is rejected, the ones left out race; when none matches, the
graph runs in eager torch with one warning that says why; a pick or compile time stored while
a plugin (since uninstalled or upgraded) was installed is not read back."""

import inspect
import re
import time
import warnings
from types import SimpleNamespace

import numpy as np
import pytest
import torch

import parity
from parity.backends.base import ANY_OP, CompilePrior, Deviation
from parity.backends.registry import get_backend, register_backend, unregister_backend
from parity.frontend import auto, auto_compile_times, auto_installed, compiled_graph
from parity.frontend.errors import AutoFallbackWarning
from parity.ir.dtypes import DType

from . import test_auto
from .test_auto import Planted, _choice

planted = test_auto.planted  # the fixture that registers planted backends (and unregisters them after)

X = torch.tensor([-2.0, -0.5, 0.0, 1.0])


def _fn(x):
    return torch.relu(x * 2 + 1)


_FN_LINE = inspect.getsourcelines(_fn)[1] + 1  # the line of its body


@pytest.fixture(autouse=True)
def _fresh_installed():
    auto_installed.reset()
    yield
    auto_installed.reset()


def _new_process():
    """What a new process starts with: only the disk cache remembers."""
    auto._CHOICES.clear()
    auto_compile_times.reset()
    auto_installed.reset()
    compiled_graph.reset_caches()


# -- every candidate within the budget rejected: the rest race -------------------------------------


def test_when_every_raced_candidate_is_rejected_the_ones_left_out_race(planted):
    planted("planted_wrong_a", wrong_first=True)
    planted("planted_wrong_b", wrong_first=True)
    costly = planted("planted_costly")
    costly.compile_priors = (CompilePrior("cpu", per_graph_s=1000.0, per_node_s=0.0, basis="planted"),)
    options = parity.AutoOptions(budget_s=60, candidates=("planted_wrong_a", "planted_wrong_b", "planted_costly"))
    f = parity.compile(_fn, auto=options)
    with warnings.catch_warnings():
        warnings.simplefilter("error", AutoFallbackWarning)  # a backend matched: no fallback, no warning
        assert f(X).tolist() == [0.0, 0.0, 1.0, 3.0]
    choice, by_name = _choice(f)
    assert (choice.choice, choice.source) == ("planted_costly", "the only one that matched")
    assert costly.compiles == 1 and by_name["planted_costly"].status == "chosen"
    assert by_name["planted_costly"].why == "raced after every candidate within the budget was rejected"
    for name in ("planted_wrong_a", "planted_wrong_b"):
        assert by_name[name].status == "dropped" and "differs from eager torch" in by_name[name].why
    assert f(X * 2).tolist() == [0.0, 0.0, 1.0, 5.0]


def test_the_only_candidate_compiled_within_the_budget_is_checked_too(planted):
    """MobileViT's training once a plugin was uninstalled: onnx alone fitted the budget and ran its
    backward graph unchecked, off eager torch; with the plugin compiled beside it, the same onnx
    was dropped. Whatever else fits the budget, a candidate is checked before it is kept."""
    planted("planted_wrong", wrong_first=True)
    costly = planted("planted_costly")
    costly.compile_priors = (CompilePrior("cpu", per_graph_s=1000.0, per_node_s=0.0, basis="planted"),)
    f = parity.compile(_fn, auto=parity.AutoOptions(budget_s=60, candidates=("planted_wrong", "planted_costly")),
                       cache_dir=False)
    assert f(X).tolist() == [0.0, 0.0, 1.0, 3.0]
    choice, by_name = _choice(f)
    assert (choice.choice, choice.source) == ("planted_costly", "the only one that matched")
    assert by_name["planted_wrong"].status == "dropped" and "differs from eager torch" in by_name["planted_wrong"].why


def test_the_ones_left_out_compile_cheapest_first_until_one_matches(planted):
    """Past the budget auto wants a backend that runs the graph right, not the fastest: once one
    left out matches, a costlier one (Inductor's minutes) is not compiled."""
    planted("planted_wrong", wrong_first=True)
    priors = {"planted_dearer": 1000.0, "planted_dear": 100.0}  # listed dearest first: the order is by cost
    for name, seconds in priors.items():
        planted(name).compile_priors = (CompilePrior("cpu", per_graph_s=seconds, per_node_s=0.0, basis="planted"),)
    f = parity.compile(_fn, auto=parity.AutoOptions(budget_s=60, candidates=("planted_wrong", *priors)),
                       cache_dir=False)
    assert f(X).tolist() == [0.0, 0.0, 1.0, 3.0]
    choice, by_name = _choice(f)
    assert (choice.choice, choice.source) == ("planted_dear", "the only one that matched")
    assert get_backend("planted_dearer").compiles == 0 and by_name["planted_dearer"].status == "dropped"
    assert by_name["planted_dearer"].why.startswith("not raced: its declared cold-compile prior is 1000.00 s")


def test_the_only_candidate_compiled_within_the_budget_keeps_its_name_when_it_matches(planted):
    costly = planted("planted_costly")
    costly.compile_priors = (CompilePrior("cpu", per_graph_s=1000.0, per_node_s=0.0, basis="planted"),)
    right = planted("planted_right")
    f = parity.compile(_fn, auto=parity.AutoOptions(budget_s=60, candidates=("planted_right", "planted_costly")),
                       cache_dir=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", AutoFallbackWarning)
        assert f(X).tolist() == [0.0, 0.0, 1.0, 3.0]
    assert _choice(f)[0].source == "the only one compiled within the budget"
    assert costly.compiles == 0 and right.runs == 1  # checked once, no warm-up or timing of a lone candidate


class CrashesOnRun(Planted):
    """A backend that compiles, then raises on its first run (a runtime's bug, not the user's)."""

    def compile(self, graph, device):
        def call(*arrays):
            raise RuntimeError("planted runtime failure")

        return call


def test_a_lone_candidate_that_fails_on_the_first_inputs_is_dropped_not_raised(planted):
    """Before the lone candidate was checked, its failure reached the user's call."""
    register_backend(CrashesOnRun("planted_crashes"))
    costly = planted("planted_costly")
    costly.compile_priors = (CompilePrior("cpu", per_graph_s=1000.0, per_node_s=0.0, basis="planted"),)
    try:
        f = parity.compile(_fn, auto=parity.AutoOptions(budget_s=60, candidates=("planted_crashes", "planted_costly")),
                           cache_dir=False)
        assert f(X).tolist() == [0.0, 0.0, 1.0, 3.0]
    finally:
        unregister_backend("planted_crashes")
    choice, by_name = _choice(f)
    assert choice.choice == "planted_costly"
    assert by_name["planted_crashes"].why == ("failed on the first inputs: RuntimeError: planted runtime failure")


class Broken(Planted):
    """A backend whose compile fails."""

    def compile(self, graph, device):
        raise RuntimeError("planted compile failure")


def test_a_left_out_candidate_that_fails_to_compile_leaves_the_graph_to_eager_torch(planted):
    planted("planted_wrong_a", wrong_first=True)
    planted("planted_wrong_b", wrong_first=True)
    broken = Broken("planted_broken")
    broken.compile_priors = (CompilePrior("cpu", per_graph_s=1000.0, per_node_s=0.0, basis="planted"),)
    register_backend(broken)
    try:
        f = parity.compile(_fn, auto=parity.AutoOptions(
            budget_s=60, candidates=("planted_wrong_a", "planted_wrong_b", "planted_broken")), cache_dir=False)
        with pytest.warns(AutoFallbackWarning, match="planted_broken: failed to compile: RuntimeError: planted "
                                                     "compile failure"):
            assert f(X).tolist() == [0.0, 0.0, 1.0, 3.0]
    finally:
        unregister_backend("planted_broken")


# -- nothing matches: eager torch, one warning ------------------------------------------------------


def test_when_no_candidate_matches_the_graph_runs_in_eager_torch_with_one_warning(planted):
    a = planted("planted_wrong_a", wrong_first=True)
    planted("planted_wrong_b", wrong_first=True)
    f = parity.compile(_fn, auto=parity.AutoOptions(budget_s=60, candidates=("planted_wrong_a", "planted_wrong_b")))
    with pytest.warns(AutoFallbackWarning) as caught:
        assert f(X).tolist() == [0.0, 0.0, 1.0, 3.0]
    (warning,) = [w for w in caught if w.category is AutoFallbackWarning]
    assert (warning.filename, warning.lineno) == (__file__, _FN_LINE)  # the user's line
    text = str(warning.message)
    first, why_a, why_b, fix = text.splitlines()
    assert first == (f"parity: backend='auto' runs the inference graph at {__file__}:{_FN_LINE} in _fn in eager "
                     f"torch: no candidate backend matched eager torch")
    assert why_a.startswith("  why: planted_wrong_a: differs from eager torch on the first inputs: output 0: 4 of 4 "
                            "elements off (max abs error 1)"), why_a
    assert why_b.startswith("       planted_wrong_b: differs from eager torch on the first inputs: output 0:"), why_b
    assert fix.startswith("  fix: name a backend to run this graph on it anyway (parity.compile(..., "
                          "backend='planted_wrong_a')); and please report it")
    runs = a.runs
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # later calls: eager torch, no second warning
        assert f(X * 2).tolist() == [0.0, 0.0, 1.0, 5.0]
    assert a.runs == runs  # no candidate runs any more
    choice, _ = _choice(f)
    assert choice.runs_eagerly and choice.choice is None and str(choice.where) == f"{__file__}:{_FN_LINE} in _fn"
    assert "graph at" in str(parity.explain(f, X)) and "eager torch (no candidate matched eager torch" in \
        str(parity.explain(f, X))


def test_a_training_step_whose_graphs_no_candidate_matches_trains_in_eager_torch(planted):
    planted("planted_wrong_a", wrong_first=True)
    planted("planted_wrong_b", wrong_first=True)
    torch.manual_seed(0)
    model, reference = torch.nn.Linear(4, 3), torch.nn.Linear(4, 3)
    reference.load_state_dict(model.state_dict())
    f = parity.compile(model, auto=parity.AutoOptions(budget_s=60, candidates=("planted_wrong_a", "planted_wrong_b")))
    x = torch.randn(5, 4)
    with pytest.warns(AutoFallbackWarning) as caught:
        f(x).square().sum().backward()
    reference(x).square().sum().backward()
    kinds = [re.match(r"parity: backend='auto' runs the (\w+) graph", str(w.message)).group(1) for w in caught
             if w.category is AutoFallbackWarning]
    assert kinds == ["forward", "backward"]  # one warning per graph
    for got, want in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(got.grad, want.grad, rtol=0, atol=0)
    assert [c.runs_eagerly for c in parity.auto_choices(f)] == [True, True]


# -- a cache written while another set of backends was installed -----------------------------------


class SlowRuns(Planted):
    """onnx, 5 ms slower per call: it loses every race it is in."""

    def compile(self, graph, device):
        run = super().compile(graph, device)

        def call(*arrays):
            time.sleep(0.005)
            return run(*arrays)

        return call


def _install(monkeypatch, *names):
    """The backends the registry lists (built-ins and installed plugins), as auto sees them."""
    monkeypatch.setattr(auto, "backend_names", lambda: list(names))


def test_a_pick_made_for_a_plugin_since_uninstalled_is_not_used(planted, tmp_path, monkeypatch):
    planted("planted_plugin")
    slow = planted("planted_slow_runs")
    slow.__class__ = SlowRuns
    _install(monkeypatch, "planted_slow_runs", "planted_plugin")
    first = parity.compile(_fn, auto=parity.AutoOptions(budget_s=60), cache_dir=tmp_path)
    first(X)
    assert _choice(first)[0].choice == "planted_plugin"
    _install(monkeypatch, "planted_slow_runs")  # uninstalled; the next process shares only the disk
    unregister_backend("planted_plugin")
    _new_process()
    later = parity.compile(_fn, auto=parity.AutoOptions(budget_s=60), cache_dir=tmp_path)
    assert later(X).tolist() == [0.0, 0.0, 1.0, 3.0]
    choice, by_name = _choice(later)
    assert (choice.choice, choice.source) == ("planted_slow_runs", "only candidate") and "planted_plugin" not in by_name


def test_a_pick_made_among_another_set_of_backends_is_raced_again(planted, tmp_path, monkeypatch):
    """The uninstalled plugin did not even claim the graph's ops: the pick among the others is
    still one made with another set of backends installed, and is raced again."""
    planted("planted_plugin", unclaimed="mul")
    _install(monkeypatch, "onnx", "reference", "planted_plugin")
    options = parity.AutoOptions(budget_s=60, candidates=None)
    monkeypatch.setattr(auto, "NEVER_AUTO", {})  # the reference interpreter races too: no JAX to import
    first = parity.compile(_fn, auto=options, cache_dir=tmp_path)
    first(X)
    _new_process()
    again = parity.compile(_fn, auto=options, cache_dir=tmp_path)
    again(X)
    assert _choice(again)[0].source == "cached on disk"  # the control: the same set installed
    _install(monkeypatch, "onnx", "reference")
    unregister_backend("planted_plugin")
    _new_process()
    later = parity.compile(_fn, auto=options, cache_dir=tmp_path)
    assert later(X).tolist() == [0.0, 0.0, 1.0, 3.0]
    assert _choice(later)[0].source == "measured"


def test_a_compile_time_of_another_version_of_a_plugin_is_not_used(planted, tmp_path, monkeypatch):
    planted("planted_plugin")
    version = {"v": "1.0"}
    monkeypatch.setattr(auto_installed, "entry_points", lambda group: [
        SimpleNamespace(name="planted_plugin", dist=SimpleNamespace(version=version["v"]))])
    options = SimpleNamespace(device="cpu", cache_dir=str(tmp_path))
    assert auto_installed.backend_version("planted_plugin") == "1.0"
    auto_compile_times.record_compile("planted_plugin", options, 10, 5.0)
    _new_process()
    assert auto_compile_times.compile_floor("planted_plugin", options, 10) == 5.0  # the control: same version
    version["v"] = "2.0"  # upgraded
    _new_process()
    assert auto_installed.backend_version("planted_plugin") == "2.0"
    assert auto_compile_times.compile_floor("planted_plugin", options, 10) is None


# -- the check at underflow scale ------------------------------------------------------------------

FLUSHES = (Deviation(ANY_OP, "planted: flushes subnormals", "flush", dtype=DType.float32, device="cpu",
                     flush_to_zero=True),)


class Off(Planted):
    """onnx, with its float outputs moved by ``absolute`` and scaled by 1 + ``relative`` on every call."""

    def __init__(self, name, *, absolute=0.0, relative=0.0, flush=False, **kwargs):
        super().__init__(name, **kwargs)
        self.absolute, self.relative, self.flush = absolute, relative, flush

    def compile(self, graph, device):
        run = super().compile(graph, device)

        def call(*arrays):
            outputs = [(o * np.float32(1 + self.relative) + np.float32(self.absolute)).astype(o.dtype)
                       for o in run(*arrays)]
            if self.flush:  # subnormal results read as signed zeros
                outputs = [np.where(np.abs(o) < np.finfo(o.dtype).tiny, o * 0, o) for o in outputs]
            return outputs

        return call


def _race(plant, name, fn, *args, **kwargs):
    """``fn`` raced between onnx and the planted ``Off`` backend ``name``: that candidate's fate."""
    register_backend(Off(name, **kwargs))
    auto._CHOICES.clear()  # a race, not the pick of one before under the same name
    try:
        f = parity.compile(fn, auto=parity.AutoOptions(budget_s=60, candidates=(name, "onnx")), cache_dir=False)
        f(*args)
        return _choice(f)[1][name]
    finally:
        unregister_backend(name)


def _logits(features, weight):  # EfficientNet's classifier on underflowing features: logits ~1e-36
    return features @ weight


FEATURES = torch.linspace(1e-35, 3e-35, 2 * 320).reshape(2, 320)
WEIGHT = torch.linspace(-0.05, 0.05, 320 * 3).reshape(320, 3)


def test_a_flushing_backend_off_by_less_than_a_smallest_normal_at_underflow_scale_is_kept(planted):
    """XLA:CPU's logits on EfficientNet were off eager's by 7e-39 (values ~1e-36): it flushes the
    subnormal products, a deviation it declares; float32 does not resolve that difference."""
    kept = _race(planted, "planted_flushing", _logits, FEATURES, WEIGHT, absolute=7e-39, deviations=FLUSHES)
    assert kept.status in ("chosen", "timed"), kept.why


def test_the_same_difference_from_a_backend_that_does_not_flush_is_a_real_error(planted):
    dropped = _race(planted, "planted_exact", _logits, FEATURES, WEIGHT, absolute=7e-39)
    assert dropped.status == "dropped" and "differs from eager torch" in dropped.why


def test_a_relative_error_of_1e_3_on_normal_values_is_dropped_even_from_a_flushing_backend(planted):
    dropped = _race(planted, "planted_flushing", _logits, torch.randn(2, 320), WEIGHT, relative=1e-3,
                    deviations=FLUSHES)
    assert dropped.status == "dropped" and "differs from eager torch" in dropped.why


def test_a_wrong_subnormal_value_that_eager_resolves_is_dropped(planted):
    """x·2 on subnormal x is exact in eager (and in float64): a backend that does not flush and
    returns another subnormal is wrong; one that declares flushing may return its flushed 0."""
    x = torch.tensor([3e-39, -5e-39, 1e-40])  # all subnormal: no larger element sets the scale
    dropped = _race(planted, "planted_exact", lambda x: x * 2, x, absolute=3e-39)
    assert dropped.status == "dropped" and "differs from eager torch" in dropped.why
    flushed = _race(planted, "planted_flushing", lambda x: x * 2, x, flush=True, deviations=FLUSHES)
    assert flushed.status in ("chosen", "timed"), flushed.why
    wrong = _race(planted, "planted_flushing", lambda x: x * 2, x, absolute=3e-39, deviations=FLUSHES)
    assert wrong.status in ("chosen", "timed"), wrong.why  # within a smallest normal: flushing may give that
    unflushed = _race(planted, "planted_exact", lambda x: x * 2, x, flush=True)
    assert unflushed.status == "dropped", unflushed  # flushing, undeclared
