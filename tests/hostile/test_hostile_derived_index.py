"""A tampered derived index never decides the bytes that leave: they come from the files (issue 24, item 2).

The index (``<tree>/.bundlekit/index.sqlite``) may choose and rank memories; what
``show``, ``recall``, ``context`` and ``build`` give out is read from the memory
files at that moment and passed through the secret guard there; ``memory list``
is formatted from the index's listing fields, but only for rows that are exactly
the files of the tree's listing (specs/memory.md, "Derived index"). Each test here edits the index as an
attacker with write access to the tree would, then compares with the same tree
whose index was deleted.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from bundlekit.bundle.build import BuildOptions, build_bundle
from bundlekit.errors import SecretDetectedError
from bundlekit.memory import Memory
from bundlekit.memory.catalog import CATALOG_FILE
from bundlekit.memory.catalog import database as catalog_database
from bundlekit.memory.naming import HIDDEN_DIR

CREATED = datetime(2026, 4, 14, 12, 0, 0, tzinfo=UTC)
OLD_NS = 1_600_000_000 * 10**9  # 2020: a settled file, far outside the racy window of any index write
INJECTED = "INJECTED by the index"


def _index(tree: Path) -> Path:
    return tree / HIDDEN_DIR / CATALOG_FILE


def _drop_index(tree: Path) -> None:
    for path in (tree / HIDDEN_DIR).glob(CATALOG_FILE + "*"):
        path.unlink()


def _settled_tree(root: Path) -> Path:
    """A tree of three memories whose files are old (no racy row): the index vouches for them by signature."""
    mem = Memory(root)
    mem.write("drills", name="Drills", description="kick drills", type="feedback", body="kick drills on saturday")
    mem.write("striker", name="Striker", description="volleys", type="user", body="the striker volley")
    mem.write("rondo", name="Rondo", description="warm up", type="project", body="rondo then sprint")
    mem.close()
    for path in root.glob("*.md"):
        os.utime(path, ns=(OLD_NS, OLD_NS))
    _drop_index(root)
    Memory(root).list()  # indexed again: every row settled
    return root


def _sql(tree: Path, *statements: tuple[str, tuple[object, ...]]) -> None:
    with sqlite3.connect(_index(tree)) as conn:
        for statement, params in statements:
            conn.execute(statement, params)


def _build(tree: Path, out: Path) -> str:
    return build_bundle(tree, out, options=BuildOptions(created=CREATED)).root_cid


def _file_keys(tree: Path) -> list[str]:
    return sorted(path.name[:-3] for path in tree.glob("*.md") if path.name != "MEMORY.md")


def _listed_keys(mem: Memory) -> list[str]:
    return [line.split("\t")[0] for line in mem.list_lines()]


def _outputs(tree: Path, out: Path) -> tuple[object, ...]:
    """What leaves from the files: shown bodies, recall hits' files, the context block, the built bundle. The
    ``memory list`` lines are formatted from the index's listing fields (specs/memory.md, "Derived index"):
    their keys, which must be exactly the files', are returned in their place."""
    mem = Memory(tree)
    shown = mem.read("drills", withhold=True)
    hits = [(h.key, h.record.raw) for h in mem.recall("kick")]
    result = (shown.raw if shown else None, _listed_keys(mem), hits, mem.context_block(), mem.bundle_files())
    mem.close()
    return (*result, _build(tree, out))


def test_text_injected_into_a_settled_row_is_never_shown_nor_published(tmp_path: Path) -> None:
    tree = _settled_tree(tmp_path / "tree")
    _sql(
        tree,
        ("UPDATE search SET body = ?, name = ?", (INJECTED.casefold(), INJECTED.casefold())),
        ("UPDATE memory SET piece = 5, salience = 9, sha256 = zeroblob(32) WHERE key = 'drills'", ()),
        ("UPDATE memory SET line = ? WHERE key = 'rondo'", (f"project\tr1\tx\t{INJECTED} \u2014 {INJECTED}",)),
    )
    tampered = _outputs(tree, tmp_path / "a.car")
    assert all(INJECTED not in str(part) for part in tampered)
    assert tampered[1] == _file_keys(tree)
    _drop_index(tree)
    assert tampered == _outputs(tree, tmp_path / "b.car")  # as with no index at all


def test_a_hand_edited_listing_line_changes_only_that_line_of_memory_list_never_its_key(tmp_path: Path) -> None:
    # The documented consequence (specs/memory.md): `memory list` prints the index's line after the file's key.
    tree = _settled_tree(tmp_path / "tree")
    _sql(tree, ("UPDATE memory SET line = replace(line, 'Rondo', ?) WHERE key = 'rondo'", (INJECTED,)))
    mem = Memory(tree)
    assert [line for line in mem.list_lines() if INJECTED in line] == [
        f"rondo\tproject\tr1\t{mem.read('rondo').meta['updated']}\t{INJECTED} — warm up"  # type: ignore[union-attr]
    ]
    assert INJECTED not in mem.context_block() and INJECTED not in mem.read("rondo").raw  # type: ignore[union-attr]


def test_a_credential_put_into_a_listing_field_is_never_listed(tmp_path: Path) -> None:
    credential = "sk-ant-api03-" + "Ab3Xy9" * 5
    tree = _settled_tree(tmp_path / "tree")
    _sql(tree, ("UPDATE memory SET line = replace(line, 'warm up', ?) WHERE key = 'rondo'", (credential,)))
    mem = Memory(tree)
    text = mem.list_text()
    assert credential not in text and "Rondo — warm up" in text  # the line is made from its file instead
    _drop_index(tree)
    assert Memory(tree).list_text() == text


def test_a_line_break_put_into_a_listing_field_cannot_forge_a_row(tmp_path: Path) -> None:
    tree = _settled_tree(tmp_path / "tree")
    forged = "Rondo\nghost\tuser\tr1\t2026-04-14T12:00:00Z\tGhost \u2014 " + INJECTED
    _sql(tree, ("UPDATE memory SET line = replace(line, 'Rondo', ?) WHERE key = 'rondo'", (forged,)))
    mem = Memory(tree)
    assert _listed_keys(mem) == _file_keys(tree) and INJECTED not in mem.list_text()


def test_a_row_without_a_line_cannot_make_room_for_a_forged_one(tmp_path: Path) -> None:
    # SQLite's group_concat leaves a NULL out: a line break forged into one row's line, with another row's line
    # NULL (the schema refuses it; writable_schema does not), would keep the count of line breaks right.
    tree = _settled_tree(tmp_path / "tree")
    with sqlite3.connect(_index(tree)) as conn:
        conn.execute("PRAGMA writable_schema = ON")
        conn.execute("UPDATE sqlite_master SET sql = replace(sql, 'line TEXT NOT NULL', 'line TEXT') WHERE name = 'memory'")
    with sqlite3.connect(_index(tree)) as conn:
        conn.execute("UPDATE memory SET line = NULL WHERE key = 'striker'")
        conn.execute("UPDATE memory SET line = line || ? WHERE key = 'rondo'", ("\nghost\tuser\tr1\tx\t" + INJECTED,))
    mem = Memory(tree)
    text = mem.list_text()
    assert _listed_keys(mem) == _file_keys(tree) and INJECTED not in text
    _drop_index(tree)
    assert Memory(tree).list_text() == text


def test_keys_swapped_between_rows_never_reorder_memory_list(tmp_path: Path) -> None:
    # The lines come in the order of the key column's index: a key that is not its file's is not trusted for it.
    tree = _settled_tree(tmp_path / "tree")
    _sql(tree, ("UPDATE memory SET key = 'tmp' WHERE key = 'drills'", ()),
         ("UPDATE memory SET key = 'drills' WHERE key = 'striker'", ()),
         ("UPDATE memory SET key = 'striker' WHERE key = 'tmp'", ()))
    text = Memory(tree).list_text()
    assert _listed_keys(Memory(tree)) == _file_keys(tree) == ["drills", "rondo", "striker"]
    _drop_index(tree)
    assert Memory(tree).list_text() == text


def test_rows_renamed_behind_an_agreeing_signature_blob_are_listed_from_the_files(tmp_path: Path) -> None:
    tree = _settled_tree(tmp_path / "tree")
    _sql(tree, ("UPDATE memory SET file = 'ghost.md', key = 'ghost', line = ? WHERE key = 'rondo'", (INJECTED,)))
    mem = Memory(tree)
    text = mem.list_text()
    assert _listed_keys(mem) == _file_keys(tree) and INJECTED not in text
    _drop_index(tree)
    assert Memory(tree).list_text() == text


def test_a_row_with_no_file_behind_it_never_appears(tmp_path: Path) -> None:
    tree = _settled_tree(tmp_path / "tree")
    with sqlite3.connect(_index(tree)) as conn:
        # A ghost row, and the signature blob and generation kept agreeing with the listing: the index vouches.
        gen = conn.execute("SELECT value FROM state WHERE name = 'gen'").fetchone()[0]
        conn.execute(
            "INSERT INTO memory (file, key, type, ino, mtime_ns, size, sha256, salience, updated, horizon, piece, "
            "line, withheld) VALUES ('ghost.md', 'ghost', 'feedback', 1, 1, "
            "1, zeroblob(32), 1.0, 4e9, NULL, 10, 'feedback\tr1\t2026-04-14T12:00:00Z\tGhost \u2014 kick', 0)"
        )
        rowid = conn.execute("SELECT id FROM memory WHERE key = 'ghost'").fetchone()[0]
        conn.execute("INSERT INTO search (rowid, name, description, body) VALUES (?, 'ghost', 'kick', 'kick')", (rowid,))
        conn.execute("INSERT INTO memory (file, key, type, ino, mtime_ns, size, sha256, salience, updated, horizon, "
                     "piece, line, withheld) VALUES ('../../outside.md', "
                     "'../../outside', 'user', 1, 1, 1, zeroblob(32), 1.0, 4e9, NULL, 10, 'user\tr1\tx\tOutside \u2014 o', 0)")
        conn.execute("UPDATE state SET value = ? WHERE name IN ('gen', 'sigs_gen')", (gen,))
    (tmp_path / "outside.md").write_text("---\nname: Outside\n---\nnot a memory of this tree\n", encoding="utf-8")
    mem = Memory(tree)
    assert _listed_keys(mem) == ["drills", "rondo", "striker"]
    assert "Ghost" not in mem.list_text() and "Outside" not in mem.list_text()
    assert [h.key for h in mem.recall("kick")] == ["drills"]
    block = mem.context_block()
    assert "ghost" not in block and "Outside" not in block and "ghost" not in mem.index_text()
    assert [path for path, _data in mem.bundle_files()] == ["MEMORY.md", "drills.md", "rondo.md", "striker.md"]


def _plant_in_place(path: Path, old: str, new: str) -> None:
    """Replace ``old`` by ``new`` (same length) in the file, keeping its inode, size and mtime."""
    st_ = path.stat()
    text = path.read_text(encoding="utf-8")
    assert len(old.encode()) == len(new.encode()) and old in text
    with path.open("r+", encoding="utf-8") as handle:  # in place: same inode
        handle.write(text.replace(old, new))
    os.utime(path, ns=(st_.st_atime_ns, st_.st_mtime_ns))
    after = path.stat()
    assert (after.st_ino, after.st_mtime_ns, after.st_size) == (st_.st_ino, st_.st_mtime_ns, st_.st_size)


def test_an_in_place_edit_keeping_the_signature_that_hides_a_credential_is_refused_by_build(tmp_path: Path) -> None:
    escaped = '"\\x73k-ant-api03-' + "Ab3Xy9" * 5 + '"'  # YAML reads sk-ant-api03-...: a credential
    tree = tmp_path / "tree"
    mem = Memory(tree)
    mem.write("deploy", name="Deploy", description="p" * len(escaped), type="reference", body="rotate monthly")
    mem.close()
    os.utime(tree / "deploy.md", ns=(OLD_NS, OLD_NS))
    _drop_index(tree)
    Memory(tree).list()  # settled: the index vouches for the file by its signature
    _plant_in_place(tree / "deploy.md", "p" * len(escaped), escaped)
    with pytest.raises(SecretDetectedError) as tampered:
        _build(tree, tmp_path / "a.car")
    assert not (tmp_path / "a.car").exists()
    _drop_index(tree)
    with pytest.raises(SecretDetectedError) as without_index:
        _build(tree, tmp_path / "b.car")
    assert str(tampered.value) == str(without_index.value)


def test_an_in_place_edit_keeping_the_signature_is_shown_and_published_as_the_file_holds_it(tmp_path: Path) -> None:
    tree = _settled_tree(tmp_path / "tree")
    _plant_in_place(tree / "drills.md", "kick drills on saturday", "lob passes on saturday!")
    mem = Memory(tree)
    shown = mem.read("drills")
    assert shown is not None and shown.body == "lob passes on saturday!"
    assert "lob passes" in mem.context_block() and [h.key for h in mem.recall("lob passes")] == ["drills"]
    files = dict(mem.bundle_files())
    assert files["drills.md"] == (tree / "drills.md").read_bytes()


# -- random tampering ----------------------------------------------------------------------------------

_COLUMNS = ["file", "key", "type", "ino", "mtime_ns", "size", "sha256", "salience", "updated", "horizon", "piece",
            "line", "withheld"]
_VALUES = st.one_of(
    st.integers(-(2**63), 2**63 - 1), st.floats(allow_nan=True), st.text(max_size=12), st.binary(max_size=40),
    st.none(), st.sampled_from(["drills", "drills.md", "ghost", "ghost.md", "../x.md", "user", INJECTED]),
)
_STATE = st.sampled_from(["gen", "sigs", "sigs_gen", "written_ns", "index_gen", "index_ino", "fts"])
_OPS = st.one_of(
    st.tuples(st.just("update"), st.sampled_from(_COLUMNS), _VALUES, st.integers(0, 3)),
    st.tuples(st.just("insert"), st.lists(_VALUES, min_size=len(_COLUMNS), max_size=len(_COLUMNS))),
    st.tuples(st.just("delete"), st.integers(0, 3)),
    st.tuples(st.just("state"), _STATE, _VALUES),
    st.tuples(st.just("search"), st.sampled_from(["name", "description", "body"]), st.text(max_size=30)),
    st.tuples(st.just("flip"), st.integers(0, 2**20), st.integers(1, 255)),
)


def _tamper(tree: Path, ops: list[tuple[object, ...]]) -> None:
    path = _index(tree)
    for op in ops:
        kind = op[0]
        if kind == "flip":
            data = bytearray(path.read_bytes())
            at = int(op[1]) % len(data)  # type: ignore[call-overload]
            data[at] ^= int(op[2])  # type: ignore[call-overload]
            path.write_bytes(bytes(data))
            continue
        try:
            with sqlite3.connect(path) as conn:
                if kind == "update":
                    ids = [r[0] for r in conn.execute("SELECT id FROM memory ORDER BY id")]
                    if ids:
                        conn.execute(f"UPDATE memory SET {op[1]} = ? WHERE id = ?", (op[2], ids[int(op[3]) % len(ids)]))  # type: ignore[call-overload]
                elif kind == "insert":
                    conn.execute(f"INSERT INTO memory ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))})",
                                 tuple(op[1]))  # type: ignore[arg-type]
                elif kind == "delete":
                    ids = [r[0] for r in conn.execute("SELECT id FROM memory ORDER BY id")]
                    if ids:
                        conn.execute("DELETE FROM memory WHERE id = ?", (ids[int(op[1]) % len(ids)],))  # type: ignore[call-overload]
                elif kind == "state":
                    conn.execute("UPDATE state SET value = ? WHERE name = ?", (op[2], op[1]))
                else:
                    conn.execute(f"UPDATE search SET {op[1]} = ?", (op[2],))
            conn.close()
        except (sqlite3.Error, UnicodeDecodeError):  # sqlite3 raises the latter for text that is not UTF-8
            continue  # a constraint or a file already flipped into garbage: the next op, or none


def _shown_and_built(tree: Path) -> tuple[object, ...]:
    mem = Memory(tree)
    try:
        shown = {key: mem.read(key) for key in ("drills", "striker", "rondo")}
        bodies = {key: (r.raw if r else None) for key, r in shown.items()}
        hits = [(h.key, h.record.raw) for h in mem.recall("kick")]
        files = mem.bundle_files()
        listed = _listed_keys(mem)
    finally:
        mem.close()
    assert listed == _file_keys(tree)  # no ghost row, no file left out: the listing's keys are the files'
    return bodies, files, all(raw == (tree / f"{key}.md").read_text(encoding="utf-8") for key, raw in hits)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, tuple[object, ...]]:
    root = _settled_tree(tmp_path_factory.mktemp("template") / "tree")
    with sqlite3.connect(_index(root)) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # everything in the main file: byte flips reach it
    reference = tmp_path_factory.mktemp("reference") / "tree"
    shutil.copytree(root, reference)
    _drop_index(reference)
    return root, _shown_and_built(reference)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(_OPS, min_size=1, max_size=6))
# A row of a type this program never writes (SQLite keeps whatever it is given): found by this test, it
# reached the signature comparison and ended the command in a TypeError; such an index is now rebuilt.
@example(ops=[("insert", [b"", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, "", 0])])
@example(ops=[("insert", ["x.md", "x", "user", "one", 0, 0, b"", 1.0, 4e9, None, 1, "user\tr1\tx\tX \u2014 x", 0])])
@example(ops=[("insert", ["x.md", "x", "user", 1, 1, 1, b"", 1.0, 4e9, None, 1, "user\tr1\tx\tX \u2014 x", 0]),
              ("state", "sigs_gen", None)])  # a ghost row the index vouches for: never listed
# A flipped byte that SQLite hands back as text that is not UTF-8 (Python's sqlite3 then raises
# UnicodeDecodeError, no sqlite3.Error): found by this test; such an index is rebuilt.
@example(ops=[("flip", 199726, 128)])
def test_random_tampering_of_the_index_never_changes_a_built_bundle_nor_a_shown_body(
    template: tuple[Path, tuple[object, ...]], tmp_path_factory: pytest.TempPathFactory,
    ops: list[tuple[object, ...]],
) -> None:
    root, expected = template
    tree = tmp_path_factory.mktemp("tampered") / "tree"
    shutil.copytree(root, tree)
    _tamper(tree, ops)
    bodies, files, hits_from_files = _shown_and_built(tree)
    assert (bodies, files) == expected[:2]
    assert hits_from_files  # every recall hit is its file as it is, whatever the index chose


@pytest.mark.parametrize("rank", ["relevance", "hybrid"])
def test_terms_rows_of_no_memory_making_every_word_common_never_hide_the_memory(tmp_path: Path, rank: str) -> None:
    """Rows put into the ``terms`` index for no memory make ``terms_df`` say every word of the query is in more
    memories than there are (BM25 skipped them all as common: ``relevance`` found nothing): such a count is not
    believed, the words are searched, the rows of no memory rank nothing (issue 38's attack)."""
    tree = tmp_path / "m"
    mem = Memory(tree)
    mem.write("deploy", name="Deploy runbook", description="how to ship the api", type="project", body="Run make deploy.")
    for key in "abcd":
        mem.write(key, name=f"{key} thing", description="other", type="user", body=f"unrelated {key}")
    mem.close()
    with sqlite3.connect(_index(tree)) as conn:
        conn.executemany("INSERT INTO terms (rowid, name, description, body) VALUES (?, 'deploy runbook', 'x', 'y')",
                         [(1000 + i,) for i in range(50)])
    assert [hit.key for hit in Memory(tree).recall("deploy runbook", limit=1, rank=rank)] == ["deploy"]


_CREDENTIAL = "sk-ant-api03-" + "Ab3Xy9" * 5
_FORGERIES = st.one_of(
    st.tuples(st.just("swap"), st.integers(0, 5), st.integers(0, 5)),
    st.tuples(st.sampled_from(["delete", "rename", "newline", "credential", "null", "dup", "blob"]), st.integers(0, 5)),
    st.tuples(st.just("ghost")),
)
_WORDS = st.text(alphabet="abcXYZ é—\u00a0-_.", min_size=1, max_size=12).map(str.strip).filter(bool)
_ROW = "file, key, type, ino, mtime_ns, size, sha256, salience, updated, horizon, piece, line, withheld"


def _forge(tree: Path, forgery: tuple[object, ...]) -> None:
    """One hand edit of the listing rows, leaving the signature blob and generation as they were (one SQLite
    refuses, a constraint, is no edit)."""
    try:
        _forge_schema(tree, str(forgery[0]))
        with sqlite3.connect(_index(tree)) as conn:
            ids = [r[0] for r in conn.execute("SELECT id FROM memory ORDER BY id")]
            picked = [ids[int(n) % len(ids)] for n in forgery[1:]] if ids else []  # type: ignore[call-overload]
            _forge_rows(conn, str(forgery[0]), picked)
    except sqlite3.Error:
        pass


def _forge_schema(tree: Path, kind: str) -> None:
    with sqlite3.connect(_index(tree)) as conn:
        if kind == "null":
            conn.execute("PRAGMA writable_schema = ON")
            conn.execute("UPDATE sqlite_master SET sql = replace(sql, 'line TEXT NOT NULL', 'line TEXT') "
                         "WHERE name = 'memory'")
        elif kind == "dup":  # the table made again without its UNIQUE constraints, as a forger may
            sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'memory'").fetchone()[0]
            conn.execute(sql.replace("CREATE TABLE memory", "CREATE TABLE bare").replace(" UNIQUE", ""))
            conn.execute("INSERT INTO bare SELECT * FROM memory")
            conn.execute("DROP TABLE memory")
            conn.execute("ALTER TABLE bare RENAME TO memory")
            conn.execute("CREATE INDEX memory_by_key ON memory (key)")


def _forge_rows(conn: sqlite3.Connection, kind: str, picked: list[int]) -> None:
    if kind == "ghost":
        conn.execute(f"INSERT INTO memory ({_ROW}) VALUES ('ghost.md', 'ghost', 'user', 1, 1, 1, zeroblob(32), 1.0, "
                     "4e9, NULL, 10, ?, 0)", (f"user\tr1\tx\t{INJECTED}",))
    if not picked:
        return
    one = picked[0]
    if kind == "swap":
        keys = dict(conn.execute("SELECT id, key FROM memory WHERE id IN (?, ?)", (one, picked[1])).fetchall())
        conn.execute("UPDATE memory SET key = '~swap' WHERE id = ?", (one,))
        conn.execute("UPDATE memory SET key = ? WHERE id = ?", (keys[one], picked[1]))
        conn.execute("UPDATE memory SET key = ? WHERE id = ?", (keys[picked[1]], one))
    elif kind == "delete":
        conn.execute("DELETE FROM memory WHERE id = ?", (one,))
    elif kind == "rename":
        conn.execute("UPDATE memory SET file = 'ghost.md', key = 'ghost' WHERE id = ?", (one,))
    elif kind == "newline":
        conn.execute("UPDATE memory SET line = line || ? WHERE id = ?", ("\nghost\tuser\tr1\tx\t" + INJECTED, one))
    elif kind == "credential":
        conn.execute("UPDATE memory SET line = line || ? WHERE id = ?", (" " + _CREDENTIAL, one))
    elif kind == "null":
        conn.execute("UPDATE memory SET line = NULL WHERE id = ?", (one,))
    elif kind == "dup":
        conn.execute(f"INSERT INTO memory ({_ROW}) SELECT {_ROW} FROM memory WHERE id = ?", (one,))
    elif kind == "blob":
        conn.execute("UPDATE memory SET line = CAST(line || ? AS BLOB) WHERE id = ?", (f"\n{INJECTED}", one))


@settings(max_examples=40, deadline=None)
@given(
    memories=st.dictionaries(st.sampled_from(["a", "b", "c_d", "e-f", "zz", "M"]), st.tuples(_WORDS, _WORDS),
                             min_size=0, max_size=5),
    planted=st.booleans(),
    forgeries=st.lists(_FORGERIES, min_size=1, max_size=3),
)
def test_memory_list_after_forged_listing_rows_is_what_a_fresh_index_lists(
    memories: dict[str, tuple[str, str]], planted: bool, forgeries: list[tuple[object, ...]]
) -> None:
    # Rows swapped, deleted, renamed, duplicated, NULL, of no file, a line break or a credential added to a line:
    # the listing is the files', exactly as an index rebuilt from them lists it, escaped, no credential.
    import tempfile

    from bundlekit._terminal import printable

    with tempfile.TemporaryDirectory() as scratch:
        tree = Path(scratch) / "tree"
        mem = Memory(tree)
        mem.init()
        for key, (name, description) in memories.items():
            mem.write(key, name=name, description=description, type="user", body=f"body of {key}")
        if planted:  # a hand-written file: YAML escapes put ESC and RLO in its name and description
            (tree / "evil.md").write_text('---\nname: "E \\e[2J"\ndescription: "d \\u202Ex"\ntype: user\n'
                                          "created: 2026-01-01T00:00:00Z\nupdated: 2026-01-01T00:00:00Z\n---\nb\n",
                                          encoding="utf-8")
        mem.close()
        for path in tree.glob("*.md"):
            os.utime(path, ns=(OLD_NS, OLD_NS))
        _drop_index(tree)
        reference = Memory(tree).list_text()  # also settles every row
        for forgery in forgeries:
            _forge(tree, forgery)
        listed = Memory(tree).list_text()
    assert listed == reference and printable(listed) == listed
    assert INJECTED not in listed and _CREDENTIAL not in listed


@pytest.mark.skipif(not catalog_database.fts5_available(), reason="this SQLite has no FTS5 trigram tokenizer")
@pytest.mark.parametrize("hash_size", [0, -5, "abc", 2**63 - 1, 1, None])
def test_a_forged_fts5_hash_size_never_breaks_what_the_index_finds(tmp_path: Path, hash_size: object) -> None:
    # The hashsize a new index sets (catalog/database.py) lives in each FTS5 table's own configuration: a hand
    # edit of it (out of range, not a number, one byte, the largest integer) changes at most when segments are
    # written, never what a later write indexes and a recall finds.
    tree = _settled_tree(tmp_path / "tree")
    _sql(tree, *((f"UPDATE {table}_config SET v = ? WHERE k = 'hashsize'", (hash_size,)) for table in ("search", "terms")))
    mem = Memory(tree)
    mem.write("zebra", name="Zebra", description="striped", type="project", body="the zebra crossing drill")
    assert [h.key for h in mem.recall("zebra crossing")][:1] == ["zebra"]
    mem.close()
    out = _outputs(tree, tmp_path / "a.car")
    _drop_index(tree)
    assert out == _outputs(tree, tmp_path / "b.car")
