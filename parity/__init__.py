"""parity: one graph IR, many backends, and a conformance suite that proves they agree.

``import parity`` stays light (no torch): :func:`compile`, :func:`capture` and
:func:`explain` import the PyTorch frontend on first use.
"""

from . import distributed, ir, validate
from .diff import diff  # the function shadows its package's name here, as export does (torch loads on first call)
from .frontend.auto_options import AutoOptions
from .export import export  # the function shadows its module's name here (torch loads on first call)
from .ir.sharding import Mesh, PartitionSpec

__version__ = "0.1.0"
__all__ = ["AutoOptions", "Mesh", "PartitionSpec", "auto_choices", "capture", "compile", "diff", "distributed", "explain", "export", "fallbacks", "ir", "shard",
           "__version__"]


def compile(fn_or_module=None, *, backend="auto", device="cpu", strict=True, dynamic=None, mesh=None,
            in_shardings=None, out_shardings=None, cache_dir=None, auto=None, fast_path=None,
            precision="exact", fullgraph=False, **unknown):
    """Compile a torch function or ``nn.Module`` with a parity backend.

    Usable as ``@parity.compile``, ``@parity.compile(backend="xla")`` or
    ``parity.compile(module, backend="onnx", strict=False)``; see
    :func:`parity.frontend.api.compile` for the details, and docs/sharding.md for
    ``mesh``, ``in_shardings`` and ``out_shardings``. ``cache_dir`` keeps compiled
    executables on disk for the next process (by default ``$PARITY_CACHE_DIR`` if set, else
    the per-user ``~/.cache/parity``; a path; False for off).
    ``backend="auto"``, the default, picks per graph the fastest conformant backend at its
    first call (``auto`` takes an :class:`AutoOptions`; ``$PARITY_BACKEND`` forces one;
    :func:`auto_choices` shows the picks); ``backend="reference"`` runs the spec interpreter.
    Repeated call signatures skip Dynamo where its guards show the function reads only its
    tensor arguments (``fast_path=True``: always, the user vouches; ``False``: never; see
    frontend/fast_path.py).
    ``precision="fast"`` lets xla and onnx fuse multiply-adds and use native kernels within
    the fast tier's published bounds (docs/conformance.md); ``"exact"`` is the default.
    ``fullgraph=True`` (as in ``torch.compile``) makes every piece that would run in eager
    torch an error; by default each warns once with your line.

    Example::

        >>> import torch, parity
        >>> double_tanh = parity.compile(lambda x: torch.tanh(x) * 2, backend="reference")
        >>> double_tanh(torch.tensor([0.0, 100.0])).tolist()
        [0.0, 2.0]
    """
    from .frontend.api import compile as compile_

    validate.options("parity.compile", unknown)
    validate.of_type(strict, bool, "strict")
    validate.of_type(device, str, "device")
    if backend != "auto":
        validate.device(device, [validate.backend(backend, also=("auto",))])
    if backend == "auto" or auto is not None:
        validate.auto_options(auto)
    return compile_(fn_or_module, backend=backend, device=device, strict=strict, dynamic=dynamic, mesh=mesh,
                    in_shardings=in_shardings, out_shardings=out_shardings, cache_dir=cache_dir,
                    auto=auto, fast_path=fast_path, precision=precision, fullgraph=fullgraph)


def shard(tensor, spec):
    """Pin how ``tensor`` is split over the compile's mesh, inside compiled code (the identity eagerly).

    ``spec``: a :class:`PartitionSpec`, a tuple like ``("data", None)``, or ``"[data, _]"``.
    See :func:`parity.frontend.sharding.shard`.
    """
    from .frontend.sharding import shard as shard_

    return shard_(tensor, spec)


def capture(fn, *args, **kwargs):
    """The whole forward of ``fn(*args, **kwargs)`` (a function or ``nn.Module``) as an
    ``ir.Graph``, via ``torch.export``; parameters and buffers become graph inputs.
    ``print(graph)`` shows the IR with the user's source lines. See
    :mod:`parity.frontend.capture`.
    """
    from .frontend.capture import capture as capture_

    return capture_(fn, *args, **kwargs)


def explain(fn, *args, backends=None, **kwargs):
    """What :func:`compile` would capture from ``fn(*args, **kwargs)``: graph breaks and
    why, the aten ops of each graph, and per backend which run native, decomposed, or
    not at all. Returns an :class:`~parity.frontend.explain.ExplainReport`.
    """
    from .frontend.explain import explain as explain_

    for name in backends or ():
        validate.backend(name)
    return explain_(fn, *args, backends=backends, **kwargs)


def fallbacks(compiled) -> list:
    """How ``strict=False`` split the graphs of ``compiled`` (what :func:`compile` returned):
    one :class:`~parity.frontend.partition.PartitionReport` per graph that did not run whole
    on the backend (nodes on the backend and in eager torch, each fallback's op, line and
    reason); empty when everything ran on the backend.

    Example::

        >>> import torch, parity
        >>> f = parity.compile(lambda x: torch.lgamma(x) * 2, backend="reference", strict=False)
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     _ = f(torch.ones(3))
        >>> [(r.on_backend, r.in_eager, r.fallbacks[0].aten_op) for r in parity.fallbacks(f)]
        [(1, 1, 'aten.lgamma.default')]
    """
    from .frontend.single_backend import fallback_report

    return fallback_report(compiled)


def auto_choices(compiled) -> list:
    """What ``backend="auto"`` chose for each graph of ``compiled`` (what :func:`compile`
    returned): the candidates, why any was dropped, their times and the choice
    (:class:`~parity.frontend.auto.AutoChoice`; ``print`` one for a table)."""
    from .frontend.auto import auto_choices as auto_choices_

    return auto_choices_(compiled)
