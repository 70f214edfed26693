"""Hostile inputs to ``bundlekit convert``, each run in a memory- and time-capped child (``run_cli``).

Issue 24's reproductions: a Magic Context ``.db`` whose ``memories`` is a VIEW
over an infinite recursive CTE (it ran for ever and grew SQLite's temp file by
4 GB in 30 s), a ``x-massgen-extra`` key holding a line break (it wrote a
second ``name:`` line that MassGen's last-wins reader took), and a recorded
file name holding NUL (a ``ValueError`` traceback). Plus the other ways a
foreign database can make a read run: a view in a side table, a virtual
table, a generated column.
"""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path

import pytest

from bundlekit.convert.massgen import parse_massgen_file

from .conftest import RunCli

_INFINITE = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c)"
_COLUMNS = (
    "id INTEGER PRIMARY KEY, project_path TEXT, category TEXT, content TEXT, status TEXT, "
    "importance INTEGER, created_at INTEGER, updated_at INTEGER, expires_at INTEGER"
)
_ROW = "INSERT INTO memories VALUES (1, 'p', 'NAMING', 'x', 'active', 1, 0, 0, NULL)"

HOSTILE_DATABASES = {
    "memories-is-an-infinite-view": [
        f"CREATE VIEW memories AS {_INFINITE} SELECT x AS id, 'p' AS project_path, 'NAMING' AS category, "
        "hex(randomblob(64)) AS content, 'active' AS status, 1 AS importance, 0 AS created_at, "
        "0 AS updated_at, NULL AS expires_at FROM c ORDER BY content",
    ],
    "memory-stats-is-an-infinite-view": [
        f"CREATE TABLE memories ({_COLUMNS})",
        _ROW,
        f"CREATE VIEW memory_stats AS {_INFINITE} SELECT x AS memory_id, 1 AS seen_count, "
        "0 AS retrieval_count, 0 AS last_seen_at, NULL AS last_retrieved_at, 0 AS updated_at "
        "FROM c ORDER BY hex(randomblob(8))",
    ],
    "memories-is-a-virtual-table": ["CREATE VIRTUAL TABLE memories USING fts5(content)"],
    # The column is added after the row: an INSERT computes it, which took this process a gigabyte and 14 s.
    "content-is-a-generated-column": [
        f"CREATE TABLE memories ({_COLUMNS.replace('content TEXT', 'seed TEXT')})",
        "INSERT INTO memories (id, project_path, category, seed, status, importance, created_at, updated_at) "
        "VALUES (1, 'p', 'NAMING', 'x', 'active', 1, 0, 0)",
        "ALTER TABLE memories ADD COLUMN content TEXT GENERATED ALWAYS AS (printf('%.*c', 2000000000, 'x')) VIRTUAL",
    ],
}


def refused_cleanly(proc: subprocess.CompletedProcess[str], words: str) -> None:
    assert proc.returncode == 1, proc.stderr
    assert words in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("name", sorted(HOSTILE_DATABASES))
def test_a_magic_context_database_that_would_read_without_end_is_refused(
    name: str, run_cli: RunCli, tmp_path: Path
) -> None:
    path = tmp_path / f"{name}.db"
    conn = sqlite3.connect(path)
    for statement in HOSTILE_DATABASES[name]:
        conn.execute(statement)
    conn.commit()
    conn.close()
    size = path.stat().st_size
    out = tmp_path / "out"
    proc = run_cli("convert", "--from", "magic-context", str(path), "-o", str(out), "--project", "p")
    refused_cleanly(proc, "(refused" if "generated" in name else "never read")
    assert not (tmp_path / "out").exists()
    assert path.stat().st_size == size


def _tree(root: Path, extra_lines: str) -> Path:
    root.mkdir(parents=True)
    (root / "real.md").write_text(
        "---\nname: Real\ndescription: d\ntype: user\ncreated: 2026-01-01T00:00:00Z\n"
        f"updated: 2026-01-01T00:00:00Z\n{extra_lines}---\n\nbody\n",
        encoding="utf-8",
    )
    return root


def test_a_massgen_extra_key_with_a_line_break_writes_no_field_of_its_own(
    run_cli: RunCli, tmp_path: Path
) -> None:
    src = _tree(tmp_path / "tree", 'x-massgen-extra: {"z\\nname": EVIL, "colour": blue}\n')
    proc = run_cli("convert", "--to", "massgen", str(src), "-o", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    fields, _content = parse_massgen_file((tmp_path / "out" / "memory" / "long_term" / "real.md").read_text())
    assert fields is not None
    assert fields["name"] == "real" and "EVIL" not in fields.values() and fields["colour"] == "blue"
    assert "warning: memory 'real': x-massgen-extra key 'z\\nname' holds a line break" in proc.stderr


@pytest.mark.parametrize(
    ("fmt", "field"), [("claude-code", "x-claude-code-file"), ("massgen", "x-massgen-file")]
)
def test_a_recorded_file_name_with_a_nul_is_a_warning_not_a_traceback(
    fmt: str, field: str, run_cli: RunCli, tmp_path: Path
) -> None:
    src = _tree(tmp_path / "tree", f'{field}: "a\\0b"\n')
    proc = run_cli("convert", "--to", fmt, str(src), "-o", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"warning: memory 'real': {field} holds a NUL" in proc.stderr
    assert any(p.name == "real.md" for p in (tmp_path / "out").rglob("*.md"))


def test_a_recorded_file_name_with_a_nul_refuses_a_strict_export(run_cli: RunCli, tmp_path: Path) -> None:
    src = _tree(tmp_path / "tree", 'x-claude-code-file: "a\\0b"\n')
    proc = run_cli("convert", "--to", "claude-code", str(src), "-o", str(tmp_path / "out"), "--strict")
    refused_cleanly(proc, "nothing was written")
    assert not (tmp_path / "out").exists()


def _massgen(root: Path, files: dict[str, bytes]) -> Path:
    tier = root / "memory" / "long_term"
    tier.mkdir(parents=True)
    for name, data in files.items():
        (tier / name).write_bytes(data)
    return root


_OK = b"---\nname: ok\ndescription: d\n---\nbody\n"


def _import_massgen(run_cli: RunCli, src: Path, dest: Path) -> subprocess.CompletedProcess[str]:
    return run_cli("convert", "--from", "massgen", str(src), "-o", str(dest), "--timezone", "UTC")


@pytest.mark.parametrize(
    ("bad", "said"),
    [
        (b"---\nname: a\ndescription: d\n---\n" + b"y" * (17 * 1024 * 1024), "larger than 16 MiB"),
        (b"---\nname: caf\xe9\n---\nbody\n", "is not UTF-8 text"),
        (b"---\nname: a\ndescription: d\n" + b"".join(b"k%d: v\n" % i for i in range(20_000)) + b"---\nb\n",
         "a memory tree cannot hold it"),
    ],
    ids=["over-16-MiB", "not-utf8", "over-the-value-budget"],
)
def test_one_hostile_memory_file_is_left_out_and_the_rest_imported(
    bad: bytes, said: str, run_cli: RunCli, tmp_path: Path
) -> None:
    src = _massgen(tmp_path / "ws", {"a.md": bad, "ok.md": _OK})
    proc = _import_massgen(run_cli, src, tmp_path / "tree")
    assert proc.returncode == 0, proc.stderr
    assert said in proc.stderr and "Traceback" not in proc.stderr
    assert (tmp_path / "tree" / "ok.md").is_file() and not (tmp_path / "tree" / "a.md").exists()


def test_a_name_holding_a_line_separator_does_not_block_a_massgen_import(
    run_cli: RunCli, tmp_path: Path
) -> None:
    text = "---\nname: a\u2028name: evil\ndescription: d\n---\nb\n"
    proc = _import_massgen(run_cli, _massgen(tmp_path / "ws", {"a.md": text.encode()}), tmp_path / "tree")
    assert proc.returncode == 0, proc.stderr
    assert "read as one line" in proc.stderr


def test_a_three_ws_file_over_16_mib_is_refused_without_loading_it(run_cli: RunCli, tmp_path: Path) -> None:
    events = ",".join('{"ts":"2026-01-01T00:00:00Z","type":"x"}' for _ in range(500_000))
    path = tmp_path / "blob.json"
    path.write_text('{"version":"memory/0.1","index":"","files":{},"timeline":[' + events + "]}")
    proc = run_cli("convert", "--from", "three.ws", str(path), "-o", str(tmp_path / "tree"))
    refused_cleanly(proc, "larger than 16 MiB")
