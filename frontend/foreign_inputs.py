"""Arguments Dynamo cannot trace at all: quantized tensors (quint8, qint8, qint32).

Dynamo's fake tensors have no quantized form. Given a quantized argument, Dynamo gives up
on the whole frame and runs it in eager torch: one log line on stderr, no graph break that
parity could report, and ``fullgraph=True`` fails with "found no compiled frames".
:func:`checking_arguments` looks at the arguments before Dynamo does, on Dynamo's path only
(the fast path serves only signatures whose graphs compiled): ``strict=True`` raises
:class:`~.errors.UnsupportedAtenOp` naming the argument and its dtype; ``strict=False``
runs the call in eager torch, with parity's one warning for the call.

Example::

    >>> import torch
    >>> def f(x, scale):
    ...     return x.dequantize() * scale
    >>> q = torch.quantize_per_tensor(torch.ones(2), 0.5, 0, torch.quint8)
    >>> quantized_argument(f, (torch.ones(2), q), {})
    ('scale', torch.quint8)
"""

from __future__ import annotations

import inspect

import torch

from .errors import UnsupportedAtenOp, dtype_not_in_ir
from .source import definition_loc
from .tensors import TORCH_TO_IR


def quantized_argument(fn, args: tuple, kwargs: dict) -> tuple[str, torch.dtype] | None:
    """(the parameter's name, its dtype) of the first quantized tensor argument, or None."""
    for index, value in enumerate(args):
        if isinstance(value, torch.Tensor) and value.is_quantized:
            return _parameter_name(fn, index), value.dtype
    for name, value in kwargs.items():
        if isinstance(value, torch.Tensor) and value.is_quantized:
            return name, value.dtype
    return None


def named_input_error(err: UnsupportedAtenOp, eager, args: tuple, kwargs: dict) -> UnsupportedAtenOp:
    """``err`` about a graph input of a dtype the IR lacks (a complex or float8 argument: AOTAutograd
    names it ``arg0_1``, at no line) as the user's parameter, at ``eager``'s definition."""
    if not err.aten_op.startswith("input "):
        return err
    named = [(_parameter_name(eager, i), v) for i, v in enumerate(args)] + list(kwargs.items())
    for name, value in named:
        if isinstance(value, torch.Tensor) and value.dtype not in TORCH_TO_IR \
                and dtype_not_in_ir(value.dtype) == err.why:
            return UnsupportedAtenOp(f"input {name}", definition_loc(eager), err.why, backend=err.backend,
                                     alternatives=err.alternatives)
    return err


def _parameter_name(fn, index: int) -> str:
    try:
        names = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):  # a callable without a signature
        names = []
    return names[index] if index < len(names) else f"argument {index}"


def checking_arguments(compiled, eager, session):
    """``compiled`` (Dynamo's path) behind the quantized-argument check; ``eager`` is the user's
    own function or module, ``session`` the compile's (frontend/session.Session)."""
    options = session.options

    def call(*args, **kwargs):
        for value in args:  # the common case inline: a quantized argument is rare, this path is per call
            if isinstance(value, torch.Tensor) and value.is_quantized:
                break
        else:
            if not kwargs:
                return compiled(*args)
            for value in kwargs.values():  # (a generate() step passes its inputs by keyword)
                if isinstance(value, torch.Tensor) and value.is_quantized:
                    break
            else:
                return compiled(*args, **kwargs)
        found = quantized_argument(eager, args, kwargs)
        if found is None:
            return compiled(*args, **kwargs)
        name, dtype = found
        loc, why = definition_loc(eager), dtype_not_in_ir(dtype)
        if options.strict:
            last = ("fullgraph=True runs every op on the backend" if options.fullgraph else
                    "or pass strict=False to run the whole call in eager torch (Dynamo cannot trace a quantized tensor)")
            raise UnsupportedAtenOp(f"input {name}", loc, why, backend=str(options.backend),
                                    fix=f"dequantize it before the call ({name}.dequantize()); {last}")
        session.fall_back(f"input {name}", loc, f"{why}; Dynamo cannot trace it: the whole call runs eagerly")
        return eager(*args, **kwargs)

    return call
