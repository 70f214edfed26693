"""httpx imported at the first request (``bundlekit._lazy.lazy_module``): the classes ``net.http`` builds on it
at first use are one pair per process, however many threads make their first bounded request at once."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator

import pytest

import bundlekit.net.http as http


@pytest.fixture
def switchy() -> Iterator[None]:
    """Thread switches as often as the interpreter allows (a race in a first use shows in a few tries)."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def test_threads_making_their_first_bounded_request_at_once_share_one_deadline_error_class(
    switchy: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each try starts as a fresh process would (no pair made); four threads ask at once: one pair for all, so
    ``_failure_of`` knows every thread's deadline error as its own."""
    for _ in range(60):
        monkeypatch.setattr(http, "_DEADLINE_TYPES", [])
        got: list[object] = []
        ready = threading.Barrier(4)

        def first_use() -> None:
            ready.wait()
            got.append(http._deadline_types())

        threads = [threading.Thread(target=first_use) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len({id(pair) for pair in got}) == 1
