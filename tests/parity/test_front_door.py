"""The first hour with parity.compile, driven as a new user drives it (issue 27, items 2, 4, 5, 6).

Every decorator form gives eager's numbers; an error in the user's own code reads as
eager torch's, within a line budget; every warning and IR location names the user's
file and line; every piece that runs in eager torch warns once, raises under
``fullgraph=True`` and is listed by ``parity.explain``. docs/troubleshooting.md is
built from these cases."""

import functools
import subprocess
import sys
import warnings

import pytest
import torch

import parity
from parity.backends.reference.backend import ReferenceBackend
from parity.backends.registry import register_backend, unregister_backend
from parity.frontend.errors import FallbackWarning, UnsupportedAtenOp
from parity.frontend.graph_breaks import GraphBreakError, GraphBreakWarning
from parity.frontend.recompile_limit import RecompileLimitError
from parity.ir.errors import ParityError

X = torch.linspace(-2.0, 2.0, 12).reshape(3, 4)


def line_of(fn, text: str) -> int:
    """The line number in this file of the first line of ``fn`` holding ``text``."""
    import inspect

    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


# -- item 2: every decorator form, against eager ------------------------------------------


def shift(x, k):
    return torch.relu(x) + k  # exact ops: bit-equal to eager


class Scaled:
    k = 3.0

    def __init__(self, w):
        self.w = w

    @parity.compile(backend="onnx")
    def project(self, x):  # any method, decorated in the class body
        return x @ self.w

    @staticmethod
    @parity.compile(backend="onnx")
    def static_below(x):
        return x - 1

    @parity.compile(backend="onnx")
    @staticmethod
    def static_above(x):
        return x - 2

    @classmethod
    @parity.compile(backend="onnx")
    def class_below(cls, x):
        return x * cls.k

    @parity.compile(backend="onnx")
    @classmethod
    def class_above(cls, x):
        return x * cls.k + 1


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 2)

    @parity.compile(backend="onnx")
    def forward(self, x):  # the first thing a user tries
        return torch.relu(self.lin(x))

    def head(self, x):
        return self.lin(x) * 2


def test_functions_partials_lambdas_and_both_decorator_spellings():
    @parity.compile
    def bare(x):
        return torch.maximum(x, -x)

    @parity.compile(backend="xla")
    def with_arguments(x):
        return x * 2 - 1

    assert torch.equal(bare(X), torch.maximum(X, -X))
    assert torch.equal(with_arguments(X), X * 2 - 1)
    assert torch.equal(parity.compile(functools.partial(shift, k=3.0), backend="onnx")(X), shift(X, 3.0))
    assert torch.equal(parity.compile(lambda x: torch.relu(x) + 1, backend="onnx")(X), torch.relu(X) + 1)


@pytest.mark.parametrize("fast_path", [None, False])
@pytest.mark.parametrize("inner_ran_alone", [False, True])
def test_a_compiled_function_calling_another(fast_path, inner_ran_alone):
    """Traced inline into the caller's one graph (as torch.compile does with nested calls),
    with no graph break, whether or not the inner function has run (and made a fast-path
    entry) on its own."""
    inner = parity.compile(lambda x: x * 2, backend="onnx", fast_path=fast_path)
    if inner_ran_alone:
        assert torch.equal(inner(X), X * 2)

    @parity.compile(backend="onnx", fast_path=fast_path)
    def outer(x):
        return inner(x) + 1

    with warnings.catch_warnings():
        warnings.simplefilter("error", GraphBreakWarning)
        assert torch.equal(outer(X), X * 2 + 1)
        assert torch.equal(outer(X), X * 2 + 1)
    report = parity.explain(outer, X)
    assert len(report.graphs) == 1 and not report.breaks


def test_methods_bind_per_instance_and_static_and_class_methods_stay_so():
    first, second = Scaled(torch.randn(4, 2)), Scaled(torch.randn(4, 2))
    # two instances with different weights through one decorated method: each its own
    torch.testing.assert_close(first.project(X), X @ first.w)
    torch.testing.assert_close(second.project(X), X @ second.w)
    assert not torch.allclose(first.project(X), second.project(X))
    assert torch.equal(Scaled.static_below(X), X - 1) and torch.equal(first.static_above(X), X - 2)
    assert torch.equal(Scaled.class_below(X), X * 3) and torch.equal(first.class_above(X), X * 3 + 1)


def test_forward_decorated_in_the_class_body_and_a_bound_method():
    torch.manual_seed(0)
    one, two = Net(), Net()
    for net in (one, two):
        with torch.no_grad():
            expected = torch.relu(net.lin(X))
        torch.testing.assert_close(net(X), expected)
    head = parity.compile(one.head, backend="onnx")  # applied to a bound method
    torch.testing.assert_close(head(X), one.lin(X) * 2)


# -- item 4: an error in the user's own code reads like eager's ---------------------------

#: per error class, the user's function body; each runs eagerly and under parity.compile
USER_ERRORS = {
    "shape": "    return x @ w",
    "index": "    return x[:, 7] + w.sum()",
    "type": "    return torch.cat([x, w.shape])",
    "own raise": "    if x.shape[0] != w.shape[0]:\n        raise ValueError('x and w need as many rows')\n    return x",
}

#: a user's script: every case, eagerly and compiled, each traceback printed as the
#: interpreter prints an uncaught one (chains included), after a marker line on stderr
SCRIPT = """\
import sys, traceback, torch, parity

{functions}

for name, fn in CASES.items():
    for mode, call in (("eager", fn), ("parity", parity.compile(fn, backend="onnx"))):
        print(f"=== {{name}} {{mode}}", file=sys.stderr, flush=True)
        try:
            call(torch.ones(2, 3), torch.ones(4, 8))
        except Exception:
            traceback.print_exc()
        sys.stderr.flush()


def user_item(x):
    return x * x.sum().item()


print("=== item break parity", file=sys.stderr, flush=True)
parity.compile(user_item, backend="onnx")(torch.ones(3))
"""

#: the most lines the compiled case may print beyond eager's own traceback: parity's one
#: frame (its file line and its code line)
LINE_BUDGET_OVER_EAGER = 2


@pytest.fixture(scope="module")
def user_error_output(tmp_path_factory) -> dict[str, list[str]]:
    functions, names = [], []
    for k, (name, body) in enumerate(USER_ERRORS.items()):
        functions.append(f"def user_code_{k}(x, w):\n{body}\n")
        names.append(f"{name!r}: user_code_{k}")
    functions.append("CASES = {" + ", ".join(names) + "}")
    script = tmp_path_factory.mktemp("user") / "user_script.py"
    script.write_text(SCRIPT.format(functions="\n\n".join(functions)))
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    output, current = {"script": [str(script), script.read_text()]}, None
    for line in run.stderr.splitlines():
        if line.startswith("=== "):
            current = output.setdefault(line[4:], [])
        elif current is not None:
            current.append(line)
    return output


@pytest.mark.parametrize("case", sorted(USER_ERRORS))
def test_user_error_is_eagers_error_within_a_line_budget(user_error_output, case):
    eager, compiled = user_error_output[f"{case} eager"], user_error_output[f"{case} parity"]
    assert compiled[-1] == eager[-1]  # the type and message eager torch raises
    assert len(compiled) <= len(eager) + LINE_BUDGET_OVER_EAGER, "\n".join(compiled)
    text = "\n".join(compiled)
    user_frames = [line for line in compiled if line.startswith("  File ")]
    assert "user_script.py" in user_frames[-1] and "user_code" in user_frames[-1]  # the user's line is last
    for noise in ("fake_tensor", "torch/_dynamo", "During handling", "The above exception", "TorchRuntimeError"):
        assert noise not in text, text


def test_a_graph_break_prints_parity_s_warning_alone(user_error_output):
    script, text = user_error_output["script"]
    line = 1 + text.splitlines().index("    return x * x.sum().item()")
    printed = user_error_output["item break parity"]
    assert printed[0].startswith(f"{script}:{line}: GraphBreakWarning: parity.compile: Dynamo split the function at "
                                 f"{script}:{line} in user_item")
    assert len(printed) == 4 and printed[-1].strip() == "return x * x.sum().item()", "\n".join(printed)


# -- item 5: warnings and IR locations name the user's code -------------------------------


def _reference_without(name: str, ops: set[str]):
    """The reference backend without ``ops``, registered as ``name`` (unregistered after the test):
    those ops fall back to eager torch under strict=False."""
    backend = ReferenceBackend()
    backend.name = name
    claims = {op: claim for op, claim in backend.claims().items() if op not in ops}
    backend.claims = lambda: claims
    register_backend(backend)
    yield backend.name
    unregister_backend(backend.name)


@pytest.fixture
def no_tanh():
    yield from _reference_without("front_door_no_tanh", {"tanh"})


@pytest.fixture
def no_tanh_nor_exp():
    yield from _reference_without("front_door_no_tanh_exp", {"tanh", "exp"})


@pytest.fixture
def no_sign():
    yield from _reference_without("front_door_no_sign", {"sign"})


def uses_tanh(x):
    y = x * 2
    return torch.tanh(y) + 1


def breaks_at_nonzero(x):
    y = x * 2
    count = torch.nonzero(y > 0).shape[0]
    return y.sum() + count


def breaks_at_item(x):
    return x * x.sum().item()


def breaks_at_print(x):
    y = x + 1
    print("front door", end="")
    return y * 2


@torch._dynamo.disable
def kept_eager(y):
    return y * 3


def calls_a_disabled_function(x):
    return kept_eager(x + 1) - 1  # Dynamo runs kept_eager outside the graph


def ends_at_nonzero(x):
    return torch.nonzero(x)  # no graph on either side of the break


def _warnings_of(fn, *args, category):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn(*args)
    return result, [w for w in caught if issubclass(w.category, category)]


def test_fallback_warning_names_the_users_line(no_tanh):
    f = parity.compile(uses_tanh, backend=no_tanh, strict=False)
    out, caught = _warnings_of(f, X, category=FallbackWarning)
    torch.testing.assert_close(out, uses_tanh(X))
    (w,) = caught
    assert (w.filename, w.lineno) == (__file__, line_of(uses_tanh, "torch.tanh"))
    assert "aten.tanh.default" in str(w.message) and "runs eagerly in torch" in str(w.message)
    assert _warnings_of(f, X, category=FallbackWarning)[1] == []  # once


def tanh_then_exp(x):
    y = torch.tanh(x)
    print("", end="")  # a graph break: two graphs in one call
    return torch.exp(y) + 1


def test_strict_false_warns_once_per_call_listing_every_eager_op_and_its_line(no_tanh_nor_exp):
    f = parity.compile(tanh_then_exp, backend=no_tanh_nor_exp, strict=False)
    out, caught = _warnings_of(f, X, category=FallbackWarning)
    torch.testing.assert_close(out, tanh_then_exp(X))
    (w,) = caught
    tanh_line, exp_line = line_of(tanh_then_exp, "torch.tanh"), line_of(tanh_then_exp, "torch.exp")
    assert (w.filename, w.lineno) == (__file__, tanh_line)
    claim = f"backend {no_tanh_nor_exp!r} does not claim the IR op"
    assert str(w.message).splitlines() == [
        f"parity: 2 ops (2 aten nodes) run eagerly in torch, not on backend {no_tanh_nor_exp!r}",
        f"  aten.tanh.default at {__file__}:{tanh_line} in tanh_then_exp ({claim} 'tanh')",
        f"  aten.exp.default at {__file__}:{exp_line} in tanh_then_exp ({claim} 'exp')"]
    assert _warnings_of(f, X, category=FallbackWarning)[1] == []  # once


def abs_sum(x):
    return (x.abs() * 3).sum()  # abs's gradient is sign(x): only the backward needs sign


def test_an_op_only_the_backward_runs_eagerly_warns_at_the_first_backward(no_sign):
    f = parity.compile(abs_sum, backend=no_sign, strict=False)
    x = X.clone().requires_grad_()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loss = f(x)
        assert [w for w in caught if issubclass(w.category, FallbackWarning)] == []  # the forward runs whole
        loss.backward()
    (w,) = [w for w in caught if issubclass(w.category, FallbackWarning)]
    line = line_of(abs_sum, "x.abs()")
    assert (w.filename, w.lineno) == (__file__, line)
    assert str(w.message) == (f"parity: aten.sign.default at {__file__}:{line} in abs_sum runs eagerly in torch, not "
                              f"on backend {no_sign!r} (backend {no_sign!r} does not claim the IR op 'sign')")
    assert torch.equal(x.grad, 3 * torch.sign(X))


def test_layers_of_a_sequential_compiled_as_it_is_are_located_at_the_compile_call(no_tanh):
    seq = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh())
    compiled, line = parity.compile(seq, backend=no_tanh, strict=False), sys._getframe().f_lineno
    out, caught = _warnings_of(compiled, X, category=FallbackWarning)
    torch.testing.assert_close(out, seq(X))
    (w,) = caught  # only torch's nn files called the layers: the user's line is the compile call
    assert (w.filename, w.lineno) == (__file__, line)
    assert f"aten.tanh.default at {__file__}:{line} in " in str(w.message)
    with pytest.raises(UnsupportedAtenOp, match=rf"aten.tanh.default at .*test_front_door.py:{line + 7} in "):
        parity.compile(seq, backend=no_tanh)(X)


@pytest.mark.parametrize("fn,text", [(breaks_at_nonzero, "torch.nonzero"), (breaks_at_item, "item()"),
                                     (breaks_at_print, "print(\"front"), (ends_at_nonzero, "torch.nonzero"),
                                     (calls_a_disabled_function, "kept_eager(x")])
def test_every_graph_break_warns_once_at_the_users_line(fn, text):
    f = parity.compile(fn, backend="onnx")
    x = torch.tensor([-1.0, 2.0, 3.0])
    out, caught = _warnings_of(f, x, category=GraphBreakWarning)
    assert torch.equal(out, fn(x))
    (w,) = caught
    assert (w.filename, w.lineno) == (__file__, line_of(fn, text))
    assert str(w.message).startswith(f"parity.compile: Dynamo split the function at {__file__}:{w.lineno}")
    assert "runs in eager torch, not on 'onnx'" in str(w.message) and "fullgraph=True" in str(w.message)
    assert _warnings_of(f, x, category=GraphBreakWarning)[1] == []  # once per break


def test_capture_of_a_sequential_locates_every_node_in_the_users_file():
    seq = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)  # torch's own deprecation noise is silenced at parity's call
        graph = parity.capture(seq, X)
    assert graph.nodes and {node.loc.file for node in graph.nodes} == {__file__}


def doubles(x):
    return x * 2


def scales(x, k):
    return x * k


#: per guard Dynamo keeps failing: the function, its arguments at call n, and parity's why and
#: fix lines for the call after ``limit`` compilations
RECOMPILES = {
    "size": (doubles, lambda n: (torch.ones(n),),
             lambda limit: (f"the size of x at dim 0 changed ({limit} when compiled, {limit + 1} now): the graph "
                            "was built static in that dim (dynamic=False, or a dim Dynamo kept static), so each new "
                            "size compiles again"),
             "leave dynamic unset (a dim that changes becomes symbolic at the next capture) or pass dynamic=True, "
             "or mark that dim before the call: torch._dynamo.mark_dynamic(x, 0); or raise "
             "torch._dynamo.config.recompile_limit"),
    "number": (scales, lambda n: (torch.ones(3), n),
               lambda limit: (f"the Python number k changed (the last graph was built for k == {limit}): a number "
                              "argument is a constant of a graph built with dynamic=False, so each new value "
                              "compiles again"),
               "leave dynamic unset (a number that changes becomes symbolic at the next capture), or pass k as a "
               "tensor (torch.tensor(k)), so that its value is data, not part of the graph; or raise "
               "torch._dynamo.config.recompile_limit"),
}


@pytest.fixture
def recompile_limit():
    """Dynamo's recompile limit, small (each compile takes a while), on a fresh Dynamo cache."""
    torch._dynamo.reset()
    with torch._dynamo.config.patch(recompile_limit=2):
        yield 2
    torch._dynamo.reset()


@pytest.mark.parametrize("case", sorted(RECOMPILES))
def test_a_function_past_dynamos_recompile_limit_warns_once_that_it_now_runs_eagerly(case, recompile_limit):
    fn, args, why, fix = RECOMPILES[case]
    f = parity.compile(fn, backend="onnx", dynamic=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in range(1, recompile_limit + 3):  # every new size or number recompiles (static sizes)
            assert torch.equal(f(*args(n)), fn(*args(n)))
    (w,) = [w for w in caught if issubclass(w.category, GraphBreakWarning)]
    assert w.category.__name__ == "RecompileLimitWarning"
    assert (w.filename, w.lineno) == (__file__, fn.__code__.co_firstlineno)
    assert str(w.message).splitlines() == [
        f"parity.compile: {__file__}:{w.lineno} in {fn.__name__} was compiled {recompile_limit} times (Dynamo's "
        "recompile_limit); from now on Dynamo runs it in eager torch, not on the backend",
        f"  why: {why(recompile_limit)}",
        f"  fix: {fix}"]


@pytest.mark.parametrize("case", sorted(RECOMPILES))
def test_fullgraph_makes_the_recompile_limit_an_error_that_names_the_guard(case, recompile_limit):
    fn, args, why, fix = RECOMPILES[case]
    f = parity.compile(fn, backend="onnx", fullgraph=True, dynamic=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in range(1, recompile_limit + 1):
            assert torch.equal(f(*args(n)), fn(*args(n)))
        with pytest.raises(RecompileLimitError) as raised:
            f(*args(recompile_limit + 1))
    assert [w for w in caught if issubclass(w.category, GraphBreakWarning)] == []  # an error, not an island
    assert str(raised.value).splitlines() == [
        f"parity.compile(fullgraph=True): {__file__}:{fn.__code__.co_firstlineno} in {fn.__name__} was compiled "
        f"{recompile_limit} times (Dynamo's recompile_limit); one more compile would run it in eager torch, not on "
        "'onnx'",
        f"  why: {why(recompile_limit)}",
        f"  fix: {fix}"]
    assert isinstance(raised.value, GraphBreakError)
    assert raised.value.__cause__ is None and raised.value.__suppress_context__
    assert not torch._dynamo.config.fail_on_recompile_limit_hit  # set for fullgraph's calls only


# -- item 6: every eager island raises under fullgraph=True and is listed by explain ------


@pytest.mark.parametrize("fn,text,why,fix", [
    (breaks_at_print, 'print("front', "Failed to trace builtin operator: Dynamo does not know how to trace builtin "
                                      "operator `print`", "rewrite that code"),
    (calls_a_disabled_function, "kept_eager(x", "Skip calling `torch.compiler.disable()`d function",
     "none needed if that function is meant to run in eager torch")])
def test_fullgraph_makes_a_graph_break_an_error(fn, text, why, fix):
    f = parity.compile(fn, backend="onnx", fullgraph=True)
    with pytest.raises(GraphBreakError) as caught:
        f(X)
    first, why_line, fix_line = str(caught.value).splitlines()
    assert first == (f"parity.compile(fullgraph=True): the code at {__file__}:{line_of(fn, text)} "
                     f"in {fn.__name__} would run in eager torch, not on 'onnx'")
    assert why_line.startswith(f"  why: {why}")
    assert fix_line.startswith(f"  fix: {fix}") and "drop fullgraph=True" in fix_line
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


@pytest.mark.parametrize("fn,text,op", [(breaks_at_nonzero, "torch.nonzero", "aten.nonzero.default"),
                                        (ends_at_nonzero, "torch.nonzero", "aten.nonzero.default")])
def test_fullgraph_makes_a_data_dependent_op_an_error(fn, text, op):
    # fullgraph=True makes Dynamo keep data-dependent ops in the graph (unbacked sizes),
    # which the IR cannot hold: the error names the op and the user's line.
    with pytest.raises(UnsupportedAtenOp) as caught:
        parity.compile(fn, backend="onnx", fullgraph=True)(torch.tensor([-1.0, 2.0, 3.0]))
    first, why, fix = str(caught.value).splitlines()
    assert first == f"{op} at {__file__}:{line_of(fn, text)} in {fn.__name__} cannot run on backend 'onnx'"
    assert fix == ("  fix: fullgraph=True runs every op on the backend: rewrite this piece, or drop fullgraph=True "
                   "and pass strict=False to run only this op eagerly in torch")


def test_fullgraph_keeps_a_float_item_used_by_tensor_math_on_the_backend():
    # Dynamo keeps x.sum().item() as a tensor converted to the scalar's dtype
    # (prims.convert_element_type), which the IR holds: no island, eager's numbers
    x = torch.tensor([-1.0, 2.0, 3.0])
    assert torch.equal(parity.compile(breaks_at_item, backend="onnx", fullgraph=True)(x), breaks_at_item(x))


def test_fullgraph_makes_a_fallback_an_error_and_refuses_strict_false(no_tanh):
    with pytest.raises(UnsupportedAtenOp) as caught:
        parity.compile(uses_tanh, backend=no_tanh, fullgraph=True)(X)
    assert str(caught.value).startswith(f"aten.tanh.default at {__file__}:{line_of(uses_tanh, 'torch.tanh')} "
                                        "in uses_tanh cannot run on backend 'front_door_no_tanh'")
    with pytest.raises(ParityError, match="fullgraph=True runs every op on the backend, and strict=False"):
        parity.compile(uses_tanh, backend=no_tanh, fullgraph=True, strict=False)


def test_explain_lists_every_island_with_its_line(no_tanh):
    report = parity.explain(breaks_at_nonzero, torch.tensor([-1.0, 2.0]), backends=[no_tanh])
    assert [str(b.loc) for b in report.breaks] == [f"{__file__}:{line_of(breaks_at_nonzero, 'torch.nonzero')} "
                                                   "in breaks_at_nonzero"]
    report = parity.explain(uses_tanh, X, backends=[no_tanh])
    tanh = report.graphs[0].op("aten.tanh.default")
    assert tanh.status[no_tanh] == "unsupported" and tanh.loc.line == line_of(uses_tanh, "torch.tanh")
    assert f"(at {__file__}:{tanh.loc.line} in uses_tanh)" in str(report)
