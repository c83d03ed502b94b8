"""Writing a run's reports to the paths a command was given (JSON, Markdown, HTML).

Example::

    >>> from parity.conformance.runner import run
    >>> write_reports(run(["reference"], ops="^neg$"))  # no paths: nothing written
    []
"""

from __future__ import annotations

import json
import pathlib

from . import html, reports
from .results import ConformanceRun


def write_reports(result: ConformanceRun, *, json_path=None, markdown_path=None, html_path=None,
                  console=None) -> list[pathlib.Path]:
    """Write each report whose path is given (parent folders made); the paths written."""
    writers = ((json_path, lambda r: json.dumps(reports.to_json(r), indent=1)), (markdown_path, reports.to_markdown),
               (html_path, html.to_html))
    written = []
    for path, write in writers:
        if path:
            target = pathlib.Path(path)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(write(result), encoding="utf-8")
            written.append(target)
            if console is not None:
                console.print(f"wrote {target}", highlight=False)
    return written
