"""The XLA backend: IR graphs compiled by XLA through JAX's public API, on CPU/CUDA/TPU.

``compile(graph, device)`` returns an :class:`XlaExecutable`. Executables are cached by
(graph content hash, device, input types); one key is never compiled twice, even when
threads race for it. **Symbolic shapes** (``parity.compile(..., dynamic=True)``, dims
like ``B``, ``B*4``, ``S//2``): the graph is captured once, and XLA, which compiles
static shapes only, gets one executable per concrete input shape, compiled on the first
call with that shape and cached under the same key (the graph's constraints are checked
then, before compiling), rather than padded to a few bucket sizes: padding would change
reductions and softmax over the padded rows. Every trace and compile runs inside
``jax.enable_x64(True)`` (a thread-local context), and so does every call of a graph with
64-bit inputs, so int64/float64 stay 64-bit without touching the user's global JAX
configuration; other calls skip it (entering it slows JAX's dispatch).

I/O: inputs are NumPy arrays, CPU torch tensors (viewed through ``tensor.numpy()``;
bfloat16 as its raw bits) or JAX arrays. On CPU, NumPy arrays are handed to the
executable as they are (cheaper than ``jax.device_put`` or DLPack for small tensors).
Outputs on CPU are NumPy arrays (``np.asarray`` of the result, a zero-copy but read-only
view of the XLA buffer) up to :data:`DLPACK_MIN_BYTES`, and JAX arrays above it and on
other devices (DLPack-capable: ``torch.from_dlpack(out)`` wraps the buffer without a
copy; torch cannot wrap a read-only NumPy view, so a large NumPy output would cost a full
copy); ``run_device`` always returns JAX arrays. The costs behind these choices:
docs/backends/xla.md. Export (StableHLO, ``jax.export``): :mod:`.stablehlo_export`.

Example::

    >>> import numpy as np
    >>> from parity.ir import GraphBuilder, i64
    >>> b = GraphBuilder(); x = b.input(i64[2])
    >>> run = XlaBackend().compile(b.build([b.mul(x, x)]), "cpu")
    >>> run(np.array([2**32 + 1, 3]))[0].tolist()  # int64 all the way, wrapping mod 2**64
    [8589934593, 9]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import numpy as np

from ...ir.dtypes import DType
from ...ir.errors import ParityError, UnsupportedOpError
from ...ir.graph import Graph
from ...ir.ops import OP_TABLE
from ...ir.precision import Precision
from ...ir.shapes import ShapeBindings
from ...ir.types import TensorType
from ..base import ANY_OP, Backend, CompilePrior, Deviation, OpClaim, Summation
from ..cache import BuildOnceCache
from .lowering import LOWERINGS, graph_function, unlowered_nodes
from .products import fuses_products
from .sharding import collectives, compile_sharded, put_inputs, to_host
from .stablehlo_export import write_serialized, write_stablehlo
from .summation import measured_summation

# parity device name -> JAX platform name.
PLATFORMS = {"cpu": "cpu", "cuda": "gpu", "tpu": "tpu"}

# CPU outputs from this size up are returned as JAX arrays (for DLPack) instead of NumPy
# views: where torch.from_dlpack gets cheaper than a copy of the view (docs/backends/xla.md, I/O).
DLPACK_MIN_BYTES = 1 << 18

# Per-compilation XLA options (the user's XLA_FLAGS and JAX config stay as they are).
# Fast min/max lets elementwise max/min drop NaN; the IR propagates it. Excess precision
# lets XLA carry bf16/f16 values in f32 between ops, skipping roundings the IR requires.
COMPILER_OPTIONS = {
    "cpu": {"xla_cpu_enable_fast_min_max": False, "xla_allow_excess_precision": False},
    "gpu": {"xla_gpu_enable_fast_min_max": False, "xla_allow_excess_precision": False},
    "tpu": {},
}


FTZ_REASON = (
    "XLA:CPU runs with flush-to-zero and denormals-are-zero set (its thread pools and PJRT client set "
    "MXCSR FTZ/DAZ); the compile option xla_cpu_ftz=false only drops LLVM's denormal-fp-math attribute "
    "and changes nothing measured (openxla/xla#22858)"
)
# One rule for every op, per dtype as measured (tests/conformance/test_declared.py probes it):
# conformance excuses a failing case of these dtypes only if it passes with their subnormals
# read as ±0 on both sides. float16 is computed in float32, where its subnormals are normal:
# XLA:CPU does not flush them (measured), so it declares none.
FTZ_DTYPES = (DType.bfloat16, DType.float32, DType.float64, DType.complex64, DType.complex128)
FTZ_DEVIATIONS = tuple(
    Deviation(ANY_OP, FTZ_REASON, f"subnormal inputs read as ±0, subnormal results become ±0 (below {d.short}'s "
              "smallest normal)", dtype=d, device="cpu", flush_to_zero=True) for d in FTZ_DTYPES)

# Measured by `parity conform --backend xla --dtype c128` (the full_range case).
COMPLEX_DEVIATIONS = (
    Deviation("log", "XLA's complex log takes the real part as log(|z|) of a rounded |z|: near |z| = 1 the "
              "result is small and the rounding of |z| is not (log1p of |z|² - 1 would keep it)",
              "11 ulp (measured 10.75 at |z| = 0.776)", DType.complex128, "cpu"),
)

def deviation_bound(deviation: Deviation) -> float:
    """The number of ULPs a deviation's ``max_error`` records ("5 ulp (measured ...)" → 5.0)."""
    return float(deviation.max_error.split(" ulp", 1)[0])


class XlaDeviceError(ParityError):
    """The requested device is not present; the message names what JAX has installed."""


def installed_platforms() -> list[str]:
    """JAX platforms with at least one device here (``cpu``, ``gpu``, ``tpu``)."""
    found = []
    for platform in dict.fromkeys(PLATFORMS.values()):
        try:
            if jax.devices(platform):
                found.append(platform)
        except RuntimeError:
            pass
    return found


def jax_device(device: str):
    """The first JAX device of this process for a parity device name, or a clear error."""
    platform = PLATFORMS.get(device)
    if platform is None:
        raise XlaDeviceError(f"the xla backend has no device {device!r}; choose one of {list(PLATFORMS)}")
    try:
        return jax.local_devices(backend=platform)[0]  # after parity.distributed.initialize, devices()[0] may be remote
    except RuntimeError:
        have = ", ".join(installed_platforms()) or "none"
        raise XlaDeviceError(
            f"device {device!r} is not available to the xla backend: JAX has no {platform!r} platform "
            f"here (installed JAX platforms: {have}). Install the matching jaxlib plugin "
            f"(e.g. jax[cuda12]) or use device='cpu'."
        ) from None


def _spec(t: TensorType, device) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(t.shape, t.dtype.numpy, sharding=jax.sharding.SingleDeviceSharding(device))


# Every executable takes one more input after the graph's: an int32 0 it only sees at run
# time, which keeps XLA from fusing products into sums (products.opaque).
RUN_TIME_ZERO = np.zeros((), np.int32)


def _as_array(value: Any, dtype: DType) -> Any:
    """NumPy view of a NumPy/torch input (JAX arrays pass through); no copies on CPU."""
    if isinstance(value, np.ndarray) or isinstance(value, jax.Array):
        return value
    if type(value).__module__.startswith("torch"):
        tensor = value.detach()
        if tensor.device.type != "cpu":
            return jax.dlpack.from_dlpack(tensor)
        if dtype is DType.bfloat16:  # no NumPy buffer format: cross as raw 16-bit words
            import torch

            return tensor.view(torch.int16).numpy().view(dtype.numpy)
        return tensor.numpy()
    return np.asarray(value, dtype=dtype.numpy)


def _type_of(array: Any) -> tuple[np.dtype, tuple[int, ...]]:
    # dtype objects compare cheaply; str(np.dtype(...)) per input cost ~5 µs a call.
    return array.dtype, tuple(array.shape)


def _needs_x64(types: Sequence[TensorType]) -> bool:
    """Whether calls need ``jax.enable_x64``: outside it JAX cuts 64-bit arguments to 32 bits
    and the executable refuses them (64-bit outputs come back whole either way)."""
    return any(np.dtype(t.dtype.real_dtype.numpy).itemsize == 8 for t in types)  # c128: f64 parts


def _host_outputs(outputs: Sequence[jax.Array]) -> list[Any]:
    """CPU results: NumPy views of small outputs, the JAX arrays themselves for large ones."""
    return [np.asarray(o) if o.size * o.dtype.itemsize < DLPACK_MIN_BYTES else o for o in outputs]


def _large(t: TensorType) -> bool:
    return t.numel * np.dtype(t.dtype.numpy).itemsize >= DLPACK_MIN_BYTES


class XlaExecutable:
    """A graph bound to a device; calls compile (once per input types) and run."""

    def __init__(self, backend: XlaBackend, graph: Graph, device: str, precision: Precision = Precision.EXACT):
        self.backend = backend
        self.graph = graph
        self.device = device
        self.precision = precision
        self._jax_device = jax_device(device)
        self._hash = graph.content_hash()
        self._dtypes = [v.type.dtype for v in graph.inputs]
        self._static = all(t.is_static for t in graph.input_types)
        self._last: tuple[Any, Any] | None = None  # (input types, compiled): the fast path
        self._x64 = _needs_x64(graph.input_types)
        self._zero = jax.device_put(RUN_TIME_ZERO, self._jax_device)  # placed once: a cheap argument
        # Static, unsharded graphs: (compiled, ((dtype, shape) per input), numpy outputs?) for
        # __call__'s fast path, which only checks NumPy inputs against these and calls.
        # ... and, on CPU, which outputs stay JAX arrays (jax.Array.nbytes costs ~4 µs a call).
        self._fast: tuple[Any, tuple, bool] | None = None
        self._large_outputs: tuple[bool, ...] = ()
        if self._static:
            types = tuple((np.dtype(t.dtype.numpy), t.shape) for t in graph.input_types)
            self._last = (types, backend._compiled(graph, self._hash, device, graph.input_types, precision))
            if graph.sharding is None:
                self._fast = (self._last[1], types, self._jax_device.platform == "cpu")
                self._large_outputs = tuple(_large(v.type) for v in graph.outputs)

    def _compiled_for(self, arrays: Sequence[Any]):
        types = tuple(_type_of(a) for a in arrays)
        last = self._last
        if last is not None and last[0] == types:
            return last[1]
        in_types = self._input_types(types)
        compiled = self.backend._compiled(self.graph, self._hash, self.device, in_types, self.precision)
        self._last = (types, compiled)
        return compiled

    def _input_types(self, types) -> list[TensorType]:
        bindings = ShapeBindings(error=ParityError)
        resolved = []
        for i, (value, (dtype, shape)) in enumerate(zip(self.graph.inputs, types)):
            t = value.type
            if dtype != t.dtype.numpy or len(shape) != t.rank:
                raise ParityError(f"input {i} of @{self.graph.name} is {dtype}{list(shape)}, expected {t}; "
                                  f"convert it before the call (parity never converts inputs implicitly)")
            resolved.append(bindings.bind(t, shape, f"input {i} of @{self.graph.name}"))
        bindings.check_graph(self.graph)  # once per new shape: a size the graph cannot take is an error
        return resolved

    def run_device(self, *inputs: Any) -> list[jax.Array]:
        """Run and return JAX arrays (on the executable's device)."""
        if len(inputs) != len(self._dtypes):
            raise ParityError(f"@{self.graph.name} takes {len(self._dtypes)} inputs, got {len(inputs)}")
        arrays = [_as_array(a, d) for a, d in zip(inputs, self._dtypes)]
        compiled = self._compiled_for(arrays)
        if self.graph.sharding is not None:
            with jax.enable_x64(True):  # also around device_put: it would cut i64/f64 to 32 bits
                return compiled(*put_inputs(compiled, [*arrays, RUN_TIME_ZERO]))
        if self._x64:
            with jax.enable_x64(True):
                return compiled(*arrays, self._zero)
        return compiled(*arrays, self._zero)  # ~2 µs cheaper, and faster JAX dispatch, outside x64 mode

    def __call__(self, *inputs: Any) -> list[Any]:
        fast = self._fast
        if fast is not None and len(inputs) == len(fast[1]):
            # The frontend's case: NumPy arrays of exactly the compiled types, no list building.
            for array, (dtype, shape) in zip(inputs, fast[1]):
                if type(array) is not np.ndarray or array.dtype != dtype or array.shape != shape:
                    break
            else:
                if self._x64:
                    with jax.enable_x64(True):
                        outputs = fast[0](*inputs, self._zero)
                else:
                    outputs = fast[0](*inputs, self._zero)
                if not fast[2]:
                    return list(outputs)
                return [o if large else np.asarray(o) for o, large in zip(outputs, self._large_outputs)]
        outputs = self.run_device(*inputs)
        if self.graph.sharding is not None:  # whole values, gathered from every process's shards
            return [to_host(o) for o in outputs]
        if self._jax_device.platform == "cpu":
            return _host_outputs(outputs)
        return list(outputs)

    def unchecked(self):
        """:meth:`__call__` for NumPy arrays that the caller has checked are exactly the compiled
        input types, as a function of them; None where there is no such call (symbolic sizes,
        sharding, a device other than CPU). The frontend's fast-path hits use it: their torch
        tensor guards have checked the dtypes and shapes the arrays are views of, so the
        per-input checks of ``__call__`` (about 1 µs a call) would only repeat them.

        Example::

            >>> import numpy as np
            >>> from parity.ir import GraphBuilder, f32
            >>> b = GraphBuilder(); x = b.input(f32[2])
            >>> run = XlaBackend().compile(b.build([b.add(x, x)]), "cpu").unchecked()
            >>> run(np.array([1, 2], np.float32))[0].tolist()
            [2.0, 4.0]
        """
        fast = self._fast
        if fast is None or not fast[2]:
            return None
        compiled, zero, large = fast[0], self._zero, self._large_outputs
        if self._x64:
            def run_x64(*arrays):
                with jax.enable_x64(True):
                    outputs = compiled(*arrays, zero)
                return [o if big else np.asarray(o) for o, big in zip(outputs, large)]

            return run_x64
        if not any(large):
            return lambda *arrays: [np.asarray(o) for o in compiled(*arrays, zero)]
        return lambda *arrays: [o if big else np.asarray(o) for o, big in zip(compiled(*arrays, zero), large)]

    def jax_compiled(self) -> tuple[Any, Any] | None:
        """The ``jax.stages.Compiled`` this executable calls on CPU and the run-time zero it takes
        after the graph's inputs, for a caller holding JAX arrays that hands them to XLA itself
        (``parity.jax.jit``); None for symbolic sizes, sharding, and another device.

        Example::

            >>> import numpy as np
            >>> from parity.ir import GraphBuilder, f32
            >>> b = GraphBuilder(); x = b.input(f32[2])
            >>> compiled, zero = XlaBackend().compile(b.build([b.add(x, x)]), "cpu").jax_compiled()
            >>> compiled(np.array([1, 2], np.float32), zero)[0].tolist()
            [2.0, 4.0]
        """
        fast = self._fast
        if fast is None or not fast[2]:
            return None
        return fast[0], self._zero

    def hlo_text(self) -> str:
        """The optimized HLO of the last compilation (after XLA's SPMD partitioner)."""
        if self._last is None:
            raise ParityError(f"@{self.graph.name} has symbolic sizes and has not run yet; call it once first")
        return self._last[1].as_text()

    def collectives(self) -> dict[str, int]:
        """The collectives XLA inserted (opcode → count), from :meth:`hlo_text`."""
        return collectives(self.hlo_text())


class XlaBackend(Backend):
    """Lowers every primitive to ``jax.lax``; composites run through their decompositions."""

    name = "xla"
    devices = ("cpu", "cuda", "tpu")
    deviations: tuple[Deviation, ...] = FTZ_DEVIATIONS + COMPLEX_DEVIATIONS

    @property
    def summation(self) -> tuple[Summation, ...]:
        """Where XLA:CPU chains sums longer than the contract's: probed on this host, because the
        kernels pick their blocks from its caches (summation.py)."""
        return measured_summation(self)
    compile_priors = (CompilePrior("cpu", per_graph_s=0.6, per_node_s=0.01,
                                   basis="measured per graph on cpu, docs/frontend.md (auto's budget)"),)
    compiles_per_shape = True  # a symbolic graph: one XLA executable per concrete shape (docs/backends/xla.md)

    def __init__(self):
        self._executables = BuildOnceCache()

    @property
    def compile_count(self) -> int:
        """XLA compilations this backend has run (tests watch it)."""
        return self._executables.builds

    def claims(self):
        return {name: OpClaim(frozenset(OP_TABLE[name].dtypes)) for name in LOWERINGS if name in OP_TABLE}

    def available_devices(self) -> tuple[str, ...]:
        have = set(installed_platforms())
        return tuple(d for d in self.devices if PLATFORMS[d] in have)

    supports_sharding = True  # graphs with a mesh run through XLA's SPMD partitioner
    # FAST: XLA:CPU contracts products into FMAs where it fuses them (no product protection).
    precisions = (Precision.EXACT, Precision.FAST)

    def compile(self, graph: Graph, device: str = "cpu", precision: Precision = Precision.EXACT) -> XlaExecutable:
        missing = unlowered_nodes(graph)
        if missing:
            node = missing[0]
            where = f" (at {node.loc})" if node.loc else ""
            raise UnsupportedOpError(f"the xla backend cannot lower {node.op!r}{where}: no rule in "
                                     f"backends/xla/ (lowering.LOWERINGS); use backend='reference' for this graph")
        if graph.sharding is None:
            for node in graph.nodes:
                if node.op == "sharding_constraint":
                    where = f" (at {node.loc})" if node.loc else ""
                    raise ParityError(f"sharding_constraint{where} in @{graph.name} needs a device mesh, and the "
                                      f"graph has none: give the graph a GraphSharding (parity.compile(..., mesh=))")
        return XlaExecutable(self, graph, device, precision)

    def export(self, graph: Graph, path, *, input_names: Sequence[str] | None = None,
               output_names: Sequence[str] | None = None, dim_names: dict[str, str] | None = None) -> str:
        """Write ``graph`` to ``path`` as StableHLO text (``parity.export(format="stablehlo")``)
        and return the text: :func:`.stablehlo_export.write_stablehlo`."""
        return write_stablehlo(graph, path, input_names=input_names, output_names=output_names, dim_names=dim_names)

    def export_serialized(self, graph: Graph, path, *, input_names: Sequence[str] | None = None,
                          output_names: Sequence[str] | None = None,
                          dim_names: dict[str, str] | None = None) -> jax.export.Exported:
        """Write ``graph`` to ``path`` in ``jax.export``'s serialized form (``parity.export(format="jax")``)
        and return the ``jax.export.Exported``: :func:`.stablehlo_export.write_serialized`."""
        return write_serialized(graph, path, dim_names=dim_names)

    def _compiled(self, graph: Graph, content_hash: str, device: str, in_types: Sequence[TensorType],
                  precision: Precision = Precision.EXACT):
        """The XLA executable for these input types and tier, compiled at most once per key."""
        key = executable_key(content_hash, device, in_types, precision)
        return self._executables.get_or_build(key, lambda: self._build(graph, device, in_types, precision))

    def _build(self, graph: Graph, device: str, in_types: Sequence[TensorType], precision: Precision):
        target = jax_device(device)
        options = COMPILER_OPTIONS.get(target.platform, {})
        if graph.sharding is not None:
            return compile_sharded(graph, graph_function(graph, run_time_zero=True), target.platform, in_types, options)
        specs = [*(_spec(t, target) for t in in_types),
                 jax.ShapeDtypeStruct((), np.int32, sharding=jax.sharding.SingleDeviceSharding(target))]
        with jax.enable_x64(True):
            # First as it is: a graph whose products XLA does not fuse into sums in its own
            # loops needs no protection, and protecting them would split fusions XLA hands to
            # YNNPACK (softmax + layer norm 8192×1024: 1.09× jax.jit protected, 1.00× not).
            plain = jax.jit(graph_function(graph, run_time_zero=True, keep_products=False)).lower(*specs)
            compiled = plain.compile(options)
            if precision is Precision.FAST or target.platform != "cpu" or not fuses_products(compiled.as_text()):
                return compiled  # FAST: XLA's FMAs stay (conformance.bounds.FAST_BOUNDS)
            protected = jax.jit(graph_function(graph, run_time_zero=True)).lower(*specs)
            if protected.as_text() == plain.as_text():
                # No product to protect: the fused multiply is a rule's own (f64 log1p's, exp2's),
                # and the same module would compile to the same executable a second time.
                return compiled
            return protected.compile(options)


def executable_key(content_hash: str, device: str, in_types: Sequence[TensorType], precision: Precision) -> tuple:
    """The in-process cache key of one compiled XLA executable (the disk cache's persister uses it too)."""
    return (content_hash, device, tuple(map(str, in_types)), precision.value)
