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
  is the memory's file name (``workspace/memory/short_term/{name}.md``, ``system_prompt_sections.py``).
  With ``$BUNDLEKIT_MASSGEN_GIT`` (a git directory of massgen/MassGen) its own function runs;
  with ``$BUNDLEKIT_THREEWS_GIT`` three.ws's runtime runs under node (``threews_reader.mjs``).
* Claude Code: YAML frontmatter (the files it writes quote a value YAML needs quoted, e.g.
  ``description: "ray POC next steps (updated 2026-07-25): ..."`` in ../shared/claude-code-samples/),
  ``MEMORY.md`` loaded as text.
* Magic Context (ahrav/magic-context 413bb72a): its ``memories`` table has no name or description.
* MagicFrog: a note is its path and body; no name or description.
* Letta: JSON (``Block.description``; bundlekit's fields in the block's ``metadata``); the real
  server's round trip is in test_letta_server.py.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from bundlekit.convert import export_to
from bundlekit.convert._common import Entry, ExportPlan, ForeignTree, split_at_dashes
from bundlekit.convert.threews import tree_to_blob
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
THREEWS_COMMIT = "2071392cf490202c2c8a9f21a5991197c6fbc130"
MASSGEN_COMMIT = "304dbaa1628414f8e88a3be5b332fd13247a96c2"
HERE = Path(__file__).resolve().parent


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


#: What JavaScript's String.prototype.trim removes (ECMA-262 WhiteSpace, LineTerminator): U+FEFF too.
JS_TRIMMED = "\t\n\v\f\r \u00a0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000\ufeff"


def threews_reader(text: str) -> dict[str, str]:
    """three.ws's ``parseFrontmatter`` (module docstring), for the files of a blob."""
    match = re.match(r"^---\n([\s\S]*?)\n---\n?([\s\S]*)$", text)
    assert match is not None
    meta: dict[str, str] = {}
    for line in match.group(1).split("\n"):
        k, *rest = line.split(":")
        if k:
            meta[k.strip(JS_TRIMMED)] = ":".join(rest).strip(JS_TRIMMED)
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


def threews_runtime(tmp_path: Path) -> Path:
    """three.ws's ``src/memory/index.js`` and ``crypto.js`` at :data:`THREEWS_COMMIT`, copied out of a git
    directory of nirholas/three.ws (``$BUNDLEKIT_THREEWS_GIT``) into ``tmp_path``; skip without it or node."""
    git_dir = os.environ.get("BUNDLEKIT_THREEWS_GIT")
    if not git_dir or not Path(git_dir).is_dir() or shutil.which("node") is None or shutil.which("git") is None:
        pytest.skip("set BUNDLEKIT_THREEWS_GIT to a git directory of nirholas/three.ws (and have node) to run its runtime")
    runtime = tmp_path / "threews-runtime"
    runtime.mkdir()
    for name in ("index.js", "crypto.js"):
        shown = subprocess.run(["git", f"--git-dir={git_dir}", "show", f"{THREEWS_COMMIT}:src/memory/{name}"],
                               capture_output=True, timeout=60, check=False)
        if shown.returncode != 0:
            pytest.skip(f"{git_dir} does not hold three.ws {THREEWS_COMMIT}")
        (runtime / name).write_bytes(shown.stdout)
    return runtime


def run_threews(runtime: Path, path: Path) -> dict[str, Any]:
    done = subprocess.run(["node", str(HERE / "threews_reader.mjs"), str(runtime), str(path)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def test_the_real_threews_runtime_reads_every_name_and_description_back_exactly(tree: Path, tmp_path: Path) -> None:
    runtime = threews_runtime(tmp_path)
    export_to("three.ws", tree, tmp_path / "blob.json")
    export_to("three.ws", tree, tmp_path / "ls.json", storage=True, namespace="agent-1")
    for dump in ("blob.json", "ls.json"):
        read = run_threews(runtime, tmp_path / dump)
        assert {f"m{i}.md": {"name": t, "description": t} for i, t in enumerate(TEXTS)} == read["files"]


def test_the_real_threews_runtime_shows_escaped_only_the_stored_index_lines_named(tree: Path, tmp_path: Path) -> None:
    runtime = threews_runtime(tmp_path)
    result = export_to("three.ws", tree, tmp_path / "ls.json", storage=True, namespace="agent-1")
    index = run_threews(runtime, tmp_path / "ls.json")["index"]
    for i, text in enumerate(TEXTS):
        shown_as_is = f"- [{text}](m{i}.md) \u2014 {text}" in index
        assert named_in_warning(result, f"m{i}", "stored index link line") != shown_as_is


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


def massgen_parse_memory_file() -> Any:
    """MassGen's own ``SystemMessageBuilder._parse_memory_file`` at :data:`MASSGEN_COMMIT`, read out of a git
    directory of massgen/MassGen (``$BUNDLEKIT_MASSGEN_GIT``) and compiled alone (it needs only ``Path`` and
    typing names); skip without it. Nothing of MassGen is committed here."""
    git_dir = os.environ.get("BUNDLEKIT_MASSGEN_GIT")
    if not git_dir or not Path(git_dir).is_dir() or shutil.which("git") is None:
        pytest.skip("set BUNDLEKIT_MASSGEN_GIT to a git directory of massgen/MassGen to run its reader")
    shown = subprocess.run(["git", f"--git-dir={git_dir}", "show", f"{MASSGEN_COMMIT}:massgen/system_message_builder.py"],
                           capture_output=True, text=True, timeout=60, check=False)
    if shown.returncode != 0:
        pytest.skip(f"{git_dir} does not hold MassGen {MASSGEN_COMMIT}")
    (func,) = [n for n in ast.walk(ast.parse(shown.stdout))
               if isinstance(n, ast.FunctionDef) and n.name == "_parse_memory_file"]
    func.decorator_list = []
    namespace: dict[str, Any] = {"Path": Path, "Optional": Any, "Dict": dict, "Any": Any}
    exec(compile(ast.Module([func], []), "massgen/system_message_builder.py", "exec"), namespace)  # noqa: S102
    return namespace["_parse_memory_file"]


def test_the_real_massgen_reader_reads_each_description_exactly_and_the_key_as_name(tree: Path, tmp_path: Path) -> None:
    parse = massgen_parse_memory_file()
    export_to("massgen", tree, tmp_path / "ws")
    for i, text in enumerate(TEXTS):
        read = parse(tmp_path / "ws" / "memory" / "long_term" / f"m{i}.md")
        assert (read["name"], read["description"], read["content"]) == (f"m{i}", text, f"body {i}")


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


@pytest.mark.parametrize("text", [" padded ", "a\u2028b", "tab\tend\t", "\ufeffbom-led", "nbsp\u00a0"])
def test_threews_names_a_text_its_line_reader_would_show_otherwise(text: str) -> None:
    plan = ExportPlan("three.ws")
    entry = Entry("k", {"name": text, "description": "d", "type": "user"}, "body")
    blob = tree_to_blob(ForeignTree([entry]), namespace="agent-1", plan=plan)
    assert threews_reader(blob["files"]["k.md"])["name"] != text
    assert [loss.change for loss in plan.losses] == [
        "name: three.ws's line reader (first ':', trimmed) shows it otherwise (quoted, or without its surrounding spaces)"
    ]


def test_threews_names_nothing_its_line_reader_reads_back() -> None:
    plan = ExportPlan("three.ws")
    entries = [Entry(f"m{i}", {"name": t, "description": t, "type": "user"}, "b") for i, t in enumerate(TEXTS)]
    tree_to_blob(ForeignTree(entries), namespace="agent-1", plan=plan)
    assert plan.losses == []
