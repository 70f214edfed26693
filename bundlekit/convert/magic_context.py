"""Magic Context project memory (SQLite) <-> neutral records, and its injected form.

Magic Context keeps project memories in the ``memories`` table of a SQLite
database shared by its harnesses. The columns we rely on (``specs/interop.md``):
``id``, ``project_path``, ``category``, ``content``, ``status``, ``importance``,
``seen_count``, ``retrieval_count``, ``created_at``, ``updated_at`` and
``expires_at`` (times in milliseconds since the epoch). Every other column of a
row is carried opaquely in ``x-magic-context-columns`` and written back.

Import opens the database read-only (``file:...?mode=ro``) and takes the
``active`` and ``permanent``, unexpired memories of one project. The project
identity is the plugin's (``memory/project-identity.ts`` and
``memory/normalize-hash.ts`` in ahrav/magic-context): ``git:<sha>`` with the
lexicographically smallest root commit of the repository, ``dir:<first 12 hex
of the MD5 of the absolute path>`` outside git. On current schemas the seen and
retrieval counts and the effective ``updated_at`` live in ``memory_stats``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
import subprocess
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

from bundlekit.convert._common import (
    JS_WHITESPACE,
    Entry,
    ExportPlan,
    ForeignTree,
    first_line,
    format_time,
    parse_time,
    sanitize_key,
    single_line,
    write_planned,
)
from bundlekit.convert._format import Format, kept
from bundlekit.convert._sqlite import ForeignDatabase
from bundlekit.errors import ConvertError
from bundlekit.memory import Memory
from bundlekit.memory.ranking import CHARS_PER_TOKEN

__all__ = [
    "CATEGORIES",
    "CATEGORY_TYPES",
    "DEFAULT_IMPORTANCE",
    "FORMAT",
    "SCHEMA",
    "TYPE_CATEGORIES",
    "directory_identity",
    "normalized_hash",
    "plan_magic_context",
    "project_identity",
    "read_magic_context",
    "render_project_memory",
    "rows_to_tree",
    "write_magic_context",
]

#: The five categories, in injection priority order (the seed's table order).
CATEGORIES = ("PROJECT_RULES", "ARCHITECTURE", "CONSTRAINTS", "CONFIG_VALUES", "NAMING")

#: Category -> bundlekit type.
CATEGORY_TYPES = {
    "PROJECT_RULES": "feedback",
    "ARCHITECTURE": "project",
    "CONSTRAINTS": "project",
    "CONFIG_VALUES": "reference",
    "NAMING": "feedback",
}
#: Bundlekit type -> category, for memories that never were Magic Context's.
TYPE_CATEGORIES = {
    "user": "PROJECT_RULES",
    "feedback": "PROJECT_RULES",
    "project": "ARCHITECTURE",
    "reference": "CONFIG_VALUES",
}

#: The tables export creates: Magic Context's ``memories`` table and the
#: ``memory_stats`` side table, with the column names, types and defaults of
#: the plugin's ``storage-db.ts`` and migration v80 (ahrav/magic-context 413bb72).
SCHEMA = """\
CREATE TABLE IF NOT EXISTS memories (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    project_path TEXT NOT NULL,
    category TEXT NOT NULL,
    content TEXT NOT NULL,
    normalized_hash TEXT NOT NULL,
    importance INTEGER,
    scope TEXT NOT NULL DEFAULT 'project',
    shareable INTEGER NOT NULL DEFAULT 0,
    source_session_id TEXT,
    source_type TEXT DEFAULT 'historian',
    seen_count INTEGER DEFAULT 1,
    retrieval_count INTEGER DEFAULT 0,
    first_seen_at INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    last_seen_at INTEGER NOT NULL,
    last_retrieved_at INTEGER,
    status TEXT DEFAULT 'active',
    expires_at INTEGER,
    verification_status TEXT DEFAULT 'unverified',
    verified_at INTEGER,
    classified_at INTEGER,
    superseded_by_memory_id INTEGER,
    merged_from TEXT,
    metadata_json TEXT,
    mural_cue TEXT,
    mural_cue_hash TEXT,
    mural_cue_at INTEGER,
    mural_cue_rejection_count INTEGER NOT NULL DEFAULT 0,
    UNIQUE(project_path, category, normalized_hash)
);
CREATE TABLE IF NOT EXISTS memory_stats (
    memory_id INTEGER PRIMARY KEY REFERENCES memories(id) ON DELETE CASCADE,
    seen_count INTEGER NOT NULL CHECK (typeof(seen_count) = 'integer' AND seen_count >= 0),
    retrieval_count INTEGER NOT NULL CHECK (typeof(retrieval_count) = 'integer' AND retrieval_count >= 0),
    last_seen_at INTEGER NOT NULL,
    last_retrieved_at INTEGER,
    updated_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_memories_project_status ON memories(project_path, status);
"""

#: What the plugin reads a NULL ``importance`` as (``dreamer/classify.ts``).
DEFAULT_IMPORTANCE = 50

_STATUSES = ("active", "permanent", "archived")
# Columns mapped to bundlekit fields or namespaced keys of their own.
_MAPPED = (
    "id",
    "project_path",
    "category",
    "content",
    "status",
    "importance",
    "seen_count",
    "retrieval_count",
    "created_at",
    "updated_at",
    "expires_at",
)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _from_ms(ms: int) -> datetime:
    return _EPOCH + timedelta(milliseconds=int(ms))


_TIME_COLUMNS = ("created_at", "updated_at", "expires_at", "last_seen_at", "last_retrieved_at")
_INT_COLUMNS = ("id", "memory_id", "importance", "seen_count", "retrieval_count", *_TIME_COLUMNS)


def _checked(row: dict[str, Any], table: str, path: Path) -> dict[str, Any]:
    """``row`` with its integer columns as ints; ``ConvertError`` naming the row and column otherwise.

    The plugin's schema declares them INTEGER (times in milliseconds since the
    epoch); another value means the file is not what the plugin wrote.
    """
    out = dict(row)
    for col in _INT_COLUMNS:
        value = out.get(col)
        if value is None:
            continue
        try:
            if isinstance(value, (bytes, float, bool)):
                raise TypeError(col)
            out[col] = int(value)
            if col in _TIME_COLUMNS:
                _from_ms(out[col])
        except (TypeError, ValueError, OverflowError) as exc:
            what = "a time in milliseconds since the epoch" if col in _TIME_COLUMNS else "an integer"
            raise ConvertError(
                f"{path}: {table} row {row.get('id', row.get('memory_id'))!r}: column {col!r} is not {what} "
                "as Magic Context writes it; is this a Magic Context database?"
            ) from exc
    return out


def _to_ms(dt: datetime) -> int:
    return (dt - _EPOCH) // timedelta(milliseconds=1)


_ROOT_SHA = re.compile(r"^[0-9a-f]{7,64}$")
# JavaScript's \s and String.prototype.trim (what the plugin's normalisation uses), not Python's whitespace set.
_JS_SPACES = re.compile("[" + re.escape(JS_WHITESPACE) + "]+")


def normalized_hash(content: str) -> str:
    """The plugin's ``normalized_hash``: MD5 hex of the content lower-cased, whitespace runs to one space, trimmed.

    Whitespace is JavaScript's ``\\s`` set, so the hash matches the one its
    idempotent insert (``UNIQUE(project_path, category, normalized_hash)``) compares.
    """
    normalized = _JS_SPACES.sub(" ", content.lower()).strip(JS_WHITESPACE)
    return hashlib.md5(normalized.encode("utf-8"), usedforsecurity=False).hexdigest()


def directory_identity(path: str) -> str:
    """``dir:<first 12 hex digits of the MD5 of the absolute path>``: the identity outside git."""
    digest = hashlib.md5(os.path.abspath(path).encode("utf-8"), usedforsecurity=False).hexdigest()
    return f"dir:{digest[:12]}"


def project_identity(repo: str | os.PathLike[str] | None = None) -> str:
    """The Magic Context project identity of the directory ``repo`` (default: the current directory).

    In a git repository with a commit: ``git:<sha>``, the lexicographically
    smallest root commit (``git rev-list --max-parents=0 HEAD``; a grafted
    history has several). Elsewhere (no repository, no commit, no git):
    ``dir:<first 12 hex digits of the MD5 of the absolute path>``. Raises
    ``ConvertError`` when ``repo`` is not a directory.
    """
    where = os.path.abspath(os.fspath(repo) if repo is not None else os.getcwd())
    if not os.path.isdir(where):
        raise ConvertError(f"{where} is not a directory; pass a project directory or project='git:<sha>'")
    try:
        proc = subprocess.run(
            ["git", "rev-list", "--max-parents=0", "HEAD"],
            cwd=where,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return directory_identity(where)
    roots = sorted(r[:64] for r in (line.strip() for line in proc.stdout.splitlines()) if _ROOT_SHA.match(r[:64]))
    if proc.returncode != 0 or not roots:
        return directory_identity(where)
    return f"git:{roots[0]}"


def _key_for(category: str, row_id: object) -> str:
    return sanitize_key(f"{category.lower()}-{row_id}")


def rows_to_tree(rows: list[dict[str, Any]]) -> ForeignTree:
    """Turn ``memories`` rows (as dicts) into neutral records (pure).

    Keys are ``<category in lower case>-<id>``. ``permanent`` sets
    ``important: true``. Raises ``ConvertError`` for a row missing a column
    we rely on.
    """
    tree = ForeignTree()
    seen: set[str] = set()
    for row in sorted(rows, key=lambda r: (str(r.get("category")), int(r.get("id") or 0))):
        try:
            row_id, category, content = row["id"], str(row["category"]), row["content"]
            if not isinstance(content, str):
                raise TypeError("'content' is not text")
            created, updated = int(row["created_at"]), int(row["updated_at"])
        except KeyError as exc:
            raise ConvertError(f"memory row {row.get('id')!r} lacks a column we need: {exc}") from exc
        except (TypeError, ValueError) as exc:
            raise ConvertError(f"memory row {row.get('id')!r}: {exc}; is this a Magic Context database?") from exc
        key = _key_for(category, row_id)
        if key.lower() in seen:
            raise ConvertError(f"two rows map to the memory key {key!r}; their ids must be unique")
        seen.add(key.lower())
        status = str(row.get("status") or "active")
        meta: dict[str, Any] = {
            "name": first_line(content, 80) or key,
            "description": first_line(content, 200) or key,
            "type": CATEGORY_TYPES.get(category, "reference"),
            "created": format_time(_from_ms(created)),
            "updated": format_time(_from_ms(updated)),
            "x-magic-context-id": row_id,
            "x-magic-context-category": category,
            "x-magic-context-status": status,
            "x-magic-context-project": row.get("project_path"),
        }
        if status == "permanent":
            meta["important"] = True
        for col, k in (
            ("created_at", "x-magic-context-created-at"),
            ("updated_at", "x-magic-context-updated-at"),
            ("importance", "x-magic-context-importance"),
            ("seen_count", "x-magic-context-seen-count"),
            ("retrieval_count", "x-magic-context-retrieval-count"),
            ("expires_at", "x-magic-context-expires-at"),
        ):
            if row.get(col) is not None:
                meta[k] = row[col]
        if row.get("x-base-updated-at") is not None:
            meta["x-magic-context-base-updated-at"] = row["x-base-updated-at"]
        others = {
            c: v for c, v in row.items() if c not in _MAPPED and v is not None and not c.startswith("x-")
        }
        if others:
            meta["x-magic-context-columns"] = dict(sorted(others.items()))
        tree.entries.append(Entry(key, meta, content))
    return tree


_STATS = ("seen_count", "retrieval_count", "last_seen_at", "last_retrieved_at")


def _query(path: Path) -> tuple[list[dict[str, Any]], dict[int, dict[str, Any]] | None]:
    """Every ``memories`` row, and the ``memory_stats`` rows by memory id (None when the table is absent).

    Read through :class:`~bundlekit.convert._sqlite.ForeignDatabase`: read-only,
    from real tables only (a view is refused), within a deadline and caps on
    rows, bytes and SQLite's memory.
    """
    with ForeignDatabase(path, what="Magic Context database") as db:
        rows = db.rows("memories")
        stats: dict[int, dict[str, Any]] | None = None
        if db.kind("memory_stats") is not None:
            checked = (_checked(r, "memory_stats", path) for r in db.rows("memory_stats"))
            stats = {r["memory_id"]: r for r in checked if r.get("memory_id") is not None}
    return rows, stats


def _with_stats(row: dict[str, Any], stats: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """The row as the plugin sees it: counters from ``memory_stats``, ``updated_at`` the later of the two."""
    row_id = row.get("id")  # a missing id is reported by rows_to_tree
    stat = stats.get(row_id) if isinstance(row_id, int) else None
    if stat is None or row.get("updated_at") is None:
        return row
    out = dict(row)
    for col in _STATS:
        out[col] = stat.get(col)
    if stat.get("updated_at") is not None and int(stat["updated_at"]) > int(row["updated_at"]):
        out["updated_at"] = int(stat["updated_at"])
        out["x-base-updated-at"] = int(row["updated_at"])
    return out


def read_magic_context(
    src: str | os.PathLike[str],
    *,
    project: str | None = None,
    repo: str | os.PathLike[str] | None = None,
    clock: Callable[[], datetime] | None = None,
) -> ForeignTree:
    """Read one project's live memories from a Magic Context database, read-only.

    ``project`` is the identity (``git:<sha>`` or ``dir:<md5-12>``); without it
    the identity of the directory ``repo`` (default: the current directory) is
    derived by :func:`project_identity`. ``clock`` gives "now" for the expiry
    check. Archived, expired and other projects' rows are left out and counted
    in a warning. Raises ``ConvertError`` when the file is not a Magic Context
    database, and when a derived identity matches no row at all (naming the
    identities the database holds).
    """
    path = Path(src)
    if not path.is_file():
        raise ConvertError(f"{path} does not exist; pass the Magic Context SQLite database")
    ident = project if project is not None else project_identity(repo)
    now_ms = _to_ms((clock or (lambda: datetime.now(UTC)))().astimezone(UTC))
    rows, stats = _query(path)
    mine = [_checked(r, "memories", path) for r in rows if r.get("project_path") == ident]
    if not mine and project is None:
        held = sorted({str(r.get("project_path")) for r in rows})
        raise ConvertError(
            f"no memories in {path} belong to project {ident!r} (derived from "
            f"{os.path.abspath(os.fspath(repo) if repo is not None else os.getcwd())}); the database holds "
            f"{', '.join(held) if held else 'no memories'}: pass --project or --repo for one of them"
        )
    live = [
        r
        for r in mine
        if str(r.get("status") or "active") in ("active", "permanent")
        and (r.get("expires_at") is None or int(r["expires_at"]) > now_ms)
    ]
    if stats is not None:
        live = [_with_stats(r, stats) for r in live]
    tree = rows_to_tree(live)
    if not live:
        tree.warnings.append(f"no active or permanent, unexpired memories for project {ident!r} in {path}")
    left = {
        "archived or other status": sum(
            1 for r in mine if str(r.get("status") or "active") not in ("active", "permanent")
        ),
        "expired": sum(
            1
            for r in mine
            if str(r.get("status") or "active") in ("active", "permanent")
            and r.get("expires_at") is not None
            and int(r["expires_at"]) <= now_ms
        ),
        "of other projects": len(rows) - len(mine),
    }
    parts = [f"{n} {what}" for what, n in left.items() if n]
    if parts:
        tree.warnings.append(f"left out memories that are not live for {ident!r}: {', '.join(parts)}")
    return tree


def _ms_field(meta: dict[str, Any], field: str, key: str) -> int:
    value = meta.get(field, meta.get("created"))
    ms = _to_ms(parse_time(value, what=f"{field} of {key!r}"))
    original = meta.get(f"x-magic-context-{field}-at")
    # bundlekit keeps whole seconds: the original milliseconds come back while
    # the second is unchanged.
    if isinstance(original, int) and not isinstance(original, bool) and original // 1000 == ms // 1000:
        return original
    return ms


def _importance(entry: Entry, plan: ExportPlan) -> int | None:
    """The INTEGER ``importance`` column's value (NULL reads as 50 in the plugin)."""
    value = entry.meta.get("x-magic-context-importance")
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    plan.altered(
        entry.key,
        "x-magic-context-importance is not an integer; written as NULL "
        f"(Magic Context reads that as {DEFAULT_IMPORTANCE})",
    )
    return None


def _expiry(entry: Entry, plan: ExportPlan) -> int | None:
    """The INTEGER ``expires_at`` (ms); a value that is no integer is written NULL (never expires), a loss."""
    value = entry.meta.get("x-magic-context-expires-at")
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    plan.altered(entry.key, "x-magic-context-expires-at is not milliseconds since the epoch; written as NULL")
    return None


def _row_for(entry: Entry, project: str | None, plan: ExportPlan) -> dict[str, Any]:
    meta = entry.meta
    category = meta.get("x-magic-context-category")
    if category not in CATEGORIES:
        category = (
            category
            if isinstance(category, str) and category
            else TYPE_CATEGORIES.get(str(meta.get("type")), "PROJECT_RULES")
        )
    project_path = meta.get("x-magic-context-project") or project
    if not project_path:
        raise ConvertError(
            f"memory {entry.key!r} has no Magic Context project; pass --project git:<root sha> (library: project=)"
        )
    recorded = meta.get("x-magic-context-status")
    if meta.get("important") is True:
        status = "permanent"
    elif recorded in _STATUSES and recorded != "permanent":
        status = str(recorded)
    else:
        status = "active"
    created = _ms_field(meta, "created", entry.key)
    updated = _ms_field(meta, "updated", entry.key)
    row: dict[str, Any] = {"first_seen_at": created, "last_seen_at": updated}
    columns = meta.get("x-magic-context-columns")
    if isinstance(columns, dict):
        for k, v in columns.items():
            if not str(k).replace("_", "").isalnum() or not str(k).isascii():
                plan.altered(
                    entry.key, f"x-magic-context-columns {str(k)!r} is not a column name; not written"
                )
            elif isinstance(v, (dict, list)):
                # SQLite holds no mapping or list: JSON text, as the plugin keeps its own metadata_json.
                what = f"x-magic-context-columns {str(k)!r}"
                plan.altered(entry.key, f"{what} is not a scalar; written as JSON text")
                row[str(k)] = json.dumps(v, ensure_ascii=False, sort_keys=True, default=str)
            else:
                row[str(k)] = v
    row.update(
        {
            "project_path": project_path,
            "category": category,
            "content": entry.body,
            # Always the plugin's hash of this content: a carried one may be stale or another algorithm's.
            "normalized_hash": normalized_hash(entry.body),
            "status": status,
            "importance": _importance(entry, plan),
            "seen_count": meta.get("x-magic-context-seen-count", 1),
            "retrieval_count": meta.get("x-magic-context-retrieval-count", 0),
            "created_at": created,
            "updated_at": meta.get("x-magic-context-base-updated-at", updated),
            "expires_at": _expiry(entry, plan),
        }
    )
    row["x-stats-updated-at"] = updated
    rid = meta.get("x-magic-context-id")
    if isinstance(rid, int) and not isinstance(rid, bool):
        row["id"] = rid
    return row


def write_magic_context(
    tree: ForeignTree, dest: str | os.PathLike[str], *, project: str | None = None, strict: bool = False
) -> list[Path]:
    """Write ``tree`` as a new Magic Context database at ``dest`` (:func:`plan_magic_context`); the path.

    With ``strict``, a memory that would be written changed refuses the export
    (``ConvertError``, nothing written).
    """
    return write_planned("magic-context", plan_magic_context, tree, dest, strict=strict, project=project)


def plan_magic_context(
    tree: ForeignTree, dest: str | os.PathLike[str], plan: ExportPlan, *, project: str | None = None
) -> None:
    """Plan ``tree`` as a new Magic Context database at ``dest`` (:data:`SCHEMA`).

    ``project`` fills ``project_path`` for memories that carry none. Original
    ids are kept where free; extra columns a memory carries are added to the
    table; every memory gets its ``memory_stats`` row (counters and the
    effective ``updated_at``). The database is built in memory and planned as
    one new file; an existing ``dest`` is refused (we never rewrite someone's
    live database). Values the schema cannot hold are recorded in ``plan``: a
    non-integer importance or expiry is written as NULL, a carried column
    whose name is not an identifier is not written, one holding a mapping or
    list is written as JSON text, and a memory whose content another of its
    project and category already has (the table's UNIQUE key) is left out.
    """
    path = Path(dest)
    if path.exists():
        raise ConvertError(f"{path} already exists; export to a new database file")
    rows = [_row_for(e, project, plan) for e in tree.entries]
    stats_updated = [row.pop("x-stats-updated-at") for row in rows]
    conn = sqlite3.connect(":memory:")
    try:
        conn.executescript(SCHEMA)
        known = {r[1] for r in conn.execute("PRAGMA table_info(memories)")}
        for row in rows:
            for col in sorted(set(row) - known):
                conn.execute(f'ALTER TABLE memories ADD COLUMN "{col}"')
                known.add(col)
        used: set[int] = set()
        order = sorted(range(len(rows)), key=lambda i: (rows[i].get("id") is None, rows[i].get("id") or 0))
        for i in order:
            row = rows[i]
            if row.get("id") in used:
                del row["id"]
            cols = sorted(row)
            try:
                cur = conn.execute(
                    f"INSERT INTO memories ({', '.join(chr(34) + c + chr(34) for c in cols)}) "
                    f"VALUES ({', '.join('?' for _ in cols)})",
                    [row[c] for c in cols],
                )
            except sqlite3.IntegrityError:
                # UNIQUE(project_path, category, normalized_hash): the plugin keeps one memory of a content.
                plan.left_out(
                    tree.entries[i].key,
                    "another memory of its project and category has its content (Magic Context keeps one)",
                )
                continue
            rid = int(row.get("id", cur.lastrowid or 0))
            used.add(rid)
            conn.execute(
                "INSERT INTO memory_stats (memory_id, seen_count, retrieval_count, last_seen_at, "
                "last_retrieved_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    rid,
                    _count(row.get("seen_count"), 1),
                    _count(row.get("retrieval_count"), 0),
                    row.get("last_seen_at") or stats_updated[i],
                    row.get("last_retrieved_at"),
                    stats_updated[i],
                ),
            )
        conn.commit()
        data = conn.serialize()
    except sqlite3.Error as exc:
        raise ConvertError(f"cannot write Magic Context database {path}: {exc}") from exc
    finally:
        conn.close()
    plan.add(path, data, new=True)


def _count(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default


class _Lister(Protocol):
    def list(self) -> list[Any]: ...


def _fact(body: str) -> str:
    return " ".join(single_line(line) for line in body.splitlines() if line.strip())


def render_project_memory(memory: _Lister | str | os.PathLike[str], max_tokens: int = 4000) -> str:
    """Render a memory tree the way Magic Context injects project memory.

    ``<project-memory>`` holds one ``<CATEGORY>`` tag per category present, in
    priority order (PROJECT_RULES, ARCHITECTURE, CONSTRAINTS, CONFIG_VALUES,
    NAMING), each with ``#id: fact`` lines, newest first. The id is
    ``x-magic-context-id`` or else the key; a memory's category is
    ``x-magic-context-category`` or else derived from its type. The whole block
    fits ``max_tokens`` (4 characters per token): memories survive the budget
    by importance (``important``, then ``x-magic-context-importance``), then
    category priority and recency; one that does not fit is skipped. Returns
    ``""`` when there is nothing to inject.
    """
    if isinstance(memory, (str, os.PathLike)):

        lister: _Lister = Memory(memory)
    else:
        lister = memory
    budget = max_tokens * CHARS_PER_TOKEN
    items = []
    # A tree's memories as output may show them (a credential in a hand-planted file withheld).
    for record in lister.list(withhold=True) if isinstance(lister, Memory) else lister.list():
        meta = dict(record.meta)
        if meta.get("x-magic-context-status") == "archived":
            continue  # archived memories do not inject
        category = meta.get("x-magic-context-category")
        if not isinstance(category, str) or not category:
            category = TYPE_CATEGORIES.get(str(meta.get("type")), "PROJECT_RULES")
        rank = CATEGORIES.index(category) if category in CATEGORIES else len(CATEGORIES)
        ident = meta.get("x-magic-context-id", record.key)
        updated = parse_time(
            meta.get("updated") or meta.get("created") or _EPOCH, what=f"updated of {record.key!r}"
        )
        importance = meta.get("x-magic-context-importance")
        weight = (
            float(importance)
            if isinstance(importance, (int, float)) and not isinstance(importance, bool)
            else 0.0
        )
        line = f"#{ident}: {_fact(record.body)}\n"
        items.append((category, rank, updated, str(record.key), line, meta.get("important") is True, weight))
    if not items:
        return ""
    head, tail = "<project-memory>\n", "</project-memory>"
    used = len(head) + len(tail)
    chosen: list[tuple[str, int, datetime, str, str, bool, float]] = []
    open_tags: set[str] = set()
    survival = sorted(items, key=lambda i: (not i[5], -i[6], i[1], -i[2].timestamp(), i[3]))
    for item in survival:
        cost = len(item[4]) + (0 if item[0] in open_tags else len(f"<{item[0]}>\n</{item[0]}>\n"))
        if used + cost <= budget:
            used += cost
            open_tags.add(item[0])
            chosen.append(item)
    if not chosen:
        return ""
    chosen.sort(key=lambda i: (i[1], i[0], -i[2].timestamp(), i[3]))
    out = [head]
    current: str | None = None
    for category, _rank, _upd, _key, line, _imp, _w in chosen:
        if category != current:
            if current is not None:
                out.append(f"</{current}>\n")
            out.append(f"<{category}>\n")
            current = category
        out.append(line)
    out.append(f"</{current}>\n")
    out.append(tail)
    return "".join(out)


#: This format, as ``bundlekit.convert`` registers it.
FORMAT = Format(
    name="magic-context",
    summary="Magic Context SQLite database (memories table, one project)",
    read=read_magic_context,
    write=write_magic_context,
    read_options=frozenset({"project", "repo", "clock"}),
    write_options=frozenset({"project"}),
    kept=kept("created", "updated", "important", "type"),
    lossy="name, description, tags, source, decay, revision; the timeline",
)
