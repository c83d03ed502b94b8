"""One table, op → Triton expression, for every elementwise primitive.

A rule receives the operands as Triton expressions already held in their *register*
dtype (float16/bfloat16 live in float32 registers, rounded to their own precision; every
other dtype is itself, bool is ``tl.int1``) and returns the result expression, in the
result's register dtype. Results of float16/bfloat16 ops are rounded once more to their
dtype by the caller, so every IR op rounds once, as the interpreter does.

Semantics follow docs/ir.md rather than Triton's defaults: integer division by zero and
``INT_MIN / -1`` are emitted explicitly, shifts past the bit width give 0 (or the sign
fill), float max/min propagate NaN, and float32 division and square root use the
correctly rounded forms (``div_rn``, ``sqrt_rn``; plain ``/`` and ``tl.sqrt`` are
approximate on CUDA).

Transcendental functions have two columns. ``generic`` is built from Triton primitives
(``mathlib``), computed in float64 and rounded once to the result dtype; Triton's
interpreter has no libdevice, so CPU runs use it. ``libdevice`` names the CUDA libdevice
function used when compiling for a GPU (float32 math directly, no float64 detour).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol

from ...ir.context import NodeContext
from ...ir.dtypes import DType
from ...ir.opdef import Accuracy
from ...ir.ops import ops_with_accuracy


class KernelWriterView(Protocol):
    """What an elementwise rule may ask of the kernel being written (writer.KernelWriter)."""

    cuda: bool

    def const(self, value, dtype: DType) -> str: ...


@dataclass(frozen=True)
class TritonNodeContext(NodeContext):
    """A node as an elementwise rule sees it: attributes and types (every backend's
    :class:`NodeContext`) and its op's name."""

    name: str

    @property
    def dtype(self) -> DType:
        """The result's dtype: the rule returns a register value of it."""
        return self.out.dtype


# rule(w, node, operands) -> the result's expression (operands: register expressions).
Rule = Callable[[KernelWriterView, TritonNodeContext, Sequence[str]], str]

TL_DTYPE = {
    DType.bool: "tl.int1", DType.int8: "tl.int8", DType.int16: "tl.int16", DType.int32: "tl.int32",
    DType.int64: "tl.int64", DType.uint8: "tl.uint8", DType.uint32: "tl.uint32",
    DType.float16: "tl.float16", DType.bfloat16: "tl.bfloat16", DType.float32: "tl.float32",
    DType.float64: "tl.float64",
}
_HALF = (DType.float16, DType.bfloat16)


def reg(dtype: DType) -> str:
    """The Triton dtype a value of ``dtype`` is held in inside a kernel."""
    return "tl.float32" if dtype in _HALF else TL_DTYPE[dtype]


def round_to(expr: str, dtype: DType) -> str:
    """Round a float32 register to float16/bfloat16 precision (a no-op for other dtypes)."""
    if dtype is DType.bfloat16:
        return f"M.round_bf16({expr})"
    if dtype is DType.float16:
        return f"({expr}).to(tl.float16).to(tl.float32)"
    return expr


def load_to_reg(expr: str, dtype: DType) -> str:
    """A loaded ``dtype`` tensor as its register value."""
    if dtype is DType.bfloat16:
        return f"M.bf16_to_f32({expr})"
    return f"{expr}.to(tl.float32)" if dtype is DType.float16 else expr


def reg_to_store(expr: str, dtype: DType) -> str:
    """A register value as the ``dtype`` tensor stored to memory (exact: already rounded)."""
    if dtype is DType.bfloat16:
        return f"M.f32_to_bf16({expr})"
    return f"({expr}).to(tl.float16)" if dtype is DType.float16 else expr


# -- transcendental functions ------------------------------------------------------------

class Math(NamedTuple):
    generic: str  # float64 expression over {0}, {1}
    libdevice: str | None


_MATH = {
    "exp": Math("tl.exp({0})", "exp"),
    "exp2": Math("tl.exp2({0})", "exp2"),
    "expm1": Math("M.expm1_64({0})", "expm1"),
    "log": Math("tl.log({0})", "log"),
    "log2": Math("tl.log2({0})", "log2"),
    "log1p": Math("M.log1p64({0})", "log1p"),
    "rsqrt": Math("1.0 / tl.sqrt({0})", "rsqrt"),
    "sin": Math("tl.sin({0})", "sin"),
    "cos": Math("tl.cos({0})", "cos"),
    "tan": Math("M.tan64({0})", "tan"),
    "asin": Math("M.asin64({0})", "asin"),
    "acos": Math("M.acos64({0})", "acos"),
    "atan": Math("M.atan64({0})", "atan"),
    "sinh": Math("M.sinh64({0})", "sinh"),
    "cosh": Math("M.cosh64({0})", "cosh"),
    "tanh": Math("M.tanh64({0})", "tanh"),
    "asinh": Math("M.asinh64({0})", "asinh"),
    "acosh": Math("M.acosh64({0})", "acosh"),
    "atanh": Math("M.atanh64({0})", "atanh"),
    "erf": Math("tl.math.erf({0})", "erf"),
    "logistic": Math("M.logistic64({0})", None),
    "pow": Math("M.pow64({0}, {1})", "pow"),
    "atan2": Math("M.atan2_64({0}, {1})", "atan2"),
}


def _math(name: str) -> Rule:
    spec = _MATH[name]

    def rule(w: KernelWriterView, node: TritonNodeContext, args: Sequence[str]) -> str:
        out = reg(node.dtype)
        if w.cuda and spec.libdevice is not None:
            return f"libdevice.{spec.libdevice}({', '.join(args)})"
        wide = [a if node.dtype is DType.float64 else f"({a}).to(tl.float64)" for a in args]
        expr = spec.generic.format(*wide)
        return expr if node.dtype is DType.float64 else f"({expr}).to({out})"

    return rule


# -- arithmetic ------------------------------------------------------------------------

def _infix(symbol: str) -> Rule:
    def rule(w, node, args):
        if node.dtype.is_bool and symbol in "&|^":
            # via int8: Triton's interpreter mis-types these between a 0-d bool and a block
            return f"((({args[0]}).to(tl.int8) {symbol} ({args[1]}).to(tl.int8)) != 0)"
        return f"({args[0]} {symbol} {args[1]})"

    return rule


def _div(w, node, args):
    x, y = args
    dt = node.dtype
    if dt is DType.float64:
        return f"({x} / {y})"
    if dt.is_float:
        return f"tl.math.div_rn({x}, {y})"
    one, zero = w.const(1, dt), w.const(0, dt)
    # x / 0 = -1 (all bits set) and INT_MIN / -1 = INT_MIN, as the reference defines them.
    if dt.is_unsigned:
        return f"tl.where({y} == {zero}, ~{zero}, {x} // tl.where({y} == {zero}, {one}, {y}))"
    minus1 = w.const(-1, dt)
    safe = f"tl.where(({y} == {zero}) | ({y} == {minus1}), {one}, {y})"
    return f"tl.where({y} == {zero}, {minus1}, tl.where({y} == {minus1}, {zero} - {x}, {x} // {safe}))"


def _rem(w, node, args):
    x, y = args
    dt = node.dtype
    if dt.is_float:
        return f"({x} % {y})"  # frem: C fmod (the dividend's sign)
    one, zero = w.const(1, dt), w.const(0, dt)
    if dt.is_unsigned:
        return f"tl.where({y} == {zero}, {x}, {x} % tl.where({y} == {zero}, {one}, {y}))"
    minus1 = w.const(-1, dt)
    safe = f"tl.where(({y} == {zero}) | ({y} == {minus1}), {one}, {y})"
    return f"tl.where({y} == {zero}, {x}, tl.where({y} == {minus1}, {zero}, {x} % {safe}))"


def _max_min(fn: str) -> Rule:
    def rule(w, node, args):
        if node.dtype.is_float:
            return f"tl.{fn}({args[0]}, {args[1]}, propagate_nan=tl.PropagateNan.ALL)"
        return f"tl.{fn}({args[0]}, {args[1]})"

    return rule


def _shift(kind: str) -> Rule:
    def rule(w, node, args):
        x, y = args
        dt = node.dtype
        bits = dt.bits
        zero = w.const(0, dt)
        valid = f"(({y} >= {zero}) & ({y} < {w.const(bits, dt)}))"
        amount = f"tl.where({valid}, {y}, {zero})"
        if kind == "left":
            return f"tl.where({valid}, {x} << {amount}, {zero})"
        if kind == "arithmetic" or dt.is_unsigned:
            fill = zero if dt.is_unsigned else f"tl.where({x} < {zero}, {w.const(-1, dt)}, {zero})"
            return f"tl.where({valid}, {x} >> {amount}, {fill})"
        # logical shift of a signed int: shift the bits as unsigned of the same width
        unsigned = {8: "tl.uint8", 16: "tl.uint16", 32: "tl.uint32", 64: "tl.uint64"}[bits]
        shifted = f"(({x}).to({unsigned}, bitcast=True) >> ({amount}).to({unsigned})).to({TL_DTYPE[dt]}, bitcast=True)"
        return f"tl.where({valid}, {shifted}, {zero})"

    return rule


def _neg(w, node, args):
    return f"(-{args[0]})" if node.dtype.is_float else f"({w.const(0, node.dtype)} - {args[0]})"


def _abs(w, node, args):
    if node.dtype.is_float:
        return f"tl.abs({args[0]})"
    return f"tl.where({args[0]} < {w.const(0, node.dtype)}, {w.const(0, node.dtype)} - {args[0]}, {args[0]})"


def _sign(w, node, args):
    return f"M.fsign({args[0]})" if node.dtype.is_float else f"M.sign({args[0]})"


def _sqrt(w, node, args):
    return f"tl.sqrt({args[0]})" if node.dtype is DType.float64 else f"tl.sqrt_rn({args[0]})"


def _reciprocal(w, node, args):
    one = w.const(1.0, DType.float64 if node.dtype is DType.float64 else DType.float32)
    return _div(w, node, [one, args[0]])


def _rounding(fn: str, libdevice: str) -> Rule:
    def rule(w, node, args):
        if w.cuda and libdevice:
            return f"libdevice.{libdevice}({args[0]})"
        return f"{fn}({args[0]})"

    return rule


def _template(text: str) -> Rule:
    def rule(w, node, args):
        return text.format(*args)

    return rule


def _select(w, node, args):
    return f"tl.where({args[0]}, {args[1]}, {args[2]})"


def _clamp(w, node, args):
    lo, x, hi = args
    mx, mn = _max_min("maximum"), _max_min("minimum")
    return mn(w, node, [mx(w, node, [x, lo]), hi])


RULES: dict[str, Rule] = {
    **{name: _math(name) for name in _MATH},
    "neg": _neg, "abs": _abs, "sign": _sign, "sqrt": _sqrt, "reciprocal": _reciprocal,
    "floor": _template("tl.floor({0})"), "ceil": _template("tl.ceil({0})"),
    "round": _rounding("M.round_half_even", "rint"), "trunc": _rounding("M.trunc", "trunc"),
    "is_nan": _template("({0} != {0})"), "is_inf": _template("(tl.abs({0}) == float('inf'))"),
    "is_finite": _template("(tl.abs({0}) < float('inf'))"),
    "logical_not": _template("({0} == 0)"), "bitwise_not": _template("(~{0})"),
    "add": _infix("+"), "sub": _infix("-"), "mul": _infix("*"), "div": _div, "rem": _rem,
    "max": _max_min("maximum"), "min": _max_min("minimum"),
    "eq": _infix("=="), "ne": _infix("!="), "lt": _infix("<"), "le": _infix("<="),
    "gt": _infix(">"), "ge": _infix(">="),
    "logical_and": _infix("&"), "logical_or": _infix("|"), "logical_xor": _infix("^"),
    "bitwise_and": _infix("&"), "bitwise_or": _infix("|"), "bitwise_xor": _infix("^"),
    "shift_left": _shift("left"), "shift_right_logical": _shift("logical"),
    "shift_right_arithmetic": _shift("arithmetic"),
    "select": _select, "clamp": _clamp,
}

# Rules whose helpers combine conditions on different operands with ``&``/``|``: the
# interpreter mis-types those between a 0-d bool and a block, so a 0-d operand mixed with
# block operands is broadcast first.
MIXED_MASKS = frozenset({"pow", "atan2"})

# Results that need no rounding to float16/bfloat16: an exact op (it compares, picks or
# tests its operands, or its result is exact, as rem's) already gives a value of its dtype.
NO_ROUNDING = frozenset(ops_with_accuracy(Accuracy.EXACT))


# -- conversions ---------------------------------------------------------------------------

_SMALL_INTS = (DType.int8, DType.int16, DType.uint8)


def convert(w: KernelWriterView, src: DType, dst: DType, x: str) -> str:
    """``convert`` from ``src`` to ``dst`` on a register value (docs/ir.md semantics)."""
    if dst.is_bool:
        return f"({x} != {w.const(0, src)})"  # NaN != 0: true
    if src.is_bool:
        return f"({x}).to({reg(dst)})"
    if dst.is_float:
        return _to_float(src, dst, x)
    if src.is_float:
        return _float_to_int(w, src, dst, x)
    return f"({x}).to({TL_DTYPE[dst]})"  # int → int wraps


def _to_float(src: DType, dst: DType, x: str) -> str:
    if dst is DType.float64:
        return f"({x}).to(tl.float64)"
    if src is DType.float64:
        wide = f"({x}).to(tl.float32)" if dst is DType.float32 else f"M.f64_to_f32_odd({x})"
    elif src.is_float:
        wide = x  # already a float32 register
    elif dst is DType.bfloat16 and src not in _SMALL_INTS:
        # ints past 2**24 would round twice (to float32, then to bfloat16)
        wide = f"M.i64_to_f32_odd(({x}).to(tl.int64))"
    else:
        wide = f"({x}).to(tl.float32)"  # int → float16 can only round once: it overflows first
    return round_to(wide, dst)


def _float_to_int(w: KernelWriterView, src: DType, dst: DType, x: str) -> str:
    # Truncate; NaN → 0 and out of range saturates, as the reference does (the IR leaves
    # both implementation-defined, but matching costs nothing and never traps).
    info = dst.iinfo
    f = DType.float64 if src is DType.float64 else DType.float32
    lo, hi = w.const(float(info.min), f), w.const(float(info.max) + 1.0, f)
    t = f"M.trunc({x})"
    safe = f"tl.where(({t} >= {lo}) & ({t} < {hi}), {t}, {w.const(0.0, f)}).to({TL_DTYPE[dst]})"
    clipped = f"tl.where({t} >= {hi}, {w.const(info.max, dst)}, tl.where({t} < {lo}, {w.const(info.min, dst)}, {safe}))"
    return f"tl.where({x} != {x}, {w.const(0, dst)}, {clipped})"


def bitcast(w: KernelWriterView, src: DType, dst: DType, x: str) -> str:
    """``bitcast_convert``: float16/bfloat16 registers go back to their 16 bits first."""
    bits = reg_to_store(x, src)
    if dst is DType.bfloat16:
        return f"M.bf16_bits_to_f32(({bits}).to(tl.int16, bitcast=True))"
    out = f"({bits}).to({TL_DTYPE[dst]}, bitcast=True)"
    return load_to_reg(out, dst)


# op -> rule(ctx, source dtype, result dtype, operand) for the ops that change dtype.
CONVERSIONS: dict[str, Callable[[KernelWriterView, DType, DType, str], str]] = {
    "convert": convert, "bitcast_convert": bitcast,
}
