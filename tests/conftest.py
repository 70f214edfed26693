"""Settings shared by the whole suite, and the suite's own home.

The suite never reads or writes the user's store, config or home (tests/isolation.py): before any
test module is imported, this process's ``HOME`` and ``XDG_*`` locations move into a temporary
folder and every setting bundlekit reads (``BUNDLEKIT_*`` but the suite's own, pinner credentials,
``SOURCE_DATE_EPOCH``, proxies) is removed; every test then runs with a home of its own (the autouse
``own_home`` fixture: ``HOME`` and the XDG folders in a fresh directory, no ``BUNDLEKIT_HOME``, so
the default store is ``$XDG_DATA_HOME/bundlekit`` inside it). A child process a test starts inherits
that. At the end of a run the user's bundlekit folders are compared with what they held at its start;
any change fails the run, naming what changed.

Hypothesis's per-example deadline is a timing assertion, and timing targets live in
``bench/``, never in tests: on a loaded 2-core CI machine a 200 ms deadline failed an
example that was correct (tests/net/test_stream_accept.py, 261 ms under load). Every test
runs without it; a test may still set its own ``@settings``.
"""

import contextlib
import gc
import os
import shutil
import signal
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from tests.bytecode import link_installed, warm_share
from tests.isolation import changes, home_environment, isolate, snapshot, user_locations, user_settings

# Under CI every run draws the same examples, so a landing never turns on a rare draw; on a
# developer's machine each run explores new ones (and the example database replays a failure).
settings.register_profile("bundlekit", deadline=None, derandomize=bool(os.environ.get("CI")))
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


@pytest.fixture(autouse=True)
def default_recursion_limit() -> Iterator[None]:
    """Python's default recursion limit (1000) for every test, whatever ran before.

    A test feeding absurdly deep JSON or YAML checks that it is refused as malformed input, never
    a ``RecursionError``: the nesting must be deeper than this limit, and the limit shallow enough
    for the C stack. A library a test module or an earlier test imported may have raised it far
    (py_ecc, via eth-account, sets 100000), so it is set for every test, not only those that ask.
    """
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


@pytest.fixture(autouse=True)
def no_process_secrets() -> Iterator[None]:
    """No process secret registered when a test starts, and the registry as it was when it ends.

    ``_redact.register_secret`` holds a credential for the rest of a process's run (``serve``'s token, a
    routing key, a seeded account's key): a test that runs such a command in its worker would otherwise leave
    every later test of that worker redacting the value, and ``_redact.shown_as_is`` answering False (a CI run
    failed six ``tests/cli/test_marks.py`` tests that way, in an order a local run never met)."""
    import bundlekit._redact as redact

    saved = set(redact._PROCESS_SECRETS)
    redact._PROCESS_SECRETS.clear()
    try:
        yield
    finally:
        redact._PROCESS_SECRETS.clear()
        redact._PROCESS_SECRETS.update(saved)


#: The user's bundlekit folders as this process found them, and what they held (compared at the end of the run).
_USER_LOCATIONS = user_locations(os.environ)
_USER_BEFORE = snapshot(_USER_LOCATIONS)
#: This process's own home and those of its tests, made before any test module imports bundlekit.
_SUITE_HOME = Path(tempfile.mkdtemp(prefix="bundlekit-suite-"))
isolate(os.environ, _SUITE_HOME / "home")
_CHANGED = pytest.StashKey[list[str]]()
#: The thread linking the interpreter's compiled modules into a fresh bytecode cache (pytest_configure), if one runs.
_LINKING: list[threading.Thread] = []


@pytest.fixture(autouse=True)
def own_home(monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's own home, set in the environment: ``HOME`` and the XDG folders in a fresh directory, no
    ``BUNDLEKIT_HOME`` and no other user setting (a fixture of a wider scope may have set one). The default store,
    config and caches of whatever the test runs, in process or as a child, are inside it."""
    home = Path(tempfile.mkdtemp(prefix="home-", dir=_SUITE_HOME))
    for name in user_settings(os.environ):
        monkeypatch.delenv(name)
    for name, value in home_environment(home).items():
        monkeypatch.setenv(name, value)
    return home


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto``: a test process per core and two more (pytest-xdist's hook; ``PYTEST_XDIST_AUTO_NUM_WORKERS``
    still decides where set). Many tests spend part of their time waiting (a deadline to pass, a child or a server to
    start, a socket to close): with one process per core a core idles through each wait; the spare processes run tests
    meanwhile (on 2 cores, `.ci/run`'s suite took 3:52 with 4 processes against 4:00 with 3, and its peak RSS fell)."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return cores + 2


def pytest_configure(config: pytest.Config) -> None:
    """Compiled modules cached for the run even where ``PYTHONDONTWRITEBYTECODE`` forbids writing them beside the
    sources: in pytest's cache folder (``.pytest_cache/d/bundlekit-bytecode``, git-ignored; a temporary folder of the run when
    the cache is off or read-only), through ``PYTHONPYCACHEPREFIX``.

    Without it every test process and each of the hundreds of ``python -m bundlekit`` children a run starts compiled
    every module it imports from source again, and each worker rewrote and compiled all ~400 test modules (about half
    a worker's collection time). The variables are set before pytest-xdist starts its workers, so they, and every
    child a test starts, inherit them; what a process imports is unchanged, only where Python keeps its bytecode. A
    worker first writes its share of that cache (tests/bytecode.py), so on a fresh checkout the workers compile the
    run's code once between them, not once each; into a fresh cache the interpreter's own compiled modules are linked
    (``link_installed``, in a thread while the workers start), so no process compiles the standard library or an
    installed package again.
    """
    worker = getattr(config, "workerinput", None)
    if worker is not None:  # a pytest-xdist worker: the cache is set; it compiles its share of it (tests/bytecode.py)
        warm_share(config, int(str(worker["workerid"]).removeprefix("gw")), int(worker["workercount"]))
        return
    if not sys.dont_write_bytecode:
        return
    prefix = _SUITE_HOME / "bytecode"
    cache = getattr(config, "cache", None)  # absent with -p no:cacheprovider
    if cache is not None:
        with contextlib.suppress(OSError):
            prefix = cache.mkdir("bundlekit-bytecode")
    prefix.mkdir(parents=True, exist_ok=True)
    if not any(prefix.iterdir()):  # a fresh cache: the interpreter's own compiled modules linked in, meanwhile
        _LINKING.append(threading.Thread(target=link_installed, args=(prefix,), name="link-installed", daemon=True))
        _LINKING[0].start()
    sys.dont_write_bytecode = False
    sys.pycache_prefix = str(prefix)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str(prefix)


def pytest_collection_finish(session: pytest.Session) -> None:
    """What collection made (every test module, ~6,500 items, hypothesis's strategies) is moved out of the garbage
    collector's sight: it lives the whole run, and each full collection of the oldest generation walked all of it
    again (``gc.freeze``). Garbage collection is unchanged for everything a test makes; what collection left as
    garbage is collected first."""
    gc.collect()
    gc.freeze()


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Fail the run when the user's bundlekit folders changed during it (checked once, by the process that started the run)."""
    if hasattr(session.config, "workerinput"):  # a pytest-xdist worker: its environment was isolated already
        return
    changed = changes(_USER_BEFORE, snapshot(_USER_LOCATIONS))
    if changed:
        session.config.stash[_CHANGED] = changed
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    changed = config.stash.get(_CHANGED, [])
    if changed:
        terminalreporter.section("the suite changed the user's bundlekit folders", red=True)
        for line in changed[:50]:
            terminalreporter.line(line)
        if len(changed) > 50:
            terminalreporter.line(f"... and {len(changed) - 50} more")


def pytest_unconfigure(config: pytest.Config) -> None:
    for linking in _LINKING:
        linking.join()
    shutil.rmtree(_SUITE_HOME, ignore_errors=True)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The tests marked ``slow`` first, each module's together and in its order, and spread over the test processes.

    pytest-xdist's ``worksteal`` hands each process an even, contiguous share of this order, then moves tests from
    the tail of a busy process's share to an idle one; a test at the head of a share is never moved. So each share
    starts with its own slow modules (round-robin, in collection order): they run beside the rest from the start
    instead of one after another in one process, and none ends the run alone. A slow module stays in one process,
    so a fixture it starts once (the Letta server) starts once.
    """
    workers = int(getattr(config, "workerinput", {}).get("workercount", 1))
    modules: dict[str, list[pytest.Item]] = {}
    rest = []
    for item in items:
        if item.get_closest_marker("slow") is None:
            rest.append(item)
        else:
            modules.setdefault(item.nodeid.split("::")[0], []).append(item)
    shares: list[list[pytest.Item]] = [[] for _ in range(workers)]
    for n, module in enumerate(modules.values()):
        shares[n % workers].extend(module)
    ordered: list[pytest.Item] = []
    remaining = len(items)
    for i, share in enumerate(shares):
        size = remaining // (workers - i)  # what worksteal sends the i-th process of those left
        take = max(0, size - len(share))
        ordered += share + rest[:take]
        rest = rest[take:]
        remaining -= len(share) + take
    items[:] = ordered + rest
