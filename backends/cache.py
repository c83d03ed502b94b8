"""A cache that builds each value at most once, even when threads race for one key.

Backends keep their compiled executables or sessions here, keyed by graph content hash,
device and input types. The cache is bounded: past ``max_entries`` the least recently
used entries are dropped, so a long-running process that compiles thousands of distinct
graphs (a fuzzing run, say) does not hold every executable forever.

Example::

    >>> cache = BuildOnceCache(max_entries=2)
    >>> cache.get_or_build("a", lambda: 1), cache.get_or_build("a", lambda: 2)
    (1, 1)
    >>> cache.builds
    1
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

T = TypeVar("T")


class _Slot:
    """An entry being built (other threads wait on ``done``) or built."""

    __slots__ = ("done", "value", "error")

    def __init__(self):
        self.done = threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None


class BuildOnceCache:
    def __init__(self, max_entries: int = 256):
        self.max_entries = max_entries
        self.builds = 0  # how many values were built (tests watch it)
        self._slots: OrderedDict[Hashable, _Slot] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._slots)

    def get_or_build(self, key: Hashable, build: Callable[[], T]) -> T:
        """The value for ``key``, calling ``build()`` only if no thread has built it yet.

        A failed build is not cached: the error goes to every waiting caller and a later
        call tries again.
        """
        with self._lock:
            slot = self._slots.get(key)
            owner = slot is None
            if owner:
                slot = self._slots[key] = _Slot()
            else:
                self._slots.move_to_end(key)
        if not owner:
            slot.done.wait()
            if slot.error is not None:
                raise slot.error
            return slot.value
        try:
            slot.value = build()
            with self._lock:
                self.builds += 1
                self._evict()
        except BaseException as exc:
            slot.error = exc
            with self._lock:
                self._slots.pop(key, None)
            raise
        finally:
            slot.done.set()
        return slot.value

    def _evict(self) -> None:
        # Only finished entries go; one still being built has waiters.
        while len(self._slots) > self.max_entries:
            for key, slot in self._slots.items():
                if slot.done.is_set() or slot.value is not None:
                    del self._slots[key]
                    break
            else:
                return
