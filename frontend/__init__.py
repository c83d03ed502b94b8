"""The PyTorch frontend: ``compile`` (TorchDynamo + AOTAutograd → IR → a backend).

Public pieces: :func:`compile`, :func:`fx_to_ir` (an aten-level FX GraphModule → an
IR graph plus its calling spec), :func:`translated_ops` / :func:`coverage` (which aten
ops translate), :data:`STATS` and :func:`reset_caches`. Importing this package does
not import torch; the first use does.

Example::

    >>> import parity.frontend as frontend
    >>> "aten.add.Tensor" in frontend.translated_ops()
    True
"""

from __future__ import annotations

__all__ = ["STATS", "compile", "coverage", "fx_to_ir", "reset_caches", "translated_ops"]


def compile(fn_or_module=None, **options):
    """See :func:`parity.frontend.api.compile`."""
    from .api import compile as compile_

    return compile_(fn_or_module, **options)


def fx_to_ir(gm, example_inputs=None, **options):
    """See :func:`parity.frontend.translate.fx_to_ir`."""
    from .translate import fx_to_ir as fx_to_ir_

    return fx_to_ir_(gm, example_inputs, **options)


def translated_ops() -> list[str]:
    """Every aten overload parity translates (``aten.add.Tensor``, ...)."""
    from .aten import translated_ops as translated

    return translated()


def coverage() -> dict[str, list[str]]:
    """Translated aten ops and the Core ATen ops still missing."""
    from .aten import coverage as coverage_

    return coverage_()


def reset_caches() -> None:
    """Forget compiled executables and zero the counters."""
    from .compiled_graph import reset_caches as reset

    reset()


def __getattr__(name):
    if name == "STATS":
        from .compiled_graph import STATS

        return STATS
    raise AttributeError(f"module 'parity.frontend' has no attribute {name!r}")
