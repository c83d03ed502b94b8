"""What :func:`parity.diff` returns: the report's data with its renderers attached.

:class:`~.report.DiffReport` is data (rows, ranking, JSON); the renderers (:mod:`.terminal`,
:mod:`.html`, :mod:`.repro`) read it. :class:`DiffResult` sits above both, so that a user
can call ``report.print()``, ``report.to_html()`` and ``report.write_repro(dir)`` while
the data module imports no renderer.

Example::

    >>> import numpy as np
    >>> from parity.ir import GraphBuilder, f32
    >>> from parity.debugger import diff_graph
    >>> b = GraphBuilder(); x = b.input(f32[2]); g = b.build([b.exp(x)])
    >>> report = diff_graph(g, [np.ones(2, np.float32)])
    >>> type(report).__name__, report.to_html().startswith("<!doctype html>")
    ('DiffResult', True)
"""

from __future__ import annotations

from .html import to_html
from .report import DiffReport
from .repro import write_repros
from .terminal import print_report


class DiffResult(DiffReport):
    """A :class:`~.report.DiffReport` that renders itself."""

    def write_repro(self, directory, limit: int = 10) -> list:
        """One standalone folder per guilty node (at most ``limit``); see :mod:`.repro`."""
        return write_repros(self, directory, limit=limit)

    def to_html(self) -> str:
        """A standalone HTML page: the ranked table and the worst path (see :mod:`.html`)."""
        return to_html(self)

    def print(self, console=None, top: int = 20) -> None:
        """The rich terminal table of the ``top`` ranked rows and a summary."""
        print_report(self, console, top=top)


__all__ = ["DiffResult"]
