"""Checks of arguments that every layer shares: a value among choices, a regex, a type.

Each check returns the value it accepted or raises :class:`UsageError`, whose one-line
message names what was given, the valid choices, and the nearest one when the value looks
like a typo ("did you mean 'onnx'?"). ``parity.validate`` adds the checks that know
backends, devices, paths and options; the command line prints the line and exits 2.

Example::

    >>> one_of("f33", ["f16", "f32", "f64"], "dtype")
    Traceback (most recent call last):
    ...
    parity.ir.usage.UsageError: unknown dtype 'f33'; did you mean 'f32'? choose from: f16, f32, f64
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

from .errors import ParityError


class UsageError(ParityError, ValueError):
    """A bad argument: an unknown name, a bad regex, a missing file, an option of another function."""


def did_you_mean(value: str, choices: Iterable[str]) -> str:
    """``" did you mean 'onnx'?"`` for a near miss among ``choices``, else ``""``."""
    close = difflib.get_close_matches(str(value), [str(c) for c in choices], n=1, cutoff=0.6)
    return f" did you mean {close[0]!r}?" if close else ""


def one_of(value: str, choices: Iterable[str], what: str, hint: str = "") -> str:
    """``value`` if it is one of ``choices``; else a :class:`UsageError` naming them."""
    choices = list(dict.fromkeys(choices))
    if value in choices:
        return value
    near = did_you_mean(value, choices)
    raise UsageError(f"unknown {what} {value!r};{near} choose from: {', '.join(map(str, choices))}{hint}")


def regex(pattern: str, what: str) -> re.Pattern:
    """``pattern`` compiled, or a :class:`UsageError` saying where it is broken."""
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise UsageError(f"{what} {pattern!r} is not a regular expression: {exc} "
                         "(escape literal characters: '\\[')") from None


def of_type(value, types: type | tuple[type, ...], what: str):
    """``value`` if it is an instance of ``types``; else what was expected and what came."""
    if isinstance(value, types):
        return value
    names = " or ".join(t.__name__ for t in (types if isinstance(types, tuple) else (types,)))
    raise UsageError(f"{what} should be {names}, got {type(value).__name__} {value!r}")
