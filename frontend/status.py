"""A status line for slow work (a first compile, ``auto``'s race, the CLI's imports).

On a terminal, :func:`slow_work` shows a transient rich status line (a spinner and the
message on stderr) once the work has taken :data:`DELAY_S` seconds, and erases it when the
work ends; work that ends sooner shows nothing. When stderr is not a terminal (piped,
logged, under pytest) nothing is printed at all.

Example::

    >>> with slow_work("parity: compiling"):   # stderr is not a terminal here: prints nothing
    ...     pass
"""

from __future__ import annotations

import contextlib
import threading

DELAY_S = 2.0  # work shorter than this shows no status line


def make_console():
    """The console the status line is drawn on: stderr (a test passes a forced terminal instead)."""
    from rich.console import Console

    return Console(stderr=True)


@contextlib.contextmanager
def slow_work(message: str, console=None, delay_s: float | None = None):
    """Show ``message`` as a status line while the block runs, if it runs long on a terminal
    (``delay_s``: after how long; :data:`DELAY_S` by default, read when the block starts)."""
    console = console or make_console()
    if not console.is_terminal:  # rich would draw nothing either; this spares the timer thread
        yield
        return
    status = console.status(message)
    lock = threading.Lock()
    state = {"shown": False, "done": False}

    def show():
        with lock:
            if not state["done"]:
                status.start()
                state["shown"] = True

    delay_s = DELAY_S if delay_s is None else delay_s
    timer = threading.Timer(delay_s, show)
    timer.daemon = True
    if delay_s <= 0:
        show()  # at once, in this thread (what a test of the line asks for)
    else:
        timer.start()
    try:
        yield
    finally:
        with lock:
            state["done"] = True
            timer.cancel()
            if state["shown"]:
                status.stop()


__all__ = ["DELAY_S", "make_console", "slow_work"]
