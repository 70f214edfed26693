"""Settings shared by the whole suite.

Hypothesis's per-example deadline is a timing assertion, and timing targets live in
``bench/``, never in tests: on a loaded 2-core CI machine a 200 ms deadline failed an
example that was correct (tests/net/test_stream_accept.py, 261 ms under load). Every test
runs without it; a test may still set its own ``@settings``.
"""

import signal
import sys
from collections.abc import Iterator

import pytest
from hypothesis import settings

settings.register_profile("bundlekit", deadline=None)
settings.load_profile("bundlekit")


def _default_stop_signals() -> None:
    """SIGINT and SIGHUP as a terminal gives them, whatever started the suite.

    A runner started by ``nohup`` ignores SIGHUP, and a background job of a non-interactive shell
    ignores SIGINT; children inherit an ignored signal, and bundlekit keeps a signal its parent ignores
    ignored (the ``nohup`` rule, bundlekit/_signals.py). Run so, every test that stops a child with
    SIGHUP, or presses Ctrl-C in-process, hung or failed (seen here: ``open`` ignoring SIGHUP until the
    60 s timeout, again for each hypothesis example). The tests of that rule set the ignore themselves.
    """
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if signal.getsignal(signal.SIGHUP) == signal.SIG_IGN:
        signal.signal(signal.SIGHUP, signal.SIG_DFL)


_default_stop_signals()


@pytest.fixture
def default_recursion_limit() -> Iterator[None]:
    """Python's default recursion limit (1000) for one test, whatever ran before.

    A test feeding absurdly deep JSON or YAML checks that it is refused as malformed input, never
    a ``RecursionError``: the nesting must be deeper than this limit, and the limit shallow enough
    for the C stack (a library imported earlier in the run may have raised it far).
    """
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


@pytest.fixture(autouse=True)
def _own_block_store(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test has its own block store (``$BUNDLEKIT_HOME``, outside its ``tmp_path``): commands that keep
    blocks as a cache (``fork``, ``merge``, ``sync``) never write the user's store, and no test sees another's."""
    monkeypatch.setenv("BUNDLEKIT_HOME", str(tmp_path_factory.mktemp("bundlekit-home")))
