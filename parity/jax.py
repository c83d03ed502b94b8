"""parity for JAX programs: :func:`jit`, the door a ``jax.jit`` user recognises.

Why a module of its own and not :func:`parity.compile` recognising a JAX function: the
two frameworks' conventions differ and an option would mean two things through one door.
``parity.compile`` follows ``torch.compile`` (modules, Dynamo's guards, graph breaks run
eagerly, ``strict``/``fullgraph``); ``parity.jax.jit`` follows ``jax.jit`` (pure functions,
``static_argnums``/``static_argnames``, pytrees in and out, one trace per signature, no
eager fallback). Both produce the same IR and run on the same backends (docs/jax.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from . import validate

__all__ = ["export", "jit"]


def jit(fun: Callable | None = None, *, static_argnums: int | Sequence[int] | None = None,
        static_argnames: str | Sequence[str] | None = None, backend: str = "auto", device: str = "cpu",
        precision: str = "exact", cache_dir=None, backend_options: dict | None = None, auto=None):
    """Compile a JAX function with a parity backend, with ``jax.jit``'s conventions.

    Arguments and results are pytrees of arrays; ``static_argnums`` / ``static_argnames``
    are hashed into the cache key and traced as Python values, as in ``jax.jit``. Each new
    signature (static values, pytree structure, shapes and dtypes) is traced once with JAX,
    translated to parity's IR (differentiation is JAX's: ``jax.grad`` inside the function is
    part of the program) and compiled on ``backend`` ("xla", "onnx", "inductor", "triton",
    "reference", or "auto": the fastest installed backend whose outputs match ``jax.jit``'s
    on the first call). Results are ``jax.Array``s. ``precision`` is "exact" (the IR's
    contract) or "fast" (a backend's declared fast tier). ``cache_dir`` and ``backend_options``
    are ``parity.compile``'s: executables are kept on disk (by default in the per-user cache;
    ``False``: off) so a new process loads them instead of compiling, and the named backend's
    own options reach its ``compile`` (docs/plugins.md). ``auto`` (a ``parity.AutoOptions``)
    tunes ``backend="auto"``'s race, which is ``parity.compile``'s held to ``jax.jit``'s
    outputs: its budget, candidates, a conformance matrix. Usable as a decorator, with or
    without arguments.

    Example::

        >>> import jax, jax.numpy as jnp
        >>> import parity.jax
        >>> @parity.jax.jit(backend="reference")
        ... def loss(w, x):
        ...     return jnp.tanh(x @ w).sum()
        >>> float(loss(jnp.ones(2), jnp.ones((3, 2))))
        2.8920...
        >>> grad = parity.jax.jit(jax.grad(loss.__wrapped__), backend="reference")  # grad inside
        >>> grad(jnp.ones(2), jnp.ones((3, 2))).tolist()
        [0.2119..., 0.2119...]
    """
    from .frontend.jax.jitted import JaxJitted

    validate.backend(backend, also=("auto",))
    if fun is None:
        return lambda f: jit(f, static_argnums=static_argnums, static_argnames=static_argnames, backend=backend,
                             device=device, precision=precision, cache_dir=cache_dir,
                             backend_options=backend_options, auto=auto)
    if not callable(fun):
        raise validate.UsageError(f"parity.jax.jit compiles a function, got {type(fun).__name__} {fun!r}")
    return JaxJitted(fun, static_argnums=static_argnums, static_argnames=static_argnames, backend=backend,
                     device=device, precision=precision, cache_dir=cache_dir, backend_options=backend_options,
                     auto=auto)


def export(fun: Callable, *args, format: str = "onnx", path=None, input_names: Sequence[str] | None = None,
           output_names: Sequence[str] | None = None, **kwargs):
    """Write the JAX function ``fun(*args, **kwargs)`` to ``path`` in ``format`` (``"onnx"``,
    ``"stablehlo"`` text or ``"jax"``, ``jax.export``'s serialized form), a file another
    runtime runs without parity or the function's source.

    ``args`` and ``kwargs`` are pytrees of arrays or ``jax.ShapeDtypeStruct``s, as for
    ``jax.export.export(jax.jit(fun))(*args)``; a size from ``jax.export.symbolic_shape``
    stays symbolic in the file under its JAX name (an ONNX ``dim_param``). Arrays the
    function closes over (weights bound with ``functools.partial`` or a closure) become
    constants in the file; the arguments become its inputs, named by parameter and pytree
    path (``params.w1``, ``batch.x``) unless ``input_names`` is given, and the outputs by their
    path in the result (``output0``, ``output1.w1``) unless ``output_names`` is. Training graphs
    export too: ``fun`` may be ``jax.value_and_grad(loss)`` or a whole optax step. Returns what
    the format's backend returns (an ``onnx.ModelProto`` for ``"onnx"``, the text for
    ``"stablehlo"``). How it works: :mod:`parity.frontend.jax.export`.

    Example::

        >>> import os, tempfile, jax, jax.numpy as jnp
        >>> import parity.jax
        >>> spec = jax.ShapeDtypeStruct(jax.export.symbolic_shape("b, 3"), jnp.float32)
        >>> path = os.path.join(tempfile.mkdtemp(), "f.onnx")
        >>> model = parity.jax.export(lambda x: jnp.tanh(x).sum(-1), spec, path=path)
        >>> [d.dim_param or d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
        ['b', 3]
    """
    from .frontend.export import ExportError
    from .frontend.jax.export import export_function

    if not callable(fun):
        raise ExportError(f"parity.jax.export exports a function, got {type(fun).__name__} {fun!r}")
    target = validate.export_arguments({}, format, "constants", path)
    return export_function(fun, args, kwargs, format=format, path=target, input_names=input_names,
                           output_names=output_names)
