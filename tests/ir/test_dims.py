"""Dimension expressions (ir/dims.py): normal form, arithmetic, text round trip, evaluation."""

import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parity.ir import GraphBuilder, Symbol, f32, parse, parse_dim
from parity.ir.dims import DimExpr, evaluate, free_symbols, linear_in, substitute

B, S, N = Symbol("B"), Symbol("S"), Symbol("N")
NAMES = ("B", "S", "N")


@pytest.mark.parametrize("expr, want", [
    ((B * 4) // 4, B),
    ((B * 4) % 4, 0),
    ((B * 4 + 3) // 4, B),
    ((B * 4 + 3) % 4, 3),
    (B * 4 - B * 4, 0),
    (B + B, B * 2),
    ((B * 6) // 4, B + B // 2),
    ((N // 3) * 3 + N % 3, N),
    ((B * S) // S, B),
    ((B * S * 2) % S, 0),
    (B * S - S * B, 0),
    (S // 1, S),
])
def test_normal_form_simplifies(expr, want):
    assert expr == want and hash(expr) == hash(want)
    assert type(expr) is type(want)  # a constant is an int, a lone name a Symbol


@pytest.mark.parametrize("expr, text", [
    (B * 4, "B*4"), (S // 2, "S//2"), (B * S + 1, "B*S+1"), (-(S // 2), "-(S//2)"), (2 - B, "-B+2"),
    (B * (S % 2), "B*(S%2)"), ((S + 1) // 2, "(S+1)//2"), (B * B, "B*B"), (N // 3 * 3, "N-(N%3)"),
])
def test_text(expr, text):
    assert str(expr) == text and parse_dim(text) == expr


def test_ints_and_expressions_differ_and_symbols_are_dims():
    assert B * 4 != 4 and B != "B" and isinstance(B, DimExpr)
    assert pickle.loads(pickle.dumps(B * 4 + S)) == B * 4 + S
    assert type(pickle.loads(pickle.dumps(B))) is Symbol
    with pytest.raises(TypeError, match="cannot combine a dimension with 1.5"):
        B * 1.5
    with pytest.raises(ZeroDivisionError):
        B // 0
    with pytest.raises(ValueError, match="must be an identifier"):
        Symbol("2x")


def test_evaluate_substitute_free_symbols():
    e = (S + 1) // 2 * B - N % 3
    assert evaluate(e, {"B": 3, "S": 6, "N": 5}) == (6 + 1) // 2 * 3 - 5 % 3
    assert substitute(e, {"N": 3}) == (S + 1) // 2 * B
    assert free_symbols(e) == {"B", "S", "N"} and free_symbols(7) == frozenset()
    with pytest.raises(KeyError, match="needs a size for N"):
        evaluate(e, {"B": 1, "S": 1})
    assert linear_in(B * 4 + 1, "B") == (4, 1) and linear_in(B * S, "B") is None


@pytest.mark.parametrize("text, message", [
    ("B*", "ends too early"), ("B)", "unexpected ')'"), ("(B", "ends too early"), ("(B S)", "missing ')'"), ("B$", "unexpected '$'"),
])
def test_malformed_dims(text, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)").replace("$", r"\$")):
        parse_dim(text)


# -- random expressions -------------------------------------------------------------------------
# Each strategy yields (expression, function of the sizes computing it with Python ints).

_leaves = st.one_of(
    st.sampled_from(NAMES).map(lambda n: (Symbol(n), lambda env, n=n: env[n])),
    st.integers(-5, 9).map(lambda k: (k, lambda env, k=k: k)),
)


def _combine(children):
    def build(args):
        (a, fa), op, (b, fb) = args
        if op in ("//", "%") and isinstance(b, int) and b == 0:
            b, fb = 3, (lambda env: 3)
        if op in ("//", "%") and not isinstance(b, int):
            b, fb = b * b + 1, (lambda env, fb=fb: fb(env) * fb(env) + 1)  # never 0
        python = {"+": lambda x, y: x + y, "-": lambda x, y: x - y, "*": lambda x, y: x * y,
                  "//": lambda x, y: x // y, "%": lambda x, y: x % y}[op]
        return python(a, b), lambda env: python(fa(env), fb(env))

    return st.tuples(children, st.sampled_from(["+", "-", "*", "//", "%"]), children).map(build)


expressions = st.recursive(_leaves, _combine, max_leaves=8)
sizes = st.fixed_dictionaries({n: st.integers(0, 40) for n in NAMES})


@settings(max_examples=300, deadline=None)
@given(expressions, sizes)
def test_random_expressions_evaluate_like_python_ints(pair, env):
    expr, python = pair
    assert evaluate(expr, env) == python(env)


@settings(max_examples=300, deadline=None)
@given(expressions)
def test_random_expressions_round_trip_through_text(pair):
    expr, _ = pair
    assert parse_dim(str(expr)) == expr
    assert hash(parse_dim(str(expr))) == hash(expr)


@settings(max_examples=100, deadline=None)
@given(expressions.filter(lambda p: not isinstance(p[0], int) or p[0] >= 0))
def test_random_expressions_round_trip_in_graph_text(pair):
    expr, _ = pair
    b = GraphBuilder("g")
    x = b.input(f32[expr, 2])
    g = b.build([b.reshape(x, shape=(2, expr))])
    assert parse(str(g)) == g
