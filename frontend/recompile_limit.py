"""Dynamo's recompile limit: after ``torch._dynamo.config.recompile_limit`` compilations of one
function, Dynamo runs it in eager torch for good, an eager island no op names.

Without ``fullgraph`` parity warns once, at the function's line
(:class:`~.graph_breaks.RecompileLimitWarning`). With ``fullgraph=True`` the call runs with
Dynamo's ``fail_on_recompile_limit_hit`` on (:func:`failing_at_recompile_limit`), and the
``FailOnRecompileLimitHit`` it raises becomes :class:`RecompileLimitError`. Both say which
guard kept failing (Dynamo's "last reason", read off its log record by
frontend/user_errors.py) in words, with the fix that fits it: a changing size wants
``dynamic=True`` or ``mark_dynamic``, a changing Python number wants to be a tensor.

Example::

    >>> why, fix = explain_guard("0/7: tensor 'x' size mismatch at index 0. expected 8, actual 9")
    >>> why
    'the size of x at dim 0 changed (8 when compiled, 9 now): the graph was built static in that dim (dynamic=False, or a dim Dynamo kept static), so each new size compiles again'
"""

from __future__ import annotations

import re
import threading

from ..ir.graph import SourceLoc
from .errors import FrontendError
from .graph_breaks import GraphBreakError, Island, RecompileLimitWarning
from .source import definition_loc, in_user_code, is_user_file, warn_at

#: Dynamo's log record when a function reaches the limit (torch._dynamo.convert_frame)
LIMIT_RECORD = re.compile(r"hit config\.(?P<limit>\w+) \((?P<n>\d+)\)\n\s*function: '(?P<fn>[^']*)' "
                          r"\((?P<file>.+):(?P<line>\d+)\)\n\s*last reason: (?P<reason>[^\n]*)")
_SIZE = re.compile(r"tensor '(?P<name>[^']+)' size mismatch at index (?P<dim>\d+)\. "
                   r"expected (?P<before>\d+), actual (?P<now>\d+)")
_NUMBER = re.compile(r"(?P<name>[A-Za-z_][\w.]*) == (?P<value>[-+]?[\d.]+(?:e[-+]?\d+)?)")

_PENDING = threading.local()  # the record Dynamo logged just before it raises FailOnRecompileLimitHit

#: Every function that reached its limit in this process and runs in eager torch since (the
#: warning's line and reason): ``parity.explain`` lists the one it is asked about.
LIMIT_HITS: list[Island] = []


class RecompileLimitError(GraphBreakError):
    """``fullgraph=True``: Dynamo would run a function that reached its recompile limit in eager torch."""

    def __init__(self, message: str, loc: SourceLoc | None):
        self.reason = message.splitlines()[1].strip() if "\n" in message else message
        self.loc = loc
        FrontendError.__init__(self, message)  # GraphBreakError's own message is for a graph break


def explain_guard(reason: str | None, limit: str = "recompile_limit") -> tuple[str, str]:
    """(why, fix) for Dynamo's last failed guard ``reason`` (its "last reason" text)."""
    raise_limit = f"or raise torch._dynamo.config.{limit}"
    text = re.sub(r"^\d+/\d+: ", "", (reason or "").strip())
    text = re.sub(r"\s{2,}#.*$", "", text)  # Dynamo appends the guarded source line as a comment
    text = re.sub(r"L\['(\w+)'\]", r"\1", text)  # a local's name as older torch spells it
    size = _SIZE.search(text)
    if size:
        name, dim = size["name"], size["dim"]
        return (f"the size of {name} at dim {dim} changed ({size['before']} when compiled, {size['now']} now): "
                f"the graph was built static in that dim (dynamic=False, or a dim Dynamo kept static), so each new "
                f"size compiles again",
                f"leave dynamic unset (a dim that changes becomes symbolic at the next capture) or pass "
                f"dynamic=True, or mark that dim before the call: torch._dynamo.mark_dynamic({name}, {dim}); "
                f"{raise_limit}")
    number = _NUMBER.fullmatch(text)
    if number:
        name = number["name"]
        return (f"the Python number {name} changed (the last graph was built for {name} == {number['value']}): "
                f"a number argument is a constant of a graph built with dynamic=False, so each new value compiles "
                f"again",
                f"leave dynamic unset (a number that changes becomes symbolic at the next capture), or pass {name} "
                f"as a tensor (torch.tensor({name})), so that its value is data, not part of the graph; "
                f"{raise_limit}")
    generic = (f"pass dynamic=True for changing sizes, torch._dynamo.mark_dynamic(x, dim) for one dim, a tensor "
               f"in place of a changing Python number; {raise_limit}")
    if not text or text.startswith("Unable to find"):
        return "Dynamo logged no reason (TORCH_LOGS=recompiles lists each recompile and its guard)", generic
    return f"the last recompile's failed guard: {text}", generic


def _limit_loc(limit: re.Match) -> SourceLoc:
    return SourceLoc(limit["file"], int(limit["line"]), limit["fn"])


def warn_recompile_limit(limit: re.Match, compiled=None) -> None:
    """The warning for Dynamo's limit record ``limit`` (a :data:`LIMIT_RECORD` match), at the function's line.

    ``compiled`` is the parity.compile result whose call hit the limit: for a module, Dynamo's record
    names torch's call wrapper (``inner(*args)``), so the module's forward (or the user's
    ``parity.compile`` line) and its parameter names are used instead."""
    loc = _limit_loc(limit)
    reason = limit["reason"]
    if compiled is not None and not is_user_file(loc.file):
        original = getattr(compiled, "module", None) or getattr(compiled, "fn", None)
        loc = in_user_code(definition_loc(original), compiled.session.options.site) or loc
        reason = _with_parameter_names(reason, original)
    why, fix = explain_guard(reason, limit["limit"])
    LIMIT_HITS.append(Island("recompile limit", loc, why))
    warn_at(loc, f"parity.compile: {loc} was compiled {limit['n']} times (Dynamo's {limit['limit']}); from now on "
                 f"Dynamo runs it in eager torch, not on the backend\n  why: {why}\n  fix: {fix}",
            RecompileLimitWarning)


def _with_parameter_names(reason: str | None, original) -> str | None:
    """Dynamo's guard text with ``args[k]`` (torch's wrapper's view of a module's arguments) named
    as ``original``'s forward names its k-th parameter."""
    import inspect

    try:
        target = getattr(original, "forward", original)
        names = [p.name for p in inspect.signature(target).parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return reason
    return re.sub(r"\bargs\[(\d+)\]", lambda m: names[int(m[1])] if int(m[1]) < len(names) else m[0], reason or "")


def dynamo_raises_at_limit() -> bool:
    """Whether Dynamo raises at the limit (fullgraph's calls, or the user's own setting) rather than run eagerly."""
    from torch._dynamo import config

    return bool(config.fail_on_recompile_limit_hit)


def keep_for_error(limit: re.Match) -> None:
    """Keep Dynamo's limit record for the :class:`RecompileLimitError` its exception becomes."""
    _PENDING.limit = limit


def failing_at_recompile_limit(compiled):
    """``compiled`` (torch.compile's result) called with Dynamo's ``fail_on_recompile_limit_hit``
    on, and only for the call: fullgraph's promise covers the calls after the limit too."""
    from torch._dynamo import config

    def call(*args, **kwargs):
        before = config.fail_on_recompile_limit_hit
        config.fail_on_recompile_limit_hit = True
        try:
            return compiled(*args, **kwargs)
        finally:
            config.fail_on_recompile_limit_hit = before

    return call


def recompile_limit_error(err: BaseException, fn, backend_name: str) -> RecompileLimitError | None:
    """The :class:`RecompileLimitError` for Dynamo's ``FailOnRecompileLimitHit`` (None for any other error)."""
    from torch._dynamo.exc import FailOnRecompileLimitHit

    if not isinstance(err, FailOnRecompileLimitHit):
        return None
    limit, _PENDING.limit = getattr(_PENDING, "limit", None), None
    if limit is not None:
        loc, n, name, reason = _limit_loc(limit), limit["n"], limit["limit"], limit["reason"]
    else:  # no handler saw Dynamo's record: the limit from its exception, the function from parity's own
        from torch._dynamo import config

        found = re.search(r"Limit type: (\w+)", str(err.__cause__ or ""))
        name = found[1] if found else "recompile_limit"
        n, reason = getattr(config, name, "?"), None
        loc = definition_loc(fn)
    why, fix = explain_guard(reason, name)
    where = str(loc) if loc else "the function"
    return RecompileLimitError(
        f"parity.compile(fullgraph=True): {where} was compiled {n} times (Dynamo's {name}); one more compile "
        f"would run it in eager torch, not on {backend_name!r}\n  why: {why}\n  fix: {fix}", loc)
