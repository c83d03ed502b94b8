"""parity: one graph IR, many backends, and a conformance suite that proves they agree.

``import parity`` stays light (no torch): :func:`compile`, :func:`capture` and
:func:`explain` import the PyTorch frontend on first use.
"""


from . import distributed, ir, validate
from .frontend.auto_options import AutoOptions
from .frontend.export import ExportError, ExportWarning, UnexportableOp
from .ir.sharding import Mesh, PartitionSpec
from .versions import installed_version

# pyproject's, as installed: written once; a source tree that was never installed says so
__version__ = installed_version("parity") or "0+unknown (not installed)"
__all__ = ["AutoOptions", "ExportError", "ExportWarning", "Mesh", "PartitionSpec", "UnexportableOp", "auto_choices", "capture", "compile", "diff", "distributed", "explain", "export", "fallbacks", "ir", "shard",
           "__version__"]


def compile(fn_or_module=None, *, backend="auto", device="cpu", strict=True, dynamic=None, mesh=None,
            in_shardings=None, out_shardings=None, cache_dir=None, auto=None, fast_path=None,
            precision="exact", fullgraph=False, backend_options=None, **unknown):
    """Compile a function or ``nn.Module`` with a parity backend; training works too.

    Usable as ``@parity.compile``, ``@parity.compile(backend="xla")`` or
    ``parity.compile(module, backend="onnx", strict=False)``. Capture is TorchDynamo
    (guards, recompiles and graph breaks: Python it cannot trace runs eagerly between
    captured graphs) plus AOTAutograd (forward and backward graphs), translated to the
    parity IR. ``strict=True`` raises :class:`~parity.frontend.errors.UnsupportedAtenOp`
    for an op the backend cannot run; ``strict=False`` runs just the nodes the backend
    cannot run eagerly in torch (one warning per call, a line per op) and the rest of the graph on the
    backend (``parity.explain`` shows the share; frontend/partition.py). ``dynamic=True`` (or ``torch._dynamo.mark_dynamic``) makes sizes
    symbolic IR dimensions. A module comes back as a module sharing its parameters.
    ``mesh``, ``in_shardings``, ``out_shardings`` and ``parity.shard`` run the graphs
    sharded over several devices (backend="xla"; docs/sharding.md). ``cache_dir`` keeps
    compiled executables (and ``auto``'s picks) on disk so the next process starts warm:
    by default (None or ``True``) in ``$PARITY_CACHE_DIR`` if set, else the per-user
    ``$XDG_CACHE_HOME/parity`` (``~/.cache/parity``, created ``0700``; a directory or entry
    another user owns or can write is refused with a warning); a path; ``False`` for off
    (backends/disk_cache.py).
    ``backend="auto"``, the default, picks per graph, at its first call, the fastest backend
    that claims its ops and is conformant for them, and keeps the pick in the disk cache
    (frontend/auto.py; ``auto=AutoOptions(budget_s=...)`` tunes it, ``$PARITY_BACKEND``
    forces one backend, ``parity.auto_choices`` shows what it chose). The reference
    interpreter (the spec, slow) runs only when asked for: ``backend="reference"``.
    ``repr()`` of the result says which backend runs and why.
    Calls of a function whose tensor signature was seen before skip Dynamo's guards, like
    ``jax.jit``, where Dynamo's guards showed that the function reads no Python state besides
    its tensor arguments (the default, ``fast_path=None``; other functions keep Dynamo's
    path by themselves). ``fast_path=True`` skips that check (the user vouches for the
    function), ``False`` turns the fast path off (frontend/fast_path.py says exactly when
    it applies).
    ``precision="exact"`` (the default) holds every op to the IR's contract; ``"fast"`` lets
    a backend that declares the tier (xla, onnx) fuse multiply-adds and call native kernels,
    within the fast tier's published per-op bounds (docs/conformance.md); NaN, ±inf and -0.0
    mean the same in both. A backend without the tier runs exact (``parity.explain`` says so).
    Code Dynamo runs in eager torch (a graph break: ``nonzero``, ``.item()``, ``print``)
    warns once with the user's line (:class:`~parity.frontend.graph_breaks.GraphBreakWarning`);
    ``fullgraph=True``, as in ``torch.compile``, makes it an error, as it does every op the
    backend cannot run and a call past Dynamo's recompile limit (frontend/recompile_limit.py). A ``staticmethod`` or ``classmethod`` stays one; a function
    decorated in a class body binds to each instance like a method.
    ``backend_options`` (a dict) goes to the named backend's ``compile``, checked against the options
    it declares (an unknown name or a wrong type is a :class:`~parity.validate.UsageError` saying what
    it takes); the options join the compile cache's key (docs/plugins.md, "The runtime interface").

    Example::

        >>> import torch, parity
        >>> double_tanh = parity.compile(lambda x: torch.tanh(x) * 2, backend="reference")
        >>> double_tanh(torch.tensor([0.0, 100.0])).tolist()
        [0.0, 2.0]
    """
    from .frontend.api import make_compiled

    validate.options("parity.compile", unknown)
    if fn_or_module is not None and not callable(fn_or_module) \
            and not isinstance(fn_or_module, (staticmethod, classmethod)):
        raise validate.UsageError(f"parity.compile compiles a function or an nn.Module, got "
                                  f"{type(fn_or_module).__name__} {fn_or_module!r}")
    validate.compile_options(dict(backend=backend, device=device, strict=strict, cache_dir=cache_dir, auto=auto,
                                  dynamic=dynamic, fast_path=fast_path, fullgraph=fullgraph))
    return make_compiled(fn_or_module, backend=backend, device=device, strict=strict, dynamic=dynamic, mesh=mesh,
                    in_shardings=in_shardings, out_shardings=out_shardings, cache_dir=cache_dir,
                    auto=auto, fast_path=fast_path, precision=precision, fullgraph=fullgraph,
                    backend_options=backend_options)


def diff(fn_or_module, *args, backend="reference", against: str = "oracle", device: str = "cpu",
         keep: int = 10, backward: bool | None = None, dynamo_config: dict | None = None,
         measure_memory: bool = False, **kwargs):
    """Which node makes ``backend``'s answer for ``fn_or_module(*args, **kwargs)`` differ.

    Captures the graphs :func:`parity.compile` would run (forward and, when something
    requires grad, backward), runs every node alone on ``backend`` fed the backend's own
    upstream values, and measures its **local** error (against the float64 oracle of that
    node on those same operands, relative to the op's contract bound) and its **carried**
    error (against ``against``: ``"oracle"``, the float64 oracle run end to end;
    ``"eager"``, the reference interpreter in the graph's own dtypes, every op rounded
    once as eager torch's kernels round; or a backend name, that backend run node by
    node). Returns a :class:`~parity.debugger.report.DiffReport`; ``report.ranked()[0]`` is the guiltiest
    node, ``report.print()``, ``report.to_json()``, ``report.to_html()`` and
    ``report.write_repro(dir)`` present it.

    Example::

        >>> import torch, parity
        >>> report = parity.diff(lambda x: torch.exp(x) - 1, torch.tensor([1e-3, 1.0]))
        >>> [r.op for r in report.rows], report.guilty()
        (['exp', 'constant', 'broadcast_in_dim', 'sub'], [])
    """
    from .debugger import capture_graphs, diff_graphs
    from .debugger.engine import AGAINST_EAGER, AGAINST_ORACLE

    validate.device(device, [validate.backend(backend)])  # a typo fails here, before the capture
    validate.backend(against, also=(AGAINST_ORACLE, AGAINST_EAGER))
    graphs = capture_graphs(fn_or_module, *args, backward=backward, dynamo_config=dynamo_config, **kwargs)
    return diff_graphs(graphs, backend=backend, device=device, against=against, keep=keep,
                       measure_memory=measure_memory)


def export(fn_or_module, args=(), *, format="onnx", path=None, input_names=None, output_names=None,
           dynamic_dims=None, params="constants", kwargs=None, **unknown):
    """Capture ``fn_or_module(*args, **kwargs)`` and write it to ``path`` in ``format``
    (``"onnx"``, ``"stablehlo"`` or ``"jax"``), a file another runtime runs without parity.

    ``input_names`` names the user's positional tensor arguments (default: the function's
    parameter names; keyword arguments are named by their keys), ``output_names`` its
    outputs (default: each tensor's path in the output, ``logits``, ``cache.0.key``, or
    ``output0..`` for a tensor or tuple: :mod:`parity.frontend.outputs`; values that are not
    tensors are left out with an :class:`~parity.frontend.export.ExportWarning` each); ``dynamic_dims`` maps an
    input name to ``{axis: dim}``, a dim being its name or a ``torch.export.Dim`` (to give
    bounds: ``Dim("seq", min=4, max=512)``; the files check them where the format can:
    ``jax`` and ``stablehlo`` assert them, ONNX has no such check); ``params`` is ``"constants"`` or ``"inputs"``.
    Returns what the format's backend returns (an ``onnx.ModelProto`` for ``"onnx"``).
    How the capture works: :mod:`parity.frontend.export`.

    Example::

        >>> import tempfile, os, torch, parity
        >>> path = os.path.join(tempfile.mkdtemp(), "double.onnx")
        >>> model = parity.export(lambda x: x * 2, (torch.ones(3),), path=path, input_names=["x"])
        >>> [i.name for i in model.graph.input], [o.name for o in model.graph.output]
        (['x'], ['output0'])
    """
    from .frontend.export import ExportError, export_model

    if not isinstance(args, (tuple, list)):  # a lone tensor would be split into its rows
        raise ExportError(f"args is the tuple of the call's positional arguments, got {type(args).__name__}: "
                          "pass (x,) for one")
    target = validate.export_arguments(unknown, format, params, path)
    return export_model(fn_or_module, tuple(args), format=format, path=target, input_names=input_names,
                        output_names=output_names, dynamic_dims=dynamic_dims, params=params, kwargs=kwargs)


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
    not at all. Returns an :class:`~parity.frontend.explain.ExplainReport`; its ``islands``
    are every piece that runs in eager torch (graph breaks, skipped frames, ``strict=False``
    fallbacks, a recompile limit reached), each at the line and with the reason parity's
    warning gives.
    """
    from .frontend.explain import explain as explain_

    if isinstance(backends, str):
        raise validate.UsageError(f"backends is a list of backend names, got the string {backends!r}: pass "
                                  f"backends=[{backends!r}]")
    for name in backends or ():
        validate.backend(name)
    validate.call_keywords("parity.explain", fn, kwargs)
    return explain_(fn, *args, backends=backends, **kwargs)


def fallbacks(compiled) -> list:
    """How ``strict=False`` split the graphs of ``compiled`` (what :func:`compile` returned):
    one :class:`~parity.frontend.partition.PartitionReport` per graph that did not run whole
    on the backend (nodes on the backend and in eager torch, each fallback's op, line and
    reason); empty when everything ran on the backend.

    Example::

        >>> import torch, parity
        >>> f = parity.compile(lambda x: torch.special.bessel_j0(x) * 2, backend="reference", strict=False)
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     _ = f(torch.ones(3))
        >>> [(r.on_backend, r.in_eager, r.fallbacks[0].aten_op) for r in parity.fallbacks(f)]
        [(1, 1, 'aten.special_bessel_j0.default')]
    """
    from .frontend.single_backend import fallback_report

    _compiled_object(compiled, "parity.fallbacks")
    return fallback_report(compiled)


def auto_choices(compiled) -> list:
    """What ``backend="auto"`` chose for each graph of ``compiled`` (what :func:`compile`
    returned): the candidates, why any was dropped, their times and the choice
    (:class:`~parity.frontend.auto.AutoChoice`; ``print`` one for a table)."""
    from .frontend.auto import auto_choices as auto_choices_

    _compiled_object(compiled, "parity.auto_choices")
    return auto_choices_(compiled)


def _compiled_object(compiled, function: str) -> None:
    """Refuse anything but what parity.compile returned (it keeps the session these read)."""
    if getattr(compiled, "session", None) is None:
        raise validate.UsageError(f"{function} reads what parity.compile returned, got {type(compiled).__name__} "
                                  f"{getattr(compiled, '__name__', compiled)!r}: pass the compiled object")
