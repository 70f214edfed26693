"""Hostile trees: secrets hidden by escapes or in keys, and symbolic links planted inside a tree."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bundlekit.errors import FrontmatterError, MemoryStoreError, SecretDetectedError
from bundlekit.memory import Memory

from .conftest import fields

TOKEN = "sk-ant-api03-" + "Q7xK2mP9vR4tL8nB3cF6hJ1d"
# The same token as YAML double-quoted escapes: the raw text never shows it.
ESCAPED = "".join(f"\\x{ord(ch):02x}" for ch in TOKEN)


def _hand_file(tree: Path, name: str, frontmatter_name: str, body: str = "plain") -> None:
    tree.mkdir(parents=True, exist_ok=True)
    (tree / name).write_text(
        "---\n"
        f'name: "{frontmatter_name}"\n'
        "description: d\ntype: user\ncreated: '2026-04-01T00:00:00Z'\nupdated: '2026-04-01T00:00:00Z'\n"
        f"---\n\n{body}\n",
        encoding="utf-8",
    )


def test_a_secret_written_as_yaml_escapes_fails_check(tree: Path) -> None:
    _hand_file(tree, "x.md", ESCAPED)
    memory = Memory(tree)
    assert memory.read("x").name == TOKEN  # type: ignore[union-attr]
    with pytest.raises(SecretDetectedError, match="x.md frontmatter 'name'") as info:
        memory.check()
    assert TOKEN not in str(info.value)


def test_a_secret_written_as_yaml_escapes_cannot_be_imported(mem: Memory, tree: Path) -> None:
    _hand_file(tree.parent / "src", "x.md", ESCAPED)
    blob = {"version": "memory/0.1", "files": {"x.md": (tree.parent / "src" / "x.md").read_text()}}
    with pytest.raises(SecretDetectedError, match="import file x.md"):
        mem.import_(blob)
    assert not (tree / "x.md").exists()


def test_a_key_that_looks_like_a_credential_is_refused_even_with_allow_secrets(mem: Memory, tree: Path) -> None:
    with pytest.raises(SecretDetectedError, match="memory key") as info:
        mem.write(TOKEN, **fields(), allow_secrets=True)
    assert TOKEN not in str(info.value)
    assert not tree.exists() or not list(tree.glob("*.md"))


def test_a_file_named_like_a_credential_fails_check(tree: Path) -> None:
    _hand_file(tree, f"{TOKEN}.md", "fine")
    with pytest.raises(SecretDetectedError, match="a memory file name") as info:
        Memory(tree).check()
    assert TOKEN not in str(info.value)


def test_a_timeline_entry_with_json_escapes_fails_check(mem: Memory, tree: Path) -> None:
    mem.write("k", **fields())
    escaped = "".join(f"\\u{ord(ch):04x}" for ch in TOKEN)
    (tree / "timeline").mkdir(exist_ok=True)
    (tree / "timeline" / "2026-04-01.jsonl").write_text(
        '{"ts":"2026-04-01T00:00:00.000Z","type":"said","text":"' + escaped + '"}\n', encoding="utf-8"
    )
    with pytest.raises(SecretDetectedError, match="timeline/2026-04-01.jsonl entry 1"):
        mem.check()


def test_an_import_timeline_entry_is_checked_on_its_values(mem: Memory) -> None:
    blob = {"version": "memory/0.1", "files": {}, "timeline": [{"ts": "2026-04-01T00:00:00Z", "type": "t", TOKEN: 1}]}
    with pytest.raises(SecretDetectedError):
        mem.import_(json.loads(json.dumps(blob)))


# -- symbolic links ---------------------------------------------------------------


def test_a_memory_file_link_is_refused_naming_it(mem: Memory, tree: Path, tmp_path: Path) -> None:
    mem.write("k", **fields())
    outside = tmp_path / "outside.md"
    outside.write_text((tree / "k.md").read_text(encoding="utf-8"), encoding="utf-8")
    (tree / "x.md").symlink_to(outside)
    with pytest.raises(MemoryStoreError, match=r"x\.md is a symbolic link"):
        Memory(tree).list()
    with pytest.raises(MemoryStoreError, match=r"x\.md is a symbolic link"):
        Memory(tree).bundle_files()


def test_writing_over_a_planted_memory_link_is_refused(mem: Memory, tree: Path, tmp_path: Path) -> None:
    mem.write("k", **fields())
    outside = tmp_path / "target.md"
    outside.write_text("untouched", encoding="utf-8")
    (tree / "k.md").unlink()
    (tree / "k.md").symlink_to(outside)
    with pytest.raises(MemoryStoreError, match="symbolic link"):
        mem.write("k", **fields(body="new"))
    assert outside.read_text(encoding="utf-8") == "untouched"
    with pytest.raises(MemoryStoreError, match="symbolic link"):
        mem.read("k")


def test_a_timeline_link_is_refused_for_notes_and_reads(mem: Memory, tree: Path, tmp_path: Path) -> None:
    mem.write("k", **fields())
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (tree / "timeline").symlink_to(outside, target_is_directory=True)
    with pytest.raises(MemoryStoreError, match=r"timeline is a symbolic link"):
        mem.note("said", text="hi")
    assert list(outside.iterdir()) == []
    with pytest.raises(MemoryStoreError, match=r"timeline is a symbolic link"):
        mem.timeline()


def test_a_day_file_link_is_never_appended_to(mem: Memory, tree: Path, tmp_path: Path, clock: object) -> None:
    entry = mem.note("said", text="first")
    day = tree / "timeline" / (entry["ts"][:10] + ".jsonl")
    outside = tmp_path / "victim.jsonl"
    outside.write_text("", encoding="utf-8")
    day.unlink()
    day.symlink_to(outside)
    with pytest.raises(MemoryStoreError, match="symbolic link"):
        mem.note("said", text="second")
    assert outside.read_text(encoding="utf-8") == ""


def test_a_planted_lock_link_is_refused(mem: Memory, tree: Path, tmp_path: Path) -> None:
    mem.write("k", **fields())
    victim = tmp_path / "victim"
    victim.write_text("keep", encoding="utf-8")
    lock = tree / ".bundlekit" / "lock"
    lock.unlink()
    lock.symlink_to(victim)
    with pytest.raises(MemoryStoreError, match="symbolic link"):
        Memory(tree).write("k2", **fields())
    assert victim.read_text(encoding="utf-8") == "keep"


def test_a_planted_hidden_folder_link_is_refused(tree: Path, tmp_path: Path) -> None:
    tree.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tree / ".bundlekit").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(MemoryStoreError, match="symbolic link"):
        Memory(tree).write("k", **fields())
    assert list(elsewhere.iterdir()) == []


def test_a_refused_frontmatter_value_is_named_by_its_file_never_echoed(tmp_path: Path) -> None:
    secret_like = "ghp_" + "a1B2c3D4e5" * 4 + "\nmore"  # two lines: refused before the guard runs
    with pytest.raises(FrontmatterError) as caught:
        Memory(tmp_path / "m").write("goal", name=secret_like, description="d", type="project", body="b")
    assert str(caught.value).startswith("goal.md: frontmatter 'name'")
    assert "ghp_" not in str(caught.value)


@pytest.mark.parametrize(("name", "kind"), [("index.sqlite", "named pipe"), ("index.sqlite-wal", "folder"),
                                            ("index.sqlite-shm", "named pipe")])
def test_a_pipe_or_folder_where_the_index_lives_is_refused_naming_it(mem: Memory, tree: Path, name: str,
                                                                    kind: str) -> None:
    """SQLite opened a planted FIFO and answered "disk I/O error; retry, and check free disk space" (a retry
    never helps), and nothing was written: now the error names the path and what to do."""
    import os
    import shutil

    mem.write("k", **fields())
    mem.close()
    shutil.rmtree(tree / ".bundlekit")
    (tree / ".bundlekit").mkdir()
    if kind == "folder":
        (tree / ".bundlekit" / name).mkdir()
    else:
        os.mkfifo(tree / ".bundlekit" / name)
    with pytest.raises(MemoryStoreError, match=rf"{name} is a {kind}.*remove it, and the index is built again"):
        Memory(tree).list()
    with pytest.raises(MemoryStoreError, match=rf"{name} is a {kind}"):
        Memory(tree).write("k2", **fields())
    assert not (tree / "k2.md").exists()
