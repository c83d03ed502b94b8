"""What a JAX user is told when parity cannot take their program: the line, the primitive, the fix."""

from __future__ import annotations

import inspect
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import parity.jax
from parity.backends.registry import get_backend
from parity.frontend.jax import capture
from parity.frontend.jax.errors import (
    DataDependentLoop,
    EffectNotSupported,
    LongUnrolledLoop,
    UnsupportedArgument,
    UnsupportedArgumentDtype,
    UnsupportedDtype,
    UntranslatedPrimitive,
)
from parity.frontend.jax.unrolled import UNROLLED_NODES_WARNING, warn_unrolled_loops
from parity.ir.errors import ParityError
from parity.ir.passes import decompose


def _line_of(fun, text: str) -> str:
    """``file:line`` of the first line of ``fun`` that contains ``text``."""
    lines, first = inspect.getsourcelines(fun)
    offset = next(i for i, line in enumerate(lines) if text in line)
    return f"{inspect.getsourcefile(fun)}:{first + offset}"


def trigamma_of(x):
    y = x * 2.0
    return lax.polygamma(1.0, y)


def doubling_until_large(x):
    return lax.while_loop(lambda v: v.sum() < 100.0, lambda v: v * 2.0, x)


def prints_on_the_host(x):
    jax.debug.print("x = {}", x)
    return x + 1.0


def test_an_untranslated_primitive_names_the_users_line_the_primitive_and_the_fix():
    with pytest.raises(UntranslatedPrimitive) as info:
        parity.jax.jit(trigamma_of, backend="reference")(jnp.ones(3))
    message = str(info.value)
    assert message.startswith(f"{_line_of(trigamma_of, 'lax.polygamma')} in trigamma_of: ")
    assert "the JAX primitive `polygamma` has no parity translation" in message
    assert "(a special function" in message  # its known gap's reason (frontend/jax/gaps.py)
    assert "fix: compute it outside parity.jax.jit" in message and "plain jax.jit" in message
    assert isinstance(info.value, ParityError) and info.value.primitive == "polygamma"


REFUSALS = {
    "a data-dependent while loop": (doubling_until_large, DataDependentLoop, "lax.while_loop",
                                    ["`lax.while_loop` whose trip count depends on the data",
                                     "lax.fori_loop or lax.scan with a trip count known when tracing"]),
    "a host callback": (prints_on_the_host, EffectNotSupported, "jax.debug.print",
                        ["`debug_print` has a side effect", "call it outside parity.jax.jit"]),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_a_program_parity_cannot_run_is_refused_at_the_users_line(case):
    fun, error, line_text, phrases = REFUSALS[case]
    with pytest.raises(error) as info:
        parity.jax.jit(fun, backend="reference")(jnp.ones(3))
    message = str(info.value)
    assert message.startswith(f"{_line_of(fun, line_text)} in {fun.__name__}: ")
    for phrase in phrases:
        assert phrase in message


def test_a_rule_refusing_a_case_says_why():
    """A scatter with a combiner of its own (lax.scatter_apply): refused by the rule, with its reason."""
    def squares_in_place(x, i):
        return x.at[i].apply(lambda v: v * v)

    with pytest.raises(UntranslatedPrimitive, match=r"`scatter` has no parity translation \(scatter with a combiner of "
                                                    r"its own \(lax.scatter_apply\)"):
        parity.jax.jit(squares_in_place, backend="reference")(jnp.ones(3), jnp.array([0, 2]))


def test_calling_it_under_a_jax_transformation_says_to_put_the_transformation_inside():
    compiled = parity.jax.jit(lambda x: (x ** 2).sum(), backend="reference")
    with pytest.raises(TypeError, match=r"put the transformation inside it: parity.jax.jit\(jax.grad\(f\)\)"):
        jax.grad(compiled)(jnp.ones(2))


def test_a_fori_loop_with_a_static_trip_count_runs():
    """The contrast to the while loop above: static bounds make a scan, which unrolls."""
    def power_of_two(x):
        return lax.fori_loop(0, 5, lambda i, v: v * 2.0 + i.astype(jnp.float32), x)

    got = parity.jax.jit(power_of_two, backend="reference")(jnp.ones(2))
    np.testing.assert_array_equal(np.asarray(got), np.asarray(jax.jit(power_of_two)(jnp.ones(2))))


def decaying_sum(xs):
    return lax.scan(lambda c, x: (c * 0.5 + x, None), jnp.zeros(2), xs)[0]


def two_decaying_sums(xs):
    return decaying_sum(xs) + decaying_sum(xs[::-1])


def test_a_loop_is_one_node_and_a_backend_that_unrolls_it_past_the_threshold_warns_at_the_users_line():
    """Translation never unrolls (300 steps are one loop node); a backend without rolled loops
    (triton) unrolls 300 steps of a 6-node body past the threshold and warns, once, naming
    itself; two loops of 200 steps stay quiet, though together they unroll past it (the count is
    per loop)."""
    where = _line_of(decaying_sum, "lax.scan")
    with warnings.catch_warnings():
        warnings.simplefilter("error", LongUnrolledLoop)
        graph = capture(decaying_sum, jnp.ones((300, 2)))
    assert graph.op_counts()["loop"] == 1 and len(graph.nodes) < 10
    triton = get_backend("triton")
    with pytest.warns(LongUnrolledLoop) as record:
        warn_unrolled_loops(graph, triton)
    assert len(record) == 1
    assert f"{record[0].filename}:{record[0].lineno}" == where  # attributed to the user's line
    message = str(record[0].message)
    assert message.startswith(f"{where} in decaying_sum: this loop of 300 steps is unrolled into ")
    unrolled = int(message.split("unrolled into ")[1].split(" IR nodes")[0].replace(",", ""))
    expanded, _ = decompose(graph, claimed=lambda op: op in triton.claims())
    assert UNROLLED_NODES_WARNING < unrolled <= len(expanded.nodes)
    assert "on backend='triton', which does not run loops rolled" in message
    assert "fix: backend='xla', 'onnx' or 'inductor' compile the loop's body once" in message
    assert "run this function with jax.jit" in message
    with warnings.catch_warnings():
        warnings.simplefilter("error", LongUnrolledLoop)
        warn_unrolled_loops(capture(two_decaying_sums, jnp.ones((200, 2))), triton)
    for rolled in ("xla", "onnx", "inductor"):  # they run the loop as a loop: nothing to warn about
        with warnings.catch_warnings():
            warnings.simplefilter("error", LongUnrolledLoop)
            warn_unrolled_loops(graph, get_backend(rolled))


def test_a_compile_on_a_backend_that_unrolls_warns_and_still_gives_jax_jits_numbers():
    xs = jnp.linspace(-1.0, 1.0, 600).reshape(300, 2)
    with pytest.warns(LongUnrolledLoop, match="on backend='reference'"):
        got = parity.jax.jit(decaying_sum, backend="reference")(xs)
    np.testing.assert_allclose(np.asarray(got), np.asarray(jax.jit(decaying_sum)(xs)), rtol=1e-6)


def test_a_refusal_inside_a_library_helper_names_the_users_call():
    """jnp.linalg.det is a jitted helper; its LU factorisation (the IR has no linear algebra) is
    reported at the user's call, not without a line."""
    def determinant(x):
        return jnp.linalg.det(x)

    with pytest.raises(UntranslatedPrimitive) as info:
        parity.jax.jit(determinant, backend="reference")(jnp.eye(4))  # 2×2 and 3×3 have closed forms
    assert str(info.value).startswith(f"{_line_of(determinant, 'linalg.det')} in {determinant.__qualname__}: "
                                      "the JAX primitive `lu` has no parity translation")


def eight_bit_draw(key):
    return jax.random.bits(key, (4,), jnp.uint8)


def test_random_numbers_parity_does_not_translate_are_refused_at_the_door_or_the_users_line():
    """A key of another PRNG implementation is refused at the door; a draw of a width parity
    does not translate at the line that draws it."""
    with pytest.raises(UnsupportedArgument, match=r"array argument 0 \(in flattened order\) is a key<rbg>, "
                                                  r"which parity cannot take: it translates keys of JAX's default "
                                                  r"PRNG, threefry2x32, only.*\n  fix: make the key with "
                                                  r"jax.random.key\(seed\)"):
        parity.jax.jit(lambda k, x: x, backend="reference")(jax.random.key(0, impl="rbg"), jnp.ones(2))
    with pytest.raises(UntranslatedPrimitive) as info:
        parity.jax.jit(eight_bit_draw, backend="reference")(jax.random.key(0))
    assert str(info.value).startswith(f"{_line_of(eight_bit_draw, 'jax.random.bits')} in eight_bit_draw: the "
                                      "JAX primitive `random_bits` has no parity translation")
    assert "8-bit random bits" in str(info.value)


def scaled(x, n, params):
    return x * n + params["w"].astype(jnp.float32)


def through_uint16(x):
    return (x.astype(jnp.uint16) + 1).astype(jnp.float32)


def test_a_uint16_argument_is_refused_by_its_name_and_dtype_with_the_conversion():
    compiled = parity.jax.jit(scaled, static_argnums=1, backend="reference")
    with pytest.raises(UnsupportedArgumentDtype) as info:
        compiled(jnp.ones(2), 3, {"w": jnp.ones(2, jnp.uint16)})
    message = str(info.value)
    assert message.startswith("argument `params.w` is a uint16 array, and parity's IR has no uint16 dtype (it has "
                              "bool, int8, ")
    assert "fix: convert it before the call, `params.w.astype(jnp.uint32)` (every uint16 value fits" in message
    assert isinstance(info.value, ParityError) and isinstance(info.value, TypeError)
    with pytest.raises(UnsupportedArgumentDtype, match="argument `x` is a uint16 array"):  # export names it alike
        parity.jax.export(through_uint16, jax.ShapeDtypeStruct((2,), jnp.uint16), format="stablehlo")


def test_a_uint16_inside_the_function_is_refused_at_the_users_line():
    with pytest.raises(UnsupportedDtype) as info:
        parity.jax.jit(through_uint16, backend="reference")(jnp.ones(2))
    message = str(info.value)
    assert message.startswith(f"{_line_of(through_uint16, 'jnp.uint16')} in through_uint16: `convert_element_type` "
                              "makes a uint16 array, and parity's IR has no uint16 dtype")
    assert "fix: compute in jnp.uint32 there" in message and info.value.primitive == "convert_element_type"
