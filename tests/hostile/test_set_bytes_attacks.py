"""Attacks on ``Database.set_bytes`` (issue 37: the signature blob written in place, by its differing 4 KiB
pieces, through SQLite's incremental blob I/O): a transaction that fails or is killed after the pieces were
written leaves the value it had, and another process never reads a value half written."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from contextlib import closing
from pathlib import Path

import pytest

from bundlekit.memory import Memory
from bundlekit.memory.catalog import CATALOG_FILE
from bundlekit.memory.catalog import database as catalog_database
from bundlekit.memory.catalog.stat import pack
from bundlekit.memory.naming import HIDDEN_DIR

OLD = bytes(range(256)) * 64  # 16 KiB: four pieces
NEW = b"".join(bytes([i]) * 4096 if i % 2 else OLD[i * 4096 : (i + 1) * 4096] for i in range(4))  # two differ


def _stored(path: Path) -> bytes | None:
    db = catalog_database.Database(path)
    try:
        return db.state_blob("sigs")
    finally:
        db.close()


def _seed(path: Path) -> None:
    db = catalog_database.Database(path)
    try:
        with db.transaction():
            db.set("sigs", OLD)
    finally:
        db.close()


def test_a_transaction_failing_after_the_pieces_were_written_keeps_the_old_value(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite"
    _seed(path)
    db = catalog_database.Database(path)
    try:
        with pytest.raises(RuntimeError), db.transaction():
            db.set_bytes("sigs", NEW)
            assert db.state_blob("sigs") == NEW  # the transaction sees its own pieces
            raise RuntimeError("stop")
        assert db.state_blob("sigs") == OLD
    finally:
        db.close()


_KILLED_WRITER = textwrap.dedent(
    """
    import os, signal, sys
    from bundlekit.memory.catalog import database
    from tests.hostile.test_set_bytes_attacks import NEW
    db = database.Database(__import__("pathlib").Path(sys.argv[1]))
    with db.transaction():
        db.set_bytes("sigs", NEW)
        db.conn.execute("PRAGMA cache_size = 1")  # the pages may be spilled to the file before the commit
        print("written", flush=True)
        sys.stdin.readline()  # the parent reads meanwhile, then kills this process mid-transaction
        os.kill(os.getpid(), signal.SIGKILL)
    """
)


def test_a_writer_killed_mid_transaction_leaves_the_old_value_and_a_reader_never_sees_half(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite"
    _seed(path)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path.cwd()), os.environ.get("PYTHONPATH", "")])}
    with subprocess.Popen(
        [sys.executable, "-c", _KILLED_WRITER, str(path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
    ) as child:
        try:
            assert child.stdout is not None and child.stdin is not None
            assert child.stdout.readline() == "written\n"
            assert _stored(path) == OLD  # a concurrent reader: the committed value, never the pieces
            child.stdin.write("go\n")
            child.stdin.flush()
            assert child.wait(timeout=60) == -signal.SIGKILL
        finally:
            if child.poll() is None:
                child.kill()
    assert _stored(path) == OLD
    db = catalog_database.Database(path)
    try:
        with db.transaction():
            db.set_bytes("sigs", NEW)
        assert db.state_blob("sigs") == NEW
    finally:
        db.close()


@pytest.mark.parametrize("old", ["x" * len(OLD), len(OLD), 1.5, OLD[:-1], OLD + b"\0"])
def test_an_old_value_of_another_type_or_length_is_replaced_whole(tmp_path: Path, old: object) -> None:
    db = catalog_database.Database(None)
    with closing(db.conn):
        for write, value in ((db.set, old), (db.set_bytes, NEW)):  # each in a transaction of its own
            with db.transaction():
                write("sigs", value)
        assert db.state_blob("sigs") == NEW


_WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from bundlekit.memory import Memory
    tree, tag = Path(sys.argv[1]), sys.argv[2]
    for i in range(40):
        mem = Memory(tree)
        try:
            mem.write(f"{tag}{i % 12}", name=tag, description=f"d{i}", type="user", body=f"{tag} round {i} " + "x" * i)
        finally:
            mem.close()
    """
)


def test_two_writer_processes_leave_the_signature_blob_the_rows_and_the_listing(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    Memory(tree).close()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path.cwd()), os.environ.get("PYTHONPATH", "")])}
    writers = [subprocess.Popen([sys.executable, "-c", _WRITER, str(tree), tag], env=env) for tag in ("a", "b")]
    assert [writer.wait(timeout=300) for writer in writers] == [0, 0]
    mem = Memory(tree)
    mem.list_lines()  # a refresh: the index in step with the files
    mem.close()
    db = catalog_database.Database(tree / HIDDEN_DIR / CATALOG_FILE)
    try:
        rows = db.conn.execute("SELECT file, ino, mtime_ns, size FROM memory ORDER BY file").fetchall()
        assert db.state("sigs_gen") == db.gen
        assert db.state_blob("sigs") == pack([r[0] for r in rows], [n for r in rows for n in r[1:]])
    finally:
        db.close()
    listed: dict[str, tuple[int, int, int]] = {}
    for path in tree.glob("*.md"):
        if path.name != "MEMORY.md":
            st_ = path.stat()
            listed[path.name] = (st_.st_ino, st_.st_mtime_ns, st_.st_size)
    assert {r[0]: tuple(r[1:]) for r in rows} == listed and len(listed) == 24
