"""Settings shared by the whole suite.

Hypothesis's per-example deadline is a timing assertion, and timing targets live in
``bench/``, never in tests: on a loaded 2-core CI machine a 200 ms deadline failed an
example that was correct (tests/net/test_stream_accept.py, 261 ms under load). Every test
runs without it; a test may still set its own ``@settings``.
"""

import signal

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


def _register_this_checkouts_entry_points() -> None:
    """The entry points this checkout's pyproject.toml declares, registered when the installed metadata lacks a
    group of them (an editable install made before the group was added: pip writes entry points only when it
    installs). A distribution directory of their own, first on ``sys.path`` and on the ``PYTHONPATH`` the
    spawned ``bundlekit`` processes inherit, exactly as pip would write it; the registries find them as they
    find any installed plugin's."""
    import atexit
    import importlib
    import os
    import shutil
    import sys
    import tempfile
    import tomllib
    from importlib import metadata
    from pathlib import Path

    declared = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())["project"].get(
        "entry-points", {}
    )
    missing = {
        group: names
        for group, names in declared.items()
        if not set(names) <= {ep.name for ep in metadata.entry_points(group=group)}
    }
    if not missing:
        return
    where = Path(tempfile.mkdtemp(prefix="bundlekit-entry-points-"))
    atexit.register(shutil.rmtree, where, True)
    info = where / "bundlekit_checkout_entry_points-0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: bundlekit-checkout-entry-points\nVersion: 0\n")
    (info / "entry_points.txt").write_text(
        "".join(f"[{group}]\n" + "".join(f"{n} = {v}\n" for n, v in names.items()) + "\n" for group, names in missing.items())
    )
    sys.path.insert(0, str(where))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), str(where)]))
    importlib.invalidate_caches()


_register_this_checkouts_entry_points()
