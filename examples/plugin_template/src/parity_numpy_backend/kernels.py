"""One NumPy kernel per parity primitive: the whole lowering table of this backend.

A kernel is ``kernel(attrs, out_types, *arrays) -> array | tuple[array, ...]``. Arrays
arrive in their IR dtype (bfloat16 from ml_dtypes). Float math is done in float64 and
rounded once to the output dtype (``_float``), which is how this backend meets the
contract's bounds in float16/bfloat16 too; integer math stays in its dtype and wraps.

Replace these with your runtime's kernels: the conformance suite tells you, op by op and
dtype by dtype, whether the replacement still meets the contract.
"""

from __future__ import annotations

import math

import numpy as np

_erf = np.vectorize(math.erf, otypes=[np.float64])


def _f64(x: np.ndarray) -> np.ndarray:
    return np.asarray(x).astype(np.float64)


def _out(value, t) -> np.ndarray:
    """``value`` as the output type ``t`` (floats: computed in float64, rounded once here)."""
    return np.asarray(value).astype(t.dtype.numpy).reshape(t.shape)


def _is_float(x: np.ndarray) -> bool:
    return x.dtype.kind == "f" or x.dtype.name == "bfloat16"


def _float(fn):
    """A kernel computing ``fn`` in float64 on float operands (ints/bools pass unchanged)."""
    def kernel(attrs, outs, *xs):
        with np.errstate(all="ignore"):
            return _out(fn(*[_f64(x) if _is_float(x) else x for x in xs]), outs[0])

    return kernel


def _native(fn):
    """A kernel computing ``fn`` on the operands as they are (exact ops, integer math)."""
    def kernel(attrs, outs, *xs):
        with np.errstate(all="ignore"):
            return _out(fn(*xs), outs[0])

    return kernel


def _with_attrs(fn):
    def kernel(attrs, outs, *xs):
        with np.errstate(all="ignore"):
            return fn(attrs, outs, *xs)

    return kernel


# -- elementwise ---------------------------------------------------------------------------------


def _logistic(x):
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def _sign(x):
    return np.where(x == 0, x, np.sign(x))  # sign(-0.0) = -0.0, NaN stays NaN


def _arith(float_fn, int_fn=None):
    """Float math in float64; integer math on the operands' own dtype."""
    def kernel(attrs, outs, *xs):
        with np.errstate(all="ignore"):
            if _is_float(xs[0]):
                return _out(float_fn(*[_f64(x) for x in xs]), outs[0])
            return _out((int_fn or float_fn)(*xs), outs[0])

    return kernel


def _int_div(x, y):
    """C division: truncates toward zero; x / 0 is implementation-defined (here 0)."""
    safe = np.where(y == 0, 1, y).astype(x.dtype)
    q = np.floor_divide(x, safe)
    fix = (np.remainder(x, safe) != 0) & ((x < 0) != (safe < 0))
    return np.where(y == 0, 0, q + fix.astype(x.dtype)).astype(x.dtype)


def _int_rem(x, y):
    safe = np.where(y == 0, 1, y).astype(x.dtype)
    return np.where(y == 0, x, np.fmod(x, safe)).astype(x.dtype)


def _shift_ok(x, y):
    bits = x.dtype.itemsize * 8
    ok = (y >= 0) & (y < bits)
    return ok, np.where(ok, y, 0).astype(x.dtype)


def _shl(x, y):
    ok, amount = _shift_ok(x, y)
    return np.where(ok, np.left_shift(x, amount), 0)


def _shr_logical(x, y):
    unsigned = x.view(np.dtype(f"u{x.dtype.itemsize}"))
    ok, amount = _shift_ok(x, y)
    return np.where(ok, np.right_shift(unsigned, amount.astype(unsigned.dtype)), 0).astype(unsigned.dtype).view(x.dtype)


def _shr_arith(x, y):
    ok, amount = _shift_ok(x, y)
    return np.where(ok, np.right_shift(x, amount), -(x < 0).astype(x.dtype))


def _bitwise_not(x):
    return np.logical_not(x) if x.dtype == np.bool_ else np.invert(x)


def _convert(attrs, outs, x):
    dst = outs[0].dtype
    if dst.is_bool:
        return _out(x != 0, outs[0])  # NaN != 0: true
    if dst.is_integer and _is_float(x):  # NaN / out of range is implementation-defined (not compared)
        t = np.clip(np.nan_to_num(np.trunc(_f64(x))), -2.0**63, 2.0**63 - 1024)
        return _out(t.astype(np.int64), outs[0])  # truncated toward zero, then into the dtype
    return _out(x.astype(dst.numpy), outs[0])  # one rounding from the source dtype; ints wrap


_UNARY_FLOAT = {
    "exp": np.exp, "exp2": np.exp2, "expm1": np.expm1, "log": np.log, "log2": np.log2, "log1p": np.log1p,
    "sqrt": np.sqrt, "rsqrt": lambda x: 1.0 / np.sqrt(x), "reciprocal": lambda x: 1.0 / x, "sin": np.sin,
    "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh,
    "cosh": np.cosh, "tanh": np.tanh, "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh, "erf": _erf,
    "logistic": _logistic, "floor": np.floor, "ceil": np.ceil, "round": np.round, "trunc": np.trunc,
}
_BINARY_FLOAT = {"pow": np.power, "atan2": np.arctan2}
_ARITH = {  # name -> (float64 function, integer function)
    "neg": (np.negative, None), "abs": (np.abs, None), "sign": (_sign, None),
    "add": (np.add, None), "sub": (np.subtract, None), "mul": (np.multiply, None),
    "div": (np.divide, _int_div), "rem": (np.fmod, _int_rem), "max": (np.maximum, None), "min": (np.minimum, None),
    "clamp": (lambda lo, x, hi: np.minimum(np.maximum(x, lo), hi), None),
}
_EXACT = {
    "is_nan": np.isnan, "is_inf": np.isinf, "is_finite": np.isfinite, "logical_not": np.logical_not,
    "bitwise_not": _bitwise_not, "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
    "gt": np.greater, "ge": np.greater_equal, "logical_and": np.logical_and, "logical_or": np.logical_or,
    "logical_xor": np.logical_xor, "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or,
    "bitwise_xor": np.bitwise_xor, "shift_left": _shl, "shift_right_logical": _shr_logical,
    "shift_right_arithmetic": _shr_arith, "select": np.where,
}


# -- creation and shape --------------------------------------------------------------------------


def _iota(attrs, outs):
    t = outs[0]
    line = np.arange(t.shape[attrs["dimension"]], dtype=np.int64)
    shape = [1] * len(t.shape)
    shape[attrs["dimension"]] = -1
    return np.broadcast_to(line.reshape(shape), t.shape).astype(t.dtype.numpy)  # ints wrap


def _broadcast(attrs, outs, x):
    shape = [1] * len(outs[0].shape)
    for i, d in enumerate(attrs["broadcast_dimensions"]):
        shape[d] = x.shape[i]
    return np.broadcast_to(x.reshape(shape), outs[0].shape).copy()


def _slice(attrs, outs, x):
    return x[tuple(slice(a, b, s) for a, b, s in zip(attrs["start_indices"], attrs["limit_indices"],
                                                     attrs["strides"]))].copy()


def _pad_or_crop(x, pairs, value):
    grown = np.pad(x, [(max(lo, 0), max(hi, 0)) for lo, hi in pairs], constant_values=value)
    return grown[tuple(slice(max(-lo, 0), n - max(-hi, 0)) for n, (lo, hi) in zip(grown.shape, pairs))]


def _pad(attrs, outs, x, value):
    inner = attrs["interior_padding"]
    full = np.full(tuple(max(d - 1, 0) * i + d for d, i in zip(x.shape, inner)), value, dtype=x.dtype)
    full[tuple(slice(None, None, i + 1) for i in inner)] = x
    return _pad_or_crop(full, list(zip(attrs["edge_padding_low"], attrs["edge_padding_high"])), value)


def _dynamic_slice(attrs, outs, x, *starts):
    sizes = attrs["slice_sizes"]
    begin = [int(np.clip(int(s), 0, n - k)) for s, n, k in zip(starts, x.shape, sizes)]
    return x[tuple(slice(b, b + k) for b, k in zip(begin, sizes))].copy()


def _dynamic_update_slice(attrs, outs, x, update, *starts):
    begin = [int(np.clip(int(s), 0, n - k)) for s, n, k in zip(starts, x.shape, update.shape)]
    out = x.copy()
    out[tuple(slice(b, b + k) for b, k in zip(begin, update.shape))] = update
    return out


def _index_grid(idx: np.ndarray, axis: int, size: int) -> tuple:
    """The full index of every element of ``idx`` into an array with ``size`` along ``axis``."""
    grid = list(np.indices(idx.shape, sparse=True))
    grid[axis] = np.clip(idx, 0, max(size - 1, 0))  # out of range is implementation-defined: clamp
    return tuple(grid)


def _gather(attrs, outs, x, idx):
    return x[_index_grid(idx, attrs["axis"], x.shape[attrs["axis"]])]


# scatter's reducing modes: (ufunc, the identity a written element starts from without include_self)
_SCATTER = {"add": (np.add, lambda x: 0), "mul": (np.multiply, lambda x: 1),
            "max": (np.maximum, lambda x: -np.inf if _is_float(x) else np.iinfo(x.dtype).min),
            "min": (np.minimum, lambda x: np.inf if _is_float(x) else np.iinfo(x.dtype).max)}


def _scatter(attrs, outs, x, idx, updates):
    where = _index_grid(idx, attrs["axis"], x.shape[attrs["axis"]])
    if attrs["reduce"] == "replace":
        out = x.copy()
        out[where] = updates
        return out
    ufunc, identity = _SCATTER[attrs["reduce"]]
    out, updates = (_f64(x), _f64(updates)) if _is_float(x) else (x.copy(), updates)
    if not attrs["include_self"]:
        out[where] = identity(x)
    ufunc.at(out, where, updates)  # duplicates all combine; ints wrap; max/min propagate NaN
    return _out(out, outs[0])


# -- reductions, scans, sorting --------------------------------------------------------------------


def _reduce(kind):
    def kernel(attrs, outs, x):
        axes = tuple(attrs["axes"])
        with np.errstate(all="ignore"):
            if kind in ("and", "or"):
                return _out((np.all if kind == "and" else np.any)(x, axis=axes), outs[0])
            if kind in ("sum", "prod"):
                fn, start = (np.sum, 0) if kind == "sum" else (np.prod, 1)
                if _is_float(x):  # a sum starts from +0.0, so -0.0 terms alone give +0.0
                    return _out(fn(_f64(x), axis=axes, initial=float(start)), outs[0])
                return _out(fn(x, axis=axes, dtype=x.dtype), outs[0])
            low = -np.inf if _is_float(x) else np.iinfo(x.dtype).min
            high = np.inf if _is_float(x) else np.iinfo(x.dtype).max
            if kind == "max":
                return _out(np.max(x, axis=axes, initial=x.dtype.type(low)), outs[0])
            return _out(np.min(x, axis=axes, initial=x.dtype.type(high)), outs[0])

    return kernel


def _arg(fn):
    def kernel(attrs, outs, x):
        return _out(fn(x, axis=attrs["axis"]), outs[0])  # NaN counts as the extreme; ties: lowest index

    return kernel


def _scan(ufunc):
    def kernel(attrs, outs, x):
        axis, rev = attrs["axis"], attrs["reverse"]
        y = np.flip(x, axis) if rev else x
        with np.errstate(all="ignore"):
            if ufunc in (np.add, np.multiply) and _is_float(x):
                y = ufunc.accumulate(_f64(y), axis=axis)
            else:
                y = ufunc.accumulate(y, axis=axis, dtype=x.dtype) if y.size else y
        return _out(np.flip(y, axis) if rev else y, outs[0])

    return kernel


def _order(x, axis, descending):
    """Stable order along ``axis``; NaN last ascending, first descending."""
    if x.dtype.name == "bfloat16":  # ml_dtypes' bfloat16 sorts NaN as it comes: order float32 keys
        x = x.astype(np.float32)
    if not descending:
        return np.argsort(x, axis=axis, kind="stable")
    backwards = np.argsort(np.flip(x, axis), axis=axis, kind="stable")
    return np.flip(x.shape[axis] - 1 - backwards, axis)


def _sort(attrs, outs, x):
    order = _order(x, attrs["axis"], attrs["descending"])
    return np.take_along_axis(x, order, attrs["axis"]), order.astype(np.int64)


def _top_k(attrs, outs, x):
    order = _order(x, -1, attrs["largest"])[..., : attrs["k"]]
    return np.take_along_axis(x, order, -1), order.astype(np.int64)


# -- contractions and windows -----------------------------------------------------------------------


def _dot_general(attrs, outs, lhs, rhs):
    lb, rb = attrs["lhs_batch_dims"], attrs["rhs_batch_dims"]
    lc, rc = attrs["lhs_contracting_dims"], attrs["rhs_contracting_dims"]
    lf = [d for d in range(lhs.ndim) if d not in lb and d not in lc]
    rf = [d for d in range(rhs.ndim) if d not in rb and d not in rc]
    letters = iter("abcdefghijklmnopqrstuvwxyz")
    left = [None] * lhs.ndim
    right = [None] * rhs.ndim
    for a, b in zip(lb, rb):
        left[a] = right[b] = next(letters)
    for a, b in zip(lc, rc):
        left[a] = right[b] = next(letters)
    for d in lf:
        left[d] = next(letters)
    for d in rf:
        right[d] = next(letters)
    result = "".join(left[a] for a in lb) + "".join(left[d] for d in lf) + "".join(right[d] for d in rf)
    spec = f"{''.join(left)},{''.join(right)}->{result}"
    with np.errstate(all="ignore"):
        if _is_float(lhs):
            return _out(np.einsum(spec, _f64(lhs), _f64(rhs)), outs[0])
        return _out(np.einsum(spec, lhs, rhs, dtype=lhs.dtype), outs[0])  # ints wrap


def _windows(x, dims, strides, dilations):
    """[*out, *window] view of ``x``: windows of ``dims`` every ``strides``, ``dilations`` apart."""
    span = [(w - 1) * d + 1 for w, d in zip(dims, dilations)]
    if any(s > n for s, n in zip(span, x.shape)):
        out = [0 if s > n else (n - s) // st + 1 for s, n, st in zip(span, x.shape, strides)]
        return np.zeros(out + list(dims), x.dtype)
    view = np.lib.stride_tricks.sliding_window_view(x, span)
    view = view[tuple(slice(None, None, s) for s in strides)]
    return view[(Ellipsis,) + tuple(slice(None, None, d) for d in dilations)]


def _reduce_window(attrs, outs, x):
    is_max = attrs["kind"] == "max"
    low = -np.inf if _is_float(x) else np.iinfo(x.dtype).min
    padded = _pad_or_crop(x, attrs["padding"], x.dtype.type(low) if is_max else 0)
    w = _windows(padded, attrs["window_dimensions"], attrs["window_strides"], attrs["window_dilations"])
    axes = tuple(range(x.ndim, w.ndim))
    with np.errstate(all="ignore"):
        if is_max:
            return _out(np.max(w, axis=axes, initial=x.dtype.type(low)), outs[0])
        if _is_float(x):
            return _out(np.sum(_f64(w), axis=axes), outs[0])
        return _out(np.sum(w, axis=axes, dtype=x.dtype), outs[0])


def _dilate(x, factors):
    if all(f == 1 for f in factors):
        return x
    shape = x.shape[:2] + tuple((n - 1) * f + 1 if n else 0 for n, f in zip(x.shape[2:], factors))
    out = np.zeros(shape, x.dtype)
    out[(slice(None), slice(None)) + tuple(slice(None, None, f) for f in factors)] = x
    return out


def _convolution(attrs, outs, lhs, rhs):
    groups, spatial = attrs["feature_group_count"], lhs.ndim - 2
    x = _pad_or_crop(_dilate(_f64(lhs), attrs["lhs_dilation"]), [(0, 0), (0, 0)] + list(attrs["padding"]), 0.0)
    w = _windows(x, (1, 1) + rhs.shape[2:], (1, 1) + tuple(attrs["window_strides"]),
                 (1, 1) + tuple(attrs["rhs_dilation"]))
    n, c, o = lhs.shape[0], lhs.shape[1], rhs.shape[0]
    out_spatial = outs[0].shape[2:]
    w = w.reshape(n, groups, c // groups, *out_spatial, *rhs.shape[2:])
    k = _f64(rhs).reshape(groups, o // groups, *rhs.shape[1:])
    pos = "pqrstuvw"[:spatial]
    with np.errstate(all="ignore"):
        out = np.einsum(f"ngc{pos}{pos.upper()},goc{pos.upper()}->ngo{pos}", w, k)
    return _out(out, outs[0])


KERNELS = {
    **{name: _float(fn) for name, fn in (_UNARY_FLOAT | _BINARY_FLOAT).items()},
    **{name: _arith(f, i) for name, (f, i) in _ARITH.items()},
    **{name: _native(fn) for name, fn in _EXACT.items()},
    "convert": _with_attrs(_convert),
    "bitcast_convert": lambda attrs, outs, x: x.view(outs[0].dtype.numpy),
    "constant": lambda attrs, outs: np.array(attrs["value"]),
    "iota": _iota,
    "reshape": lambda attrs, outs, x: x.reshape(outs[0].shape),
    "broadcast_in_dim": _broadcast,
    "transpose": lambda attrs, outs, x: np.transpose(x, attrs["permutation"]).copy(),
    "slice": _slice,
    "concatenate": lambda attrs, outs, *xs: np.concatenate(xs, axis=attrs["dimension"]),
    "pad": _pad,
    "reverse": lambda attrs, outs, x: np.flip(x, tuple(attrs["dimensions"])).copy(),
    "gather": _gather, "scatter": _with_attrs(_scatter),
    "dynamic_slice": _dynamic_slice, "dynamic_update_slice": _dynamic_update_slice,
    **{f"reduce_{k}": _reduce(k) for k in ("sum", "prod", "max", "min", "and", "or")},
    "argmax": _arg(np.argmax), "argmin": _arg(np.argmin),
    "cumsum": _scan(np.add), "cumprod": _scan(np.multiply), "cummax": _scan(np.maximum),
    "cummin": _scan(np.minimum),
    "sort": _sort, "top_k": _top_k,
    "dot_general": _dot_general, "convolution": _convolution, "reduce_window": _reduce_window,
}
