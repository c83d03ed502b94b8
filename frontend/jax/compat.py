"""Every contact parity has with JAX's jaxpr internals, in one place.

Jaxpr APIs change in every minor release (``pjit`` became ``jit`` in 0.7; ``ClosedJaxpr``
merges into ``Jaxpr`` in 0.11; scan's parameters are reorganised in 0.11). The translation
rules never touch a jaxpr object directly: they read equations through :class:`Eqn` and
nested programs through :class:`SubProgram`, both built here. A JAX release that moves
something is fixed in this file alone.

Tested with JAX 0.10.2 (jaxlib 0.10.2); docs/jax.md keeps the same list.

Example::

    >>> import jax.numpy as jnp
    >>> program = trace(lambda x: jnp.sin(x) * 2, [jnp.zeros(3)])
    >>> [eqn.primitive for eqn in program.body.eqns]
    ['sin', 'mul']
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np
from jax._src import core as jax_core
from jax._src import source_info_util
from jax._src.random import prng as jax_prng

from ...ir.dims import Dim, Symbol
from ...ir.dtypes import DType
from ...ir.graph import SourceLoc
from ...ir.types import TensorType
from .errors import NoIrDtype, UnsupportedArgument, UnsupportedArgumentDtype, UnsupportedDtype, UnsupportedSymbolicDim

TESTED_JAX_VERSIONS = ("0.10.2",)

# Primitives whose body is inlined, and the parameter holding it. custom_jvp_call and
# custom_vjp_call run their primal body: JAX has already differentiated by the time a jaxpr
# reaches parity (jax.grad is traced into the program), so the custom rule is never needed.
INLINED_BODY = {
    "jit": "jaxpr",
    "pjit": "jaxpr",  # the name before JAX 0.7
    "closed_call": "call_jaxpr",
    "core_call": "call_jaxpr",
    "custom_jvp_call": "call_jaxpr",
    "custom_vjp_call": "call_jaxpr",
    "custom_vjp_call_jaxpr": "fun_jaxpr",
    "remat2": "jaxpr",  # jax.checkpoint / jax.remat
    "checkpoint": "jaxpr",
}


@dataclass(frozen=True)
class Operand:
    """One operand of an equation: a variable (``var``) or a literal (``literal`` set)."""

    var: Any
    type: TensorType
    literal: np.ndarray | None = None


@dataclass(frozen=True)
class Eqn:
    """One jaxpr equation as the rules see it: name, params, operands, result types, line."""

    primitive: str
    params: dict
    operands: tuple[Operand, ...]
    results: tuple[Any, ...]  # the result variables (dropped ones included)
    result_types: tuple[TensorType, ...]
    loc: SourceLoc | None
    has_effects: bool
    on_keys: bool = False  # an operand or result is a PRNG key array, seen as its u32[..., 2] key data


@dataclass(frozen=True)
class SubProgram:
    """A jaxpr with its constants: the inputs are ``invars``, the outputs ``outvars``."""

    eqns: tuple[Eqn, ...]
    invars: tuple[Any, ...]
    outvars: tuple[Operand, ...]
    consts: tuple[tuple[Any, np.ndarray], ...]  # (constvar, value)


@dataclass(frozen=True)
class Traced:
    """What tracing a function gives: its program and the pytree of its outputs."""

    body: SubProgram
    out_tree: Any
    in_types: tuple[TensorType, ...]
    out_keys: tuple[bool, ...] = ()  # which flat outputs are threefry key arrays (their key data in the IR)


def trace(fun: Callable, flat_args: Sequence[Any], names: Sequence[str] | None = None) -> Traced:
    """Trace ``fun(*flat_args)`` (arrays, PRNG key arrays or ``jax.ShapeDtypeStruct``) to its program.
    ``names``: the arguments' names in the user's terms (``params.w1``), for errors."""
    specs = [a if isinstance(a, jax.ShapeDtypeStruct) else jax.ShapeDtypeStruct(np.shape(a), _dtype_of(a))
             for a in flat_args]
    for i, spec in enumerate(specs):  # before tracing: the user's argument, not a line inside the function
        if not _is_key_dtype(spec.dtype) and ir_dtype(spec.dtype) is None:
            name = names[i] if names is not None else f"{i} (in flattened order)"
            raise UnsupportedArgumentDtype(name, str(np.dtype(spec.dtype)))
    closed, out_shapes = jax.make_jaxpr(fun, return_shape=True)(*specs)
    in_types = tuple(tensor_type(v.aval) for v in closed.jaxpr.invars)
    if None in in_types:
        raise UnsupportedArgument(in_types.index(None), closed.jaxpr.invars[in_types.index(None)].aval.str_short())
    out_keys = tuple(_is_key_dtype(v.aval.dtype) for v in closed.jaxpr.outvars)
    return Traced(_program(closed.jaxpr, closed.consts), jax.tree_util.tree_structure(out_shapes), in_types,
                  out_keys)


def body_of(eqn: Eqn) -> SubProgram | None:
    """The body of an inlined call primitive (``jit``, ``custom_jvp_call``, ``remat``...), else None."""
    key = INLINED_BODY.get(eqn.primitive)
    return None if key is None else as_program(eqn.params[key])


def branches_of(eqn: Eqn) -> list[SubProgram]:
    """``cond``'s branches, in index order."""
    return [as_program(b) for b in eqn.params["branches"]]


@dataclass(frozen=True)
class ScanParams:
    """``scan``'s parameters, independent of how a JAX release spells them."""

    body: SubProgram
    length: int
    reverse: bool
    num_consts: int
    num_carry: int


@dataclass(frozen=True)
class WhileParams:
    """``while``'s parameters: its condition and body programs and how many consts each takes
    (the equation's operands are the condition's consts, the body's, then the initial carries)."""

    cond: SubProgram
    body: SubProgram
    cond_nconsts: int
    body_nconsts: int


def while_params(eqn: Eqn) -> WhileParams:
    p = eqn.params
    return WhileParams(as_program(p["cond_jaxpr"]), as_program(p["body_jaxpr"]), int(p["cond_nconsts"]),
                       int(p["body_nconsts"]))


def scan_params(eqn: Eqn) -> ScanParams:
    p = eqn.params
    return ScanParams(as_program(p["jaxpr"]), int(p["length"]), bool(p["reverse"]), int(p["num_consts"]),
                      int(p["num_carry"]))


def as_program(jaxpr: Any) -> SubProgram:
    """A ``ClosedJaxpr`` or an open ``Jaxpr`` (remat's body) as a :class:`SubProgram`."""
    if isinstance(jaxpr, jax_core.ClosedJaxpr):
        return _program(jaxpr.jaxpr, jaxpr.consts)
    return _program(jaxpr, ())


def _program(jaxpr: Any, consts: Sequence[Any]) -> SubProgram:
    const_pairs = tuple((v, np.asarray(key_data(c) if is_prng_key(c) else c)) for v, c in zip(jaxpr.constvars, consts))
    if len(const_pairs) != len(jaxpr.constvars):  # an open jaxpr with constvars: not produced by tracing
        raise ValueError(f"a jaxpr with {len(jaxpr.constvars)} constvars came without their values")
    return SubProgram(tuple(_eqn(e) for e in jaxpr.eqns), tuple(jaxpr.invars),
                      tuple(_operand(v) for v in jaxpr.outvars), const_pairs)


def _eqn(eqn: Any) -> Eqn:
    # a primitive passed as a parameter (select_and_scatter_add's select_prim) by its name
    # and an enum (gather's GatherScatterMode) by its member's name
    params = {k: _plain(v) for k, v in eqn.params.items()}
    on_keys = any(_is_key_dtype(v.aval.dtype) for v in (*eqn.invars, *eqn.outvars))
    try:
        operands, results = tuple(_operand(v) for v in eqn.invars), tuple(tensor_type(v.aval) for v in eqn.outvars)
    except NoIrDtype as missing:
        raise UnsupportedDtype(eqn.primitive.name, user_loc(eqn.source_info), missing.dtype) from None
    return Eqn(eqn.primitive.name, params, operands, tuple(eqn.outvars), results, user_loc(eqn.source_info),
               bool(eqn.effects), on_keys)


def _plain(value: Any) -> Any:
    if isinstance(value, jax_core.Primitive):
        return value.name
    if isinstance(value, enum.Enum):
        return value.name
    if _is_symbolic(value):  # dim_as_value's ``dim``
        return ir_dim(value)
    if isinstance(value, tuple) and any(_is_symbolic(v) for v in value):  # a shape: reshape's new_sizes, iota's
        return tuple(ir_dim(v) for v in value)
    if isinstance(value, jax_prng.PRNGImpl):  # random_wrap's and random_seed's impl
        return value.name
    return value


# -- symbolic dims ------------------------------------------------------------------------
# jax.export.symbolic_shape("b, 8") gives sizes that are JAX dimension expressions
# (shape_poly._DimExpr): a sum of terms, each a coefficient times a product of factors,
# a factor being a variable or an operation (floordiv, mod, max, min, non_negative) on
# expressions. The IR's dims (ir/dims.py) hold + - * // %, so max, min and non_negative
# are refused by name.

def _is_symbolic(value: Any) -> bool:
    return not isinstance(value, (int, np.integer)) and jax.export.is_symbolic_dim(value)


def ir_dim(size: Any) -> Dim:
    """A JAX size (an int or a dimension expression: ``2*b + 1``, ``floordiv(s, 2)``) as an IR dim."""
    if not _is_symbolic(size):
        return int(size)
    total: Dim = 0
    for term, coeff in size._sorted_terms:
        product: Dim = int(coeff)
        for factor, power in term._factors:
            product = product * _power(_ir_factor(factor, size), int(power))
        total = total + product
    return total


def _power(base: Dim, power: int) -> Dim:
    out: Dim = 1
    for _ in range(power):
        out = out * base
    return out


def _ir_factor(factor: Any, whole: Any) -> Dim:
    if factor.operation is None:
        try:
            return Symbol(factor.var)
        except ValueError:
            raise UnsupportedSymbolicDim(str(whole), f"its name {factor.var!r} is not an identifier") from None
    operands = [ir_dim(o) for o in factor.operands]
    if factor.operation == "floordiv":
        return operands[0] // operands[1]
    if factor.operation == "mod":
        return operands[0] % operands[1]
    raise UnsupportedSymbolicDim(str(whole), f"it uses `{factor.operation}`, and parity's dims hold only + - * // %")


def _operand(var: Any) -> Operand:
    if isinstance(var, jax_core.Literal):
        aval = var.aval
        return Operand(var, tensor_type(aval), np.asarray(var.val, dtype=aval.dtype))
    return Operand(var, tensor_type(var.aval))


def user_loc(source_info: Any) -> SourceLoc | None:
    """The user's line that produced an equation (JAX's own frames skipped)."""
    frame = source_info_util.user_frame(source_info.traceback)
    if frame is None:
        return None
    return SourceLoc(frame.file_name, frame.start_line, frame.function_name)


# The PRNG implementation whose keys parity translates (JAX's default): a key is two uint32 words
THREEFRY = "threefry2x32"


def tensor_type(aval: Any) -> TensorType | None:
    """An abstract value (``ShapedArray``) as an IR type. A threefry PRNG key array ``key<fry>[*S]``
    is its key data, ``u32[*S, 2]``; None for another PRNG implementation's keys. A dtype the IR
    lacks (uint16, uint64, int4, float8...) raises :class:`NoIrDtype`."""
    shape = tuple(ir_dim(d) for d in aval.shape)
    if _is_key_dtype(aval.dtype):
        return DType.uint32[(*shape, 2)] if key_impl_name(aval.dtype) == THREEFRY else None
    dtype = ir_dtype(aval.dtype)
    if dtype is None:
        raise NoIrDtype(str(np.dtype(aval.dtype)))
    return dtype[shape]


def ir_dtype(dtype: Any) -> DType | None:
    """The IR's dtype for a JAX (NumPy) dtype; None where the IR has none."""
    try:
        return DType.from_numpy(dtype)
    except (ValueError, TypeError):
        return None


def _is_key_dtype(dtype: Any) -> bool:
    # A NumPy dtype is never a key's (keys are JAX's extended dtypes); the test is per call and
    # per argument, and issubdtype costs microseconds.
    return not isinstance(dtype, np.dtype) and jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key)


def key_impl_name(key_dtype: Any) -> str:
    """The PRNG implementation of a key dtype (``"threefry2x32"`` for ``key<fry>``)."""
    return key_dtype._impl.name


def is_dropped(var: Any) -> bool:
    """A result nobody reads (``_`` in the printed jaxpr)."""
    return isinstance(var, jax_core.DropVar)


def _dtype_of(x: Any) -> Any:
    dtype = getattr(x, "dtype", None)
    if dtype is not None and _is_key_dtype(dtype):
        return dtype
    return np.dtype(dtype) if dtype is not None else jax.numpy.asarray(x).dtype


def is_tracer(x: Any) -> bool:
    """Whether ``x`` is a value JAX is tracing (the call sits inside jax.grad, vmap or jit)."""
    return isinstance(x, jax_core.Tracer)


def is_prng_key(x: Any) -> bool:
    """Whether ``x`` is a typed PRNG key array (``jax.random.key(0)``)."""
    dtype = getattr(x, "dtype", None)
    return dtype is not None and _is_key_dtype(dtype)


def key_data(key: Any) -> Any:
    """A threefry key array's data, ``u32[*shape, 2]``, what the IR holds for it."""
    return jax.random.key_data(key)


def key_base(key: Any) -> Any:
    """A threefry key array's data without a dispatch (the array it holds); a TypeError for
    anything else, as a call with the wrong signature gets (parity.jax.jit's native call)."""
    if not isinstance(key, jax_prng.PRNGKeyArray):
        raise TypeError(f"a PRNG key array was expected, got {type(key).__name__}")
    return key._base_array


def key_array(data: Any) -> Any:
    """The threefry key array holding ``data`` (``u32[*S, 2]``), without a dispatch."""
    return jax_prng.PRNGKeyArray(_threefry_impl(), data)


@functools.cache
def _threefry_impl() -> Any:
    return jax.random.key(0, impl=THREEFRY)._impl  # JAX keeps the impl objects private


def wrap_key_data(data: Any) -> Any:
    """The threefry key array whose data is ``data`` (a graph's key output back as keys)."""
    return jax.random.wrap_key_data(data, impl=THREEFRY)


def primitives_used(program: SubProgram) -> set[str]:
    """Every primitive name in ``program``, the bodies of calls, scans and conds included."""
    used: set[str] = set()
    for eqn in program.eqns:
        used.add(eqn.primitive)
        nested = [body_of(eqn)]
        if eqn.primitive == "scan":
            nested.append(scan_params(eqn).body)
        if eqn.primitive == "cond":
            nested += branches_of(eqn)
        for body in nested:
            if body is not None:
                used |= primitives_used(body)
    return used


def restructured(compiled: Any, in_tree: Any, out_tree: Any) -> Any | None:
    """``compiled`` (a ``jax.stages.Compiled`` of flat arrays returning a flat list) as one that
    takes the pytrees ``in_tree`` describes and returns ``out_tree``'s: the same executable, its
    arguments flattened and checked by JAX's own C++ dispatch (what ``jax.jit`` pays per call)
    instead of parity's Python. None where this JAX's ``Compiled`` has another shape inside
    (the caller then flattens in Python) or the leaf counts differ.

    ``jax.experimental.serialize_executable.deserialize_and_load`` builds its ``Compiled`` the same way."""
    try:
        flat_info = jax.tree_util.tree_leaves(compiled.args_info)
        if len(flat_info) != in_tree.num_leaves or compiled.out_tree.num_leaves != out_tree.num_leaves:
            return None
        return fast_call(jax.stages.Compiled(compiled._executable, compiled._params.const_args,
                                             in_tree.unflatten(flat_info), out_tree, no_kwargs=False))
    except (AttributeError, TypeError):
        return None


def fast_call(compiled: Any) -> Callable:
    """The C++ dispatch entry that ``compiled.__call__`` (a ``jax.stages.Compiled``) forwards to,
    without that Python frame (about 4 µs a call, measured: a jitted x + 1 dispatched in 13.3 µs
    by jax.jit, 18.5 µs through Compiled.__call__, 14.6 µs through this); ``compiled`` itself
    where this JAX has no such entry. It refuses another signature as ``compiled`` does, with
    a TypeError."""
    try:
        call = compiled._executable.create_cpp_call(compiled._params)
    except AttributeError:
        call = None
    return compiled if call is None else call


def dispatched_with_keys(compiled: Any, in_tree: Any, out_tree: Any, out_keys: Sequence[bool]) -> Callable | None:
    """``compiled`` (a ``jax.stages.Compiled`` of flat arrays, PRNG keys as their data) as a call
    of ``(dyn_args, dyn_kwargs, zero)`` taking and returning key arrays, dispatched by JAX's C++
    fast path as ``jax.jit`` dispatches key arguments: its dispatch registry flattens a key
    array into the array it holds, which is what the executable takes, and rebuilds the key
    outputs from theirs. ``in_tree``: the arguments' structure in that registry
    (:func:`dispatch_structure`). After the first call of a signature, no Python runs but the
    keys' own (un)flattening; another signature raises a TypeError, as ``restructured``'s call
    does. None where this JAX has no such entry (the caller flattens in Python then).

    Built as ``MeshExecutable.create_cpp_call`` builds its call (JAX 0.10), with a cache miss
    that flattens by the dispatch registry instead of checking the default registry's tree."""
    try:
        from jax._src import tree_util
        from jax._src.interpreters import pxla
        from jax._src.lib import _jax

        executable, params = compiled._executable, compiled._params
        if not isinstance(executable.unsafe_call, pxla.ExecuteReplicated) or executable._mut or (
                executable.unsafe_call.has_unordered_effects or executable.unsafe_call.has_host_callbacks):
            return None
        const_args = executable.shard_const_args(params.const_args)
        registry = tree_util.dispatch_registry
        in_shardings = list(executable._in_shardings)
    except (AttributeError, ImportError):
        return None

    def cache_miss(*args, **kwargs):
        flat, tree = registry.flatten((args, kwargs), None)
        if tree != in_tree:
            raise TypeError(f"arguments {tree} where the program was compiled for {in_tree}")
        outputs = executable.call(*const_args, *flat)
        rebuilt = out_tree.unflatten([key_array(o) if is_key else o for o, is_key in zip(outputs, out_keys, strict=True)])
        out_flat, out_dispatch = registry.flatten(rebuilt, None)
        fast = pxla.MeshExecutableFastpathData(
            executable.xla_executable, out_dispatch, in_shardings, executable._out_shardings,
            [o.aval for o in out_flat], [o._committed for o in out_flat],
            [i in executable._kept_var_idx for i in range(len(const_args) + len(flat))],
            executable._dispatch_in_layouts, const_args)
        return rebuilt, fast, False

    try:
        return _jax.pjit(executable.unsafe_call.name, None, cache_miss, [], [], pxla.JitGlobalCppCacheKeys(),
                         registry, pxla.cc_shard_arg)
    except (AttributeError, TypeError):
        return None


def dispatch_structure(tree: Any) -> Any:
    """``tree``'s structure as JAX's C++ dispatch flattens it (a PRNG key array is a node over
    the array it holds)."""
    from jax._src import tree_util

    return tree_util.dispatch_registry.flatten(tree, None)[1]
