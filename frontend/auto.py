"""``backend="auto"``: per captured graph, the fastest backend that can run it and is conformant.

For each FX graph AOTAutograd hands over (each partition, with ``strict=False``):

1. **Candidates**: every installed backend that runs on the device, except those that
   are never fast there (:data:`NEVER_AUTO`), or the ones ``AutoOptions.candidates`` names.
   A candidate that does not claim one of the graph's ops (in its dtype) is dropped.
2. **Conformance**: with ``AutoOptions.matrix`` (the JSON of ``parity conform --json``),
   every (op, dtype) cell of the graph must be ``pass`` for the backend on the device; a
   cell the matrix lacks or that fails drops the candidate. Without a matrix, the
   backend's recorded deviations decide: one recorded for an op and dtype of the graph
   drops it. A flush-to-zero deviation is a property of the whole runtime on every op,
   which conformance excuses when the case passes once subnormals are zero on both sides;
   it does not drop a candidate (``parity.auto_choices`` shows it).
3. **Compile, within the budget**: ``AutoOptions.budget_s`` is what auto may spend on one
   graph: compiling its candidates, checking, warming up and timing them. The candidate
   expected to compile fastest is compiled first, whatever it costs (something must run
   the graph); another is not raced when the budget is already spent, or when its expected
   cost exceeds what is left of it: the longest compile this backend took on a graph no larger
   than this one (a lower bound: compile times are kept per backend and device, in this
   process and in the disk cache) or, before any is measured, the cold-compile prior the
   backend declares (``Backend.compile_priors``). A pick made while the spent budget left a
   candidate out is kept in this process only: the next one, knowing the times, orders the
   candidates better.
4. **Check**: every compiled candidate is run on the first call's inputs; one whose
   outputs differ from eager torch running the same FX graph (frontend/auto_check.py: rtol
   per dtype, :data:`RTOL`; the indices of a sort or top-k may order equal keys either way;
   a float output off eager's passes if it is no farther from a float64 run of the graph
   than twice eager's own distance, 16× where eager has no correct digit; graphs that draw
   random numbers are compared with the first candidate's outputs instead, every candidate
   drawing the same keys) is dropped. No element is held to a difference below the underflow
   floor (auto_arbiter.underflow_floors: the dtype's smallest subnormal, or its smallest normal for a
   candidate that declares flush-to-zero, times auto_check.underflow_scale); the only one
   compiled within the budget too. When every compiled candidate is dropped, the ones the
   budget left out are compiled and checked, cheapest expected first, until one matches; when none
   matches, the graph runs in eager torch with one :class:`~parity.frontend.errors.AutoFallbackWarning`.
5. **Warm-up and timing**: the rest run ``WARMUP_RUNS`` more times untimed (XLA's first
   runs are slow), then in interleaved rounds until the budget is spent (at least one
   round, at most ``MAX_ROUNDS``; a candidate over ``PRUNE`` × the fastest leaves
   the race; those three and the race's steps 1, 3 and 5 are frontend/auto_race.py's, shared
   with parity.jax.jit); the lowest median wins. The choice is kept per graph (keyed by the
   candidates' IR content hashes, the device, the precision tier, the budget and every backend
   considered with its installed version) in this process and in the disk cache
   (on by default), so a second process compiles only the chosen backend and races nothing.

``$PARITY_BACKEND`` (read once, when ``parity.compile`` builds its options) forces one
backend for ``backend="auto"``.

Example::

    >>> import torch, parity
    >>> options = parity.AutoOptions(budget_s=30, candidates=("onnx", "xla"))
    >>> f = parity.compile(lambda x: torch.relu(x * 2 + 1), backend="auto", auto=options)
    >>> f(torch.tensor([-1.0, 1.0])).tolist()
    [0.0, 3.0]
    >>> parity.auto_choices(f)[0].choice in ("onnx", "xla")
    True
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import replace

import torch

from ..backends.host import host
from ..backends.registry import backend_names, get_backend
from ..ir.errors import ParityError
from .auto_arbiter import Arbiter, short
from .auto_carry import carried_pick, family_key, is_symbolic, remember_family
from .auto_check import eager_graph
from .auto_contract import NEVER_AUTO
from .auto_installed import installed_candidates
from .auto_options import AutoOptions, resolve_auto_options  # noqa: F401 - re-exported
from .auto_race import (  # noqa: F401 - AutoChoice, Candidate, _CHOICES re-exported (parity.auto_choices, tests)
    _CHOICES,
    AutoChoice,
    Candidate,
    admitted,
    choice_key,
    choose,
    compile_within_budget,
    drop,
    expected_compile_s,
    fastest,
    known_choice,
    remember,
    set_status,
    time_rounds,
    warm_up,
)
from .auto_race import candidate_names as race_candidates
from .compiled_graph import CompiledGraph, compiled_executable
from .errors import AutoFallbackWarning, UnsupportedAtenOp, auto_fallback_text
from .partition import rejected_nodes
from .session import AUTO, Session
from .single_backend import compile_split, translate_for
from .source import graph_user_locs, in_user_code, warn_at


class AutoBackend:
    """What ``parity.compile``'s up-front checks see of ``backend="auto"``: a name, no sharding."""

    name = AUTO
    supports_sharding = False


def auto_choices(compiled) -> list[AutoChoice]:
    """The :class:`AutoChoice` of every graph ``compiled`` (what ``parity.compile`` returned
    with ``backend="auto"``) has compiled so far; a choice is final after the graph's first call."""
    return list(compiled.session.auto_choices)


# -- which backends may run a graph -------------------------------------------------------


# -- compiling one FX graph ----------------------------------------------------------------


def compile_auto(gm: torch.fx.GraphModule, session: Session, kind: str):
    """AOTAutograd's compiler hook for ``backend="auto"``: a boxed callable on torch tensors."""
    options = session.options
    record = AutoChoice(kind, options.device)
    session.auto_choices.append(record)
    matrix = (options.auto or AutoOptions()).matrix
    ready = []  # (name, backend, translation, graph)
    refusals = []
    for name in race_candidates(options.device, options.auto, backend_names(), NEVER_AUTO):
        try:
            backend = get_backend(name)
        except (ParityError, ImportError) as exc:
            record.candidates.append(Candidate(name, "dropped", f"not available: {exc}"))
            continue
        if options.device not in backend.available_devices():
            record.candidates.append(Candidate(name, "dropped", f"no {options.device} device here"))
            continue
        sub = Session(replace(options, backend=name), session.warned, session.reports, session.auto_choices)
        try:
            translation, graph = translate_for(gm, sub, backend, kind)
        except UnsupportedAtenOp as err:
            refusals.append((backend, err))
            record.candidates.append(Candidate(name, "dropped", f"does not claim: {err.why}"))
            continue
        if admitted(record, name, backend, graph, options.device, matrix):
            ready.append((name, backend, translation, graph))
    if not ready:
        return _nothing_runs_whole(gm, session, kind, record, refusals)
    budget_s = (options.auto or AutoOptions()).budget_s
    installed = installed_candidates(c.name for c in record.candidates)
    family = family_key(gm, kind, options, budget_s, installed, machine())
    if any(is_symbolic(graph) for *_, graph in ready):
        ready = _serving_every_size(ready, record)
    key = choice_key(ready, options.device, options.precision, budget_s, installed)
    known, source = known_choice(key, options, ready, machine())
    if known is None:  # the same graph at another shape was raced: no race per new size
        known, source = carried_pick(_CHOICES, family, [r[0] for r in ready])
    if known is not None and any(r[0] == known for r in ready):
        ready = [r for r in ready if r[0] == known]
        record.source = source
    compiled, spent, exhausted = compile_within_budget(ready, options, record, budget_s, _builder(options))
    # A pick made without a candidate whose cost was unknown stays in this process only: the
    # next process knows every compile time measured here, and may order them better.
    on_disk = not exhausted

    def keep(name: str) -> None:
        remember(key, name, options, ready, machine(), on_disk)
        remember_family(_CHOICES, family, name)

    if len(ready) == 1:  # nothing to race, nothing to fall back on: a cached, carried or sole pick
        (name,) = compiled
        choose(record, name, record.source or "only candidate")
        keep(name)
        return compiled[name]
    # The one compiled within the budget is checked too: were it rejected unseen, which backends
    # happened to fit the budget (what is installed, what the cache has timed) would decide
    # whether the program gets eager torch's numbers (MobileViT's training: onnx alone, once a
    # plugin was uninstalled).
    return AutoGraph(gm, compiled, record, keep, budget_s - spent,
                     compile_rest=_rest_compiler(ready, compiled, options, record), session=session)


def _builder(options):
    """How auto_race.compile_within_budget compiles one candidate: a CompiledGraph on torch tensors."""
    def build(backend, translation, graph) -> CompiledGraph:
        executable = compiled_executable(graph, backend, options.device, options.cache_dir, precision=options.precision)
        return CompiledGraph(translation, graph, executable)

    return build


def machine() -> dict:
    """What a race's timings depend on besides the graphs: the CPU model, the CPUs this process
    may run on, and torch's thread count (the same host gives other winners at 1 thread and at
    all of them; a cache directory on a disk that moved to other hardware sees another CPU).

    Example::

        >>> sorted(machine())
        ['cpu', 'cpus', 'torch_threads']
    """
    return {**host(), "torch_threads": torch.get_num_threads()}


def _serving_every_size(ready: list, record: AutoChoice) -> list:
    """A graph with symbolic dims: the candidates whose one executable serves every size, when
    there is one (a backend that compiles per concrete shape would compile again at each new size,
    every token of a decode loop); else all of them."""
    serving = [r for r in ready if not _compiles_per_shape(r[1], r[3], record.device)]
    if not serving:
        return ready
    for name, *_ in ready:
        if all(name != r[0] for r in serving):
            drop(record, name, "not raced: it compiles one executable per concrete shape, and this graph's sizes "
                                "are symbolic (each new size, each token of a decode loop, would compile again)")
    return serving


def _compiles_per_shape(backend, graph, device: str) -> bool:
    """The backend's answer for this graph where it gives one (``compiles_per_shape_for``), else
    its declaration for every graph (``compiles_per_shape``)."""
    per_graph = getattr(backend, "compiles_per_shape_for", None)
    return per_graph(graph, device) if per_graph is not None else getattr(backend, "compiles_per_shape", False)


def _rest_compiler(ready: list, compiled: dict, options, record: AutoChoice):
    """What :class:`AutoGraph` calls when every candidate compiled within the budget was rejected:
    yields the ones left out (for the spent budget or their expected cost) compiled one at a
    time, budget or not, the cheapest expected first, as ``(name, CompiledGraph)``. Past the
    budget auto looks for a backend that runs the graph right, not the fastest: the caller
    stops at the first that matches, so a minutes-long compile never follows one that did."""
    rest = [entry for entry in ready if entry[0] not in compiled]

    def compile_rest():
        expected = {name: expected_compile_s(name, backend, options, len(graph.nodes))[0] or 0.0
                    for name, backend, _, graph in rest}
        for entry in sorted(rest, key=lambda entry: expected[entry[0]]):
            set_status(record, entry[0], "timed", "raced after every candidate within the budget was rejected")
            try:
                yield from compile_within_budget([entry], options, record, math.inf, _builder(options))[0].items()
            except Exception as exc:  # noqa: BLE001 - eager torch runs the graph if none compiles
                drop(record, entry[0], f"failed to compile: {type(exc).__name__}: {str(exc)[:200]}")

    return compile_rest


def _nothing_runs_whole(gm, session: Session, kind: str, record: AutoChoice, refusals: list):
    """No candidate runs the whole graph: strict raises; strict=False partitions around the
    nodes the backend refusing the fewest cannot run, and picks per partition."""
    if not refusals:
        raise ParityError(f"backend='auto' found no conformant backend for this {kind} graph on "
                          f"{session.options.device}:\n{record}\n  fix: name a backend (backend='xla', ...), "
                          f"or give AutoOptions(matrix=...) a conformance report that covers these ops")
    if session.options.strict:
        raise refusals[0][1]
    backend, err = min(refusals, key=lambda r: len(rejected_nodes(gm, r[0])))
    record.choice, record.source = None, f"partitioned around {backend.name}'s refusals; one choice per partition"
    return compile_split(gm, session, backend, kind, err, compile_part=lambda sub: compile_auto(sub, session, kind))


# -- the choice's cache --------------------------------------------------------------------


# -- checking and timing on the first call ---------------------------------------------------


class AutoGraph:
    """Boxed callable that, on its first call, checks and times the candidates, then runs the choice."""

    def __init__(self, gm, compiled: dict, record: AutoChoice, remember, budget_s: float, *,
                 compile_rest=None, session: Session | None = None):
        """``budget_s``: what is left of auto's budget for checking, warming up and timing;
        ``compile_rest``: yields the candidates the budget left out, compiled one at a time
        (``(name, CompiledGraph)``), checked when every compiled one is rejected; ``session``: where the user called parity."""
        self._boxed_call = True
        self.gm = gm
        self.compiled = compiled
        self.record = record
        self.remember = remember
        self.budget_s = budget_s
        self.compile_rest = compile_rest
        self.session = session
        self.chosen = None
        self.recorder: list | None = None  # while fast_path records a call: the outputs returned

    def __call__(self, args: list) -> list:
        if self.chosen is not None:
            outputs = self.chosen(args)
        else:
            inputs = list(args)
            args.clear()
            outputs = self._decide(inputs)
        if self.recorder is not None:
            self.recorder.append(outputs)
        return outputs

    @property
    def returns_ir_outputs(self) -> bool:
        """The chosen graph's (fast_path's direct entries call this object, which calls it)."""
        return getattr(self.chosen, "returns_ir_outputs", False)  # None, or eager torch's run: False

    def positional(self, order: list[int]):
        """The chosen graph's positional call (CompiledGraph.positional), or None."""
        return None if self.chosen is None else getattr(self.chosen, "positional", lambda order: None)(order)

    def _decide(self, inputs: list) -> list:
        record = self.record
        started = time.perf_counter()
        start = torch.random.get_rng_state()
        arbiter = Arbiter(self.gm, inputs, start, random=any(c._num_keys for c in self.compiled.values()))
        results = self._checked(self.compiled, inputs, arbiter)
        source = "measured" if len(results) > 1 else "the only one compiled within the budget" \
            if len(self.compiled) == 1 else "the only one that matched"
        if not results and self.compile_rest is not None:  # the ones the budget left out, until one matches
            for name, run in self.compile_rest():
                self.compiled[name] = run
                results = self._checked({name: run}, inputs, arbiter)
                if results:
                    source = "the only one that matched"
                    break
        if not results:
            return self._run_eagerly(inputs, start)
        after = torch.random.get_rng_state()
        self._warm_up(list(results), inputs)
        times = self._time(list(results), inputs, self.budget_s - (time.perf_counter() - started))
        torch.random.set_rng_state(after)  # as if the graph had run once
        name = fastest({n: times.get(n, []) for n in results})
        choose(record, name, source)
        self.remember(name)
        self.chosen = self.compiled[name]
        return list(results[name])

    def _checked(self, compiled: dict, inputs: list, arbiter: Arbiter) -> dict:
        """{name: outputs} of the candidates in ``compiled`` whose outputs on ``inputs`` match
        the arbiter's; the others are dropped, with why."""
        results = {}
        for name, run in compiled.items():
            torch.random.set_rng_state(arbiter.start)  # every candidate draws the same keys
            try:
                results[name] = run(list(inputs))
            except Exception as exc:  # a candidate that fails on real inputs is dropped, not fatal
                self._drop(name, f"failed on the first inputs: {type(exc).__name__}: {str(exc)[:200]}")
        for name, got in list(results.items()):
            why = arbiter.mismatch(got, results, get_backend(name), self.record.device)
            if why is not None:
                self._drop(name, f"differs from {arbiter.name} on the first inputs: {why}")
                del results[name]
        return results

    def _run_eagerly(self, inputs: list, start) -> list:
        """No candidate matched: the graph runs in eager torch from now on, with one warning."""
        record, site = self.record, self.session.options.site if self.session is not None else None
        locs = [in_user_code(loc, site) for loc in graph_user_locs(self.gm)]
        rejected = [(c.name, short(c.why)) for c in record.candidates]
        record.choice, record.runs_eagerly = None, True
        record.source = "no candidate matched eager torch on the first inputs"
        record.where = locs[0] if locs else site
        warn_at(record.where, auto_fallback_text(record.kind, locs, rejected), AutoFallbackWarning)
        self.chosen = eager_graph(self.gm)
        torch.random.set_rng_state(start)
        return self.chosen(list(inputs))

    def _warm_up(self, names: list[str], inputs: list) -> None:
        """Untimed runs (auto_race.warm_up) that leave torch's generator where it was."""
        state = torch.random.get_rng_state()
        warm_up({n: functools.partial(self._run, n, inputs) for n in names})
        torch.random.set_rng_state(state)

    def _time(self, names: list[str], inputs: list, budget_s: float) -> dict[str, list[float]]:
        """auto_race.time_rounds on the first inputs, recorded; torch's generator left where it was."""
        state = torch.random.get_rng_state()
        times = time_rounds({n: functools.partial(self._run, n, inputs) for n in names}, budget_s)
        torch.random.set_rng_state(state)
        for c in self.record.candidates:
            if c.name in times:
                c.times_s = times[c.name]
        return times

    def _run(self, name: str, inputs: list):
        return self.compiled[name](list(inputs))  # the boxed convention clears the list it gets

    def _drop(self, name: str, why: str) -> None:
        drop(self.record, name, why)
