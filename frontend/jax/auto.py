"""``backend="auto"`` for JAX programs: the race of frontend/auto_race.py, the torch frontend's,
held to ``jax.jit``'s outputs.

Shared with ``parity.compile``: the candidates (every installed backend auto may time, or
``AutoOptions.candidates``; ``$PARITY_BACKEND`` / ``AutoOptions.forced`` picks one), the
conformance filter (``AutoOptions.matrix`` or the recorded deviations), compiling within
``AutoOptions.budget_s`` (cheapest expected first, from measured compile times or the
backends' priors), warm-up and interleaved, pruned timing rounds, the record
(:class:`~parity.frontend.auto_race.AutoChoice`) and the pick kept in this process and on
disk, so a second process compiles only the pick.

What differs, and why it stays here: each candidate is checked against ``jax.jit``'s outputs
on the first inputs (:func:`mismatch`), where the torch frontend runs eager torch on the FX
graph; no torch generator to keep still; and when no candidate matches there is no eager
fallback to run (a JAX program is one graph: :class:`AutoFoundNothing` names each candidate's
reason). A float output off jax.jit's gets the torch frontend's second chance
(:func:`mismatch_past_float64`): against a float64 run of the same JAX function
(:func:`float64_run`, made once, only when an output needs it).

Example::

    >>> import numpy as np
    >>> mismatch([np.float32([1.0, 2.0])], [np.float32([1.0, 2.00001])]) is None
    True
"""

from __future__ import annotations

import functools
import math
import time
import warnings
from collections.abc import Callable, Sequence

import numpy as np

from ...backends.host import host
from ...backends.registry import backend_names, get_backend
from ...backends.runtime import RuntimeRequest
from ...ir.dtypes import DType
from ...ir.errors import ParityError
from ...ir.graph import Graph
from .. import auto_race as race
from ..auto_contract import NEVER_AUTO, NOISE_FACTOR, NOISE_LEVEL_FACTOR, RTOL_BY_DTYPE
from ..auto_installed import installed_candidates
from ..auto_options import AutoOptions
from ..auto_race import AutoChoice, Candidate
from ..executables import compiled_executable, prepare
from .run import check_claims


class AutoFoundNothing(ParityError):
    """No installed backend ran the graph within the contract."""


def choose_backend(graph: Graph, options, arrays: Sequence[np.ndarray], want: Sequence[np.ndarray],
                   as_called: Callable[[Callable], Callable[[], object]] | None = None,
                   exact: Callable[[], Sequence[np.ndarray]] | None = None) -> tuple[Callable, AutoChoice]:
    """The fastest candidate whose outputs on ``arrays`` match ``want`` (jax.jit's), and the
    record of the race. ``options`` has ``device``, ``precision``, ``cache_dir`` and ``auto``
    (an AutoOptions or None). ``as_called(executable)`` is the call the user will make with
    it, timed in its place (the caller's conversions and dispatch included, results ready);
    without it the executable is timed on ``arrays``. ``exact()`` gives the outputs of a
    float64 run, the second chance of an output off jax.jit's (none without it)."""
    auto = options.auto or AutoOptions()
    record = AutoChoice(f"@{graph.name}", options.device)
    ready = _ready(graph, options, auto, record)
    if not ready:
        raise AutoFoundNothing(_nothing_text(graph, record))
    installed = installed_candidates(c.name for c in record.candidates)
    key = race.choice_key(ready, options.device, options.precision, auto.budget_s, installed)
    known, source = race.known_choice(key, options, ready, host())
    if known is not None and any(r[0] == known for r in ready):
        ready = [r for r in ready if r[0] == known]
        record.source = source
    build = functools.partial(_build, options)
    compiled, spent, exhausted = race.compile_within_budget(ready, options, record, auto.budget_s, build)
    exact_once = _Once(exact)
    matched = _checked(compiled, arrays, want, record, exact_once)
    if not matched:  # the ones the budget left out get their chance
        rest = [r for r in ready if r[0] not in compiled]
        matched = _checked(race.compile_within_budget(rest, options, record, math.inf, build)[0], arrays, want,
                           record, exact_once)
    if not matched:
        raise AutoFoundNothing(_nothing_text(graph, record))
    left = auto.budget_s - spent
    started = time.perf_counter()
    runs = {name: as_called(run) if as_called else functools.partial(run, *arrays) for name, run in matched.items()}
    race.warm_up(runs)
    times = race.time_rounds(runs, left - (time.perf_counter() - started))
    for c in record.candidates:
        if c.name in times:
            c.times_s = times[c.name]
    name = race.fastest(times)
    race.choose(record, name, record.source or ("measured" if len(matched) > 1 else "the only one that matched"))
    race.remember(key, name, options, ready, host(), on_disk=not exhausted)
    if any(c.why.startswith("differs from jax.jit") for c in record.candidates):
        warnings.warn(f"parity.jax.jit(backend='auto') on @{graph.name} dropped a backend whose outputs differ "
                      f"from jax.jit's:\n{record}", stacklevel=4)
    return matched[name], record


def _ready(graph: Graph, options, auto: AutoOptions, record: AutoChoice) -> list:
    """(name, backend, None, prepared graph) of every candidate that claims the graph and is
    conformant for it; the others recorded as dropped, with why."""
    ready = []
    for name in race.candidate_names(options.device, auto, backend_names(), NEVER_AUTO):
        try:
            backend = get_backend(name)
            if options.device not in backend.available_devices():
                raise ParityError(f"no {options.device} device here")
            prepared = prepare(graph, backend)
            check_claims(backend, prepared)
        except (ParityError, ImportError) as exc:
            record.candidates.append(Candidate(name, "dropped", f"does not run it: {str(exc).splitlines()[0]}"))
            continue
        if race.admitted(record, name, backend, prepared, options.device, auto.matrix):
            ready.append((name, backend, None, prepared))
    return ready


def _build(options, backend, translation, graph: Graph) -> Callable:
    return compiled_executable(graph, backend, options.device, options.cache_dir, precision=options.precision,
                               request=RuntimeRequest())


class _Once:
    """``function()``'s value, computed at the first call (None without a function, or when it fails)."""

    def __init__(self, function: Callable | None):
        self._function, self._done, self._value = function, function is None, None

    def __call__(self):
        if not self._done:
            self._done = True
            try:
                self._value = self._function()
            except Exception:  # noqa: BLE001 - a program with no float64 run gets no second chance
                self._value = None
        return self._value


def _checked(compiled: dict, arrays: Sequence[np.ndarray], want: Sequence[np.ndarray], record: AutoChoice,
             exact: Callable[[], Sequence[np.ndarray] | None]) -> dict:
    """The candidates of ``compiled`` whose outputs on ``arrays`` match ``want``; the rest dropped, with why."""
    matched = {}
    for name, run in compiled.items():
        try:
            why = mismatch_past_float64([np.asarray(o) for o in run(*arrays)], want, exact)
        except Exception as exc:  # noqa: BLE001 - a candidate that fails is dropped, with the reason
            why = f"failed on the first inputs: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
        else:
            why = None if why is None else f"differs from jax.jit on the first inputs: {why}"
        if why is None:
            matched[name] = run
        else:
            race.drop(record, name, why)
    return matched


def _nothing_text(graph: Graph, record: AutoChoice) -> str:
    return (f"backend='auto' found no backend that runs @{graph.name} within the contract:\n{record}\n"
            "  fix: name a backend (backend='xla' runs every IR primitive), or pass "
            "auto=parity.AutoOptions(candidates=(...)) with one that runs these ops")


def mismatch(got: Sequence[np.ndarray], want: Sequence[np.ndarray]) -> str | None:
    """Why ``got`` is not ``want`` within the contract (None when it is): floats within their
    dtype's rtol (|got − want| ≤ rtol·|want| + rtol·max|want|, NaN where NaN), the rest exact."""
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        if g.shape != w.shape or g.dtype != w.dtype:
            return f"output {i} is {g.dtype}{list(g.shape)}, jax.jit's is {w.dtype}{list(w.shape)}"
        dtype = DType.from_numpy(w.dtype)
        if dtype not in RTOL_BY_DTYPE:
            if not np.array_equal(g, w):
                return f"output {i} differs from jax.jit's (an exact dtype, {dtype.short})"
            continue
        g64, w64 = g.astype(np.float64), w.astype(np.float64)
        if not np.array_equal(np.isnan(g64), np.isnan(w64)):
            return f"output {i} has NaN where jax.jit's does not, or the reverse"
        infinite = np.isinf(w64)
        if not np.array_equal(g64[infinite], w64[infinite]):
            return f"output {i} differs from jax.jit's where jax.jit's is infinite"
        finite = np.isfinite(w64)
        rtol = RTOL_BY_DTYPE[dtype]
        scale = float(np.max(np.abs(w64[finite]), initial=0.0))
        error = np.abs(g64 - w64)[finite]
        bound = rtol * np.abs(w64[finite]) + rtol * scale
        if np.any(error > bound):
            return f"output {i} is off jax.jit's by {float(np.max(error)):.3g} (bound {rtol:g} of its scale {scale:.3g})"
    return None


def mismatch_past_float64(got: Sequence[np.ndarray], want: Sequence[np.ndarray],
                          exact: Callable[[], Sequence[np.ndarray] | None]) -> str | None:
    """:func:`mismatch`, with a second chance for each float output off jax.jit's: it passes when
    it is no farther from ``exact()`` (a float64 run of the program, asked for only then) than
    NOISE_FACTOR times jax.jit's own distance from it (NOISE_LEVEL_FACTOR where jax.jit has no
    correct digit), the rule the torch frontend's auto applies against eager.

    Example::

        >>> zero = lambda: [np.float64([0.0])]  # an analytically zero gradient
        >>> mismatch([np.float32([-5e-8])], [np.float32([3e-8])]) is None
        False
        >>> mismatch_past_float64([np.float32([-5e-8])], [np.float32([3e-8])], zero) is None
        True
    """
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        why = mismatch([g], [w])
        if why is None:
            continue
        why = why.replace("output 0", f"output {i}", 1)
        if g.shape != w.shape or g.dtype != w.dtype or w.dtype.kind != "f":
            return why
        exact_outputs = exact()
        if exact_outputs is None or np.shape(exact_outputs[i]) != w.shape:
            return why
        x = np.asarray(exact_outputs[i], np.float64)
        finite = np.isfinite(w)
        own = float(np.max(np.abs(w.astype(np.float64) - x)[finite], initial=0.0))
        off = float(np.max(np.abs(g.astype(np.float64) - x)[finite], initial=0.0))
        factor = NOISE_LEVEL_FACTOR if own >= float(np.max(np.abs(x)[finite], initial=0.0)) else NOISE_FACTOR
        if own == 0.0 or not off <= factor * own:
            ratio = "inf" if own == 0.0 else f"{off / own:.3g}"
            return f"{why}; {ratio}x jax.jit's distance from a float64 run (at most {factor:g}x)"
    return None


def float64_run(fun: Callable, args: Sequence) -> list[np.ndarray]:
    """The output leaves of ``fun(*args)`` under x64 with every float argument widened to float64
    (PRNG keys and integers as they are; keys out as their data): the oracle of the second chance."""
    import jax

    from .compat import is_prng_key, key_data

    def wide(leaf):
        if is_prng_key(leaf):
            return leaf
        array = np.asarray(leaf)
        return array.astype(np.float64) if array.dtype.kind == "f" else array

    with jax.enable_x64(True):
        outputs = jax.jit(fun)(*jax.tree_util.tree_map(wide, tuple(args)))
        return [np.asarray(key_data(o) if is_prng_key(o) else o) for o in jax.tree_util.tree_leaves(outputs)]
