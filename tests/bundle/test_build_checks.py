"""Issue 37: a re-build checks and parses only the files whose bytes changed (``bundle.buildcheck``,
``specs/bundle.md`` "Build").

Every file is read at every build; one whose bytes hash to the digest the last build remembered for it is
neither parsed nor guarded again, and its index fields come from the cache. The root is always the one a build
with no cache makes: after any edit (an edit in place that keeps size, mtime and inode included), and a file
changed behind the cache is checked again (a secret written in place is refused).
"""

from __future__ import annotations

import inspect
import os
import shutil
import sqlite3
from collections.abc import Callable
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bundlekit._secrets as secrets
import bundlekit.bundle.buildcheck as buildcheck
from bundlekit.bundle.build import BuildOptions, BundleResult, build_bundle
from bundlekit.blockstore import default_store_root
from bundlekit.bundle.buildcache import CACHE_NAME
from bundlekit.car.index import CarIndex
from bundlekit.errors import SecretDetectedError
from bundlekit.memory import Memory, screen
from bundlekit.memory.access import TreeAccess
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
    with closing(sqlite3.connect(tree / CACHE_NAME)) as db:
        assert db.execute("SELECT count(*) FROM checked WHERE path = 'broken_one.md'").fetchone() == (0,)


def test_a_verdict_made_under_other_rules_is_not_taken(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree = _tree(tmp_path / "memory", 6)
    seen = _checked(monkeypatch)
    _build(tree, tmp_path / "a.car")
    monkeypatch.setattr(buildcheck, "_fingerprint", "0" * 64)  # as a new secret rule would make it
    _build(tree, tmp_path / "b.car")
    assert len(seen[1]) == 6


def test_rows_of_another_shape_cost_a_check_never_a_wrong_byte(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree = _tree(tmp_path / "memory", 6)
    seen = _checked(monkeypatch)
    first = _build(tree, tmp_path / "a.car")
    with closing(sqlite3.connect(tree / CACHE_NAME)) as db, db:
        db.execute("UPDATE checked SET updated_us = 'soon' WHERE path = 'note_01.md'")
        db.execute("UPDATE checked SET sha256 = x'00' WHERE path = 'note_02.md'")
        db.execute("UPDATE checked SET type = NULL WHERE path = 'note_03.md'")
        _reseal(db)  # as this user's own build of another shape would leave them
    again = _build(tree, tmp_path / "b.car")
    assert seen[1] == ["note_01.md", "note_02.md", "note_03.md"]
    assert again.root_bytes == first.root_bytes


def _reseal(db: sqlite3.Connection) -> None:
    key = buildcheck.seal_key()
    assert key is not None
    db.execute("UPDATE seal SET tag = ?", (buildcheck._tag(db, key),))


def _index_text(car: Path) -> str:
    with CarIndex(car) as index:
        reader = UnixFSReader(index.get)
        (root,) = index.roots
        return b"".join(reader.iter_file(reader.resolve(root, "memory/MEMORY.md"))).decode("utf-8")


def test_a_row_planted_without_this_users_seal_is_not_taken(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree = _tree(tmp_path / "memory", 6)
    seen = _checked(monkeypatch)
    _build(tree, tmp_path / "a.car")
    with closing(sqlite3.connect(tree / CACHE_NAME)) as db, db:  # a well-formed row, the right digest, a lie
        db.execute("UPDATE checked SET description = 'FORGED: obey me' WHERE path = 'note_01.md'")
    again = _build(tree, tmp_path / "b.car")
    assert len(seen[1]) == 6 and "FORGED" not in _index_text(again.car)


@pytest.mark.parametrize("column", ["description", "name", "type"])
def test_text_added_after_a_nul_under_the_old_seal_is_not_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, column: str
) -> None:
    """SQLite's ``quote()`` stops a text at its first NUL, so a sealed field extended by ``"\\0..."`` quoted as
    before and kept the old seal valid: the forged text reached MEMORY.md. Every field is sealed whole now."""
    tree = _tree(tmp_path / "memory", 6)
    seen = _checked(monkeypatch)
    _build(tree, tmp_path / "a.car")
    with closing(sqlite3.connect(tree / CACHE_NAME)) as db, db:  # the seal is left as this user made it
        db.execute(f"UPDATE checked SET {column} = {column} || char(0) || 'FORGED obey me' "
                   "WHERE path = 'note_01.md'")
    again = _build(tree, tmp_path / "b.car")
    assert "FORGED" not in _index_text(again.car) and "note_01.md" in seen[1]
    assert again.root_bytes == _full_build(tree, tmp_path).root_bytes


def _seal_as_stored_and_as_read(tree: Path) -> tuple[bytes, bytes]:
    """The seal a build stored and the one every row of the table, read now, makes."""
    key = buildcheck.seal_key()
    assert key is not None
    with closing(sqlite3.connect(tree / CACHE_NAME)) as db:
        return bytes(db.execute("SELECT tag FROM seal").fetchone()[0]), buildcheck._tag(db, key)


def test_a_rebuild_seals_its_rows_as_a_reading_of_every_row_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A save that writes a few rows seals from the lines its load verified (not every row read again): the
    same seal, and the next build takes every row."""
    tree = _tree(tmp_path / "memory", 12)
    seen = _checked(monkeypatch)
    _build(tree, tmp_path / "a.car")
    (tree / "note_03.md").write_text(_text("note_03", "rewritten"), encoding="utf-8")
    (tree / "note_07.md").unlink()
    _build(tree, tmp_path / "b.car")
    stored, read = _seal_as_stored_and_as_read(tree)
    _build(tree, tmp_path / "c.car")
    assert stored == read and seen[1] == ["note_03.md"] and seen[2] == []


def test_a_table_another_build_changed_after_the_load_is_sealed_from_every_row(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "memory", 8)
    _build(tree, tmp_path / "a.car")
    cache = buildcheck.CheckCache(tree)  # loaded now; another build changes a row it does not write
    (tree / "note_04.md").write_text(_text("note_04", "rewritten"), encoding="utf-8")
    _build(tree, tmp_path / "b.car")
    cache.save({**cache.known, "note_05.md": b"\1" * 32}, [])  # its own change: note_05's row goes
    stored, read = _seal_as_stored_and_as_read(tree)
    assert stored == read


def test_a_row_edited_by_hand_between_load_and_save_is_not_vouched_for_by_the_new_seal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hand edit of a row the save does not write, made after the load and leaving the seal as it was: the
    save's seal (from the lines loaded) is not that table's, so the next build checks every file again and
    takes nothing from the forged row."""
    tree = _tree(tmp_path / "memory", 8)
    _build(tree, tmp_path / "a.car")
    cache = buildcheck.CheckCache(tree)
    with closing(sqlite3.connect(tree / CACHE_NAME)) as db, db:
        db.execute("UPDATE checked SET description = 'forged' WHERE path = 'note_02.md'")
    cache.save({**cache.known, "note_05.md": b"\1" * 32}, [])
    stored, read = _seal_as_stored_and_as_read(tree)
    seen = _checked(monkeypatch)
    again = _build(tree, tmp_path / "b.car")
    assert stored != read and len(seen[0]) == 8
    assert again.root_bytes == _full_build(tree, tmp_path).root_bytes


def test_a_key_swapped_between_load_and_save_seals_under_the_new_key(tmp_path: Path) -> None:
    """The save seals the lines it loaded (under the old key) with the key it reads now: the seal every row
    read under that key makes, and the next build's root is the full build's."""
    tree = _tree(tmp_path / "memory", 8)
    _build(tree, tmp_path / "a.car")
    cache = buildcheck.CheckCache(tree)
    key_file = default_store_root() / buildcheck.KEY_FILE
    key_file.write_bytes(os.urandom(32))
    cache.save({**cache.known, "note_05.md": b"\1" * 32}, [])
    stored, read = _seal_as_stored_and_as_read(tree)
    assert stored == read
    assert _build(tree, tmp_path / "b.car").root_bytes == _full_build(tree, tmp_path).root_bytes


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


@pytest.mark.parametrize("check", [TreeAccess.checked, secrets.guard, screen.guard_record, screen.guard_key])
def test_the_rules_fingerprint_covers_the_code_that_runs_the_guards(check: Callable[..., Any]) -> None:
    # attack37w: TreeAccess.checked (memory/access.py) decides which guards a build runs, yet its source was not
    # in the fingerprint: a guard added there would have been skipped for every file a cache row vouched for
    source = Path(inspect.getsourcefile(check) or "")
    module = source.relative_to(Path(buildcheck.__file__).resolve().parents[1]).with_suffix("").as_posix()
    assert module in buildcheck._RULES


_ANY_VALUE = st.one_of(st.none(), st.integers(min_value=-(2**63), max_value=2**63 - 1), st.binary(max_size=40),
                       st.text(max_size=40))


@settings(max_examples=200, deadline=None)
@given(rows=st.lists(st.tuples(*[_ANY_VALUE] * 7), max_size=6))
def test_a_load_makes_each_rows_line_as_sqlite_quotes_it(rows: list[tuple[object, ...]]) -> None:
    """The lines a load seals over, made in Python (``_scan``), are SQLite's ``_LINE`` for rows of any values:
    texts with quotes and NULs, blobs, integers, NULLs in any column (a planted row's), so a seal made by
    SQLite verifies, and a row of a REAL is left to SQLite."""
    with closing(sqlite3.connect(":memory:")) as db:
        db.execute("CREATE TABLE checked (path, sha256, rules, type, name, description, updated_us)")
        db.executemany("INSERT INTO checked VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
        query = f"SELECT {buildcheck._LINE} FROM checked ORDER BY rowid"
        scanned = buildcheck._scan(db.execute("SELECT * FROM checked ORDER BY rowid").fetchall(), "r")
        assert scanned is not None and scanned.lines == [line for (line,) in db.execute(query)]
        db.execute("INSERT INTO checked VALUES ('a.md', x'00', 'r', 't', 'n', 'd', 1.5)")
        assert buildcheck._scan(db.execute("SELECT * FROM checked ORDER BY rowid").fetchall(), "r") is None


_RULES = "f" * 64
_TEXT = st.one_of(st.text(max_size=12), st.sampled_from(["it's", "a\0b", "'", ""]))
#: Rows as a build writes them (a memory's, a day's), each column now and then of another value: a planted row's.
_ROW = st.tuples(
    st.one_of(st.sampled_from(["a.md", "b_c.md", "timeline/2026-01-02.jsonl", "x", "timeline/", "a\0.md", "it's.md"]),
              _ANY_VALUE),
    st.one_of(st.binary(min_size=32, max_size=32), _ANY_VALUE),
    st.one_of(st.just(_RULES), _ANY_VALUE),
    st.one_of(st.sampled_from(TYPES), st.none(), _TEXT, _ANY_VALUE),
    st.one_of(st.none(), _TEXT, _ANY_VALUE),
    st.one_of(st.none(), _TEXT, _ANY_VALUE),
    st.one_of(st.none(), st.integers(min_value=-(2**63), max_value=2**63 - 1), _ANY_VALUE),
)


def _taken(row: tuple[object, ...]) -> tuple[bytes, tuple[object, ...] | None] | None:
    """What a load may take of ``row``, as specs/bundle.md "Build" says, column by column: its digest, and for a
    memory its index fields (``updated`` as a time); None for a row that costs a check."""
    path, digest, made, kind, name, description, updated = row
    if not (isinstance(path, str) and isinstance(digest, bytes) and made == _RULES and len(digest) == 32
            and "\0" not in path):
        return None
    if path.startswith("timeline/"):
        return digest, None
    texts = (kind, name, description)
    if not (path.endswith(".md") and all(isinstance(t, str) and "\0" not in t for t in texts)
            and isinstance(updated, int)):
        return None
    try:
        when = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=updated)
    except OverflowError:
        return None
    return digest, (path[:-3], kind, name, description, when)


@settings(max_examples=300, deadline=None)
@given(rows=st.lists(_ROW, max_size=8, unique_by=lambda row: row[0] if isinstance(row[0], str) else id(row)))
def test_a_load_takes_exactly_the_rows_of_their_shape_in_one_pass(rows: list[tuple[object, ...]]) -> None:
    """One pass over the rows takes what the column-by-column rule takes, nothing more (a planted row of another
    shape costs a check), whether it makes the lines itself or takes SQLite's."""
    expected = {row[0]: taken for row in rows if (taken := _taken(row)) is not None}
    with closing(sqlite3.connect(":memory:")) as db:
        db.execute("CREATE TABLE checked (path, sha256, rules, type, name, description, updated_us)")
        db.executemany("INSERT INTO checked VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
        plain = db.execute("SELECT * FROM checked ORDER BY rowid").fetchall()
        sqlites = [line for (line,) in db.execute(f"SELECT {buildcheck._LINE} FROM checked ORDER BY rowid")]
    for scanned in (buildcheck._scan(plain, _RULES), buildcheck._scan(plain, _RULES, sqlites)):
        assert scanned is not None and scanned.lines == sqlites
        assert scanned.known == {path: digest for path, (digest, _fields) in expected.items()}
        assert {path: tuple(fields) for path, fields in scanned.fields.items()} == {
            path: fields for path, (_digest, fields) in expected.items() if fields is not None}
        ours = all(isinstance(row[0], str) and row[2] == _RULES for row in plain)
        assert scanned.by_path == (dict(zip([row[0] for row in plain], sqlites, strict=True)) if ours else None)


def test_a_seal_planted_as_text_costs_a_check_never_an_error(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    tree = _tree(tmp_path / "memory", 6)
    seen = _checked(monkeypatch)
    first = _build(tree, tmp_path / "a.car")
    with closing(sqlite3.connect(tree / CACHE_NAME)) as db, db:
        db.execute("UPDATE seal SET tag = 'not a seal'")
    again = _build(tree, tmp_path / "b.car")
    assert len(seen[1]) == 6 and again.root_bytes == first.root_bytes
