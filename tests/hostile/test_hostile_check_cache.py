"""A build's caches (``<tree>/.bundlekit/build-checks``: ``bundle/buildcheck``'s verdicts;
``<tree>/.bundlekit/build-cache.sqlite``: ``bundle/buildcache``'s ciphertexts of an encrypted build, and the
tables ``checked`` and ``seal`` that held the verdicts until format 2) planted as a foreign file: whatever it
holds, a build neither hangs nor blows its memory reading it, never takes a verdict from it for a file with a
secret, and prints no traceback. A VIEW over an endless recursive CTE, or a generated column (an expression
SQLite runs on every read), in place of a table runs inside one SQLite statement, where neither Ctrl-C nor
SIGTERM reaches Python: such a cache is refused before any row of it is read; the old verdict tables are never
read at all, and dropped unread. The verdicts' file is opened without following a link or waiting on a FIFO and
not read past its bound."""

from __future__ import annotations

import os
import sqlite3
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from bundlekit.bundle import buildcheck
from bundlekit.memory import Memory

from .conftest import RunCli

_ENDLESS = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT {cols} FROM c WHERE x < 0"
_BIG = "zeroblob(400000000)"  # past half the child's 512 MiB address space

_OLD_TABLES = [
    "CREATE TABLE IF NOT EXISTS checked (path TEXT PRIMARY KEY, sha256 BLOB NOT NULL, rules TEXT NOT NULL, "
    "type TEXT, name TEXT, description TEXT, updated_us INTEGER)", "CREATE TABLE IF NOT EXISTS seal (tag BLOB NOT NULL)"]

#: The verdict tables of format 1, planted in every hostile form: never read now, and dropped unread.
PAYLOADS = {
    "seal-endless-view": [*_OLD_TABLES, "DROP TABLE seal", f"CREATE VIEW seal AS {_ENDLESS.format(cols='x AS tag')}"],
    "seal-upper-case-endless-view": [*_OLD_TABLES, "DROP TABLE seal",
                                     f"CREATE VIEW SEAL AS {_ENDLESS.format(cols='x AS tag')}"],
    "seal-generated-huge-column": [*_OLD_TABLES, "DROP TABLE seal",
                                   f"CREATE TABLE seal (n INTEGER, tag BLOB GENERATED ALWAYS AS ({_BIG}) VIRTUAL)",
                                   "INSERT INTO seal (n) VALUES (1)"],
    "checked-generated-huge-column": [
        *_OLD_TABLES, "DROP TABLE checked",
        "CREATE TABLE checked (path TEXT PRIMARY KEY, sha256 BLOB NOT NULL, rules TEXT NOT NULL, type TEXT, "
        f"name TEXT, description TEXT GENERATED ALWAYS AS ({_BIG}) VIRTUAL, updated_us INTEGER)",
        "INSERT INTO checked (path, sha256, rules) VALUES ('project_a.md', zeroblob(32), 'r')"],
    "checked-endless-view": [
        *_OLD_TABLES, "DROP TABLE checked",
        "CREATE VIEW checked AS " + _ENDLESS.format(
            cols="'p' || x AS path, zeroblob(32) AS sha256, 'r' AS rules, NULL AS type, NULL AS name, "
                 "NULL AS description, NULL AS updated_us")],
}


def _huge_counts(path: Path) -> None:
    """A header claiming the most rows, under a seal that is not this user's, and little after it."""
    body = struct.pack("<I64sIIQ", buildcheck.FORMAT, b"0" * 64, 999_999, 1, 2**63) + b"x" * 100
    path.write_bytes(buildcheck.MAGIC + b"\0" * 32 + body)


def _sparse_past_the_bound(path: Path) -> None:
    with open(path, "r+b") as fh:
        fh.truncate(buildcheck._MAX_BYTES + 1)


#: The verdicts' file planted: a FIFO (a read would wait for ever), a link to an endless device, a file past the
#: bound (sparse: a multi-gigabyte read), garbage, a header of absurd counts.
FILE_PAYLOADS: dict[str, Callable[[Path], None]] = {
    "fifo": lambda path: (path.unlink(), os.mkfifo(path)) and None,
    "link-to-dev-zero": lambda path: (path.unlink(), path.symlink_to("/dev/zero")) and None,
    "sparse-past-the-bound": _sparse_past_the_bound,
    "garbage": lambda path: path.write_bytes(os.urandom(5000)),
    "huge-counts": _huge_counts,
}


def _tree(path: Path) -> Path:
    mem = Memory(path, namespace="agent")
    mem.init()
    mem.write("project_a", name="A", description="about a", type="project", body="A's plan.")
    return path


def _plant_sql(tree: Path, payload: str) -> None:
    with sqlite3.connect(tree / ".bundlekit" / "build-cache.sqlite") as db:
        for statement in PAYLOADS[payload]:
            db.execute(statement)
    db.close()


@pytest.mark.parametrize("payload", [*sorted(PAYLOADS), *sorted(FILE_PAYLOADS)])
def test_a_planted_check_cache_neither_hangs_nor_lets_a_secret_through(
        tmp_path: Path, run_cli: RunCli, payload: str) -> None:
    tree = _tree(tmp_path / "tree")
    first = run_cli("build", str(tree), "-o", "a.car")
    assert first.returncode == 0, first.stderr
    if payload in PAYLOADS:
        _plant_sql(tree, payload)
    else:
        FILE_PAYLOADS[payload](tree / buildcheck.CHECKS_NAME)
    planted = (tree / "project_a.md").read_text("utf-8").replace("A's plan.", "key AKIAIOSFODNN7EXAMPLE")
    (tree / "project_s.md").write_text(planted.replace("project_a", "project_s"), "utf-8")  # by hand: no guard
    refused = run_cli("build", str(tree), "-o", "b.car")
    assert refused.returncode != 0 and "must not carry credentials" in refused.stderr and "Traceback" not in refused.stderr
    assert not (tmp_path / "b.car").exists()
    (tree / "project_s.md").unlink()
    built = run_cli("build", str(tree), "-o", "c.car")
    assert built.returncode == 0 and "Traceback" not in built.stderr, built.stderr
    again = run_cli("build", str(tree), "-o", "d.car")  # the cache, as this build left it, read again
    assert again.returncode == 0 and "Traceback" not in again.stderr, again.stderr
    assert (tmp_path / "d.car").read_bytes() == (tmp_path / "c.car").read_bytes()
    assert (tree / buildcheck.CHECKS_NAME).stat().st_size < 1 << 20  # a save replaced what was planted


def test_a_check_cache_that_is_no_database_costs_a_check_never_an_error(tmp_path: Path, run_cli: RunCli) -> None:
    tree = _tree(tmp_path / "tree")
    assert run_cli("build", str(tree), "-o", "a.car").returncode == 0
    _plant_sql(tree, "seal-endless-view")
    cache = tree / ".bundlekit" / "build-cache.sqlite"
    cache.write_bytes(cache.read_bytes()[:1500])  # cut short inside its pages
    (tree / buildcheck.CHECKS_NAME).unlink()  # so a save drops the old tables of a file that is no database
    built = run_cli("build", str(tree), "-o", "b.car")
    assert built.returncode == 0 and "Traceback" not in built.stderr, built.stderr
    assert (tmp_path / "b.car").read_bytes() == (tmp_path / "a.car").read_bytes()


ENCRYPTED_PAYLOADS = {
    "params-endless-view": ["DROP TABLE params", "CREATE VIEW params AS " + _ENDLESS.format(
        cols="'agent' AS namespace, '{}' AS params")],
    "files-generated-huge-column": [
        "DROP TABLE files",
        f"CREATE TABLE files (path TEXT PRIMARY KEY, plain BLOB, cipher BLOB GENERATED ALWAYS AS ({_BIG}) VIRTUAL, "
        "tag BLOB)", "INSERT INTO files (path, plain, tag) VALUES ('memory/project_a.md', zeroblob(32), zeroblob(32))"],
}


@pytest.mark.parametrize("payload", sorted(ENCRYPTED_PAYLOADS))
def test_a_planted_encryption_cache_neither_hangs_nor_stops_an_encrypted_build(
        tmp_path: Path, run_cli: RunCli, payload: str) -> None:
    tree = _tree(tmp_path / "tree")
    (tmp_path / "bundle.key").write_bytes(bytes(range(32)))
    key = ("--encrypt", "--key-file", str(tmp_path / "bundle.key"))
    first = run_cli("build", str(tree), "-o", "a.car", *key)
    assert first.returncode == 0, first.stderr
    with sqlite3.connect(tree / ".bundlekit" / "build-cache.sqlite") as db:
        assert {"params", "files"} <= {name for (name,) in db.execute("SELECT name FROM sqlite_master")}
        for statement in ENCRYPTED_PAYLOADS[payload]:
            db.execute(statement)
    db.close()
    for car in ("b.car", "c.car"):  # the second reads the cache the first left
        built = run_cli("build", str(tree), "-o", car, *key)
        assert built.returncode == 0 and "Traceback" not in built.stderr, built.stderr
        assert (tmp_path / car).stat().st_size > 0


_PEAK_AT_THE_BOUND = """
import os, resource, sys
from pathlib import Path
from bundlekit.bundle import buildcheck
buildcheck._MAX_BYTES = 64 << 20
tree = Path(sys.argv[1])
with open(tree / buildcheck.CHECKS_NAME, "wb") as fh:  # the magic, then zeros: the seal is checked, then fails
    fh.write(buildcheck.MAGIC)
    fh.truncate(buildcheck._MAX_BYTES)
buildcheck.seal_key(), buildcheck.rules_fingerprint()
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
assert buildcheck.CheckCache(tree).known == {}
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024)
"""


def test_a_planted_file_at_the_bound_costs_at_most_its_size_in_memory(tmp_path: Path) -> None:
    """attack39c: a file of exactly the bound (sparse: a few bytes on disk) is read and its seal checked; reading it
    in chunks then joining them held it twice (513 MiB at the 256 MiB bound)."""
    tree = _tree(tmp_path / "tree")
    env = {**os.environ, "BUNDLEKIT_HOME": str(tmp_path / "home")}
    done = subprocess.run([sys.executable, "-c", _PEAK_AT_THE_BOUND, str(tree)], capture_output=True, text=True,
                          env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) < (64 << 20) * 5 // 4
