"""torch's ``_foreach_*`` ops (the multi-tensor optimizer kernels) as one aten op per tensor.

``torch.optim``'s ``foreach=True`` steps and ``clip_grad_norm_`` call list ops such as
``_foreach_addcdiv(params, exp_avgs, denoms, value)``; AOTAutograd keeps them whole. On CPU,
eager torch runs each of them as a loop of the per-tensor op (ATen's "slow path"), so this
table gives each the same loop: ``_foreach_OP.OVERLOAD`` becomes ``aten.OP`` applied to
the i-th tensor of every list argument (and the i-th scalar of a scalar list), the other
arguments repeated. The per-tensor ops then meet the rest of the decomposition table and
the aten translations like any other op.

The overloads that take one tensor of per-list scalars (``_foreach_addcdiv.Tensor``) are
left out: their per-tensor op takes a Python number, which a traced graph does not have.

Example::

    >>> import torch
    >>> table = foreach_decompositions()
    >>> torch.ops.aten._foreach_addcdiv.Scalar in table
    True
"""

from __future__ import annotations

import functools

import torch

# unary: _foreach_OP(list) -> OP(x)
_UNARY = ("abs", "acos", "asin", "atan", "ceil", "clone", "cos", "cosh", "erf", "erfc", "exp", "expm1",
          "floor", "frac", "lgamma", "log", "log10", "log1p", "log2", "neg", "reciprocal", "round",
          "rsqrt", "sigmoid", "sign", "sin", "sinh", "sqrt", "tan", "tanh", "trunc", "zero")
# OP -> the overloads of _foreach_OP this table decomposes
_OVERLOADS = {
    **{name: ("default",) for name in _UNARY},
    "copy": ("default",),
    "add": ("Scalar", "List", "ScalarList", "Tensor"),
    "sub": ("Scalar", "List", "ScalarList"),
    "mul": ("Scalar", "List", "ScalarList", "Tensor"),
    "div": ("Scalar", "List", "ScalarList", "Tensor"),
    "maximum": ("Scalar", "List", "ScalarList"),
    "minimum": ("Scalar", "List", "ScalarList"),
    "clamp_min": ("Scalar", "List", "ScalarList"),
    "clamp_max": ("Scalar", "List", "ScalarList"),
    "pow": ("Scalar", "List", "ScalarList", "ScalarAndTensor"),
    "lerp": ("Scalar", "List", "ScalarList"),
    "addcdiv": ("Scalar", "ScalarList"),
    "addcmul": ("Scalar", "ScalarList"),
}
# per-tensor ops whose fourth argument is keyword-only in aten (addcdiv(x, t1, t2, *, value))
_KEYWORD_VALUE = ("addcdiv", "addcmul")


def foreach_decompositions() -> dict:
    """``_foreach_*`` overload → its per-tensor loop (see the module docstring)."""
    table = {}
    for name, overloads in _OVERLOADS.items():
        packet = getattr(torch.ops.aten, f"_foreach_{name}")
        for overload in overloads:
            table[getattr(packet, overload)] = functools.partial(_per_tensor, name)
    table[torch.ops.aten._foreach_norm.Scalar] = _norm
    return table


def _per_tensor(name: str, *args, **kwargs) -> list:
    """``aten.<name>`` on the i-th element of every list argument, the rest repeated."""
    op = getattr(torch.ops.aten, name)
    length = next(len(a) for a in args if isinstance(a, (list, tuple)))
    results = []
    for i in range(length):
        element = [a[i] if isinstance(a, (list, tuple)) else a for a in args]
        element_kwargs = dict(kwargs)
        if name in _KEYWORD_VALUE and len(element) == 4:
            element_kwargs["value"] = element.pop()
        results.append(op(*element, **element_kwargs))
    return results


def _norm(tensors, ord=2, dtype=None) -> list:
    """``_foreach_norm``: each tensor's vector norm (what clip_grad_norm_ stacks)."""
    return [torch.ops.aten.linalg_vector_norm.default(t, ord, dtype=dtype) for t in tensors]
