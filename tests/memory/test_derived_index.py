"""The derived index (.bundlekit/index.sqlite): a cache that follows the files and repairs itself."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bundlekit._terminal import printable
from bundlekit.bundle.build import build_bundle
from bundlekit.errors import InvalidKeyError, UsageError
from bundlekit.memory import Memory, indexer
from bundlekit.memory import catalog as catalog_module
from bundlekit.memory.catalog import database as catalog_database
from bundlekit.memory.catalog import search as catalog_search
from bundlekit.memory.catalog import stat as catalog_stat
from bundlekit.memory import index as index_module
from bundlekit.memory.backend import DirectoryBackend, Scan
from bundlekit.memory.catalog import CATALOG_FILE
from bundlekit.memory.files import read_tree_files
from bundlekit.memory.index import list_line, render_index
from bundlekit.memory.naming import HIDDEN_DIR
from bundlekit.memory.ranking import context_block, ranked_records
from bundlekit.memory.ranking import recall as pure_recall
from bundlekit.memory.record import parse_memory_file, render_memory_file

from .conftest import Clock, fields


def _index(tree: Path) -> Path:
    return tree / HIDDEN_DIR / CATALOG_FILE


def _drop_index(mem: Memory, tree: Path) -> None:
    """Close ``mem`` and delete its index with its WAL and shared-memory companions: the next command builds it."""
    mem.close()
    for path in (tree / HIDDEN_DIR).glob(CATALOG_FILE + "*"):
        path.unlink()


def _three(mem: Memory) -> None:
    mem.write("a", **fields(name="Alpha", body="kick drills on saturday"))
    mem.write("b", **fields(name="Beta", type="user", body="the striker volley"))
    mem.write("c", **fields(name="Gamma", type="project", body="rondo then sprint"))


def test_index_and_lock_live_in_one_hidden_folder(mem: Memory, tree: Path) -> None:
    _three(mem)
    assert _index(tree).is_file() and (tree / HIDDEN_DIR / "lock").is_file()
    assert sorted(p.name for p in tree.iterdir() if p.name.startswith(".")) == [HIDDEN_DIR]


def test_hidden_folder_is_never_bundled_or_exported(mem: Memory) -> None:
    _three(mem)
    assert not [path for path, _data in mem.bundle_files() if HIDDEN_DIR in path]
    assert not [name for name in mem.export()["files"] if HIDDEN_DIR in name]


def test_same_size_edit_by_hand_right_after_a_write_is_seen(mem: Memory, tree: Path) -> None:
    _three(mem)
    assert [h.key for h in mem.recall("kick")] == ["a"]
    path = tree / "a.md"
    text = path.read_text(encoding="utf-8")
    stat = path.stat()
    path.write_text(text.replace("kick", "KICK").replace("saturday", "tuesdays"), encoding="utf-8")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same size, inode and mtime: only the content moved
    assert [h.key for h in Memory(tree).recall("tuesdays")] == ["a"]
    assert mem.read("a").body.startswith("KICK")  # type: ignore[union-attr]


def test_files_added_deleted_and_renamed_by_hand_are_followed(mem: Memory, tree: Path) -> None:
    _three(mem)
    (tree / "b.md").rename(tree / "b2.md")
    (tree / "c.md").unlink()
    (tree / "d.md").write_text((tree / "a.md").read_text(encoding="utf-8"), encoding="utf-8")
    fresh = Memory(tree)
    assert [r.key for r in fresh.list()] == ["a", "b2", "d"]
    assert [h.key for h in fresh.recall("volley")] == ["b2"]
    assert (tree / "MEMORY.md").read_text(encoding="utf-8") == fresh.index_text()


def test_deleted_index_is_rebuilt_without_loss(mem: Memory, tree: Path) -> None:
    _three(mem)
    before = [r.raw for r in mem.list()]
    _drop_index(mem, tree)
    fresh = Memory(tree)
    assert [r.raw for r in fresh.list()] == before and fresh.warnings == []


def test_truncated_index_is_rebuilt_with_a_warning(mem: Memory, tree: Path) -> None:
    _three(mem)
    mem.close()
    for path in (tree / HIDDEN_DIR).glob(CATALOG_FILE + "-*"):
        path.unlink()
    data = _index(tree).read_bytes()
    _index(tree).write_bytes(data[: len(data) // 3])
    fresh = Memory(tree)
    assert [h.key for h in fresh.recall("rondo")] == ["c"]
    assert fresh.warnings and "rebuilt it from the memory files" in fresh.warnings[0]


def test_index_from_a_future_version_is_rebuilt_with_a_warning(mem: Memory, tree: Path) -> None:
    _three(mem)
    mem.close()
    conn = sqlite3.connect(_index(tree))
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    fresh = Memory(tree)
    assert len(fresh.list()) == 3
    assert "derived version 99" in fresh.warnings[0]
    conn = sqlite3.connect(_index(tree))
    assert conn.execute("PRAGMA user_version").fetchone()[0] == catalog_module.DERIVED_VERSION
    conn.close()


def test_garbage_in_place_of_the_index_is_rebuilt(mem: Memory, tree: Path) -> None:
    _three(mem)
    _drop_index(mem, tree)
    _index(tree).write_bytes(b"not a database at all" * 100)
    fresh = Memory(tree)
    assert len(fresh.list()) == 3 and fresh.warnings


@pytest.mark.parametrize(("offset", "value"), [(18, 3), (18, 0x80), (19, 3), (18, 0)])
def test_an_index_whose_header_gives_an_unknown_format_version_is_rebuilt_and_the_write_goes_through(
    mem: Memory, tree: Path, offset: int, value: int
) -> None:
    # Byte 18 over 2 makes SQLite open the file read-only (btree.c, lockBtree), the answer a read-only tree gives:
    # the write failed as "attempt to write a readonly database" instead of rebuilding the cache.
    _three(mem)
    mem.close()
    data = bytearray(_index(tree).read_bytes())
    data[offset] = value
    _index(tree).write_bytes(bytes(data))
    fresh = Memory(tree)
    fresh.write("d", **fields(name="Delta", body="a new one"))
    assert [line.split("\t")[0] for line in fresh.list_lines()] == ["a", "b", "c", "d"]
    assert "header gives write format" in fresh.warnings[0] and "rebuilt it" in fresh.warnings[0]
    assert _index(tree).read_bytes()[18:20] in (b"\x01\x01", b"\x02\x02")


def test_stale_memory_md_left_by_a_crash_is_repaired_by_the_next_read(mem: Memory, tree: Path) -> None:
    _three(mem)
    good = (tree / "MEMORY.md").read_text(encoding="utf-8")
    (tree / "MEMORY.md").write_text("# Agent Memory\n", encoding="utf-8")  # what a kill -9 mid-write leaves
    Memory(tree).recall("kick")
    assert (tree / "MEMORY.md").read_text(encoding="utf-8") == good


def test_file_written_without_its_index_update_is_picked_up(mem: Memory, tree: Path, clock: Clock) -> None:
    _three(mem)
    other = Memory(tree / ".." / "elsewhere", clock=clock)
    record = other.write("e", **fields(name="Epsilon", body="cooldown"))
    (tree / "e.md").write_text(record.raw, encoding="utf-8")  # as if killed after the file, before the index
    assert [h.key for h in Memory(tree).recall("cooldown")] == ["e"]
    assert "Epsilon" in (tree / "MEMORY.md").read_text(encoding="utf-8")


def test_short_queries_scan_the_indexed_text(mem: Memory) -> None:
    _three(mem)
    assert sorted(h.key for h in mem.recall("ro")) == ["c"]
    assert sorted(h.key for h in mem.recall("y")) == ["a", "b"]


def test_without_fts5_recall_scans_and_agrees(
    tree: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(catalog_database, "fts5_available", lambda: False)
    mem = Memory(tree, clock=clock)
    _three(mem)
    conn = sqlite3.connect(_index(tree))
    sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'search'").fetchone()[0]
    conn.close()
    assert "fts5" not in sql.lower()
    assert [h.key for h in mem.recall("sprint")] == ["c"]
    assert sorted(h.key for h in mem.recall("e")) == ["a", "b", "c"]


def test_an_existing_index_is_opened_without_probing_fts5(
    tree: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    _three(Memory(tree, clock=clock))

    def no_probe() -> bool:
        raise AssertionError("probed FTS5 for an index that says whether it has it")

    monkeypatch.setattr(catalog_database, "fts5_available", no_probe)
    assert [h.key for h in Memory(tree, clock=clock).recall("sprint")] == ["c"]


def _search_sql(tree: Path) -> str:
    conn = sqlite3.connect(_index(tree))
    sql = str(conn.execute("SELECT sql FROM sqlite_master WHERE name = 'search'").fetchone()[0])
    conn.close()
    return sql


def test_an_index_made_without_fts5_keeps_scanning_where_sqlite_has_it(
    tree: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as without:
        without.setattr(catalog_database, "fts5_available", lambda: False)
        _three(Memory(tree, clock=clock))
    mem = Memory(tree, clock=clock)
    assert [h.key for h in mem.recall("sprint")] == ["c"] and not mem.warnings
    assert "fts5" not in _search_sql(tree).lower()


def test_an_index_made_with_fts5_is_rebuilt_without_it_where_sqlite_lacks_it(
    tree: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    _three(Memory(tree, clock=clock))
    # This SQLite has FTS5: the search table naming a module it does not know stands for one without.
    conn = sqlite3.connect(_index(tree))
    conn.execute("PRAGMA writable_schema = ON")
    conn.execute("UPDATE sqlite_master SET sql = replace(sql, 'fts5(', 'nofts5(') WHERE name = 'search'")
    conn.commit()
    conn.close()
    monkeypatch.setattr(catalog_database, "fts5_available", lambda: False)
    mem = Memory(tree, clock=clock)
    assert [h.key for h in mem.recall("sprint")] == ["c"]
    assert "no such module: nofts5" in mem.warnings[0] and "rebuilt" in mem.warnings[0]
    assert "fts5" not in _search_sql(tree).lower()


@pytest.mark.skipif(not catalog_database.fts5_available(), reason="this SQLite has no FTS5 trigram tokenizer")
def test_a_new_index_holds_more_new_terms_in_memory_before_writing_a_segment(tree: Path, clock: Clock) -> None:
    _three(Memory(tree, clock=clock))
    conn = sqlite3.connect(_index(tree))
    sizes = [conn.execute(f"SELECT v FROM {table}_config WHERE k = 'hashsize'").fetchone() for table in ("search", "terms")]
    conn.close()
    assert sizes == [(catalog_database.FTS_HASH_SIZE,)] * 2


def test_an_sqlite_without_the_hash_size_option_still_makes_the_index(
    tree: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = catalog_database._set_hash_size

    def refused(conn: sqlite3.Connection) -> None:  # as an SQLite older than the option answers it
        conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS probe_hash USING fts5(x)")
        try:
            real(_Refusing(conn))  # type: ignore[arg-type]
        finally:
            conn.execute("DROP TABLE probe_hash")

    monkeypatch.setattr(catalog_database, "_set_hash_size", refused)
    _three(Memory(tree, clock=clock))
    assert [h.key for h in Memory(tree, clock=clock).recall("sprint")] == ["c"]


class _Refusing:
    """A connection whose FTS5 refuses the ``hashsize`` setting, as SQLite does for an option it does not know."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def execute(self, sql: str, *args: object) -> sqlite3.Cursor:
        if "'hashsize'" in sql:
            return self._conn.execute("INSERT INTO probe_hash(probe_hash, rank) VALUES ('no-such-option', 1)")
        return self._conn.execute(sql, *args)


def test_relevance_ranking_prefers_the_better_match(mem: Memory) -> None:
    mem.write("a_weak", **fields(name="Weak", body="one volley among many other words here"))
    mem.write("b_strong", **fields(name="Strong", body="volley " * 30))
    for other in ("c", "d", "e"):  # a word in more than half the memories is not searched by BM25
        mem.write(other, **fields(name=other.upper(), body="kick"))
    assert [h.key for h in mem.recall("volley")] == ["a_weak", "b_strong"]  # equal scores: by key
    hits = mem.recall("volley", rank="relevance")
    assert [h.key for h in hits] == ["b_strong", "a_weak"]
    assert hits[0].relevance == 1.0 and 0 < hits[1].relevance < 1  # type: ignore[operator]


def test_default_ranking_matches_the_formula_over_parsed_files(mem: Memory, tree: Path, clock: Clock) -> None:
    _three(mem)
    clock.advance(days=3)
    mem.write("d", **fields(name="Delta", body="kick and volley", important=True))
    files = {p.name: p.read_bytes() for p in tree.glob("*.md")}
    records = read_tree_files(files).records.values()
    for query in ("kick", "volley", "e", "the"):
        assert mem.recall(query) == pure_recall(records, query, clock())


def test_recall_over_more_memories_than_the_first_ranked_window_matches_the_formula(
    mem: Memory, tree: Path, clock: Clock
) -> None:
    # More memories than catalog._TOP: common words are answered from the best ones, rare ones by full search.
    for i in range(catalog_search._TOP + 30):
        clock.advance(hours=1)
        words = "volley" if i % 2 else "rondo"
        mem.write(f"m{i:03d}", **fields(name=f"M {i}", body=f"{words} drill {'rare' if i in (3, 70) else ''}",
                                         important=i % 5 == 0))
    files = {p.name: p.read_bytes() for p in tree.glob("*.md")}
    records = read_tree_files(files).records.values()
    for query in ("drill", "rondo", "rare", "m 9", "nowhere"):
        for limit in (1, 5, 40):
            assert mem.recall(query, limit=limit) == pure_recall(records, query, clock(), limit)


def test_context_over_more_memories_than_it_first_ranks_matches_the_formula(
    mem: Memory, tree: Path, clock: Clock
) -> None:
    # Long pieces first in rank (they fill the budget), short ones after the first 64 (they still fit).
    for i in range(100):
        clock.advance(hours=1)
        body = "short" if i < 40 else "long " * (30 + i)
        mem.write(f"m{i:03d}", **fields(name=f"M {i}", body=body, important=i % 7 == 0))
    files = {p.name: p.read_bytes() for p in tree.glob("*.md")}
    records = read_tree_files(files).records.values()
    index_text = (tree / "MEMORY.md").read_text(encoding="utf-8")
    for max_tokens in (0, 700, 2000, 8192, 100_000):
        expected = context_block(index_text, ranked_records(records, clock()), iter([]), max_tokens)
        assert mem.context_block(max_tokens) == expected


def test_list_lines_are_the_lines_of_the_parsed_records(mem: Memory, tree: Path) -> None:
    _three(mem)
    mem.write("a", **fields(name="Alpha 2", description="changed", type="project"))
    records = read_tree_files({p.name: p.read_bytes() for p in tree.glob("*.md")}).records
    assert mem.list_lines() == [list_line(records[k]) for k in sorted(records)]
    assert mem.list_lines()[0].split("\t")[:3] == ["a", "project", "r2"]


def test_list_text_is_the_lines_in_key_order_whatever_order_the_files_were_written_in(mem: Memory, tree: Path) -> None:
    keys = [f"k{i:03d}" for i in range(120)]
    for key in reversed(keys[::2]):
        mem.write(key, **fields(name=key.upper()))
    for key in keys[1::2]:
        mem.write(key, **fields(name=key.upper()))
    records = read_tree_files({p.name: p.read_bytes() for p in tree.glob("*.md")}).records
    expected = [list_line(records[k]) for k in sorted(records)]
    assert Memory(tree).list_text() == "\n".join(expected)
    assert mem.list_lines() == expected


def test_list_text_of_an_empty_tree_is_empty(tree: Path) -> None:
    empty = Memory(tree / "empty")
    empty.init()
    assert empty.list_text() == "" and empty.list_lines() == []


def _columns(tree: Path) -> dict[str, list[str]]:
    with sqlite3.connect(_index(tree)) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {t: [r[1] for r in conn.execute(f"PRAGMA table_info({t})")] for t in tables}


def test_the_index_holds_signatures_and_ranking_fields_and_no_copy_of_a_memory(mem: Memory, tree: Path) -> None:
    _three(mem)
    columns = _columns(tree)
    assert columns["memory"] == [
        "id", "file", "key", "type", "ino", "mtime_ns", "size", "sha256", "salience", "updated", "horizon", "piece",
        "line", "withheld",  # the `memory list` line after its key (credentials withheld), and its flag
    ]
    assert "content" not in columns and columns["search"] == ["name", "description", "body"]
    assert columns["vector"] == ["id", "vec", "head"]  # embeddings per row, never text (recall by meaning)
    with sqlite3.connect(_index(tree)) as conn:
        names = {r[0] for r in conn.execute("SELECT name FROM state")}
        assert names == {"gen", "index_gen", "index_ino", "index_mtime", "index_size", "fts", "sigs", "sigs_gen",
                         "written_ns", "vec_model", "vec_gen"}
        digest = conn.execute("SELECT sha256 FROM memory WHERE file = 'a.md'").fetchone()[0]
    assert digest == hashlib.sha256((tree / "a.md").read_bytes()).digest()


def test_an_index_of_another_derived_version_is_rebuilt_with_a_warning(mem: Memory, tree: Path) -> None:
    _three(mem)
    mem.close()
    with sqlite3.connect(_index(tree)) as conn:  # as a program with other rules (a new secret rule) left it
        conn.execute(f"PRAGMA user_version = {catalog_module.DERIVED_VERSION - 1}")
    fresh = Memory(tree)
    assert [line.split("\t")[0] for line in fresh.list_lines()] == ["a", "b", "c"]
    assert "rebuilt it" in fresh.warnings[0]
    with sqlite3.connect(_index(tree)) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == catalog_module.DERIVED_VERSION


# A hand-written file (writes refuse control characters): YAML escapes put ESC and RLO in name and description.
_PLANTED = (
    '---\nname: "Evil \\e[2J name"\ndescription: "safe \\u202Etxt.exe"\ntype: reference\n'
    "created: 2026-01-01T00:00:00Z\nupdated: 2026-01-01T00:00:00Z\n---\nbody\n"
)


def test_list_lines_have_control_characters_escaped(mem: Memory, tree: Path) -> None:
    mem.init()
    (tree / "evil.md").write_text(_PLANTED, encoding="utf-8")
    (line,) = mem.list_lines()
    assert line.endswith("\tEvil \\x1b[2J name — safe \\u202etxt.exe")
    assert printable(line) == line


def test_unknown_rank_is_a_usage_error(mem: Memory) -> None:
    _three(mem)
    with pytest.raises(UsageError, match="rank must be one of"):
        mem.recall("kick", rank="bogus")


def test_a_read_only_tree_is_read_from_a_private_index(mem: Memory, tree: Path) -> None:
    _three(mem)
    mem.close()
    for path in (tree / HIDDEN_DIR).iterdir():
        path.unlink()
    (tree / HIDDEN_DIR).rmdir()
    tree.chmod(0o555)
    try:
        if os.access(tree, os.W_OK):
            pytest.skip("running as a user who can write anyway")
        assert [h.key for h in Memory(tree).recall("rondo")] == ["c"]
        assert not (tree / HIDDEN_DIR).exists()
    finally:
        tree.chmod(0o755)


def test_one_memory_sees_an_edit_in_place_once_its_last_check_is_older_than_the_reuse_window(
    mem: Memory, tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _three(mem)
    assert [h.key for h in mem.recall("kick")] == ["a"]
    path = tree / "a.md"
    with path.open("r+", encoding="utf-8") as handle:  # in place: the directory does not change
        text = handle.read()
        handle.seek(0)
        handle.write(text.replace("kick", "lob "))
    monkeypatch.setattr(indexer, "REUSE_S", 0.0)
    assert mem.recall("kick") == [] and [h.key for h in mem.recall("lob")] == ["a"]


def test_a_write_by_another_memory_is_seen_at_once(mem: Memory, tree: Path, clock: Clock) -> None:
    _three(mem)
    assert mem.recall("cooldown") == []
    Memory(tree, clock=clock).write("z", **fields(body="cooldown"))
    assert [h.key for h in mem.recall("cooldown")] == ["z"]


def test_without_sql_math_functions_ranking_runs_in_python_and_agrees(
    tree: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem = Memory(tree, clock=clock)
    _three(mem)
    mem.write("d", **fields(name="Delta", body="kick and volley", important=True))
    with_sql = [mem.recall(q, rank=r) for q in ("kick", "e", "volley") for r in ("salience", "relevance")]
    context = mem.context_block(100)
    monkeypatch.setattr(catalog_database, "_has_pow", lambda conn: False)
    plain = Memory(tree, clock=clock)
    assert [plain.recall(q, rank=r) for q in ("kick", "e", "volley") for r in ("salience", "relevance")] == with_sql
    assert plain.context_block(100) == context


def test_a_built_bundle_carries_no_part_of_the_hidden_folder(mem: Memory, tree: Path, tmp_path: Path) -> None:
    _three(mem)
    assert (tree / HIDDEN_DIR).is_dir()
    result = build_bundle(tree, tmp_path / "b.car")
    assert result.paths and not [p for p in result.paths if HIDDEN_DIR in p]


def _rows(tree: Path) -> tuple[dict[str, tuple[int, int, int]], dict[str, int]]:
    """Every row's signature, and the racy rows' mtimes (git's rule against the index's write time)."""
    with sqlite3.connect(_index(tree)) as conn:
        rows = conn.execute("SELECT file, ino, mtime_ns, size FROM memory").fetchall()
        written = conn.execute("SELECT value FROM state WHERE name = 'written_ns'").fetchone()[0]
    known = {f: (i, m, s) for f, i, m, s in rows}
    return known, {f: sig[1] for f, sig in known.items() if sig[1] + catalog_module.RACY_NS > written}


def _blob(tree: Path) -> bytes:
    with sqlite3.connect(_index(tree)) as conn:
        return bytes(conn.execute("SELECT value FROM state WHERE name = 'sigs'").fetchone()[0])


def test_the_signature_blob_is_every_row_sorted_by_name_after_every_change(mem: Memory, tree: Path) -> None:
    _three(mem)
    (tree / "b.md").rename(tree / "b2.md")  # by hand: picked up by the next command
    mem.forget("c")
    mem.write("a", **fields(name="Alpha", body="changed"))
    mem.write("d", **fields(name="Delta"))
    known, racy = _rows(tree)
    assert set(known) == {"a.md", "b2.md", "d.md"}
    assert _blob(tree) == catalog_module.pack(sorted(known), [n for name in sorted(known) for n in known[name]])
    catalog = catalog_module.Catalog(_index(tree))
    try:
        assert catalog.stat.compare(Scan(known, None)) == (True, racy)
        moved = {**known, "a.md": (known["a.md"][0], known["a.md"][1] + 1, known["a.md"][2])}
        for listing in (moved, {k: v for k, v in known.items() if k != "d.md"}, {**known, "e.md": (1, 2, 3)}):
            assert catalog.stat.compare(Scan(listing, None)) == (False, racy)
    finally:
        catalog.close()


def test_a_signature_blob_of_another_generation_is_not_used(mem: Memory, tree: Path) -> None:
    _three(mem)
    with sqlite3.connect(_index(tree)) as conn:  # as a program that does not keep it would leave it
        (row,) = conn.execute("SELECT id FROM memory WHERE file = 'a.md'").fetchall()
        for table, column in (("search", "rowid"), ("memory", "id")):
            conn.execute(f"DELETE FROM {table} WHERE {column} = ?", row)
        conn.execute("UPDATE state SET value = value + 1 WHERE name = 'gen'")
    catalog = catalog_module.Catalog(_index(tree))
    try:
        assert catalog.stat.compare(Scan(_rows(tree)[0], None))[0]  # answered from the rows
    finally:
        catalog.close()
    assert [h.key for h in Memory(tree).recall("kick")] == ["a"]  # the missing row is indexed again


_SIG = st.tuples(st.integers(1, 50), st.integers(0, 2**62), st.integers(0, 5000))
_FILE = st.sampled_from([f"{c}{i}.md" for c in "abcé" for i in range(6)])


@settings(max_examples=200, deadline=None)
@given(
    rows=st.dictionaries(_FILE, _SIG, max_size=14),
    hand=st.dictionaries(_FILE, st.one_of(_SIG, st.none()), max_size=2),
    shuffle=st.randoms(use_true_random=False),
)
def test_a_listing_matches_the_blob_exactly_when_it_holds_the_rows_in_any_directory_order(
    rows: dict[str, tuple[int, int, int]], hand: dict[str, tuple[int, int, int] | None], shuffle: Any
) -> None:
    listing = dict(rows)
    for name, signature in hand.items():
        if signature is None:
            listing.pop(name, None)
        else:
            listing[name] = signature
    items = list(listing.items())
    shuffle.shuffle(items)  # the order a directory lists its files in is no part of the comparison
    blob = catalog_module.pack(sorted(rows, key=str.encode), [n for k in sorted(rows, key=str.encode) for n in rows[k]])
    packed = Scan(dict(items), None).packed()
    assert packed is not None
    assert (blob == len(packed[0]).to_bytes(8, "little") + packed[0] + packed[1]) == (listing == rows)


def test_memory_md_read_from_the_first_lines_in_type_order_equals_the_full_render(mem: Memory, tree: Path) -> None:
    # 30 feedback and 230 project memories (more than an index shows), keys interleaved: the index is cut.
    mem.write("seed", **fields(type="user"))
    for i in range(260):
        meta = {"name": f"M {i}", "description": f"d {i}", "type": "feedback" if i % 9 == 0 else "project",
                "created": "2026-04-14T12:00:00Z", "updated": "2026-04-14T12:00:00Z"}
        (tree / f"k{i:03d}.md").write_text(render_memory_file(meta, "body"), encoding="utf-8")
    mem.write("zz", **fields(type="reference"))  # the write renders MEMORY.md from the index
    records = [parse_memory_file(p.read_text(encoding="utf-8"), key=p.stem) for p in tree.glob("*.md")
               if p.name != "MEMORY.md"]
    written = (tree / "MEMORY.md").read_text(encoding="utf-8")
    assert written == render_index(records) and "more memories not listed" in written


def test_memory_md_read_from_the_first_lines_withholds_credentials_as_the_full_render(
    mem: Memory, tree: Path
) -> None:
    # A hand-written memory with a credential in its name and description, among more than an index shows.
    secret = "AKIA" + "IOSFODNN7EXAMPLE"
    mem.write("seed", **fields(type="user"))
    for i in range(205):
        meta = {"name": f"M {i} {secret}" if i == 3 else f"M {i}", "description": f"key {secret}" if i == 3 else "d",
                "type": "project", "created": "2026-04-14T12:00:00Z", "updated": "2026-04-14T12:00:00Z"}
        (tree / f"k{i:03d}.md").write_text(render_memory_file(meta, "body"), encoding="utf-8")
    mem.write("zz", **fields(type="reference"))  # the write renders MEMORY.md from the index
    records = [parse_memory_file(p.read_text(encoding="utf-8"), key=p.stem) for p in tree.glob("*.md")
               if p.name != "MEMORY.md"]
    written = (tree / "MEMORY.md").read_text(encoding="utf-8")
    assert written == render_index(records) and secret not in written
    assert "- [M 3 &#91;withheld&#93;](k003.md) — key &#91;withheld&#93;" in written.splitlines()


def _written_ns(tree: Path) -> int:
    with sqlite3.connect(_index(tree)) as conn:
        return int(conn.execute("SELECT value FROM state WHERE name = 'written_ns'").fetchone()[0])


@pytest.mark.parametrize(("compared", "settled"), [(indexer.RACY_COMPARED, False), (1, True)])
def test_a_read_settles_old_racy_rows_under_the_lock_only_when_there_are_many(
    tree: Path, monkeypatch: pytest.MonkeyPatch, compared: int, settled: bool
) -> None:
    monkeypatch.setattr(indexer, "RACY_COMPARED", compared)
    _three(Memory(tree))
    assert len(_rows(tree)[1]) == 3  # just written: racy
    written = _written_ns(tree)
    # And now old enough to be trusted by their signatures: settling them writes the index's time again.
    real = time.time_ns
    monkeypatch.setattr(indexer.time, "time_ns", lambda: real() + 2 * catalog_module.RACY_NS)
    assert [h.key for h in Memory(tree).recall("kick")] == ["a"]
    assert (_written_ns(tree) > written) is settled


def test_settling_racy_rows_moves_the_write_time_and_keeps_the_blob_without_reading_a_row(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A transaction that changes no row (it only settles the racy ones) leaves the blob of this generation as it
    is, byte for byte, and packs no blob from the rows (issue 37: a follower's round at 100,000 memories read
    every row to write the same 6 MB again)."""
    monkeypatch.setattr(indexer, "RACY_COMPARED", 1)
    _three(Memory(tree))
    blob, written = _blob(tree), _written_ns(tree)
    real = time.time_ns
    monkeypatch.setattr(indexer.time, "time_ns", lambda: real() + 2 * catalog_module.RACY_NS)

    def packed(*_args: object) -> bytes:
        raise AssertionError("the blob was packed from the rows")

    monkeypatch.setattr(catalog_stat, "pack", packed)
    assert [h.key for h in Memory(tree).recall("kick")] == ["a"]
    assert _written_ns(tree) > written and _blob(tree) == blob and not _rows(tree)[1]


def test_the_blob_follows_names_not_the_order_the_directory_lists_them_in(tree: Path) -> None:
    tree.mkdir()
    for i in range(20):
        meta = {"name": f"M {i}", "description": "d", "type": "user",
                "created": "2026-04-14T12:00:00Z", "updated": "2026-04-14T12:00:00Z"}
        (tree / f"k{(i * 7) % 20:02d}.md").write_text(render_memory_file(meta, "body"), encoding="utf-8")
    Memory(tree).list()
    listing = DirectoryBackend(tree).scan().memories
    catalog = catalog_module.Catalog(_index(tree))
    try:
        assert catalog.stat.compare(Scan(listing, None))[0]
        assert catalog.stat.compare(DirectoryBackend(tree).scan())[0]  # listed by _statscan where it is built
        assert catalog.stat.compare(Scan(dict(reversed(listing.items())), None))[0]
        first = next(iter(listing))
        assert not catalog.stat.compare(Scan({**listing, first: (0, 0, 0)}, None))[0]
    finally:
        catalog.close()


def test_a_file_renamed_to_a_name_that_is_not_utf8_is_refused_not_a_crash(mem: Memory, tree: Path) -> None:
    _three(mem)
    _drop_index(mem, tree)
    Memory(tree).list()  # rebuilt: the base follows the listing, with no changes beside it
    os.rename(os.fsencode(tree / "b.md"), os.fsencode(tree) + b"/\xff.md")  # same number of files
    with pytest.raises(InvalidKeyError):
        Memory(tree).list()


@pytest.mark.parametrize("name", ["sigs", "written_ns"])
def test_a_garbled_signature_blob_in_the_index_is_not_trusted_and_the_next_change_writes_it_again(
    mem: Memory, tree: Path, name: str
) -> None:
    _three(mem)
    with sqlite3.connect(_index(tree)) as conn:
        conn.execute("UPDATE state SET value = ? WHERE name = ?", (b"\xff" * 13, name))
    (tree / "b.md").unlink()  # by hand: the garbled copy must not hide it
    fresh = Memory(tree)
    assert [r.key for r in fresh.list()] == ["a", "c"]
    catalog = catalog_module.Catalog(_index(tree))
    try:
        assert catalog.stat.compare(Scan(_rows(tree)[0], None)) == (True, _rows(tree)[1])
    finally:
        catalog.close()
    assert _blob(tree) == catalog_module.pack(sorted(_rows(tree)[0]), [n for k in sorted(_rows(tree)[0]) for n in _rows(tree)[0][k]])


def test_context_never_shows_a_chosen_memory_whose_file_another_process_forgot(
    mem: Memory, tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _three(mem)
    other = Memory(tree)
    real = catalog_search.Search.ranked

    def ranked_then_a_forget(self: catalog_search.Search, *args: Any, **kwargs: Any) -> object:
        found = real(self, *args, **kwargs)
        if other.read("a") is not None:
            other.forget("a")  # between the ranking and the reading of the chosen files
        return found

    monkeypatch.setattr(catalog_search.Search, "ranked", ranked_then_a_forget)
    block = mem.context_block()
    assert "(`a.md`)" not in block and "(`b.md`)" in block  # the file is gone: its row is never shown


def _derived_fingerprint() -> str:
    """What the stored rows are derived by: the schema, the ranking constants and formulas, the folding, the
    secret rules the search text is withheld by, and the text and encoding of the vectors."""
    import inspect

    from bundlekit import _secrets as secrets
    from bundlekit.memory import ranking, semantic, withhold

    parts = [
        catalog_database._SCHEMA, catalog_database._FTS, *catalog_database._TERMS, catalog_database._PLAIN, inspect.getsource(catalog_search._fold),
        repr(sorted(ranking.TYPE_BONUS.items())), repr(ranking.HALF_LIFE), repr(sorted(ranking.DECAY_HORIZONS.items())),
        inspect.getsource(ranking.salience), inspect.getsource(ranking.piece_length), inspect.getsource(ranking.basis),
        repr([(name, pattern) for name, _d, pattern, *_rest in secrets._SPECS]), inspect.getsource(withhold.mask),
        inspect.getsource(indexer.row_of), inspect.getsource(index_module.list_fields), inspect.getsource(index_module.list_rest),
        # The vectors: the text they are of and how they are stored.
        inspect.getsource(semantic.embedded_text), inspect.getsource(semantic.embedded_head), inspect.getsource(semantic.encode), repr(semantic.VECTOR_DTYPE),
    ]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def test_derived_version_covers_the_rules_the_index_is_derived_by() -> None:
    # A change of any of them (a new secret rule, a ranking constant, a column) must bump DERIVED_VERSION, which
    # makes every existing index rebuild itself; then update both numbers here. (10: the vectors of recall by meaning;
    # 11: the stemmed terms of BM25; 12: the `memory list` line stored after its key, one column)
    assert (catalog_module.DERIVED_VERSION, _derived_fingerprint()) == (12, "f0222aa9f95094fa")


@settings(max_examples=300, deadline=None)
@given(
    rows=st.dictionaries(_FILE, _SIG, max_size=14),
    changes=st.dictionaries(_FILE, st.one_of(_SIG, st.none()), max_size=5),
)
def test_a_blob_spliced_with_a_transactions_changes_is_the_blob_of_the_rows_after_them(
    rows: dict[str, tuple[int, int, int]], changes: dict[str, tuple[int, int, int] | None]
) -> None:
    def blob(of: dict[str, tuple[int, int, int]]) -> bytes:
        names = sorted(of, key=str.encode)
        return catalog_module.pack(names, [n for name in names for n in of[name]])

    after = {**rows, **{k: v for k, v in changes.items() if v is not None}}
    for name in [k for k, v in changes.items() if v is None]:
        after.pop(name, None)
    assert catalog_stat._spliced(blob(rows), changes) == blob(after)
    few = catalog_stat._FEW  # and the same by splitting the names out, as many changes are spliced
    catalog_stat._FEW = 0
    try:
        assert catalog_stat._spliced(blob(rows), changes) == blob(after)
    finally:
        catalog_stat._FEW = few


@settings(max_examples=200, deadline=None)
@given(
    old=st.one_of(st.none(), st.integers(0, 3), st.binary(max_size=20_000)),
    edits=st.lists(st.tuples(st.integers(0, 20_000), st.binary(min_size=1, max_size=30)), max_size=6),
    grow=st.integers(-3, 3),
)
def test_a_bytes_state_value_written_by_its_differing_pieces_is_the_value_set_whole(
    old: bytes | int | None, edits: list[tuple[int, bytes]], grow: int
) -> None:
    # Database.set_bytes writes only the 4 KiB pieces that differ (SQLite's incremental blob I/O) when the value
    # keeps its length: what is stored is exactly the new value, as set() stores it, whatever the old one was.
    base = old if isinstance(old, bytes) else b""
    new = bytearray(base)
    for at, data in edits:
        at = min(at, len(new))
        new[at : at + len(data)] = data[: max(len(new) - at, 0)] or data
    value = bytes(new) + b"\x07" * max(grow, 0) if grow >= 0 else bytes(new)[:grow]
    db = catalog_database.Database(None)
    try:
        with db.transaction():
            if old is not None:
                db.set("sigs", old)
        with db.transaction():
            db.set_bytes("sigs", value)
        assert db.state_blob("sigs") == value
    finally:
        db.conn.close()


def test_list_and_bundle_records_are_in_key_order_not_file_name_order(mem: Memory) -> None:
    # "a-b.md" sorts before "a.md" by file name ('-' < '.'); keys sort "a" first.
    for key in ("a-b", "a", "a.b"):
        mem.write(key, **fields(name=key.upper()))
    assert [line.split("\t")[0] for line in mem.list_lines()] == ["a", "a-b", "a.b"]
    with mem.transaction(lock=False) as tx:
        files, records = tx.contents()
    assert [r.key for r in records] == ["a", "a-b", "a.b"] == [r.key for r in mem.list()]
    assert dict(files)["a.md"] == next(r.raw for r in records if r.key == "a").encode()
