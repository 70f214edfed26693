"""Sample foreign stores, built the way each system writes them, and shared helpers."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from bundlekit.convert._common import Entry, ForeignTree
from bundlekit.convert._tree import ordered_meta
from bundlekit.memory.record import parse_memory_file, render_memory_file

FIXED_MTIME = 1_760_000_000  # 2025-10-09T08:53:20Z


def write(path: Path, text: str) -> Path:
    """Write a sample file with a fixed mtime, so mtime-derived fields are stable."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    os.utime(path, (FIXED_MTIME, FIXED_MTIME))
    return path


def through_bundlekit(tree: ForeignTree) -> ForeignTree:
    """Pass records through bundlekit's memory file format as an import does (render, then parse) and back."""
    out = ForeignTree(timeline=list(tree.timeline))
    for e in tree.entries:
        text = render_memory_file(ordered_meta(e.meta), e.body)
        record = parse_memory_file(text, key=e.key)
        out.entries.append(Entry(record.key, dict(record.meta), record.body))
    return out


def tree_files(root: Path) -> dict[str, str]:
    """Every file under ``root`` (relative posix path -> text), without a tree's own ``.bundlekit/`` cache."""
    return {
        p.relative_to(root).as_posix(): p.read_text(encoding="utf-8")
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".bundlekit" not in p.relative_to(root).parts
    }


# --- MassGen -------------------------------------------------------------------------------

MASSGEN_PREFS = """---
name: user_preferences
description: User's coding style preferences
tier: short_term
agent_id: agent_a
created: 2025-01-12T10:30:00Z
updated: 2025-01-12T10:35:00Z
---

# User Preferences

- Uses tabs over spaces
- Prefers functional programming
"""

MASSGEN_HISTORY = """---
name: project_history
description: Project background: decisions and dates
tier: long_term
agent_id: agent_a
created: 2025-01-12T10:30:00.123456
updated: 2025-01-13T08:00:00
---

# Project History
## Initial Setup (2024-01)
"""


@pytest.fixture
def massgen_workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "workspace1"
    write(ws / "memory" / "short_term" / "user_preferences.md", MASSGEN_PREFS)
    write(ws / "memory" / "long_term" / "project_history.md", MASSGEN_HISTORY)
    return ws


# --- Claude Code ---------------------------------------------------------------------------


@pytest.fixture
def claude_dir(tmp_path: Path) -> Path:
    root = tmp_path / "claude-memory"
    write(
        root / "MEMORY.md",
        "- [Tone](feedback_tone.md) — direct critique, not encouragement-first\n"
        "- [User role](user_role.md) — mechanical engineer, metric units\n",
    )
    write(
        root / "feedback_tone.md",
        "---\nname: Tone\ndescription: direct critique, not encouragement-first\n"
        "type: feedback\n---\n\nLead with the issue.\n\n**Why:** asked twice.\n",
    )
    write(
        root / "user_role.md",
        "---\nmetadata:\n  name: User role\n  description: mechanical engineer, "
        "metric units\n  type: user\n---\n\nAlex is a mechanical engineer.\n",
    )
    return root


# --- three.ws ------------------------------------------------------------------------------

THREEWS_TONE = """---
name: Tone
description: user wants direct critique, not encouragement-first
type: feedback
created: 2026-03-22
updated: 2026-04-14
---

User prefers direct critique over encouragement-first framing.
"""

THREEWS_REEL = """---
name: Highlight reel
description: shared Drive folder where user stores match clips
type: reference
created: 2026-04-01
updated: 2026-04-01
decay: 90d
---

Match clips live in the shared Drive folder.
"""


@pytest.fixture
def threews_blob() -> dict[str, Any]:
    return {
        "version": "memory/0.1",
        "mode": "local",
        "namespace": "agent-7",
        "index": "# Agent Memory\n",
        "files": {"feedback_tone.md": THREEWS_TONE, "reference_reel.md": THREEWS_REEL},
        "timeline": [
            {"ts": "2026-04-14T12:03:45Z", "type": "user_said", "text": "how's my form?"},
            {"ts": "2026-04-14T12:03:12Z", "type": "waved", "style": "enthusiastic"},
        ],
    }


@pytest.fixture
def threews_file(tmp_path: Path, threews_blob: dict[str, Any]) -> Path:
    return write(tmp_path / "export.json", json.dumps(threews_blob))


@pytest.fixture
def threews_storage(tmp_path: Path, threews_blob: dict[str, Any]) -> Path:
    dump = {"agent:agent-7:memory": json.dumps(threews_blob), "theme": "dark"}
    return write(tmp_path / "localStorage.json", json.dumps(dump))


# --- Magic Context -------------------------------------------------------------------------

PROJECT = "git:1111111111111111111111111111111111111111"
OTHER_PROJECT = "git:2222222222222222222222222222222222222222"
NOW_MS = 1_780_000_000_000  # 2026-05-28T...


def make_magic_context_db(path: Path, rows: list[dict[str, Any]]) -> Path:
    """A database with Magic Context's memories table, as the system creates it."""
    from bundlekit.convert.magic_context import SCHEMA, normalized_hash

    conn = sqlite3.connect(path)
    conn.executescript(SCHEMA)
    for row in rows:
        full = {
            "normalized_hash": normalized_hash(row["content"]),
            "first_seen_at": row["created_at"],
            "last_seen_at": row["updated_at"],
            "seen_count": 1,
            "retrieval_count": 0,
            **row,
        }
        cols = sorted(full)
        conn.execute(
            f"INSERT INTO memories ({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)})",
            [full[c] for c in cols],
        )
    conn.commit()
    conn.close()
    return path


def mc_row(
    id: int,
    category: str,
    content: str,
    *,
    status: str = "active",
    project: str = PROJECT,
    created: int = NOW_MS - 86_400_000,
    updated: int | None = None,
    **extra: Any,
) -> dict[str, Any]:
    return {
        "id": id,
        "project_path": project,
        "category": category,
        "content": content,
        "status": status,
        "created_at": created,
        "updated_at": updated if updated is not None else created,
        **extra,
    }


@pytest.fixture
def mc_db(tmp_path: Path) -> Path:
    return make_magic_context_db(
        tmp_path / "context.db",
        [
            mc_row(
                1,
                "ARCHITECTURE",
                "Event sourcing for orders because audit trail is a hard requirement.",
                importance=80,
                seen_count=4,
                retrieval_count=2,
                source_session_id="ses_1",
            ),
            mc_row(
                2,
                "PROJECT_RULES",
                "All PRs require at least one approval before merge.",
                status="permanent",
                created=NOW_MS - 5 * 86_400_000 + 123,
            ),
            mc_row(3, "NAMING", "Use kebab-case for all CLI command names.", status="archived"),
            mc_row(4, "CONSTRAINTS", "GitHub API rate limit is 5000 requests/hour.", expires_at=NOW_MS - 1),
            mc_row(5, "CONFIG_VALUES", "execute_threshold_percentage defaults to 65.", project=OTHER_PROJECT),
            mc_row(
                6,
                "CONFIG_VALUES",
                "injection_budget_tokens defaults to 4000.",
                expires_at=NOW_MS + 3650 * 86_400_000,
            ),
        ],
    )


# --- MagicFrog -----------------------------------------------------------------------------


def mf_note(revision: int, updated: str, body: str, machine: str | None = None) -> str:
    head = f"---\nrevision: {revision}\nupdated: {updated}\n"
    if machine:
        head += f"machine: {machine}\n"
    return head + "---\n" + body + "\n"


@pytest.fixture
def magicfrog_tree(tmp_path: Path) -> Path:
    data = tmp_path / "magicfrog"
    mem = data / "memory"
    write(
        mem / "account" / "notes" / "style.md",
        mf_note(1, "2026-10-01T08:00:00.000Z", "Account style: terse."),
    )
    write(
        mem / "user" / "notes" / "style.md", mf_note(2, "2026-10-02T08:00:00.000Z", "User style: detailed.")
    )
    write(mem / "user" / "prefs.md", mf_note(5, "2026-10-03T08:00:00.000Z", "Prefers metric units."))
    write(
        mem / "agent" / "reviewer" / "notes" / "style.md",
        mf_note(3, "2026-10-20T09:12:00.000Z", "Prefer functional array methods over for loops."),
    )
    write(
        mem / "task" / "t-42" / "notes" / "progress.md",
        mf_note(1, "2026-10-21T10:00:00.000Z", "Step 2 of 5."),
    )
    return data


@pytest.fixture
def magicfrog_with_device(magicfrog_tree: Path) -> Path:
    write(
        magicfrog_tree / "memory" / "device" / "paths.md",
        mf_note(1, "2026-10-05T08:00:00.000Z", "Repo lives at /home/alex/src.", machine="alex-laptop"),
    )
    return magicfrog_tree
