"""Magic Context SQLite project memory and its injected <project-memory> form."""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bundlekit.convert._common import Entry, ForeignTree
from bundlekit.convert.magic_context import (
    project_identity,
    read_magic_context,
    render_project_memory,
    write_magic_context,
)
from bundlekit.errors import ConvertError

from .conftest import NOW_MS, OTHER_PROJECT, PROJECT, through_bundlekit


def clock() -> datetime:
    return datetime.fromtimestamp(NOW_MS / 1000, UTC)


def read(db: Path) -> ForeignTree:
    return read_magic_context(db, project=PROJECT, clock=clock)


def rows(db: Path) -> list[dict[str, object]]:
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute("SELECT * FROM memories ORDER BY id")]
    finally:
        conn.close()


def test_imports_active_and_permanent_unexpired_memories_of_the_project(mc_db: Path) -> None:
    assert [e.meta["x-magic-context-id"] for e in read(mc_db).entries] == [1, 6, 2]


def test_category_is_kept_and_mapped_to_a_type(mc_db: Path) -> None:
    e = {e.key: e for e in read(mc_db).entries}["architecture-1"]
    assert (e.meta["x-magic-context-category"], e.meta["type"]) == ("ARCHITECTURE", "project")
    assert e.body == "Event sourcing for orders because audit trail is a hard requirement."


def test_permanent_maps_to_important(mc_db: Path) -> None:
    e = {e.key: e for e in read(mc_db).entries}["project_rules-2"]
    assert e.meta["important"] is True


def test_millisecond_times_become_utc(mc_db: Path) -> None:
    e = {e.key: e for e in read(mc_db).entries}["architecture-1"]
    assert e.meta["created"] == "2026-05-27T20:26:40Z"


def test_import_opens_the_database_read_only(mc_db: Path) -> None:
    mc_db.chmod(0o444)
    before = mc_db.read_bytes()
    read(mc_db)
    assert mc_db.read_bytes() == before


def test_missing_table_is_refused(tmp_path: Path) -> None:
    sqlite3.connect(tmp_path / "empty.db").close()
    with pytest.raises(ConvertError, match="not a Magic Context database"):
        read_magic_context(tmp_path / "empty.db", project=PROJECT)


def test_round_trip_through_bundlekit_restores_rows(mc_db: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.db"
    write_magic_context(through_bundlekit(read(mc_db)), out)
    live = {1, 2, 6}
    assert rows(out) == [r for r in rows(mc_db) if r["id"] in live]


def test_export_refuses_an_existing_database(mc_db: Path) -> None:
    with pytest.raises(ConvertError, match="already exists"):
        write_magic_context(read(mc_db), mc_db)


def test_native_memories_get_a_category_from_their_type(tmp_path: Path) -> None:
    tree = ForeignTree(
        [
            Entry(
                "naming",
                {
                    "name": "n",
                    "description": "d",
                    "type": "reference",
                    "important": True,
                    "created": "2026-01-01T00:00:00Z",
                    "updated": "2026-01-01T00:00:00Z",
                },
                "Config lives in settings.toml",
            )
        ]
    )
    write_magic_context(tree, tmp_path / "o.db", project=OTHER_PROJECT)
    (row,) = rows(tmp_path / "o.db")
    assert (row["category"], row["status"], row["project_path"]) == (
        "CONFIG_VALUES",
        "permanent",
        OTHER_PROJECT,
    )
    assert row["created_at"] == 1_767_225_600_000


def test_export_without_a_project_is_refused(tmp_path: Path) -> None:
    tree = ForeignTree(
        [
            Entry(
                "x",
                {
                    "name": "n",
                    "description": "d",
                    "type": "user",
                    "created": "2026-01-01T00:00:00Z",
                    "updated": "2026-01-01T00:00:00Z",
                },
                "b",
            )
        ]
    )
    with pytest.raises(ConvertError, match="pass --project git:<root sha>"):
        write_magic_context(tree, tmp_path / "o.db")


def test_project_identity_is_the_root_commit(tmp_path: Path) -> None:
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@x",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@x",
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
    }

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=tmp_path, env=env, check=True, capture_output=True, text=True
        ).stdout.strip()

    git("init", "-q")
    git("commit", "-q", "--allow-empty", "-m", "root")
    root = git("rev-parse", "HEAD")
    git("commit", "-q", "--allow-empty", "-m", "second")
    assert project_identity(tmp_path) == f"git:{root}"


def test_project_identity_outside_a_repository_is_the_md5_prefix_of_the_path(tmp_path: Path) -> None:
    # ahrav/magic-context memory/project-identity.ts directoryFallback: md5(path.resolve(dir)).slice(0, 12)
    digest = hashlib.md5(str(tmp_path).encode()).hexdigest()[:12]
    assert project_identity(tmp_path) == f"dir:{digest}"


def test_project_identity_of_a_missing_directory_says_what_to_pass(tmp_path: Path) -> None:
    with pytest.raises(ConvertError, match="git:<sha>"):
        project_identity(tmp_path / "gone")


class Rec:
    def __init__(self, key: str, meta: dict[str, object], body: str) -> None:
        self.key, self.meta, self.body = key, meta, body


class Lister:
    def __init__(self, records: list[Rec]) -> None:
        self.records = records

    def list(self) -> list[Rec]:
        return self.records


def rec(key: str, category: str | None, updated: str, body: str, **meta: object) -> Rec:
    m: dict[str, object] = {"name": key, "description": key, "type": "project", "updated": updated, **meta}
    if category:
        m["x-magic-context-category"] = category
    return Rec(key, m, body)


def test_renders_categories_in_priority_order_then_recency() -> None:
    mem = Lister(
        [
            rec("a", "NAMING", "2026-01-01T00:00:00Z", "kebab-case", **{"x-magic-context-id": 7}),
            rec("b", "ARCHITECTURE", "2026-01-01T00:00:00Z", "old fact", **{"x-magic-context-id": 3}),
            rec(
                "c",
                "ARCHITECTURE",
                "2026-02-01T00:00:00Z",
                "new fact\nsecond line",
                **{"x-magic-context-id": 4},
            ),
            rec("d", "PROJECT_RULES", "2026-01-01T00:00:00Z", "one approval", **{"x-magic-context-id": 1}),
        ]
    )
    assert render_project_memory(mem) == (
        "<project-memory>\n"
        "<PROJECT_RULES>\n#1: one approval\n</PROJECT_RULES>\n"
        "<ARCHITECTURE>\n#4: new fact second line\n#3: old fact\n</ARCHITECTURE>\n"
        "<NAMING>\n#7: kebab-case\n</NAMING>\n"
        "</project-memory>"
    )


def test_memory_without_an_id_or_category_uses_key_and_type() -> None:
    out = render_project_memory(
        Lister([Rec("style", {"type": "feedback", "updated": "2026-01-01T00:00:00Z"}, "Tabs")])
    )
    assert out == "<project-memory>\n<PROJECT_RULES>\n#style: Tabs\n</PROJECT_RULES>\n</project-memory>"


def test_budget_trims_least_important_memories_first() -> None:
    mem = Lister(
        [
            rec("big", "PROJECT_RULES", "2026-03-01T00:00:00Z", "x" * 60),
            rec("pinned", "NAMING", "2026-01-01T00:00:00Z", "kept", important=True),
        ]
    )
    out = render_project_memory(mem, max_tokens=20)
    assert "#pinned: kept" in out and "#big" not in out
    assert len(out) <= 80


def test_empty_memory_renders_nothing() -> None:
    assert render_project_memory(Lister([])) == ""


def test_memory_context_cli_renders_the_magic_context_form(mc_db: Path, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from bundlekit.cli import cli
    from bundlekit.convert import import_from

    import_from("magic-context", mc_db, tmp_path / "mem", project=PROJECT, clock=clock)
    result = CliRunner().invoke(
        cli, ["memory", "-d", str(tmp_path / "mem"), "context", "--style", "magic-context"]
    )
    assert result.exit_code == 0, result.output
    assert result.stdout == (
        "<project-memory>\n"
        "<PROJECT_RULES>\n#2: All PRs require at least one approval before merge.\n</PROJECT_RULES>\n"
        "<ARCHITECTURE>\n#1: Event sourcing for orders because audit trail is a hard requirement.\n"
        "</ARCHITECTURE>\n"
        "<CONFIG_VALUES>\n#6: injection_budget_tokens defaults to 4000.\n</CONFIG_VALUES>\n"
        "</project-memory>\n"
    )


def test_archived_memories_do_not_inject() -> None:
    mem = Lister(
        [
            rec("a", "NAMING", "2026-01-01T00:00:00Z", "old", **{"x-magic-context-status": "archived"}),
            rec("b", "NAMING", "2026-01-01T00:00:00Z", "live"),
        ]
    )
    assert render_project_memory(mem) == "<project-memory>\n<NAMING>\n#b: live\n</NAMING>\n</project-memory>"


def hostile_db(path: Path, columns: str, values: tuple[object, ...], stats: tuple[object, object] | None = None) -> Path:
    conn = sqlite3.connect(path)
    conn.execute(f"CREATE TABLE memories ({columns})")
    conn.execute(f"INSERT INTO memories VALUES ({', '.join('?' * len(values))})", values)
    if stats is not None:
        conn.execute("CREATE TABLE memory_stats (memory_id, updated_at)")
        conn.execute("INSERT INTO memory_stats VALUES (?, ?)", stats)
    conn.commit()
    conn.close()
    return path


COLUMNS = "id, project_path, category, content, status, created_at, updated_at, expires_at"


@pytest.mark.parametrize(
    ("values", "column"),
    [
        ((1, PROJECT, "NAMING", "x", "active", 1, 2, "soon"), "expires_at"),
        (("abc", PROJECT, "NAMING", "x", "active", 1, 2, None), "id"),
        ((1, PROJECT, "NAMING", "x", "active", "yesterday", 2, None), "created_at"),
        ((1, PROJECT, "NAMING", "x", "active", 1, 10**17, None), "updated_at"),
    ],
)
def test_a_column_that_is_not_the_plugins_integer_is_refused_naming_it(
    tmp_path: Path, values: tuple[object, ...], column: str
) -> None:
    # storage-db.ts (ahrav/magic-context 413bb72) declares id and the *_at times INTEGER (milliseconds).
    db = hostile_db(tmp_path / "x.db", COLUMNS, values)
    with pytest.raises(ConvertError, match=f"column '{column}' is not"):
        read(db)


def test_a_stats_row_that_is_not_the_plugins_is_refused_naming_it(tmp_path: Path) -> None:
    db = hostile_db(tmp_path / "x.db", COLUMNS, (1, PROJECT, "NAMING", "x", "active", 1, 2, None), ("x", "y"))
    with pytest.raises(ConvertError, match="memory_stats row 'x': column 'memory_id' is not an integer"):
        read(db)


def test_content_that_is_not_text_is_refused(tmp_path: Path) -> None:
    db = hostile_db(tmp_path / "x.db", COLUMNS, (1, PROJECT, "NAMING", b"\xff\xfe", "active", 1, 2, None))
    with pytest.raises(ConvertError, match="'content' is not text"):
        read(db)
