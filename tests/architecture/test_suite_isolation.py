"""The suite never reads or writes the user's store, config or home (issue 34, item 7).

A user who ran README's quick start (``bundlekit pin fixtures/memory``) has roots in their store, and may
have a name published and ``BUNDLEKIT_*`` settings in their shell. The tests that list the store's roots,
use the default store, the default memory tree and the pinners' settings run here, in a child pytest, as
that user: ``HOME``, the XDG folders and ``BUNDLEKIT_HOME`` point into a folder holding such a store, and the
user's settings point at places that would make a test fail if it read them. The run must pass and leave the
folder exactly as it was (every file's bytes, mode and modification time). The same comparison runs at the
end of every run of the suite against the real user's folders (tests/conftest.py).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.isolation import home_environment, snapshot

ROOT = Path(__file__).resolve().parents[2]
#: The tests run as the user: those that list the store's roots (issue 34 saw them fail), use the default store
#: and the local pinner, and read the memory tree and settings a user exports.
SUBSET = [
    "tests/gateway/test_serve_stop.py",
    "tests/gateway/test_store.py",
    "tests/pinners/test_local_memory.py",
    "tests/gateway/test_cli.py",
    "tests/memory/test_cli.py",
]
#: Seconds the child run may take: far above what it needs, far below for ever.
TIMEOUT = 600


def _bundlekit(env: dict[str, str], *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "bundlekit", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=TIMEOUT, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _users_folder(user: Path) -> dict[str, str]:
    """A user's home after README's quick start and a published name; the environment of their shell."""
    env = {**os.environ, **home_environment(user), "PYTHONPATH": str(ROOT), "CI": "true"}
    env["BUNDLEKIT_HOME"] = str(user / ".local" / "share" / "bundlekit")
    _bundlekit(env, "pin", "fixtures/memory", "--name", "quick-start")
    _bundlekit(env, "name", "create", "--key-file", str(user / "agent.pem"))
    _bundlekit(env, "pin", "fixtures/memory", "--namespace", "mine", "--name-key", str(user / "agent.pem"))
    shutil.copytree(ROOT / "fixtures" / "memory", user / "memory")
    (user / ".config" / "bundlekit").mkdir(parents=True)
    (user / ".config" / "bundlekit" / "settings").write_text("the user's own\n", encoding="utf-8")
    unreachable = "http://127.0.0.1:9"  # the discard port: nothing answers there
    env.update({
        "BUNDLEKIT_MEMORY_DIR": str(user / "memory"),
        "BUNDLEKIT_ROUTING": unreachable,
        "BUNDLEKIT_GATEWAYS": unreachable,
        "BUNDLEKIT_KUBO_URL": unreachable,
        "BUNDLEKIT_EMBEDDER": "openai",
        "PINATA_JWT": "the-users-own-jwt",
        "SOURCE_DATE_EPOCH": "yesterday",  # not a number: a build that read it would fail
    })
    return env


def test_the_suite_passes_as_a_user_with_a_store_and_leaves_their_folder_unchanged(tmp_path: Path) -> None:
    user = tmp_path / "user"
    env = _users_folder(user)
    store = user / ".local" / "share" / "bundlekit"
    assert (store / "pins.json").is_file() and any((store / "ipns").iterdir())  # roots and a name
    before = snapshot([user], contents=True)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *SUBSET, "-q", "-p", "no:cacheprovider", "-n", "0",
         f"--basetemp={tmp_path / 'basetemp'}"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=TIMEOUT, check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert snapshot([user], contents=True) == before


def test_a_run_that_changes_the_users_store_fails_naming_what_changed(tmp_path: Path) -> None:
    user = tmp_path / "user"
    store = user / ".local" / "share" / "bundlekit"
    store.mkdir(parents=True)
    probe = tmp_path / "test_writes_the_store.py"
    probe.write_text(
        "from pathlib import Path\n\n\n"
        f"def test_writes_the_users_store() -> None:\n    Path({str(store / 'blocks')!r}).mkdir()\n",
        encoding="utf-8",
    )
    env = {**os.environ, **home_environment(user), "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", str(probe), "-q", "-p", "no:cacheprovider", "-n", "0", "-p", "tests.conftest",
         f"--basetemp={tmp_path / 'basetemp'}", "--rootdir", str(ROOT), "-c", str(ROOT / "pyproject.toml")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=TIMEOUT, check=False,
    )
    assert done.returncode == 1, done.stdout[-4000:]
    assert "changed the user's bundlekit folders" in done.stdout and f"added {store / 'blocks'}" in done.stdout
