"""What a JAX user is told when parity cannot take their program.

Each error names, in its first line, the user's JAX line (from the jaxpr's source info),
the primitive, why, and what to do. They never surface as a parity internal.

Example::

    >>> from parity.ir.graph import SourceLoc
    >>> str(UntranslatedPrimitive("polygamma", SourceLoc("model.py", 12, "loss")))[:62]
    'model.py:12 in loss: the JAX primitive `polygamma` has no pari'
"""

from __future__ import annotations

from ...ir.errors import ParityError
from ...ir.graph import SourceLoc


class JaxCaptureError(ParityError):
    """A JAX program parity cannot translate into its IR."""

    def __init__(self, primitive: str, loc: SourceLoc | None, what: str, fix: str):
        self.primitive = primitive
        self.loc = loc
        where = f"{loc}: " if loc else "(no source line recorded): "
        super().__init__(f"{where}{what}\n  fix: {fix}")


class UntranslatedPrimitive(JaxCaptureError):
    def __init__(self, primitive: str, loc: SourceLoc | None, why: str = "", fix: str = ""):
        because = f" ({why})" if why else ""
        super().__init__(primitive, loc, f"the JAX primitive `{primitive}` has no parity translation{because}",
                         fix or "rewrite that line with jax.numpy/lax operations parity translates (docs/jax.md "
                         "lists them), or run this function with plain jax.jit")


class DataDependentLoop(JaxCaptureError):
    def __init__(self, loc: SourceLoc | None):
        super().__init__("while", loc, "a `lax.while_loop` whose trip count depends on the data cannot be "
                         "compiled: parity's IR loops run a number of steps known when tracing (a while loop "
                         "is one when its condition is `i < n` alone, with `i` and `n` known then and the body "
                         "adding 1 to `i`)",
                         "use lax.fori_loop or lax.scan with a trip count known when tracing (static "
                         "Python ints), or keep the loop outside the function given to parity.jax.jit")


class EffectNotSupported(JaxCaptureError):
    def __init__(self, primitive: str, loc: SourceLoc | None):
        super().__init__(primitive, loc, f"`{primitive}` has a side effect (a host callback, print or mutable "
                         "state), which a compiled parity graph cannot run",
                         "remove the callback (jax.debug.print, io_callback, pure_callback) from the compiled "
                         "function, or call it outside parity.jax.jit")


class LongUnrolledLoop(UserWarning):
    """A ``scan`` or ``fori_loop`` that a backend without rolled loops unrolls into so many IR nodes
    that compiling it is slow (a warning: the program still runs). Example::

        >>> LongUnrolledLoop.message(SourceLoc("rnn.py", 9, "loss"), 64, 3648, "triton")[:71]
        'rnn.py:9 in loss: this loop of 64 steps is unrolled into 3,648 IR nodes'
    """

    @staticmethod
    def message(loc: SourceLoc | None, steps: int, nodes: int, backend: str) -> str:
        where = f"{loc}: " if loc else ""
        return (f"{where}this loop of {steps:,} steps is unrolled into {nodes:,} IR nodes on backend={backend!r}, "
                "which does not run loops rolled: it compiles every step, which takes long and grows with the step "
                "count (docs/jax.md, \"Loops\")\n  fix: backend='xla', 'onnx' or 'inductor' compile the loop's "
                "body once and run it rolled; or compile fewer steps (a Python loop over chunks of the sequence, each a "
                "call of the compiled function); or run this function with jax.jit")


class UnsupportedArgument(ParityError, TypeError):
    """An argument of a type the IR has no counterpart for (a PRNG key of an implementation other than
    threefry2x32)."""

    def __init__(self, position: int, type_name: str):
        super().__init__(f"array argument {position} (in flattened order) is a {type_name}, which parity cannot "
                         "take: it translates keys of JAX's default PRNG, threefry2x32, only (docs/jax.md)\n  fix: "
                         "make the key with jax.random.key(seed) and the default implementation, or draw the random "
                         "numbers outside the compiled function and pass them in as arrays")


#: For each JAX dtype parity's IR lacks: the dtype to convert to, and why that is safe.
CONVERT_TO: dict[str, tuple[str, str]] = {
    "uint16": ("jnp.uint32", "every uint16 value fits; jnp.int32 too"),
    "uint64": ("jnp.int64", "exact below 2**63"),
    "int4": ("jnp.int8", "every int4 value fits"),
    "uint4": ("jnp.uint8", "every uint4 value fits"),
    "int2": ("jnp.int8", "every int2 value fits"),
    "uint2": ("jnp.uint8", "every uint2 value fits"),
}


def _ir_dtypes() -> str:
    from ...ir.dtypes import DType

    return ", ".join(str(d.numpy) for d in DType)


def _convert_to(dtype: str) -> tuple[str, str]:
    if dtype in CONVERT_TO:
        return CONVERT_TO[dtype]
    if dtype.startswith("float8"):
        return "jnp.float16", f"every {dtype} value fits; jnp.bfloat16 too"
    return "jnp.float32", "or another dtype of that list that holds its values"


class NoIrDtype(ParityError, TypeError):
    """A JAX dtype parity's IR has no counterpart for (compat.tensor_type); the frontend says which
    argument or line made it (:class:`UnsupportedArgumentDtype`, :class:`UnsupportedDtype`)."""

    def __init__(self, dtype: str):
        self.dtype = dtype
        target, why = _convert_to(dtype)
        super().__init__(f"parity's IR has no {dtype} dtype (it has {_ir_dtypes()})\n  fix: convert to {target} "
                         f"({why})")


class UnsupportedArgumentDtype(ParityError, TypeError):
    """An argument whose dtype parity's IR has no counterpart for (uint16, uint64, int4, float8...)."""

    def __init__(self, argument: str, dtype: str):
        self.argument, self.dtype = argument, dtype
        target, why = _convert_to(dtype)
        super().__init__(f"argument `{argument}` is a {dtype} array, and parity's IR has no {dtype} dtype (it has "
                         f"{_ir_dtypes()})\n  fix: convert it before the call, `{argument}.astype({target})` ({why}), "
                         f"and convert the results back after the call if you need {dtype}")


class UnsupportedDtype(JaxCaptureError):
    """An equation whose result has a dtype parity's IR has no counterpart for."""

    def __init__(self, primitive: str, loc: SourceLoc | None, dtype: str):
        self.dtype = dtype
        target, why = _convert_to(dtype)
        super().__init__(primitive, loc, f"`{primitive}` makes a {dtype} array, and parity's IR has no {dtype} dtype "
                         f"(it has {_ir_dtypes()})", f"compute in {target} there ({why}), and convert to {dtype} "
                         "outside parity.jax.jit")


class TranslationBug(ParityError, AssertionError):
    """A rule built a value of another type than JAX's result: a bug in parity, not in the user's code."""


class UnsupportedSymbolicDim(ParityError, ValueError):
    """A symbolic size from ``jax.export.symbolic_shape`` that parity's dims cannot hold."""

    def __init__(self, size: str, why: str):
        super().__init__(f"the symbolic size `{size}` cannot be a parity dim: {why}\n  fix: JAX writes min and "
                         "max where it cannot tell which side is larger (x[:, 3:] on a symbolic s is s - min(s, 3)): "
                         "declare the bound, jax.export.symbolic_shape(\"s\", constraints=(\"s >= 3\",)), and "
                         "slice with lax.slice_in_dim; or give that size a fixed value")


class SymbolicSizeNotSupported(JaxCaptureError):
    """An equation on symbolic sizes that parity's IR holds only for fixed sizes (a convolution
    contracting over a symbolic batch, as a weight gradient does)."""

    def __init__(self, primitive: str, loc: SourceLoc | None, why: str):
        super().__init__(primitive, loc, f"`{primitive}` on these symbolic sizes has no parity IR form ({why})",
                         "give the size it names a fixed value (a plain int in the ShapeDtypeStruct) and export "
                         "one file per size")
