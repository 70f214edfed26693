from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from bundlekit.memory import Memory
from bundlekit.memory.index import MAX_INDEX_LINES, IndexLink, parse_index, render_index
from bundlekit.memory.indexer import Indexer

from .conftest import Clock, fields

SEED_MEMORIES = [
    ("user_role", "Role", "Argentina fan, plays weekly 5-a-side on Saturdays", "user"),
    ("user_preferences", "Preferences", "terse feedback, no emojis", "user"),
    ("feedback_tone", "Tone", "stay warm but don't coddle; user asked for direct critique", "feedback"),
    ("feedback_pacing", "Drill pacing", "3 drills per session max", "feedback"),
    ("project_season", "Season goal", "user is training for a tournament in June 2026", "project"),
    ("reference_reel", "Highlight reel", "shared Drive folder where user stores match clips", "reference"),
]


def test_index_has_sections_in_type_order_and_lines_sorted_by_key(mem: Memory, tree: Path) -> None:
    for key, name, description, kind in SEED_MEMORIES:
        mem.write(key, **fields(name=name, description=description, type=kind))
    assert (tree / "MEMORY.md").read_text(encoding="utf-8") == (
        "# Memory\n"
        "\n"
        "## User\n"
        "- [Preferences](user_preferences.md) — terse feedback, no emojis\n"
        "- [Role](user_role.md) — Argentina fan, plays weekly 5-a-side on Saturdays\n"
        "\n"
        "## Feedback\n"
        "- [Drill pacing](feedback_pacing.md) — 3 drills per session max\n"
        "- [Tone](feedback_tone.md) — stay warm but don't coddle; user asked for direct critique\n"
        "\n"
        "## Project\n"
        "- [Season goal](project_season.md) — user is training for a tournament in June 2026\n"
        "\n"
        "## Reference\n"
        "- [Highlight reel](reference_reel.md) — shared Drive folder where user stores match clips\n"
    )


def test_empty_sections_are_left_out(mem: Memory) -> None:
    mem.write("p", **fields(name="P", description="d", type="project"))
    assert mem.index_text() == "# Memory\n\n## Project\n- [P](p.md) — d\n"


def test_empty_tree_index_is_the_title_alone(mem: Memory) -> None:
    assert mem.index_text() == "# Memory\n"


@pytest.fixture
def fast(clock: Clock) -> Memory:
    """An in-memory tree: the same index code, without an fsync per write."""
    return Memory(None, clock=clock)


def test_index_stops_at_200_lines_with_a_count_of_the_rest(fast: Memory) -> None:
    mem = fast
    for i in range(250):
        mem.write(f"u{i:03d}", **fields(name=f"U{i}", description="d", type="user"))
    lines = mem.index_text().splitlines()
    assert len(lines) == MAX_INDEX_LINES
    # title, blank, heading, then 196 entries, then the note: 250 - 196 left out.
    assert lines[-2] == "- [U195](u195.md) — d"
    assert lines[-1] == "_54 more memories not listed: the index stops at 200 lines._"


def test_cut_index_never_ends_on_an_empty_heading(fast: Memory) -> None:
    mem = fast
    # 195 user entries put the Feedback heading at line 199.
    for i in range(195):
        mem.write(f"u{i:03d}", **fields(name="U", description="d", type="user"))
    mem.write("f1", **fields(name="F", description="d", type="feedback"))
    mem.write("f2", **fields(name="F", description="d", type="feedback"))
    lines = mem.index_text().splitlines()
    assert lines[-2] == "- [U](u194.md) — d"
    assert lines[-1] == "_2 more memories not listed: the index stops at 200 lines._"


def test_index_at_exactly_200_lines_is_not_cut(fast: Memory) -> None:
    mem = fast
    for i in range(197):
        mem.write(f"u{i:03d}", **fields(name="U", description="d", type="user"))
    lines = mem.index_text().splitlines()
    assert len(lines) == 200 and lines[-1] == "- [U](u196.md) — d"


def test_hand_edited_index_is_regenerated_not_trusted(mem: Memory, tree: Path) -> None:
    mem.write("a", **fields())
    (tree / "MEMORY.md").write_text("# tampered\n", encoding="utf-8")
    assert mem.index_text().startswith("# Memory\n")
    files = dict(mem.bundle_files())
    assert files["MEMORY.md"].startswith(b"# Memory\n")


def test_index_file_is_rewritten_on_every_change(mem: Memory, tree: Path) -> None:
    mem.write("a", **fields(name="A"))
    mem.write("b", **fields(name="B"))
    assert "](b.md)" in (tree / "MEMORY.md").read_text(encoding="utf-8")
    mem.forget("b")
    assert (tree / "MEMORY.md").read_text(encoding="utf-8") == mem.index_text()
    assert "](b.md)" not in mem.index_text()


def test_cut_index_counts_whole_sections_left_out(fast: Memory) -> None:
    for i in range(230):
        fast.write(f"u{i:03d}", **fields(name="U", description="d", type="user"))
    for kind in ("feedback", "project", "reference"):
        fast.write(f"{kind}_x", **fields(name="X", description="d", type=kind))
    lines = fast.index_text().splitlines()
    assert len(lines) == MAX_INDEX_LINES
    assert lines[-1] == "_37 more memories not listed: the index stops at 200 lines._"
    assert "## Feedback" not in lines


@pytest.mark.parametrize(("key", "shown"), [("u205", False), ("u001", True)])
def test_a_rewrite_leaves_the_index_as_a_render_from_scratch_makes_it(
    mem: Memory, tree: Path, key: str, shown: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A memory past the 200 lines whose line changes leaves MEMORY.md's bytes as they are, neither rendered nor
    # written again (a follower's round at 10,000 memories no longer reads 200 files for nothing); one shown
    # rewrites it.
    for i in range(210):
        mem.write(f"u{i:03d}", **fields(name=f"U{i}", description="d", type="user"))
    before = (tree / "MEMORY.md").stat()
    renders: list[int] = []
    render = Indexer.render
    monkeypatch.setattr(Indexer, "render", lambda self, catalog: renders.append(1) or render(self, catalog))
    mem.write(key, **fields(name=f"Renamed {key}", description="another description", type="user"))
    monkeypatch.undo()
    after = (tree / "MEMORY.md").stat()
    assert ((before.st_ino, before.st_mtime_ns) != (after.st_ino, after.st_mtime_ns)) is shown
    assert bool(renders) is shown
    kept = (tree / "MEMORY.md").read_bytes()
    assert (f"Renamed {key}".encode() in kept) is shown
    (tree / "MEMORY.md").unlink()
    Memory(tree).list()  # a fresh process's refresh writes MEMORY.md from scratch
    assert (tree / "MEMORY.md").read_bytes() == kept


def test_one_memory_left_out_is_singular(fast: Memory) -> None:
    for i in range(197):
        fast.write(f"u{i:03d}", **fields(name="U", description="d", type="user"))
    fast.write("u197", **fields(name="U", description="d", type="user"))
    assert fast.index_text().splitlines()[-1] == "_2 more memories not listed: the index stops at 200 lines._"
    from bundlekit.memory.index import omitted_line

    assert omitted_line(1) == "_1 more memory not listed: the index stops at 200 lines._"


# --- the link form: escapes and the one parser (three.ws's _rebuildIndex / _loadIPFS, nirholas/three.ws
# src/memory/index.js at 2071392c; Claude Code reads the same lines) --------------------------------------

THREEWS_LINK = re.compile(r"\[([^\]]+)\]\(([^)]+\.md)\)")


def test_brackets_and_backslashes_in_text_are_character_references(mem: Memory) -> None:
    mem.write("a", **fields(name="Notes [draft] \\ x", description="see [x](y.md) & &#91;", type="user"))
    line = mem.index_text().splitlines()[-1]
    assert line == "- [Notes &#91;draft&#93; &#92; x](a.md) — see &#91;x&#93;(y.md) & &amp;#91;"


def test_the_three_ws_pattern_finds_exactly_one_link_per_memory_whatever_the_text(mem: Memory) -> None:
    mem.write("a", **fields(name="x](evil.md) [y", description="see [z](other.md)", type="user"))
    mem.write("b", **fields(name="Plain", description="plain", type="project"))
    assert [m[1] for m in THREEWS_LINK.findall(mem.index_text())] == ["a.md", "b.md"]


def test_parse_index_reads_back_what_render_index_writes(mem: Memory) -> None:
    mem.write("a", **fields(name="Notes [draft] \\ x &#93;", description="see [x](y.md) — more", type="user"))
    assert parse_index(mem.index_text()) == [IndexLink("Notes [draft] \\ x &#93;", "a.md", "see [x](y.md) — more")]


def test_parse_index_reads_the_encrypted_form() -> None:
    text = "# Memory\n\n## User\n- [a.md](ipfs://bafyx) — d\n- [b.md](ipfs://bafyy)\n"
    assert parse_index(text) == [IndexLink("a.md", "ipfs://bafyx", "d"), IndexLink("b.md", "ipfs://bafyy", "")]


def test_render_index_takes_any_record_shaped_rows() -> None:
    @dataclass(frozen=True)
    class Row:
        key: str
        name: str
        description: str
        type: str

    rows = [Row("b", "B", "db", "reference"), Row("a", "A", "da", "reference")]
    assert render_index(rows) == "# Memory\n\n## Reference\n- [A](a.md) — da\n- [B](b.md) — db\n"
    assert render_index(rows, links={"a": "bafya", "b": "bafyb"}, redact=True) == (
        "# Memory\n\n## Reference\n- [a.md](ipfs://bafya)\n- [b.md](ipfs://bafyb)\n"
    )


def test_the_index_of_a_tree_is_what_three_ws_writes_for_the_same_files(mem: Memory) -> None:
    """three.ws's _rebuildIndex: '# Memory', '', then per type heading, lines, '' (joined by newlines)."""
    mem.write("u", **fields(name="U", description="du", type="user"))
    mem.write("r", **fields(name="R", description="dr", type="reference"))
    # lines = ['# Memory', '', '## User', '- [U](u.md) — du', '', '## Reference', '- [R](r.md) — dr', '']
    runtime = "# Memory\n\n## User\n- [U](u.md) — du\n\n## Reference\n- [R](r.md) — dr\n"
    assert mem.index_text() == runtime
