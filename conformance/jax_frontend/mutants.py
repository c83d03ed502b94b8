"""Faults planted in the JAX translation rules, each of which the frontend case set must kill.

A :class:`RuleFault` replaces one primitive's rule in the live table
(``parity.frontend.jax.rules.TABLE``) for as long as its primitive's cases run; it is
*killed* when one of that primitive's cells fails (an unexpected failure, or an error) where
the unplanted rules' cells do not. Faults keep the result's type wherever the fault class
allows, so that it is the numbers that catch them, not the frontend's own type check
(``TranslationBug``); which one caught each is kept in :attr:`Outcome.caught_by`.

Example::

    >>> [o.status for o in run_rule_faults(["sub_operands_swapped"])]
    ['killed']
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

from ..results import FAIL
from ..verdicts import cells_for

KILLED, SURVIVED, BASELINE_FAILS = "killed", "survived", "baseline fails"


@dataclass(frozen=True)
class RuleFault:
    """``plant(original, table)`` returns the faulty rule for ``primitive``."""

    name: str
    primitive: str
    fault_class: str
    plant: Callable
    killing: str = ""  # a fragment of the names of the cases that kill it, beside the --quick ones (CI's test)


@dataclass
class Outcome:
    fault: str
    primitive: str
    fault_class: str
    status: str
    killed_by: str = ""  # the first failing case
    caught_by: str = ""  # "numbers" or "type check" or "exception"
    message: str = ""


def _operands(order: Callable[[tuple], tuple]):
    """The original rule on reordered operands."""
    def plant(original, table):
        return lambda ctx, *xs: original(ctx, *order(xs))

    return plant


def _rule_of(other: str):
    """Another primitive's rule in place of this one's."""
    def plant(original, table):
        return table[other]

    return plant


def _params(change: Callable[[dict], dict]):
    """The original rule, seeing changed equation params."""
    def plant(original, table):
        def faulty(ctx, *xs):
            ctx.params = change(dict(ctx.params))
            ctx.eqn = replace(ctx.eqn, params=ctx.params)
            return original(ctx, *xs)

        return faulty

    return plant


def _swap(xs):
    return (xs[1], xs[0], *xs[2:])


def _shifted_slice(p):
    """Start and limit of the last dim moved by one, the window's size kept (off by one)."""
    start, limit = list(p["start_indices"]), list(p["limit_indices"])
    start[-1], limit[-1] = (start[-1] + 1, limit[-1] + 1) if start[-1] == 0 else (start[-1] - 1, limit[-1] - 1)
    return p | {"start_indices": tuple(start), "limit_indices": tuple(limit)}


def _pad_sides_swapped(p):
    return p | {"padding_config": tuple((hi, lo, inner) for lo, hi, inner in p["padding_config"])}


def _broadcast_dims_shifted(p):
    """The operand's dims mapped one result dim further right where that is still valid (a dropped leading dim)."""
    dims = tuple(p["broadcast_dimensions"])
    rank = len(p["shape"])
    moved = tuple(d + 1 if i == 0 and d + 1 < (dims[1] if len(dims) > 1 else rank) else d for i, d in enumerate(dims))
    return p | {"broadcast_dimensions": moved}


def _convert_through_f16(original, table):
    from ...ir.dtypes import DType

    def faulty(ctx, x):
        narrow = ctx.convert(x, DType.float16) if x.type.dtype.is_float else x
        return ctx.convert(narrow, ctx.out.dtype)

    return faulty


def _cond_branches_swapped(original, table):
    def faulty(ctx, index, *xs):
        from ...ir.dtypes import DType

        flipped = ctx.b.sub(ctx.full(len(ctx.params["branches"]) - 1, index.type.dtype, index.type.shape), index)
        return original(ctx, flipped if index.type.dtype is not DType.bool else ctx.b.op("logical_not", index), *xs)

    return faulty


def _conj_dropped(original, table):
    def faulty(ctx, x):
        return ctx.convert(x, ctx.out.dtype)

    return faulty


def _complex_abs_as_real_part(original, table):
    def faulty(ctx, x):
        return ctx.b.op("real", x) if x.type.dtype.is_complex else original(ctx, x)

    return faulty


def _convert_complex_imag(original, table):
    """A complex number converted to a real dtype through its imaginary part."""
    def faulty(ctx, x):
        if x.type.dtype.is_complex and not ctx.out.dtype.is_complex:
            return ctx.convert(ctx.b.op("imag", x), ctx.out.dtype)
        return original(ctx, x)

    return faulty


def _dus_complex_imag_dropped(original, table):
    """A complex update that lands without its imaginary part."""
    def faulty(ctx, x, update, *starts):
        if update.type.dtype.is_complex:
            zero = ctx.full(0, update.type.dtype.real_dtype, update.type.shape)
            update = ctx.b.op("complex", ctx.b.op("real", update), zero)
        return original(ctx, x, update, *starts)

    return faulty


def _dot_general_conjugated(original, table):
    """A complex lhs conjugated first (numpy's vdot convention in place of lax.dot_general's)."""
    def faulty(ctx, x, y):
        return original(ctx, ctx.b.op("conj", x) if x.type.dtype.is_complex else x, y)

    return faulty


def _mode_swapped(old: str, new: str):
    """A gather/scatter seeing mode ``new`` where JAX asked for ``old``."""
    return _params(lambda p: p | {"mode": new} if p["mode"] == old else p)


def _start_map_reversed(p):
    """gather's start indices mapped to the operand dims in reverse (x[i, j] read as x[j, i])."""
    dn = p["dimension_numbers"]
    return p | {"dimension_numbers": dn._replace(start_index_map=tuple(dn.start_index_map)[::-1])}


def _fft_norm(norm: str):
    """The transform scaled by another of the IR's norms (JAX's is "backward")."""
    def plant(original, table):
        def faulty(ctx, x):
            kind, lengths = ctx.params["fft_type"], ctx.params["fft_lengths"]
            length = {"length": int(lengths[-1])} if kind == "IRFFT" else {}
            return ctx.b.op(kind.lower(), x, ndims=len(lengths), norm=norm, **length)

        return faulty

    return plant


_FFT_INVERSE = {"FFT": "IFFT", "IFFT": "FFT", "RFFT": "RFFT", "IRFFT": "IRFFT"}


def _irfft_length_even(p):
    """IRFFT's odd length taken one shorter: the same half-spectrum size (n // 2 + 1)."""
    lengths = tuple(p["fft_lengths"])
    return p | {"fft_lengths": (*lengths[:-1], lengths[-1] - lengths[-1] % 2)}


def _tile_as_repeat(original, table):
    """Each element repeated in place (broadcast to [d0, reps0, ...]) in place of the blocks tiled."""
    def faulty(ctx, x):
        reps = tuple(int(r) for r in ctx.params["reps"])
        spread = ctx.b.broadcast_in_dim(x, shape=tuple(n for r, d in zip(reps, x.type.shape) for n in (d, r)),
                                        broadcast_dimensions=tuple(range(0, 2 * x.type.rank, 2)))
        return ctx.b.reshape(spread, shape=tuple(ctx.out.shape))

    return faulty


def _on_magnitude(original, table):
    """The rule applied to |x|: a dropped sign or reflection (erfc(-x) = 2 - erfc(x), cbrt(-x) = -cbrt(x))."""
    def faulty(ctx, x):
        return original(ctx, ctx.b.abs(x))

    return faulty


def _round_trip_unflushed(original, table):
    """reduce_precision as the plain convert round trip: the target's subnormals kept."""
    def faulty(ctx, x):
        from ...ir.dtypes import DType

        formats = {(5, 10): DType.float16, (8, 7): DType.bfloat16, (8, 23): DType.float32}
        target = formats.get((int(ctx.params["exponent_bits"]), int(ctx.params["mantissa_bits"])))
        return ctx.convert(ctx.convert(x, target), x.type.dtype) if target is not None else original(ctx, x)

    return faulty


def _lowest_bit_dropped(original, table):
    def faulty(ctx, x):
        return original(ctx, ctx.b.shift_right_logical(x, ctx.full(1, x.type.dtype, x.type.shape)))

    return faulty


def _sort_keys_reversed(original, table):
    """A multi-key sort's keys taken least significant first (results put back in their places)."""
    def faulty(ctx, *xs):
        k = int(ctx.params["num_keys"])
        out = original(ctx, *xs[:k][::-1], *xs[k:])
        return [*out[:k][::-1], *out[k:]]

    return faulty


def _pieces_reversed(original, table):
    def faulty(ctx, *xs):
        return original(ctx, *xs)[::-1]

    return faulty


FAULTS: tuple[RuleFault, ...] = (
    RuleFault("sub_operands_swapped", "sub", "swapped operands", _operands(_swap)),
    RuleFault("div_operands_swapped", "div", "swapped operands", _operands(_swap)),
    RuleFault("atan2_operands_swapped", "atan2", "swapped operands", _operands(_swap)),
    RuleFault("pow_operands_swapped", "pow", "swapped operands", _operands(_swap)),
    RuleFault("select_n_cases_swapped", "select_n", "swapped operands", _operands(lambda xs: (xs[0], xs[2], xs[1]))),
    RuleFault("clamp_bounds_swapped", "clamp", "swapped operands", _operands(lambda xs: (xs[2], xs[1], xs[0]))),
    RuleFault("concatenate_reversed", "concatenate", "swapped operands", _operands(lambda xs: xs[::-1])),
    RuleFault("dynamic_update_slice_starts_reversed", "dynamic_update_slice", "swapped operands",
              _operands(lambda xs: (xs[0], xs[1], *xs[2:][::-1]))),
    RuleFault("lt_as_gt", "lt", "wrong comparison", _rule_of("gt")),
    RuleFault("ge_as_gt", "ge", "wrong comparison", _rule_of("gt")),
    RuleFault("ne_as_eq", "ne", "wrong comparison", _rule_of("eq")),
    RuleFault("max_as_min", "max", "wrong comparison", _rule_of("min")),
    RuleFault("argmax_as_argmin", "argmax", "wrong comparison", _rule_of("argmin")),
    RuleFault("reduce_window_max_as_min", "reduce_window_max", "wrong comparison", _rule_of("reduce_window_min")),
    RuleFault("select_and_scatter_add_picks_the_minimum", "select_and_scatter_add", "wrong comparison",
              _params(lambda p: p | {"select_prim": "le" if p["select_prim"] == "ge" else "ge"})),
    RuleFault("cummax_as_cummin", "cummax", "wrong comparison", _rule_of("cummin")),
    RuleFault("rsqrt_as_sqrt", "rsqrt", "wrong op", _rule_of("sqrt")),
    RuleFault("expm1_as_exp", "expm1", "wrong op", _rule_of("exp")),
    RuleFault("logistic_as_tanh", "logistic", "wrong op", _rule_of("tanh")),
    RuleFault("shift_right_arithmetic_as_logical", "shift_right_arithmetic", "wrong op",
              _rule_of("shift_right_logical")),
    RuleFault("rem_as_sub", "rem", "wrong op", _rule_of("sub")),
    RuleFault("and_as_or", "and", "wrong op", _rule_of("or")),
    RuleFault("broadcast_in_dim_dims_shifted", "broadcast_in_dim", "dropped broadcast dim",
              _params(_broadcast_dims_shifted), "square_dims"),
    RuleFault("slice_off_by_one", "slice", "off by one", _params(_shifted_slice)),
    RuleFault("pad_sides_swapped", "pad", "off by one", _params(_pad_sides_swapped)),
    RuleFault("rev_first_dim_only", "rev", "dropped dim", _params(lambda p: p | {"dimensions": p["dimensions"][:1]})),
    RuleFault("cumsum_reverse_ignored", "cumsum", "dropped attribute", _params(lambda p: p | {"reverse": False}),
              "reverse:"),
    RuleFault("scan_reverse_ignored", "scan", "dropped attribute", _params(lambda p: p | {"reverse": False}),
              "reverse"),
    RuleFault("integer_pow_exponent_plus_one", "integer_pow", "off by one", _params(lambda p: p | {"y": p["y"] + 1})),
    RuleFault("round_method_ignored", "round", "dropped attribute",
              _params(lambda p: p | {"rounding_method": "TO_NEAREST_EVEN"}), "away:"),
    RuleFault("convert_through_f16", "convert_element_type", "wrong convert dtype", _convert_through_f16,
              "to_f64:random"),
    RuleFault("cond_branches_swapped", "cond", "swapped operands", _cond_branches_swapped),
    # complex64: each keeps the result's type, so the numbers must catch it
    RuleFault("complex_parts_swapped", "complex", "swapped operands", _operands(_swap)),
    RuleFault("real_as_imag", "real", "wrong op", _rule_of("imag")),
    RuleFault("conj_dropped", "conj", "dropped op", _conj_dropped),
    RuleFault("complex_abs_as_real_part", "abs", "wrong op", _complex_abs_as_real_part, "random"),
    RuleFault("dot_general_conjugated", "dot_general", "wrong op", _dot_general_conjugated, "matmul"),
    # gather and the scatter family: modes, dimension numbers, combiners
    RuleFault("gather_clip_as_fill", "gather", "wrong mode", _mode_swapped("CLIP", "FILL_OR_DROP"), "_clip"),
    RuleFault("gather_start_map_reversed", "gather", "swapped dims", _params(_start_map_reversed), "two_axes"),
    RuleFault("scatter_drop_as_clip", "scatter", "wrong mode", _mode_swapped("FILL_OR_DROP", "CLIP"), "_fill"),
    RuleFault("scatter_add_clip_as_drop", "scatter-add", "wrong mode", _mode_swapped("CLIP", "FILL_OR_DROP"),
              "_clip"),
    RuleFault("scatter_sub_as_add", "scatter-sub", "wrong op", _rule_of("scatter-add")),
    RuleFault("scatter_mul_as_add", "scatter-mul", "wrong op", _rule_of("scatter-add")),
    RuleFault("scatter_max_as_min", "scatter-max", "wrong comparison", _rule_of("scatter-min")),
    RuleFault("scatter_replace_as_max", "scatter", "wrong op", _rule_of("scatter-max")),
    RuleFault("le_to_as_lt_to", "le_to", "wrong comparison", _rule_of("lt_to")),
    RuleFault("eq_to_as_eq", "eq_to", "wrong comparison", _rule_of("eq")),
    RuleFault("tile_as_repeat", "tile", "wrong op", _tile_as_repeat),
    RuleFault("stack_operands_reversed", "stack", "swapped operands", _operands(lambda xs: xs[::-1])),
    RuleFault("unstack_pieces_reversed", "unstack", "swapped operands", _pieces_reversed),
    RuleFault("erfc_reflection_dropped", "erfc", "dropped op", _on_magnitude),
    RuleFault("lgamma_reflection_dropped", "lgamma", "dropped op", _on_magnitude),
    RuleFault("digamma_reflection_dropped", "digamma", "dropped op", _on_magnitude),
    RuleFault("cbrt_sign_dropped", "cbrt", "dropped op", _on_magnitude),
    RuleFault("reduce_precision_subnormals_kept", "reduce_precision", "dropped op", _round_trip_unflushed,
              "thresholds"),
    RuleFault("population_count_lowest_bit_dropped", "population_count", "off by one", _lowest_bit_dropped),
    RuleFault("clz_as_population_count", "clz", "wrong op", _rule_of("population_count")),
    RuleFault("select_and_gather_add_picks_the_minimum", "select_and_gather_add", "wrong comparison",
              _params(lambda p: p | {"select_prim": "le" if p["select_prim"] == "ge" else "ge"})),
    RuleFault("select_and_gather_add_dilation_dropped", "select_and_gather_add", "dropped attribute",
              _params(lambda p: p | {"window_dilation": (1,) * len(p["window_dilation"])}), "dilated"),
    RuleFault("approx_top_k_minima_as_maxima", "approx_top_k", "wrong comparison",
              _params(lambda p: p | {"is_max_k": True}), "min_k"),
    RuleFault("sort_keys_least_significant_first", "sort", "swapped operands", _sort_keys_reversed, "two_keys"),
    RuleFault("fft_norm_forward", "fft", "wrong normalisation", _fft_norm("forward"), "IFFT:n8"),
    RuleFault("fft_norm_ortho", "fft", "wrong normalisation", _fft_norm("ortho"), "IRFFT:n8"),
    RuleFault("fft_type_swapped", "fft", "swapped fft type",
              _params(lambda p: p | {"fft_type": _FFT_INVERSE[p["fft_type"]]}), "FFT:n8"),
    RuleFault("irfft_length_even", "fft", "wrong irfft length", _params(_irfft_length_even), "IRFFT:n7_prime"),
    RuleFault("convert_complex_keeps_imag", "convert_element_type", "wrong op", _convert_complex_imag,
              "real_part"),
    RuleFault("dynamic_update_slice_complex_imag_dropped", "dynamic_update_slice", "dropped op",
              _dus_complex_imag_dropped, "start"),
)


@contextlib.contextmanager
def planted(fault: RuleFault):
    """``fault`` in the rule table for the duration (restored on exit, whatever happens)."""
    from .bridge import rule_table

    table = rule_table()
    original = table[fault.primitive]
    table[fault.primitive] = fault.plant(original, table)
    try:
        yield
    finally:
        table[fault.primitive] = original


def _cells(cases):
    from ..declared import Declared
    from .check import run_cases
    from .rows import frontend_target

    target = frontend_target()
    results = run_cases(cases, Declared.of(target.instance, "cpu"))
    keys = list(dict.fromkeys((c.op, c.dtype.short) for c in cases))
    return cells_for(keys, [target], results), results


def run_rule_faults(names: Iterable[str] | None = None, quick: bool = False) -> list[Outcome]:
    """Each fault (or those called ``names``) planted alone, on its primitive's cases (``quick``:
    its ``--quick`` cases and those its ``killing`` names)."""
    from . import registry

    wanted = set(names) if names is not None else None
    outcomes = []
    for fault in FAULTS:
        if wanted is not None and fault.name not in wanted:
            continue
        cases = list(registry.cases_of(fault.primitive))
        if quick:
            chosen = registry.select(ops=f"^jax:{re.escape(fault.primitive)}$", quick=True)
            cases = chosen + [c for c in cases if fault.killing and fault.killing in c.name and c not in chosen]
        outcomes.append(_judge(fault, cases))
    return outcomes


def _judge(fault: RuleFault, cases: Sequence) -> Outcome:
    base, _ = _cells(cases)
    with planted(fault):
        cells, results = _cells(cases)
    ids = dict(fault=fault.name, primitive=fault.primitive, fault_class=fault.fault_class)
    if any(c.status == FAIL for c in base):
        return Outcome(**ids, status=BASELINE_FAILS, message="the unplanted rule fails already")
    dead = [c for c in cells if c.status == FAIL]
    if not dead:
        return Outcome(**ids, status=SURVIVED, message=f"all {len(results)} cases still pass")
    first = next(r for r in results if r.case == dead[0].worst_case) if dead[0].worst_case else None
    first = first or next(r for r in results if r.status != "pass")
    caught = ("type check" if "TranslationBug" in first.message else
              "exception" if first.status == "error" else "numbers")
    return Outcome(**ids, status=KILLED, killed_by=first.case, caught_by=caught, message=first.message[:300])
