"""Errors in the user's own code, under ``parity.compile``, read as they do in eager torch.

When the user's code is wrong (``x @ w`` with 2×3 and 4×8), Dynamo finds it while tracing
with fake tensors: torch logs the failed meta kernel on stderr, and Dynamo raises its own
``TorchRuntimeError`` with the first exception chained. :func:`eager_error` runs the
function eagerly instead and returns the exception eager torch raises, from the user's
line, without the chain. :func:`quiet_tracing_logs` keeps the log lines torch writes while
parity traces off stderr (only while a parity-compiled call is on the stack: the same
loggers stay as they are for everything else).

Example::

    >>> def f(x):
    ...     return x.reshape(5)
    >>> import torch
    >>> type(eager_error(f, (torch.ones(2),), {})).__name__
    'RuntimeError'
"""

from __future__ import annotations

import logging
import re
import sys

from .graph_breaks import note_skipped_frame
from .recompile_limit import LIMIT_RECORD, dynamo_raises_at_limit, keep_for_error, warn_recompile_limit

#: torch's loggers that report, on stderr, what parity's own tracing tried: a failed meta
#: kernel (the user's error, which the eager rerun raises anyway) and Dynamo's
#: ``.item()`` graph-break hint (parity reports every break itself: graph_breaks.py).
TRACING_LOGGERS = ("torch._subclasses.fake_tensor", "torch._dynamo.variables.tensor")
#: the logger whose recompile-limit record says Dynamo now runs a frame in eager torch
RECOMPILE_LOGGER = "torch._dynamo.convert_frame"
#: the logger whose record says Dynamo could not make a fake tensor (it then skips the frame,
#: or breaks the graph there): parity reports it (graph_breaks.SKIPPED_FRAMES)
FAKE_FAILURE_LOGGER = "torch._dynamo.utils"
_FAKE_FAILURE = re.compile(r"Encountered exception \((?P<reason>.*)\) during fake tensor propagation")
#: the logger whose "Backend compiler exception" warning says Dynamo runs a frame eagerly because
#: parity's backend met a data-dependent size (frontend/pipeline.py notes it, graph_breaks.py warns)
BACKEND_FALLBACK_LOGGER = "torch._dynamo.exc"
_BACKEND_FALLBACK = "Backend compiler exception"


def eager_error(fn, args: tuple, kwargs: dict) -> BaseException | None:
    """The exception ``fn(*args, **kwargs)`` raises in eager torch (None if it runs), with
    its traceback starting at ``fn``'s frame and no exception chained to it."""
    try:
        fn(*args, **kwargs)
    except Exception as err:  # the user's own error, whatever its type
        err.__context__ = None
        tb = err.__traceback__
        return err.with_traceback(tb.tb_next if tb is not None else None)
    return None


def from_user_frame(err: BaseException) -> BaseException | None:
    """``err`` with its traceback starting at the first frame of the user's code (the frames
    of parity and torch._dynamo that called it dropped), or None when it has no user frame."""
    from .source import is_user_file

    tb = err.__traceback__
    while tb is not None and not is_user_file(tb.tb_frame.f_code.co_filename):
        tb = tb.tb_next
    return None if tb is None else err.with_traceback(tb)


class _WhileParityTraces(logging.Filter):
    """Drops records of :data:`TRACING_LOGGERS` emitted inside a parity-compiled call."""

    def __init__(self, codes: frozenset):
        super().__init__("parity")
        self.codes = codes

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name not in TRACING_LOGGERS and record.name not in (RECOMPILE_LOGGER, FAKE_FAILURE_LOGGER,
                                                                      BACKEND_FALLBACK_LOGGER):
            return True
        if record.name == BACKEND_FALLBACK_LOGGER and not record.getMessage().startswith(_BACKEND_FALLBACK):
            return True
        frame = sys._getframe(1)  # only walked when such a record is emitted, never per call
        while frame is not None and frame.f_code not in self.codes:
            frame = frame.f_back
        if frame is None:
            return True
        if record.name == BACKEND_FALLBACK_LOGGER:  # parity noted the cause and warns at the user's line
            return False
        if record.name == FAKE_FAILURE_LOGGER:
            failure = _FAKE_FAILURE.search(record.getMessage())
            if failure is None:
                return True
            if not getattr(record, "parity_warned", False):  # once per record, as below
                record.parity_warned = True
                note_skipped_frame(failure["reason"])
            return False
        if record.name == RECOMPILE_LOGGER:
            limit = LIMIT_RECORD.search(record.getMessage())
            if limit is None:
                return True
            # one record passes every handler's filter (pytest adds its own): warn for the record once
            if not getattr(record, "parity_warned", False):
                record.parity_warned = True
                if dynamo_raises_at_limit():  # fullgraph: the reason goes into parity's error, no island
                    keep_for_error(limit)
                else:
                    # an eager island from now on: parity's warning, at the user's line
                    warn_recompile_limit(limit, frame.f_locals.get("self"))
        return False


def quiet_tracing_logs(entry_codes) -> None:
    """Install the filter on the handlers torch's tracing records reach (idempotent).

    ``entry_codes`` are the code objects of parity's call entry points (``__call__``,
    ``forward``): a record emitted below one of them is parity tracing."""
    codes = frozenset(entry_codes)
    for name in (*TRACING_LOGGERS, RECOMPILE_LOGGER, FAKE_FAILURE_LOGGER, BACKEND_FALLBACK_LOGGER):
        logger = logging.getLogger(name)
        while logger is not None:
            for handler in logger.handlers:
                installed = [f for f in handler.filters if isinstance(f, _WhileParityTraces)]
                if installed:  # another entry point installed it first (parity.compile, parity.explain)
                    installed[0].codes |= codes
                else:
                    handler.addFilter(_WhileParityTraces(codes))
            logger = logger.parent if logger.propagate else None
