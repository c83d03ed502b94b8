"""The PyTorch frontend: what :func:`parity.compile` runs (TorchDynamo + AOTAutograd → IR → a backend).

Public pieces: :func:`recording_backend` (parity's capture as a ``torch.compile``
backend, each compiled graph handed to a callback), :func:`fx_to_ir` (an aten-level FX GraphModule → an
IR graph plus its calling spec), :func:`translated_ops` / :func:`coverage` (which aten
ops translate), :data:`STATS` and :func:`reset_caches`. Importing this package does
not import torch; the first use does.

Example::

    >>> import parity.frontend as frontend
    >>> "aten.add.Tensor" in frontend.translated_ops()
    True
"""

from __future__ import annotations

__all__ = ["STATS", "coverage", "fx_to_ir", "recording_backend", "reset_caches", "translated_ops"]


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


def recording_backend(wrap, backend: str = "reference"):
    """A ``torch.compile`` backend that runs parity's own capture and hands each compiled graph to ``wrap``.

    The same path as :func:`parity.compile` (AOTAutograd with parity's decompositions, the
    FX → IR translation, ``backend``'s executable), except that every forward, backward or
    inference graph's callable is passed through ``wrap(compiled, kind)`` before
    AOTAutograd gets it: the numerics debugger records the arrays each graph receives.
    ``compiled.translation.graph`` is the IR graph.

    Example::

        >>> import torch
        >>> kinds = []
        >>> def wrap(compiled, kind):
        ...     kinds.append((kind, len(compiled.translation.graph.nodes) > 0))
        ...     return compiled
        >>> f = torch.compile(lambda x: torch.tanh(x) * 2, backend=recording_backend(wrap))
        >>> _ = f(torch.ones(3)); torch._dynamo.reset(); kinds
        [('inference', True)]
    """
    import functools

    from torch._dynamo.backends.common import aot_autograd

    from .aten_decompositions import decomposition_table
    from .pipeline import compile_fx_graph, run_aot
    from .session import CompileOptions, Session

    session = Session(CompileOptions(backend=backend, strict=True))

    def compiler(kind):
        compile_one = functools.partial(compile_fx_graph, session=session, kind=kind)
        return lambda gm, example_inputs: wrap(compile_one(gm, example_inputs), kind)

    aot = aot_autograd(fw_compiler=compiler("forward"), bw_compiler=compiler("backward"),
                       inference_compiler=compiler("inference"), decompositions=decomposition_table())

    return functools.partial(run_aot, aot)  # prepared as parity.compile prepares its graphs


def reset_caches() -> None:
    """Forget compiled executables and zero the counters."""
    from .compiled_graph import reset_caches as reset

    reset()


def __getattr__(name):
    if name == "STATS":
        from .compiled_graph import STATS

        return STATS
    raise AttributeError(f"module 'parity.frontend' has no attribute {name!r}")
