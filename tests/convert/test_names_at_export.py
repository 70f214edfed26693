"""A name or description any single line may hold reaches every target as its reader shows it, or is named.

bundlekit keeps any single-line ``name`` and ``description`` exactly (``: ``, `` #``, ``yes``, a
leading ``-``, ``[``, quotes, non-ASCII). At export, each memory is either read back exactly by the
target's own reader, or named in a warning that is also one of ``losses`` (specs/interop.md 1.4).
The readers, from their real sources:

* three.ws: ``parseFrontmatter`` of ``src/memory/index.js``, nirholas/three.ws at
  2071392cf490202c2c8a9f21a5991197c6fbc130 (the same function at 7c55ae71b5b0b7b507ca9ee92fc29c1cd4c59365):
  the fence ``^---\\n([\\s\\S]*?)\\n---\\n?``, each line split on ``\\n`` and at its first ``:``, both
  sides trimmed; its stored index is shown as it is (``contextBlock``), a blob's index it rebuilds.
* MassGen: ``_parse_memory_file`` of ``massgen/system_message_builder.py`` (PyPI massgen 0.1.97,
  massgen/MassGen 304dbaa1628414f8e88a3be5b332fd13247a96c2): ``content.split("---", 2)``, each line
  with a colon split at the first one, both sides stripped; no YAML, quotes stay text. Its ``name``
  is the memory's file name.
* Claude Code: YAML frontmatter (the files it writes quote a value YAML needs quoted, e.g.
  ``description: "ray POC next steps (updated 2026-07-25): ..."`` in ../shared/claude-code-samples/),
  ``MEMORY.md`` loaded as text.
* Magic Context (ahrav/magic-context 413bb72a): its ``memories`` table has no name or description.
* MagicFrog: a note is its path and body; no name or description.
* Letta: JSON (``Block.description``; bundlekit's fields in the block's ``metadata``); the real
  server's round trip is in test_letta_server.py.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import yaml

from bundlekit.convert import export_to
from bundlekit.convert._common import split_at_dashes
from bundlekit.memory import Memory

#: Single-line texts some reader could show differently, one memory each (key m0, m1, ...).
TEXTS = [
    "Goal: win",
    "Fix issue #12",
    "yes",
    "- leading dash",
    "[draft] plan",
    '"quoted"',
    "it's 'single'",
    "Ünïcödé 名前 — ok",
    "a \\ backslash",
]
PROJECT = "git:" + "a" * 40


def plant_tree(root: Path) -> Path:
    """A tree holding one memory per text, name and description both that text.

    Written through ``Memory.write`` where it accepts the text, else planted as a file with proper
    YAML quoting (the memory store reads it back exactly either way).
    """
    memory = Memory(root)
    for i, text in enumerate(TEXTS):
        key = f"m{i}"
        try:
            memory.write(key, body=f"body {i}", name=text, description=text, type="user")
        except Exception:  # noqa: BLE001 - a store that still refuses the text: plant it (see the docstring)
            meta = {"name": text, "description": text, "type": "user", "created": "2026-01-01T00:00:00Z",
                    "updated": "2026-01-01T00:00:00Z", "revision": 1}
            fm = yaml.safe_dump(meta, allow_unicode=True, sort_keys=False, width=1_000_000)
            (root / f"{key}.md").write_text(f"---\n{fm}---\n\nbody {i}\n", encoding="utf-8")
    read = {r.key: (r.meta["name"], r.meta["description"]) for r in Memory(root).list()}
    assert read == {f"m{i}": (t, t) for i, t in enumerate(TEXTS)}
    return root


def threews_reader(text: str) -> dict[str, str]:
    """three.ws's ``parseFrontmatter`` (module docstring), for the files of a blob."""
    match = re.match(r"^---\n([\s\S]*?)\n---\n?([\s\S]*)$", text)
    assert match is not None
    meta: dict[str, str] = {}
    for line in match.group(1).split("\n"):
        k, *rest = line.split(":")
        if k:
            meta[k.strip()] = ":".join(rest).strip()
    return meta


def massgen_reader(text: str) -> dict[str, str]:
    """MassGen's ``_parse_memory_file`` frontmatter (module docstring)."""
    parts = text.split("---", 2)
    meta: dict[str, str] = {}
    for line in parts[1].strip().split("\n"):
        if ":" in line:
            k, v = line.split(":", 1)
            meta[k.strip()] = v.strip()
    return meta


def losses_of(result: Any, key: str) -> list[str]:
    return [loss.change for loss in result.losses if loss.key == key]


def named_in_warning(result: Any, key: str, what: str) -> bool:
    return any(w.startswith(f"memory {key!r}: ") and what in w for w in result.warnings)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return plant_tree(tmp_path / "tree")


def test_threews_runtime_reads_every_name_and_description_back_exactly(tree: Path, tmp_path: Path) -> None:
    result = export_to("three.ws", tree, tmp_path / "blob.json")
    files = json.loads((tmp_path / "blob.json").read_text(encoding="utf-8"))["files"]
    for i, text in enumerate(TEXTS):
        meta = threews_reader(files[f"m{i}.md"])
        assert (meta["name"], meta["description"]) == (text, text)
        assert not [c for c in losses_of(result, f"m{i}") if "name" in c or "description" in c]


def test_threews_stored_index_names_the_memories_it_shows_escaped(tree: Path, tmp_path: Path) -> None:
    result = export_to("three.ws", tree, tmp_path / "ls.json", storage=True, namespace="agent-1")
    escaped = {"m4", "m8"}  # '[' and '\\' are written as &#91; / &#92; in the index line
    for i in range(len(TEXTS)):
        key = f"m{i}"
        named = [c for c in losses_of(result, key) if "stored index link line" in c]
        assert bool(named) == (key in escaped), key
        assert named_in_warning(result, key, "stored index link line") == (key in escaped)


def test_claude_code_yaml_reads_every_name_and_description_back_exactly(tree: Path, tmp_path: Path) -> None:
    export_to("claude-code", tree, tmp_path / "cc")
    for i, text in enumerate(TEXTS):
        fm, _body = split_at_dashes((tmp_path / "cc" / f"m{i}.md").read_text(encoding="utf-8"))
        assert fm is not None
        meta = yaml.safe_load(fm)
        assert (meta["name"], meta["description"]) == (text, text)


def test_claude_code_names_each_memory_its_index_shows_escaped(tree: Path, tmp_path: Path) -> None:
    result = export_to("claude-code", tree, tmp_path / "cc")
    index = (tmp_path / "cc" / "MEMORY.md").read_text(encoding="utf-8")
    escaped = set()
    for i, text in enumerate(TEXTS):
        key = f"m{i}"
        shown_as_is = f"- [{text}]({key}.md) \u2014 {text}" in index
        assert named_in_warning(result, key, "MEMORY.md link line") != shown_as_is, key
        assert bool([c for c in losses_of(result, key) if "MEMORY.md" in c]) != shown_as_is
        escaped |= set() if shown_as_is else {key}
    assert escaped == {"m4", "m8"}  # '[' and '\\' (as &#91; / &#92;); the others are shown as written


def test_massgen_reads_every_description_exactly_and_each_name_change_is_named(tree: Path, tmp_path: Path) -> None:
    result = export_to("massgen", tree, tmp_path / "ws")
    for i, text in enumerate(TEXTS):
        key = f"m{i}"
        meta = massgen_reader((tmp_path / "ws" / "memory" / "long_term" / f"{key}.md").read_text(encoding="utf-8"))
        assert meta["description"] == text
        assert meta["name"] == key  # MassGen's name is the file name
        assert named_in_warning(result, key, "name: MassGen's name is the memory's file name")
        assert [c for c in losses_of(result, key) if c.startswith("name: ")]


def test_massgen_name_equal_to_the_key_is_no_loss(tmp_path: Path) -> None:
    Memory(tmp_path / "tree").write("plan", body="x", name="plan", description="d", type="user")
    result = export_to("massgen", tmp_path / "tree", tmp_path / "ws")
    assert not [c for c in losses_of(result, "plan") if c.startswith("name")]


@pytest.mark.parametrize(("fmt", "dest", "options"), [
    ("magic-context", "mc.db", {"project": PROJECT}),
    ("magicfrog", "mf", {}),
])
def test_a_target_without_names_names_each_memory_whose_name_it_drops(
    fmt: str, dest: str, options: dict[str, Any], tree: Path, tmp_path: Path
) -> None:
    result = export_to(fmt, tree, tmp_path / dest, **options)
    for i in range(len(TEXTS)):
        (change,) = losses_of(result, f"m{i}")
        assert change.startswith("created, description, name, ") or change.startswith("description, name, ")
        assert f"{fmt} has no place for them" in change
    assert result.memories == len(TEXTS)


def test_magic_context_stores_the_bodies_without_the_names(tree: Path, tmp_path: Path) -> None:
    export_to("magic-context", tree, tmp_path / "mc.db", project=PROJECT)
    with sqlite3.connect(tmp_path / "mc.db") as db:
        contents = sorted(row[0] for row in db.execute("SELECT content FROM memories"))
    assert contents == sorted(f"body {i}" for i in range(len(TEXTS)))


def test_letta_json_carries_every_name_and_description_exactly(tree: Path, tmp_path: Path) -> None:
    result = export_to("letta", tree, tmp_path / "a.af")
    assert result.losses == []
    blocks = {b["label"]: b for b in json.loads((tmp_path / "a.af").read_text(encoding="utf-8"))["blocks"]}
    for i, text in enumerate(TEXTS):
        block = blocks[f"m{i}"]
        assert block["description"] == text
        assert block["metadata"]["bundlekit"]["name"] == text
