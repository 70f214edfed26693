"""Attacks on ``Database.set_bytes`` (issue 37: the signature blob written in place, by its differing 4 KiB
pieces, through SQLite's incremental blob I/O): a transaction that fails or is killed after the pieces were
written leaves the value it had, and another process never reads a value half written."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bundlekit.memory.catalog import database as catalog_database

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
    try:
        with db.transaction():
            db.set("sigs", old)
        with db.transaction():
            db.set_bytes("sigs", NEW)
        assert db.state_blob("sigs") == NEW
    finally:
        db.conn.close()
