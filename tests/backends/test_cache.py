import threading

import pytest

from parity.backends.cache import BuildOnceCache


def test_racing_threads_build_once_and_share_the_value():
    cache = BuildOnceCache()
    started = threading.Barrier(8)
    calls = []

    def build():
        calls.append(1)
        return object()

    results = []

    def worker():
        started.wait()
        results.append(cache.get_or_build("k", build))

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and cache.builds == 1
    assert len({id(r) for r in results}) == 1 and len(results) == 8


def test_a_failed_build_is_raised_and_retried_later():
    cache = BuildOnceCache()

    def broken():
        raise ValueError("no compiler today")

    with pytest.raises(ValueError, match="no compiler today"):
        cache.get_or_build("k", broken)
    assert len(cache) == 0 and cache.builds == 0
    assert cache.get_or_build("k", lambda: 7) == 7


def test_least_recently_used_entries_are_dropped_past_the_bound():
    cache = BuildOnceCache(max_entries=2)
    cache.get_or_build("a", lambda: 1)
    cache.get_or_build("b", lambda: 2)
    cache.get_or_build("a", lambda: 99)  # touch a: b is now the oldest
    cache.get_or_build("c", lambda: 3)
    assert len(cache) == 2
    assert cache.get_or_build("a", lambda: 99) == 1  # kept
    assert cache.get_or_build("b", lambda: 20) == 20  # rebuilt after eviction
    assert cache.builds == 4
