"""The aten → IR translation table: one explicit entry per aten overload.

Keys are overload names without the ``aten.`` prefix (``"add.Tensor"``); values are
translation functions ``fn(ctx, *args, **kwargs)`` (``ctx`` is a
:class:`~parity.frontend.context.TranslationContext`). The table is assembled here from
one module per op family, and nothing else registers entries. A module named after an
``ir/ops`` family translates to that family's ops (``contraction``: matmuls and
convolutions; ``normalization``, ``pooling``, ``reduction``, ``shape``, ``indexing``,
``attention``, ``random``); ``strided`` holds the views that pick elements by storage
position (``as_strided``) or by overlapping windows (``unfold``); ``elementwise`` covers the unary, binary, selection and
activation families, ``complex_numbers`` the complex-number family, ``fft`` the Fourier transforms, and ``linalg``, ``pad``, ``sampling``, ``embedding`` and
``custom_ops`` group aten ops, ``ordering`` the order statistics and searches (kthvalue, median, cummax, searchsorted), that build several families' ops; ``prims`` translates the
torch ``prims`` ops that reach aten graphs (``prims.fma``); ``rng_state`` the random-state
wrappers activation checkpointing puts around a random op it recomputes; ``matrix_exp`` the
matrix exponential (scaling and squaring from matmuls).
:func:`translated_ops` and :func:`core_aten_ops` drive ``parity aten``.

Example::

    >>> "add.Tensor" in TABLE and "convolution_backward.default" in TABLE
    True
"""

from __future__ import annotations

from ..tables import merge_tables
from . import (
    attention,
    complex_numbers,
    contraction,
    custom_ops,
    elementwise,
    embedding,
    fft,
    indexing,
    linalg,
    matrix_exp,
    normalization,
    ordering,
    pad,
    pooling,
    prims,
    random,
    reduction,
    rng_state,
    sampling,
    shape,
    strided,
)

FAMILIES = (elementwise, complex_numbers, fft, shape, strided, indexing, reduction, ordering, contraction, normalization, pooling,
            attention, random, rng_state, linalg, matrix_exp, pad, sampling, embedding, custom_ops, prims)


TABLE = merge_tables(FAMILIES, "aten op")


def translated_ops() -> list[str]:
    """Every aten overload with a translation, as ``aten.NAME.OVERLOAD`` (custom ops of other
    libraries, torch's prims and the higher-order ops by their own qualified names, ``prims.fma.default``,
    ``higher_order.run_with_rng_state``)."""
    return sorted(key if key in custom_ops.TABLE or key in prims.TABLE else f"higher_order.{key}"
                  if key in rng_state.TABLE else f"aten.{key}" for key in TABLE)


def core_aten_ops() -> list[str]:
    """torch's Core ATen IR: every aten overload tagged ``torch.Tag.core``."""
    import torch

    names = []
    # torch.ops.aten lists only the packets already looked up: look every aten schema up first
    packets = {schema.name.split("::", 1)[1] for schema in torch._C._jit_get_all_schemas()
               if schema.name.startswith("aten::")}
    for packet_name in sorted(packets | set(dir(torch.ops.aten))):
        packet = getattr(torch.ops.aten, packet_name, None)
        if not isinstance(packet, torch._ops.OpOverloadPacket):
            continue
        for overload in packet.overloads():
            op = getattr(packet, overload)
            if torch.Tag.core in op.tags:
                names.append(str(op))
    return sorted(names)


def coverage() -> dict[str, list[str]]:
    """{"translated": [...], "core_missing": Core ATen ops without a translation}."""
    translated = set(translated_ops())
    return {"translated": sorted(translated), "core_missing": [op for op in core_aten_ops() if op not in translated]}
