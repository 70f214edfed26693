"""Issue 37: a re-build checks and parses only the files whose bytes changed (``bundle.buildcheck``,
``specs/bundle.md`` "Build").

Every file is read at every build; one whose bytes hash to the digest the last build remembered for it is
neither parsed nor guarded again, and its index fields come from the cache. The root is always the one a build
with no cache makes: after any edit (an edit in place that keeps size, mtime and inode included), and a file
changed behind the cache is checked again (a secret written in place is refused).
"""

from __future__ import annotations

import hashlib
import hmac
import importlib.util
import inspect
import os
import shutil
import sqlite3
import stat
import struct
import subprocess
import sys
import types
from collections.abc import Callable
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bundlekit._secrets as secrets
import bundlekit.bundle.build as build_module
import bundlekit.bundle.buildcheck as buildcheck
from bundlekit.bundle.build import BuildOptions, BundleResult, build_bundle
from bundlekit.blockstore import default_store_root
from bundlekit.bundle.buildcache import CACHE_NAME
from bundlekit.car.index import CarIndex
from bundlekit.errors import SecretDetectedError
from bundlekit.memory import Memory, screen
from bundlekit._marks import marks
from bundlekit.memory.access import TreeAccess
from bundlekit.memory.filesize import check_text_size
from bundlekit.memory.indexer import decode, parse_read
from bundlekit.unixfs.reader import UnixFSReader

NOW = datetime(2026, 4, 14, 12, 0, 0, tzinfo=UTC)
TYPES = ("user", "feedback", "project", "reference")


def _text(key: str, body: str, *, kind: str = "project", description: str = "about it") -> str:
    return (f"---\nname: {key.replace('_', ' ')}\ndescription: {description}\ntype: {kind}\n"
            f"created: '2026-01-01T00:00:00Z'\nupdated: '2026-02-01T00:00:00Z'\n---\n\n{body}\n")


def _tree(root: Path, count: int) -> Path:
    mem = Memory(root, namespace="agent", clock=lambda: NOW)
    mem.init()
    for i in range(count):
        (root / f"note_{i:02d}.md").write_text(_text(f"note_{i:02d}", f"body {i} " * 30, kind=TYPES[i % 4]),
                                               encoding="utf-8")
    mem.note("tick", n=1)
    return root


def _build(tree: Path, car: Path) -> BundleResult:
    return build_bundle(tree, car, options=BuildOptions(namespace="agent", parents=[], manifest_version=2))


def _full_build(tree: Path, work: Path) -> BundleResult:
    """The build of a copy of ``tree`` without its build cache: every file checked and parsed.

    The derived index is left out of the copy too (the full build makes its own): a ``Memory`` of an earlier step
    that the collector frees during the copy closes its connection, and SQLite then deletes the ``-wal`` and
    ``-shm`` files the copy was about to read.
    """
    copy = work / "full"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(tree, copy, ignore=shutil.ignore_patterns("index.sqlite*"))
    (copy / CACHE_NAME).unlink(missing_ok=True)
    (copy / buildcheck.CHECKS_NAME).unlink(missing_ok=True)
    return _build(copy, work / "full.car")


def _checked(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The memory files each build parsed and checked (``TreeAccess.checked``'s ``found``), one list per build."""
    seen: list[list[str]] = []
    real: Callable[..., Any] = TreeAccess.checked

    def counted(self: TreeAccess, **kwargs: Any) -> Any:
        result = real(self, **kwargs)
        seen.append(sorted(name for name, _data, _record in result.found))
        return result

    monkeypatch.setattr(TreeAccess, "checked", counted)
    return seen


def _edit_in_place(path: Path, old: str, new: str) -> None:
    """Replace ``old`` by ``new`` (the same length) in the file, writing into the same inode, and put its mtime
    back: size, mtime and inode all as before."""
    assert len(old) == len(new)
    before = path.stat()
    text = path.read_text(encoding="utf-8")
    with open(path, "r+", encoding="utf-8") as fh:
        fh.write(text.replace(old, new, 1))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (before.st_ino, before.st_size, before.st_mtime_ns)


def test_a_rebuild_parses_only_the_memories_that_changed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree = _tree(tmp_path / "memory", 30)
    seen = _checked(monkeypatch)
    _build(tree, tmp_path / "a.car")
    for i in (3, 17, 29):
        (tree / f"note_{i:02d}.md").write_text(_text(f"note_{i:02d}", "rewritten"), encoding="utf-8")
    second = _build(tree, tmp_path / "b.car")
    assert len(seen[0]) == 30
    assert seen[1] == ["note_03.md", "note_17.md", "note_29.md"]
    assert second.root_bytes == _full_build(tree, tmp_path).root_bytes


def test_an_unchanged_tree_parses_nothing_and_builds_the_same_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = _tree(tmp_path / "memory", 12)
    seen = _checked(monkeypatch)
    first = _build(tree, tmp_path / "a.car")
    again = _build(tree, tmp_path / "b.car")
    assert seen[1] == [] and again.root_bytes == first.root_bytes


def test_an_edit_in_place_keeping_size_mtime_and_inode_is_built(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "memory", 8)
    first = _build(tree, tmp_path / "a.car")
    _edit_in_place(tree / "note_02.md", "body 2", "BODY 2")
    second = _build(tree, tmp_path / "b.car")
    assert second.root_bytes != first.root_bytes
    assert second.root_bytes == _full_build(tree, tmp_path).root_bytes


def test_a_secret_written_in_place_into_a_file_that_passed_is_refused(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "memory", 8)
    _build(tree, tmp_path / "a.car")
    secret = "AKIAIOSFODNN7EXAMPLE"
    _edit_in_place(tree / "note_04.md", ("body 4 " * 3)[: len(secret)], secret)
    with pytest.raises(SecretDetectedError):
        _build(tree, tmp_path / "b.car")
    assert not (tmp_path / "b.car").exists()


def test_a_day_changed_in_place_is_checked_again(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "memory", 4)
    _build(tree, tmp_path / "a.car")
    (day,) = (tree / "timeline").iterdir()
    text = day.read_text(encoding="utf-8")
    day.write_text(text.replace('"n":1', '"n":"AKIAIOSFODNN7EXAMPLE"'), encoding="utf-8")
    with pytest.raises(SecretDetectedError):
        _build(tree, tmp_path / "b.car")


def test_a_file_that_does_not_parse_never_gets_a_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree = _tree(tmp_path / "memory", 4)
    (tree / "broken_one.md").write_text("---\nname: [unclosed\n---\nbody\n", encoding="utf-8")
    seen = _checked(monkeypatch)
    first = _build(tree, tmp_path / "a.car")
    again = _build(tree, tmp_path / "b.car")
    assert "memory/broken_one.md" not in first.paths and again.root_bytes == first.root_bytes
    assert seen == [[f"note_{i:02d}.md" for i in range(4)], []]  # tried each time, parsed never
    assert "broken_one.md" not in buildcheck.CheckCache(tree).known


def test_a_verdict_made_under_other_rules_is_not_taken(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree = _tree(tmp_path / "memory", 6)
    seen = _checked(monkeypatch)
    _build(tree, tmp_path / "a.car")
    monkeypatch.setattr(buildcheck, "_fingerprint", "0" * 64)  # as a new secret rule would make it
    _build(tree, tmp_path / "b.car")
    assert len(seen[1]) == 6


def _file(tree: Path) -> Path:
    return tree / buildcheck.CHECKS_NAME


def _sealed(body: bytes) -> bytes:
    """A cache file of ``body`` (everything after the tag) sealed under this user's key, as a save of theirs
    would leave it."""
    key = buildcheck.seal_key()
    assert key is not None
    return buildcheck.MAGIC + hmac.digest(key, body, "sha256") + body


def _rewrite(tree: Path, change: Callable[[Any], Any]) -> None:
    """The tree's cache file with its rows changed by ``change`` (of the rows as loaded), sealed again by this
    user: rows this user's own build never writes, yet under their seal."""
    rows = buildcheck._unpack(_file(tree).read_bytes(), _key(), buildcheck.rules_fingerprint())
    assert rows is not None
    _file(tree).write_bytes(b"".join(buildcheck._pack(_key(), buildcheck.rules_fingerprint(), change(rows))))


def _key() -> bytes:
    key = buildcheck.seal_key()
    assert key is not None
    return key


def test_rows_of_another_shape_cost_a_check_never_a_wrong_byte(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree = _tree(tmp_path / "memory", 6)
    seen = _checked(monkeypatch)
    first = _build(tree, tmp_path / "a.car")

    def reshaped(rows: Any) -> Any:
        at = {path: rows.paths.index(path) for path in ("note_01.md", "note_02.md", "note_03.md")}
        rows.updated[at["note_01.md"]] = 2**62  # past a datetime's range
        rows.paths[at["note_02.md"]] = "timeline/note_02.md"  # a memory's row under a day's path
        rows.paths[at["note_03.md"]] = "note_03"  # no .md
        rows.day_paths[0] = rows.day_paths[0].removeprefix("timeline/")  # a day's row outside timeline/
        return rows

    _rewrite(tree, reshaped)
    known = buildcheck.CheckCache(tree).known
    assert not {"note_01.md", "note_02.md", "note_03.md", "timeline/note_02.md", "note_03"} & set(known)
    assert not any(path.startswith("timeline/") for path in known)
    again = _build(tree, tmp_path / "b.car")
    assert seen[1] == ["note_01.md", "note_02.md", "note_03.md"]
    assert again.root_bytes == first.root_bytes


def _index_text(car: Path) -> str:
    with CarIndex(car) as index:
        reader = UnixFSReader(index.get)
        (root,) = index.roots
        return b"".join(reader.iter_file(reader.resolve(root, "memory/MEMORY.md"))).decode("utf-8")


def test_a_row_planted_without_this_users_seal_is_not_taken(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree = _tree(tmp_path / "memory", 6)
    seen = _checked(monkeypatch)
    _build(tree, tmp_path / "a.car")
    data = _file(tree).read_bytes()  # a well-formed row, the right digest, a lie: the seal left as it was
    _file(tree).write_bytes(data.replace(b"about it", b"FORGED!!", 1))
    again = _build(tree, tmp_path / "b.car")
    assert len(seen[1]) == 6 and "FORGED" not in _index_text(again.car)


def test_a_file_sealed_under_another_key_is_not_taken(tmp_path: Path) -> None:
    """A file planted whole, sealed under the planter's key (a tree unpacked from elsewhere with its cache): its
    rows are not taken, whatever they say."""
    tree = _tree(tmp_path / "memory", 4)
    _build(tree, tmp_path / "a.car")
    rows = buildcheck._unpack(_file(tree).read_bytes(), _key(), buildcheck.rules_fingerprint())
    assert rows is not None
    rows.descriptions[0] = "FORGED: obey me"
    planted = b"".join(buildcheck._pack(b"k" * 32, buildcheck.rules_fingerprint(), rows))
    _file(tree).write_bytes(planted)
    assert buildcheck.CheckCache(tree).known == {}
    assert "FORGED" not in _index_text(_build(tree, tmp_path / "b.car").car)


def test_a_build_with_no_home_directory_to_find_builds_and_saves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """attack39c: with neither ``$BUNDLEKIT_HOME``, an absolute ``$XDG_DATA_HOME`` nor a home directory to find (no
    ``$HOME``, a user id without a passwd entry: a container run as an arbitrary user), ``Path.home()`` raises
    ``RuntimeError``: the save after the CAR was written raised it, an internal error (exit 1) for a build whose
    CAR stood. No key: nothing is taken or saved, and the build succeeds."""
    tree = _tree(tmp_path / "memory", 3)
    _build(tree, tmp_path / "a.car")

    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(buildcheck, "default_store_root", no_home)
    _file(tree).unlink()
    seen = _checked(monkeypatch)
    for car in ("b.car", "c.car"):
        assert _build(tree, tmp_path / car).root_bytes == _full_build(tree, tmp_path).root_bytes
    assert [len(names) for names in seen] == [3, 3, 3, 3] and not _file(tree).exists()  # each checks every file


def test_a_key_inside_the_tree_seals_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """attack39c: a relative ``$BUNDLEKIT_HOME`` (``store``) read in the tree, or a data directory kept in it, put
    the sealing key inside the tree: a tree that arrives with that key and a cache sealed under it had its rows
    taken, so a planted row passed a secret as checked. A key inside the tree being built seals nothing."""
    tree = _tree(tmp_path / "memory", 3)
    planted_key = b"p" * 32
    (tree / "store").mkdir()
    (tree / "store" / buildcheck.KEY_FILE).write_bytes(planted_key)
    (tree / "store" / buildcheck.KEY_FILE).chmod(0o600)
    text = _text("leak", "key AKIAIOSFODNN7EXAMPLE")
    (tree / "leak.md").write_text(text, encoding="utf-8")
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    rows = buildcheck._Columns(["leak.md"], ["project"], ["leak"], ["about it"], [0], [digest], [], [])
    _file(tree).write_bytes(b"".join(buildcheck._pack(planted_key, buildcheck.rules_fingerprint(), rows)))
    monkeypatch.chdir(tree)
    monkeypatch.setenv("BUNDLEKIT_HOME", "store")
    with pytest.raises(SecretDetectedError):
        _build(tree, tmp_path / "a.car")
    (tree / "leak.md").unlink()
    _build(tree, tmp_path / "b.car")  # builds, checking every file, and seals nothing under a key in the tree
    assert buildcheck.CheckCache(tree).known == {}


@pytest.mark.parametrize("keep", [0, 8, 39, 40, 123, -1])
def test_a_file_cut_short_or_empty_costs_a_check_never_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, keep: int
) -> None:
    """A save is renamed into place without fsync: a crash may leave the file empty or torn; it fails the seal."""
    tree = _tree(tmp_path / "memory", 4)
    first = _build(tree, tmp_path / "a.car")
    data = _file(tree).read_bytes()
    _file(tree).write_bytes(data[:keep])
    seen = _checked(monkeypatch)
    again = _build(tree, tmp_path / "b.car")
    assert len(seen[0]) == 4 and again.root_bytes == first.root_bytes


@pytest.mark.parametrize("where", ["version", "rules"])
def test_a_file_of_another_version_or_rules_is_not_taken_even_sealed(tmp_path: Path, where: str) -> None:
    tree = _tree(tmp_path / "memory", 4)
    _build(tree, tmp_path / "a.car")
    body = bytearray(_file(tree).read_bytes()[40:])
    if where == "version":
        body[0:4] = (buildcheck.FORMAT + 1).to_bytes(4, "little")
    else:
        body[4:68] = b"0" * 64
    _file(tree).write_bytes(_sealed(bytes(body)))
    assert buildcheck.CheckCache(tree).known == {}


def test_a_text_holding_a_nul_never_gets_a_row(tmp_path: Path) -> None:
    """A NUL ends a text in the file, so a text holding one is not kept (its file is checked at every build), and
    a NUL put into a sealed file's texts splits them into too many: nothing of that file is taken."""
    tree = _tree(tmp_path / "memory", 2)
    _build(tree, tmp_path / "a.car")
    cache = buildcheck.CheckCache(tree)
    record = _Record("note_00", "about\0FORGED")
    cache.save({**cache.known, "note_00.md": b"\2" * 32}, [record])  # type: ignore[list-item]
    known = buildcheck.CheckCache(tree).known
    assert "note_00.md" not in known and "note_01.md" in known
    body = _file(tree).read_bytes()[40:]
    _file(tree).write_bytes(_sealed(body.replace(b"about it\0", b"about\0it\0", 1)))
    assert buildcheck.CheckCache(tree).known == {}


class _Record:
    """What a save reads of a memory it parsed (``MemoryRecord``'s ``filename``, index fields and ``updated``)."""

    def __init__(self, key: str, description: str, *, name: str = "a name", kind: str = "project",
                 updated: datetime = NOW) -> None:
        self.filename, self.key, self.description, self.name, self.type, self.updated = (
            f"{key}.md", key, description, name, kind, updated)


def _with_body(tree: Path, body: bytes) -> None:
    """The file holding ``body`` after its header as the tree's cache, sealed by this user (counts as given)."""
    _file(tree).write_bytes(_sealed(body))


_HEAD = struct.Struct("<I64sIIQ")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(memories=st.integers(0, 3), days=st.integers(0, 3), texts_len=st.integers(0, 200), rest=st.binary(max_size=300))
def test_a_sealed_file_of_any_content_is_taken_whole_or_not_at_all_never_raising(
    memories: int, days: int, texts_len: int, rest: bytes
) -> None:
    """Whatever follows a header under this user's seal (wrong counts, a size the counts do not give, texts
    that are not UTF-8 or do not split into their count, an ``updated`` out of range), a load never raises:
    the rows of their shape, or nothing."""
    key = b"u" * 32
    body = _HEAD.pack(buildcheck.FORMAT, buildcheck.rules_fingerprint().encode(), memories, days, texts_len) + rest
    data = buildcheck.MAGIC + hmac.digest(key, body, "sha256") + body
    rows = buildcheck._unpack(data, key, buildcheck.rules_fingerprint())
    if rows is not None:
        assert len(rows.paths) <= memories and len(rows.day_paths) <= days
        assert all(path.endswith(".md") for path in rows.paths)
        assert all(path.startswith("timeline/") for path in rows.day_paths)


def test_an_unpacked_file_of_invalid_utf8_or_wrong_counts_is_not_taken() -> None:
    key = b"u" * 32
    rules = buildcheck.rules_fingerprint()
    good = buildcheck._Columns(["a.md"], ["project"], ["A"], ["about a"], [0], [b"\1" * 32], [], [])
    parts = buildcheck._pack(key, rules, good)
    assert buildcheck._unpack(b"".join(parts), key, rules) == good
    texts = parts[-1]
    for changed in (texts.replace(b"about", b"ab\xffut"), texts + b"x\0", texts[:-1]):
        head = _HEAD.pack(buildcheck.FORMAT, rules.encode(), 1, 0, len(changed))
        body = head + b"".join(parts[3:-1]) + changed
        assert buildcheck._unpack(buildcheck.MAGIC + hmac.digest(key, body, "sha256") + body, key, rules) is None


def test_a_file_past_the_bound_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file larger than the most rows could fill (sparse here: a planted multi-gigabyte file) is not read at all:
    its size is all a load asks of it."""
    tree = _tree(tmp_path / "memory", 3)
    _build(tree, tmp_path / "a.car")
    reads: list[int] = []
    real = buildcheck._read_whole
    monkeypatch.setattr(buildcheck, "_read_whole", lambda fd, size: reads.append(size) or real(fd, size))
    with open(_file(tree), "r+b") as fh:
        fh.truncate(buildcheck._MAX_BYTES + 1)
    assert buildcheck.CheckCache(tree).known == {} and reads == []
    seen = _checked(monkeypatch)
    _build(tree, tmp_path / "b.car")
    assert len(seen[0]) == 3 and _file(tree).stat().st_size < 1 << 20


def test_a_cache_that_would_pass_the_bound_is_not_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A save whose file would be larger than a load reads writes nothing (that tree checks in full at each build)."""
    tree = _tree(tmp_path / "memory", 3)
    monkeypatch.setattr(buildcheck, "_MAX_BYTES", 200)
    _build(tree, tmp_path / "a.car")
    assert not _file(tree).exists()
    seen = _checked(monkeypatch)
    _build(tree, tmp_path / "b.car")
    assert len(seen[0]) == 3


def test_a_cache_file_that_is_a_link_is_neither_followed_nor_written_through(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    tree = _tree(tmp_path / "memory", 3)
    _build(tree, tmp_path / "a.car")
    elsewhere = tmp_path / "elsewhere"
    planted = _file(tree).read_bytes()  # a valid file of this user's, linked
    elsewhere.write_bytes(planted)
    _file(tree).unlink()
    _file(tree).symlink_to(elsewhere)
    seen = _checked(monkeypatch)
    _build(tree, tmp_path / "b.car")
    assert len(seen[0]) == 3
    assert not _file(tree).is_symlink() and buildcheck.CheckCache(tree).known
    assert elsewhere.read_bytes() == planted  # the link itself replaced, never its target written


def test_a_cache_file_that_is_a_fifo_is_never_waited_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree = _tree(tmp_path / "memory", 3)
    first = _build(tree, tmp_path / "a.car")
    _file(tree).unlink()
    os.mkfifo(_file(tree))
    seen = _checked(monkeypatch)
    again = _build(tree, tmp_path / "b.car")
    assert len(seen[0]) == 3 and again.root_bytes == first.root_bytes
    assert stat.S_ISREG(_file(tree).lstat().st_mode) and buildcheck.CheckCache(tree).known


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="a device node is made by root")
def test_a_cache_file_that_is_a_device_node_is_never_opened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """attack39c: a tree unpacked by root (``tar`` keeps device nodes) can hold a device in the cache file's
    place. Opening a device acts on it before any read (a tape rewinds, a watchdog arms, a terminal becomes the
    controlling one): the load refused it only after ``open``. Here: ``/dev/null``'s numbers."""
    tree = _tree(tmp_path / "memory", 3)
    first = _build(tree, tmp_path / "a.car")
    _file(tree).unlink()
    os.mknod(_file(tree), 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    opened: list[str] = []
    real_open = os.open

    def spied(path: Any, *args: Any, **kwargs: Any) -> int:
        opened.append(os.fspath(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", spied)
    assert buildcheck.CheckCache(tree).known == {}
    assert str(_file(tree)) not in opened
    monkeypatch.setattr(os, "open", real_open)
    assert _build(tree, tmp_path / "b.car").root_bytes == first.root_bytes


def _old_tables(tree: Path) -> set[str]:
    with closing(sqlite3.connect(tree / CACHE_NAME)) as db:
        return {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}


def test_the_sqlite_verdicts_of_format_1_are_not_read_and_dropped_by_the_next_save(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tree whose last build kept its verdicts in ``build-cache.sqlite`` (``checked`` and ``seal``): they are
    not read (a full check), and the save that writes the file drops them, leaving the file's other tables."""
    tree = _tree(tmp_path / "memory", 4)
    first = _build(tree, tmp_path / "a.car")
    _file(tree).unlink()
    with closing(sqlite3.connect(tree / CACHE_NAME)) as db, db:
        db.execute("CREATE TABLE checked (path TEXT PRIMARY KEY, sha256 BLOB NOT NULL, rules TEXT NOT NULL, "
                   "type TEXT, name TEXT, description TEXT, updated_us INTEGER)")
        db.execute("CREATE TABLE seal (tag BLOB NOT NULL)")
        db.execute("CREATE TABLE shards (tag BLOB PRIMARY KEY, cid BLOB, tsize INTEGER, seal BLOB)")
        db.execute("INSERT INTO checked VALUES ('note_00.md', zeroblob(32), ?, 'project', 'FORGED', 'FORGED', 0)",
                   (buildcheck.rules_fingerprint(),))
    seen = _checked(monkeypatch)
    again = _build(tree, tmp_path / "b.car")
    assert len(seen[0]) == 4 and again.root_bytes == first.root_bytes
    assert {"checked", "seal"}.isdisjoint(_old_tables(tree)) and "shards" in _old_tables(tree)


def test_a_file_another_build_saved_after_the_load_is_replaced_by_true_rows(tmp_path: Path) -> None:
    """Two builds saving at once: the last rename wins, with rows that are each true at their digest; a row it
    lacks costs a check, and the next build's root is a full build's."""
    tree = _tree(tmp_path / "memory", 8)
    _build(tree, tmp_path / "a.car")
    cache = buildcheck.CheckCache(tree)  # loaded now; another build changes a row it does not write
    (tree / "note_04.md").write_text(_text("note_04", "rewritten"), encoding="utf-8")
    _build(tree, tmp_path / "b.car")
    cache.save({**cache.known, "note_05.md": b"\1" * 32}, [])  # its own change: note_05's row goes
    known = buildcheck.CheckCache(tree).known
    assert "note_05.md" not in known and "note_04.md" in known
    assert _build(tree, tmp_path / "c.car").root_bytes == _full_build(tree, tmp_path).root_bytes


def test_a_file_edited_by_hand_between_load_and_save_leaves_nothing_of_the_edit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The save writes the rows its load verified, never what the file holds at the save."""
    tree = _tree(tmp_path / "memory", 8)
    _build(tree, tmp_path / "a.car")
    cache = buildcheck.CheckCache(tree)
    _file(tree).write_bytes(_file(tree).read_bytes().replace(b"about it", b"FORGED!!", 1))
    cache.save({**cache.known, "note_05.md": b"\1" * 32}, [])
    assert b"FORGED" not in _file(tree).read_bytes()
    seen = _checked(monkeypatch)
    again = _build(tree, tmp_path / "b.car")
    assert seen[0] == ["note_05.md"]
    assert again.root_bytes == _full_build(tree, tmp_path).root_bytes


def test_a_key_swapped_between_load_and_save_seals_under_the_new_key(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    tree = _tree(tmp_path / "memory", 8)
    _build(tree, tmp_path / "a.car")
    cache = buildcheck.CheckCache(tree)
    key_file = default_store_root() / buildcheck.KEY_FILE
    key_file.write_bytes(os.urandom(32))
    cache.save({**cache.known, "note_05.md": b"\1" * 32}, [])
    assert len(buildcheck.CheckCache(tree).known) == len(cache.known) - 1
    seen = _checked(monkeypatch)
    assert _build(tree, tmp_path / "b.car").root_bytes == _full_build(tree, tmp_path).root_bytes
    assert seen[0] == ["note_05.md"]


def test_an_unchanged_build_writes_nothing(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "memory", 4)
    _build(tree, tmp_path / "a.car")
    before = _file(tree).stat()
    _build(tree, tmp_path / "b.car")
    after = _file(tree).stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_a_tree_sealed_by_another_user_is_checked_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree = _tree(tmp_path / "memory", 6)
    seen = _checked(monkeypatch)
    _build(tree, tmp_path / "a.car")
    monkeypatch.setenv("BUNDLEKIT_HOME", str(tmp_path / "another-user"))  # another data directory, another key
    _build(tree, tmp_path / "b.car")
    _build(tree, tmp_path / "c.car")
    assert [len(names) for names in seen] == [6, 6, 0]
    assert (tmp_path / "another-user" / buildcheck.KEY_FILE).stat().st_mode & 0o077 == 0


def test_a_key_file_that_is_a_fifo_is_replaced_never_waited_on(tmp_path: Path) -> None:
    # attack37w: opening a FIFO planted as the key blocked every build for ever
    home = Path(os.environ["XDG_DATA_HOME"]) / "bundlekit"
    home.mkdir(parents=True)
    os.mkfifo(home / buildcheck.KEY_FILE)
    key = buildcheck.seal_key()
    assert key is not None and (home / buildcheck.KEY_FILE).read_bytes() == key


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604])
def test_a_key_others_can_read_is_never_sealed_with(tmp_path: Path, mode: int) -> None:
    # attack37w: a key another user could read lets them seal a planted row; it is made again, 0600
    home = Path(os.environ["XDG_DATA_HOME"]) / "bundlekit"
    home.mkdir(parents=True)
    known = b"k" * 32
    (home / buildcheck.KEY_FILE).write_bytes(known)
    (home / buildcheck.KEY_FILE).chmod(mode)
    key = buildcheck.seal_key()
    assert key is not None and key != known
    assert (home / buildcheck.KEY_FILE).stat().st_mode & 0o077 == 0


def test_a_key_file_that_is_a_link_or_of_another_size_is_made_again(tmp_path: Path) -> None:
    home = Path(os.environ["XDG_DATA_HOME"]) / "bundlekit"
    home.mkdir(parents=True)
    elsewhere = tmp_path / "planted.key"
    elsewhere.write_bytes(b"p" * 32)
    elsewhere.chmod(0o600)
    (home / buildcheck.KEY_FILE).symlink_to(elsewhere)
    key = buildcheck.seal_key()
    assert key is not None and key != b"p" * 32 and not (home / buildcheck.KEY_FILE).is_symlink()
    (home / buildcheck.KEY_FILE).write_bytes(b"short")
    assert buildcheck.seal_key() not in (None, key, b"short")


def test_a_cache_that_is_a_link_is_neither_read_nor_written(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "memory", 3)
    elsewhere = tmp_path / "elsewhere.sqlite"
    elsewhere.write_bytes(b"")
    (tree / CACHE_NAME).symlink_to(elsewhere)
    _build(tree, tmp_path / "a.car")
    assert elsewhere.read_bytes() == b""


_OPS = st.lists(st.tuples(st.sampled_from(("rewrite", "in_place", "add", "remove", "retype", "note")),
                          st.integers(0, 7)), min_size=1, max_size=6)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=_OPS)
def test_incremental_builds_give_the_root_of_a_full_build_after_any_edits(
    tmp_path_factory: pytest.TempPathFactory, ops: list[tuple[str, int]]
) -> None:
    work = tmp_path_factory.mktemp("edits")
    tree = _tree(work / "memory", 6)
    _build(tree, work / "first.car")
    for step, (op, i) in enumerate(ops):
        path = tree / f"note_{i:02d}.md"
        if op == "rewrite" or (op in ("in_place", "retype") and not path.exists()):
            path.write_text(_text(f"note_{i:02d}", f"step {step} " * (i + 1)), encoding="utf-8")
        elif op == "in_place":
            _edit_in_place(path, "body" if "body" in path.read_text(encoding="utf-8") else "step", "BODY"[: 4])
        elif op == "add":
            Memory(tree, namespace="agent", clock=lambda: NOW + timedelta(minutes=step)).write(
                f"added_{step}_{i}", name=f"Added {i}", description=f"added at {step}", type=TYPES[i % 4], body="x")
        elif op == "remove":
            path.unlink(missing_ok=True)
        elif op == "retype":
            text = path.read_text(encoding="utf-8")
            kind = next(t for t in TYPES if f"type: {t}\n" in text)
            path.write_text(text.replace(f"type: {kind}\n", f"type: {TYPES[(TYPES.index(kind) + 1) % 4]}\n"),
                            encoding="utf-8")
        else:
            Memory(tree, namespace="agent", clock=lambda: NOW + timedelta(minutes=step)).note("tick", n=step)
        built = _build(tree, work / f"step{step}.car")
        assert built.root_bytes == _full_build(tree, work).root_bytes, (step, op, i)


@pytest.mark.parametrize("check", [TreeAccess.checked, secrets.guard, screen.guard_record, screen.guard_key,
                                   marks, parse_read, decode, check_text_size, build_module._read_tree])
def test_the_rules_fingerprint_covers_the_code_that_runs_the_guards(check: Callable[..., Any]) -> None:
    # attack37w: TreeAccess.checked (memory/access.py) decides which guards a build runs, yet its source was not
    # in the fingerprint: a guard added there would have been skipped for every file a cache row vouched for.
    # attack39c: nor were _marks (its marks decide which secret rules run over a text: a trigger it missed is a
    # rule never run), memory/indexer (decode and parse_read make the record of a file's bytes) or
    # memory/filesize (a memory's size bound): a fix there left every verdict made before it standing; nor
    # bundle/build, whose _read_tree runs the device rule over the memories it parsed (a build-time rule added
    # there would have been skipped for every memory a row vouched for)
    source = Path(inspect.getsourcefile(check) or "")
    module = source.relative_to(Path(buildcheck.__file__).resolve().parents[1]).with_suffix("").as_posix()
    assert module in buildcheck._RULES


def test_the_rules_fingerprint_covers_the_built_secret_scanner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """attack39c: ``_marks`` asks the C scanner (``bundlekit/_textscan``, built by ``setup.py``) which secret rules
    a text can match; a rebuilt scanner (a fix of a trigger it missed) must take no verdict made by the old one."""
    package = Path(buildcheck.__file__).resolve().parents[1]
    copy = tmp_path / "bundlekit"
    for source in package.glob("**/*.py"):
        (copy / source.relative_to(package)).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, copy / source.relative_to(package))
    for built in package.glob("_textscan.*"):
        shutil.copyfile(built, copy / built.name)
    monkeypatch.setattr(buildcheck, "_PACKAGE", copy)
    version = buildcheck._CHECKS_VERSION + buildcheck._runtime()
    before = buildcheck.sources_digest(version, buildcheck._RULES, built=buildcheck._BUILT)
    assert before.hex() == buildcheck.rules_fingerprint()
    scanner = next(copy.glob("_textscan.*"))
    scanner.write_bytes(scanner.read_bytes() + b"\0")
    assert buildcheck.sources_digest(version, buildcheck._RULES, built=buildcheck._BUILT) != before


def test_the_rules_fingerprint_covers_the_python_and_the_yaml_parser_that_run_the_rules(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """attack39c: the same sources run under another Python (another ``re``, Unicode database, ``datetime``) or
    another PyYAML (the frontmatter parser the guard's parsed values come from; its C loader built or not) may
    parse and guard the same bytes otherwise, yet the key, in the user's data directory, is shared by every
    install: the fingerprint holds the Python's version and PyYAML's package, found without importing it."""
    assert buildcheck.rules_fingerprint() == buildcheck.sources_digest(
        buildcheck._CHECKS_VERSION + buildcheck._runtime(), buildcheck._RULES, built=buildcheck._BUILT).hex()
    package = tmp_path / "yaml"
    package.mkdir()
    (package / "__init__.py").write_text("__version__ = '6.0.3'\n", encoding="utf-8")
    monkeypatch.setattr(buildcheck, "find_spec", lambda name: importlib.util.spec_from_file_location(
        name, package / "__init__.py"))
    seen = {buildcheck._runtime()}
    (package / "_yaml.cpython-311-x86_64-linux-gnu.so").write_bytes(b"")  # the C loader built
    seen.add(buildcheck._runtime())
    (package / "__init__.py").write_text("__version__ = '6.0.4'\n", encoding="utf-8")
    seen.add(buildcheck._runtime())
    monkeypatch.setattr(sys, "version", "3.13.0 (main)")
    seen.add(buildcheck._runtime())
    assert len(seen) == 4


def test_a_yaml_module_without_a_spec_is_no_error_in_the_fingerprint(monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``yaml`` in ``sys.modules`` without a ``__spec__`` (a stand-in a host put there) makes ``find_spec`` raise
    ``ValueError``: the fingerprint, read when the module loads, then says only the Python's version."""
    monkeypatch.setitem(sys.modules, "yaml", types.ModuleType("yaml"))
    assert buildcheck._runtime() == sys.version.encode("utf-8", "surrogateescape")


_UPGRADED_WHILE_RUNNING = """
import importlib, shutil, sys
from pathlib import Path
import bundlekit.bundle.buildcheck as buildcheck
module = importlib.import_module(sys.argv[1])
version, sources, built = {
    "bundlekit.bundle.buildcheck": (buildcheck._CHECKS_VERSION + buildcheck._runtime(), buildcheck._RULES,
                                    buildcheck._BUILT),
    "bundlekit.bundle.shardmemo": (b"bundlekit shard memo 1", getattr(module, "_ENCODERS", ()), ()),
}[sys.argv[1]]
fingerprint = buildcheck.rules_fingerprint if module is buildcheck else module._encoders
loaded = buildcheck.sources_digest(version, sources, built=built)
copy = Path(sys.argv[2])
for name in sources:
    (copy / name).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(buildcheck._PACKAGE / f"{name}.py", copy / f"{name}.py")
with open(copy / f"{sources[0]}.py", "a", encoding="utf-8") as fh:
    fh.write("\\n# a new rule, another layout\\n")
buildcheck._PACKAGE = copy  # the sources an upgrade wrote after this process loaded the old ones
print(fingerprint() in (loaded, loaded.hex()))
"""


@pytest.mark.parametrize("module", ["bundlekit.bundle.buildcheck", "bundlekit.bundle.shardmemo"])
def test_a_process_running_through_an_upgrade_keeps_the_fingerprint_of_the_code_it_runs(
    tmp_path: Path, module: str
) -> None:
    """attack39c: the fingerprints were read from the sources at a process's first build. A process that runs for
    hours (``sync --interval``, the MCP server) and builds first after an upgrade rewrote the sources sealed the
    verdicts of the old code it runs under the new code's fingerprint, which every later process then took (a
    secret only the new rule finds, vouched for as checked; a sub-shard of the old encoder in a new build's HAMT,
    a root no full build makes). They are now taken when the module is loaded."""
    done = subprocess.run([sys.executable, "-c", _UPGRADED_WHILE_RUNNING, module, str(tmp_path / "upgraded")],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"


#: Any text a record could hold: quotes, newlines, NULs, non-BMP characters and lone surrogates (which
#: ``surrogatepass`` writes and reads back as they were).
_ANY_TEXT = st.text(st.characters(blacklist_categories=()), max_size=30) | st.sampled_from(
    ["it's", "a\nb", "'", "", "\U0001f600", "\ud800", "\udfff\ud800", "x\0y", "\\0"]) | st.text(min_size=4000, max_size=4200)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(_ANY_TEXT, _ANY_TEXT, _ANY_TEXT, _ANY_TEXT,
                               st.integers(-(2**62), 2**62)), max_size=6, unique_by=lambda row: row[0]))
def test_a_save_then_load_gives_back_every_text_exactly_or_keeps_no_row(
    tmp_path_factory: pytest.TempPathFactory, rows: list[tuple[str, str, str, str, int]]
) -> None:
    """What a save writes, a load reads back exactly (each text, ``updated`` to the microsecond); a row the file
    cannot hold (a NUL in a text, texts past the per-row bound, an ``updated`` that is no ``datetime``) is not
    kept, and its file is checked again."""
    tree = tmp_path_factory.mktemp("roundtrip")
    records, digests, expected = [], {}, {}
    for at, (key, kind, name, description, offset) in enumerate(rows):
        try:
            when = NOW + timedelta(microseconds=offset)
        except OverflowError:
            continue
        record = _Record(key, description, name=name, kind=kind, updated=when)
        records.append(record)
        digests[record.filename] = bytes([at]) * 32
        texts = (record.filename, kind, name, description)
        if all("\0" not in text for text in texts) and sum(len(t.encode("utf-8", "surrogatepass")) + 1
                                                           for t in texts) <= buildcheck._MAX_ROW_TEXT:
            expected[record.filename] = (key, kind, name, description, when)
    buildcheck.CheckCache(tree).save(digests, records)  # type: ignore[arg-type]
    loaded = buildcheck.CheckCache(tree)
    assert {path: tuple(loaded.passed([path])[0]) for path in loaded.known} == expected
    assert loaded.known == {path: digests[path] for path in expected}
