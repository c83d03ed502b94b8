"""The runtime interface a backend may declare beyond ``compile(graph, device)``: options the
user passes (``parity.compile(..., backend_options={...})``), parameters bound once, DLPack
tensors, and compiled artifacts kept in parity's disk cache. Each is opt-in, declared as data
on the :class:`~parity.backends.base.Backend` class; a backend that declares none is compiled
and called exactly as before (docs/plugins.md, "The runtime interface").

What one compile asks of the backend is a :class:`RuntimeRequest`: the options (checked and
completed with the declared defaults by :func:`resolve_options`) and the graph inputs that are
parameters. :func:`compile_keywords` turns it into the keywords ``compile`` receives, only the
ones the backend declares, and :meth:`RuntimeRequest.key` joins the compile caches' keys.

Example::

    >>> from parity.backends.base import Backend
    >>> class Vendor(Backend):
    ...     name, devices = "vendor", ("cpu",)
    ...     backend_options = (BackendOption("threads", int, 1, "worker threads of the runtime"),)
    ...     def claims(self): return {}
    ...     def compile(self, graph, device, *, backend_options=None): ...
    >>> resolve_options(Vendor(), {"threads": 4})
    {'threads': 4}
    >>> resolve_options(Vendor(), {"thread": 4})
    Traceback (most recent call last):
    ...
    parity.ir.usage.UsageError: backend_options: the vendor backend takes no option 'thread'; did you mean 'threads'? it takes: threads (int, default 1: worker threads of the runtime)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..ir.ops import FAMILIES, OP_TABLE, ops_in_family
from ..ir.usage import UsageError, did_you_mean


@dataclass(frozen=True)
class BackendOption:
    """One option a backend takes from ``parity.compile(..., backend_options={name: value})``.

    ``type`` is a type or a tuple of types the value must be an instance of (a bool is not
    taken for an int); ``choices``, if given, the values allowed. Options must be plain data
    (numbers, strings, booleans, None): they join the compile cache's key, on disk too.
    """

    name: str
    type: type | tuple[type, ...]
    default: Any
    doc: str
    choices: tuple = ()

    def describe(self) -> str:
        allowed = f" in {list(self.choices)}" if self.choices else ""
        return f"{self.name} ({_type_names(self.type)}{allowed}, default {self.default!r}: {self.doc})"


def _type_names(types) -> str:
    return " or ".join(t.__name__ for t in (types if isinstance(types, tuple) else (types,)))


def declared_options(backend) -> tuple[BackendOption, ...]:
    return tuple(getattr(backend, "backend_options", ()) or ())


def resolve_options(backend, given: Mapping[str, Any] | None) -> dict[str, Any]:
    """``given`` checked against what ``backend`` declares in ``backend_options``, with the declared
    defaults filled in. An unknown name, a value of the wrong type or outside ``choices`` is a
    :class:`UsageError` naming the option, the backend and what it takes."""
    declared = {o.name: o for o in declared_options(backend)}
    given = dict(given or {})
    takes = "; ".join(o.describe() for o in declared.values()) or "nothing (it declares no options)"
    where = f"backend_options: the {backend.name} backend"
    for name, value in given.items():
        option = declared.get(name)
        if option is None:
            raise UsageError(f"{where} takes no option {name!r};{did_you_mean(name, declared)} it takes: {takes}")
        wrong_type = not isinstance(value, option.type) or (isinstance(value, bool) and not _takes_bool(option.type))
        if wrong_type:
            raise UsageError(f"{where}'s option {name!r} should be {_type_names(option.type)}, got "
                             f"{type(value).__name__} {value!r}; it takes: {option.describe()}")
        if option.choices and value not in option.choices:
            raise UsageError(f"{where}'s option {name!r} is one of {list(option.choices)}, got {value!r}")
    return {name: given.get(name, option.default) for name, option in declared.items()}


def _takes_bool(types) -> bool:
    return bool in (types if isinstance(types, tuple) else (types,))


@dataclass(frozen=True)
class RuntimeRequest:
    """What one compile asks of a backend beyond the graph, device and tier: the resolved
    ``options`` and the indices of the graph inputs that are ``parameters`` (module parameters
    and buffers: bound once, refreshed when they change)."""

    options: Mapping[str, Any] = field(default_factory=dict)
    parameters: frozenset[int] = frozenset()

    def key(self) -> str:
        """The part of a cache key this request adds ("" for the empty request: keys unchanged)."""
        if not self.options and not self.parameters:
            return ""
        return repr((sorted(self.options.items()), sorted(self.parameters)))

    def for_backend(self, backend) -> RuntimeRequest:
        """The request as ``backend`` takes it: parameters only if it binds them."""
        return RuntimeRequest(dict(self.options), self.parameters if binds_parameters(backend) else frozenset())


EMPTY = RuntimeRequest()


def binds_parameters(backend) -> bool:
    return bool(getattr(backend, "binds_parameters", False))


def takes_dlpack(backend) -> bool:
    return bool(getattr(backend, "takes_dlpack", False))


def compile_keywords(backend, request: RuntimeRequest | None) -> dict[str, Any]:
    """The keywords ``backend.compile`` receives for ``request``: ``backend_options=`` (every declared
    option, defaults filled) if it declares options, ``parameters=`` if it binds parameters;
    nothing for a backend that declares neither."""
    request = request or EMPTY
    keywords: dict[str, Any] = {}
    if declared_options(backend):
        keywords["backend_options"] = resolve_options(backend, request.options)
    if binds_parameters(backend):
        keywords["parameters"] = frozenset(request.parameters)
    return keywords


@dataclass(frozen=True)
class VendorTier:
    """A precision tier a backend declares itself (say bf16 compute units, approximate
    transcendental hardware): listed in its ``precisions`` beside ``Precision.EXACT``, chosen with
    ``parity.compile(..., precision=NAME)`` (``backend="auto"`` never picks it), passed to
    ``compile`` as ``precision=`` (this object), and certified by ``parity conform --backend B
    --precision NAME`` in its own column ``B@NAME``.

    ``ulps`` maps an op name, or an op family (``parity.ir.ops.FAMILIES``: "unary",
    "contraction", ...), to the ULPs of the output dtype the tier promises for float outputs; an
    op's own entry wins over its family's. Ops not named keep the exact tier's bounds, and no
    tier changes exact ops (integers, comparisons, shape ops) or what NaN, ±inf and -0.0 give.

    Example::

        >>> tier = VendorTier("bf16-compute", {"contraction": 1024, "tanh": 8}, "bf16 multipliers, f32 sums")
        >>> tier.ulps_for("dot_general"), tier.ulps_for("tanh"), tier.ulps_for("add")
        (1024, 8, None)
    """

    value: str  # the tier's name, as Precision's members name theirs
    ulps: Mapping[str, float]
    reason: str

    def __post_init__(self):
        if self.value in ("exact", "fast", "both") or not self.value:
            raise ValueError(f"a vendor tier needs its own name, not {self.value!r} (parity's tiers: exact, fast)")
        for key, ulps in self.ulps.items():
            if key not in OP_TABLE and key not in FAMILIES:
                raise ValueError(f"vendor tier {self.value!r}: {key!r} is neither an op nor an op family "
                                 f"(families: {', '.join(FAMILIES)})")
            if isinstance(ulps, bool) or not isinstance(ulps, (int, float)) or ulps < 0:
                raise ValueError(f"vendor tier {self.value!r}: {key!r} needs a number of ULPs, got {ulps!r}")
        object.__setattr__(self, "ulps", dict(self.ulps))

    def __hash__(self) -> int:
        return hash(self.value)

    def ulps_for(self, op: str) -> float | None:
        """The ULPs the tier promises for ``op`` (its own entry, else its family's), or None."""
        if op in self.ulps:
            return self.ulps[op]
        return next((self.ulps[f] for f in self.ulps if f in FAMILIES and op in ops_in_family(f)), None)


def vendor_tier(backend, name: str) -> VendorTier | None:
    """The :class:`VendorTier` named ``name`` that ``backend`` declares in ``precisions``, or None."""
    return next((p for p in getattr(backend, "precisions", ()) if isinstance(p, VendorTier) and p.value == name), None)
