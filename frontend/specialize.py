"""Never specialize silently: a dim declared dynamic that capture would bake into a constant.

torch.export refuses such a capture with "Constraints violated": the user's code works
only for one size of the dim (``x + torch.ones(3, 4)``), or only when it equals another
dim (``x @ x``), or the example input has size 0 or 1, which tracing always specializes.
Its message names neither the op nor, for ties between dims, the user's line. While
capturing, :class:`GuardLog` records the guards torch's ShapeEnv adds (each with the
user's line and the torch function that added it: ``meta_mm`` is ``mm``);
:meth:`SpecializedDimension.of` turns the refusal into one error per dim that says
which op and line forced it and what to do.

Example::

    >>> err = SpecializedDimension([("batch", "3", None)])
    >>> print(str(err).splitlines()[0])
    the dynamic dim 'batch' would be baked in as the constant 3
"""

from __future__ import annotations

import logging
import re

from .errors import FrontendError

_SHAPE_LOGGER = "torch.fx.experimental.symbolic_shapes"


# torch functions that add size guards, by the op they check for (others: meta_mm is mm)
_TORCH_CHECKS = {"infer_size": "broadcasting of an elementwise op", "_broadcast_shapes": "broadcasting",
                 "view": "view/reshape", "_reshape_view_helper": "view/reshape"}


class GuardLog(logging.Handler):
    """Records, while active (``with GuardLog() as log``), each guard torch adds on sizes:
    ``(guard, user's line, torch function)``; nothing is printed."""

    def __init__(self):
        super().__init__(logging.INFO)
        self.guards: list[tuple[str, str, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        if "[guard added]" not in str(record.msg) or len(record.args or ()) < 3:
            return
        from torch._guards import TracingContext

        _, guard, sloc = record.args[:3]
        framework = getattr(getattr(sloc, "framework_loc", None), "name", "") or ""
        user = getattr(sloc, "maybe_user_loc", None) or ""
        stack = TracingContext.extract_stack()  # still inside the traced call: the user's full path
        if stack:
            frame = stack[-1]
            user = f"{(frame.line or '').strip()}  # {frame.filename}:{frame.lineno} in {frame.name}"
        self.guards.append((str(guard), str(user), framework))

    def __enter__(self) -> GuardLog:
        logger = logging.getLogger(_SHAPE_LOGGER)
        self._saved = logger.level, logger.propagate, logger.handlers[:]
        logger.setLevel(logging.INFO)
        logger.propagate = False  # torch's own handlers would print every record: only ours while capturing
        logger.handlers = [self]
        return self

    def __exit__(self, *exc) -> None:
        logger = logging.getLogger(_SHAPE_LOGGER)
        logger.setLevel(self._saved[0])
        logger.propagate = self._saved[1]
        logger.handlers = self._saved[2]


class SpecializedDimension(FrontendError):
    """Dims declared dynamic that the captured code fixes: each ``(dim, what it became,
    (user's line, torch function) or None)``."""

    def __init__(self, problems: list[tuple[str, str, tuple[str, str] | None]]):
        lines = []
        for dim, value, where in problems:
            constant = value.lstrip("-").isdigit()
            what = f"baked in as the constant {value}" if constant else f"tied to {value}"
            lines.append(f"the dynamic dim {dim!r} would be {what}")
            if where is not None:
                lines.append(_where_line(*where))
                lines.append(f"  why: that code works only when {dim} {'is' if constant else 'equals'} {value}")
                lines.append(f"  fix: make it work for every size, or drop {dim!r} from dynamic_dims "
                             "to export this size only")
            elif constant and int(value) in (0, 1):
                lines.append(f"  why: {dim} is {value} in the example inputs, and tracing specializes "
                             "sizes 0 and 1")
                lines.append(f"  fix: give an example with {dim} >= 2 (the export still runs at {dim} = "
                             f"{value})")
            else:
                lines.append("  why: torch's tracing found that the code needs it (it names no line)")
                lines.append(f"  fix: make the code work for every size, or declare {dim} as {value}")
        super().__init__("\n".join(lines))

    @classmethod
    def of(cls, exc: BaseException, log: GuardLog) -> SpecializedDimension | None:
        """The error for torch.export's "Constraints violated" ``exc``, else None."""
        text = str(exc)
        if "Constraints violated" not in text or "Suggested fixes:" not in text:
            return None
        fixes = re.findall(r"^\s+(\w+) = (.+?)\s*$", text.split("Suggested fixes:", 1)[1], re.M)
        if not fixes:
            return None
        ties = [(user, fn) for guard, user, fn in log.guards if guard.startswith("Eq(") and user]
        problems = []
        for dim, value in fixes:
            problems.append((dim, value, ties.pop(0) if ties else _user_line(text)))
        return cls(problems)


class GuardedDimension(FrontendError):
    """A dim declared dynamic that the captured code can take only within limits torch
    cannot state as a range (``x[:, -3:]`` behaves otherwise at seq = 3): each problem is
    ``(dim, the guard in the dim's name, (user's line, torch function) or None)``."""

    def __init__(self, problems: list[tuple[str, str, tuple[str, str] | None]]):
        lines = []
        for dim, guard, where in problems:
            lines.append(f"the dynamic dim {dim!r} cannot take every size: the captured code needs {guard}")
            if where is not None:
                lines.append(_where_line(*where))
            lines.append(f"  why: at sizes where {guard} fails, that code takes another path, which this "
                         "capture does not hold")
            lines.append(f"  fix: bound the dim so that {guard} always holds, e.g. dynamic_dims={{...: {{axis: "
                         f"torch.export.Dim({dim!r}, min=...)}}}} (the file then refuses other sizes), or drop "
                         f"{dim!r} from dynamic_dims to export this size only")
        super().__init__("\n".join(lines))

    @classmethod
    def of(cls, exc: BaseException, log: GuardLog) -> GuardedDimension | None:
        """The error for torch.export's "Constraints violated" ``exc`` that suggests no fix."""
        text = str(exc)
        if "Constraints violated" not in text:
            return None
        found = re.findall(r"Not all values of (\w+) = (\S+) in the specified range .*? satisfy the "
                           r"generated guard (.+?)\.?\s*$", text, re.M)
        if not found:
            return None
        unequal = [(user, fn) for guard, user, fn in log.guards if guard.startswith("Ne(") and user]
        problems = []
        for dim, source, guard in found:
            readable = guard.replace(source, dim).strip()
            if readable.startswith("(") and ")" in readable:  # (4*seq) != 12 -> 4*seq != 12
                inner, rest = readable[1:].split(")", 1)
                readable = inner + rest if "(" not in inner else readable
            problems.append((dim, readable, unequal.pop(0) if unequal else _user_line(text)))
        return cls(problems)


def _where_line(code: str, function: str) -> str:
    """``  where: <the user's line> (op: mm)``: the op named by the torch function that added
    the guard (``meta_mm`` is ``mm``; a generic decorator's ``wrapper`` names nothing)."""
    op = _TORCH_CHECKS.get(function, function[5:] if function.startswith("meta_") else function)
    return f"  where: {code.strip()}" + (f" (op: {op})" if op and op != "wrapper" else "")


def _user_line(text: str) -> tuple[str, str] | None:
    """The last frame of torch's "User stack:" (file, line, code), when it gives one."""
    frames = re.findall(r'File "([^"]+)", line (\d+), in (\S+)\n\s+(.+)', text.split("User stack:", 1)[-1])
    if "User stack:" not in text or not frames:
        return None
    file, line, function, code = frames[-1]
    return f"{code.strip()}  # {file}:{line} in {function}", ""


# -- ranges: bounds the model has, which are not specializations ---------------------------

_RANGE = re.compile(r"Dim\('(\w+)'((?:, (?:min|max)=\d+)*)\)")


def suggested_ranges(exc: BaseException) -> dict[str, dict[str, int]] | None:
    """torch's suggested fixes when every one only bounds a dim (``seq = Dim('seq', max=64)``:
    the model's position table), as {dim: {"min"/"max": bound}}; else None."""
    text = str(exc)
    if "Suggested fixes:" not in text:
        return None
    fixes = re.findall(r"^\s+(\w+) = (.+?)\s*$", text.split("Suggested fixes:", 1)[1], re.M)
    ranges = {}
    for dim, value in fixes:
        m = _RANGE.fullmatch(value)
        if m is None or m.group(1) != dim:
            return None
        ranges[dim] = {k: int(v) for k, v in re.findall(r"(min|max)=(\d+)", m.group(2))}
    return ranges or None


def with_ranges(dynamic_shapes, ranges: dict[str, dict[str, int]], made: dict | None = None):
    """``dynamic_shapes`` (tuples/dicts of {axis: Dim}) with each named Dim given its range
    (one new Dim per name, shared where the old one was)."""
    import torch

    made = {} if made is None else made

    def dim(d):
        name = getattr(d, "__name__", None)
        if name not in ranges:
            return d
        return made.setdefault(name, torch.export.Dim(name, **ranges[name]))

    if isinstance(dynamic_shapes, dict) and all(isinstance(k, int) for k in dynamic_shapes):
        return {axis: dim(d) for axis, d in dynamic_shapes.items()}
    if isinstance(dynamic_shapes, dict):
        return {k: with_ranges(v, ranges, made) for k, v in dynamic_shapes.items()}
    if isinstance(dynamic_shapes, (tuple, list)):
        return type(dynamic_shapes)(with_ranges(v, ranges, made) for v in dynamic_shapes)
    return dynamic_shapes


def size_bounds(exported) -> tuple:
    """The finite bounds torch.export found for the graph's symbols (``s3 <= 64``, a user's
    ``Dim("seq", min=4)``), as IR constraints. A lower bound of 2 is left out: it only
    reflects torch's 0/1 specialization while tracing, and the graph runs at 1."""
    from ..ir.constraints import Constraint
    from ..ir.dims import Symbol

    bounds = []
    for symbol, values in exported.range_constraints.items():
        if not getattr(symbol, "is_Symbol", False):
            continue
        upper, lower = values.upper, values.lower
        if getattr(upper, "is_Integer", False):  # int_oo is not
            bounds.append(Constraint(">=", int(upper), Symbol(str(symbol)), "torch.export: the model's range"))
        if getattr(lower, "is_Integer", False) and int(lower) > 2:
            bounds.append(Constraint(">=", Symbol(str(symbol)), int(lower), "torch.export: the model's range"))
    return tuple(bounds)
