"""A first follow's checks of the loaded files (``bundle.firstload._checked``): every memory and day file checked
in the load's order, the first bad one named (pinned while its per-file overhead was measured, issue 37)."""

from __future__ import annotations

import pytest

from bundlekit.bundle import firstload
from bundlekit.errors import FrontmatterError, InvalidKeyError

_DATES = "created: 2026-01-01T00:00:00Z\nupdated: 2026-01-01T00:00:00Z\n"


def _memory(extra: str = "") -> bytes:
    return f"---\nname: n\ndescription: d\ntype: project\n{_DATES}{extra}---\n\nbody\n".encode()


_BAD_FRONTMATTER = b"---\nname: n\n---\n\nno description, type or dates\n"
_BAD_UTF8 = b"---\nname: \xff\n---\n"
_BAD_DAY = b"not json\n"


def test_every_memory_and_day_file_is_checked_and_listed_in_the_load_order() -> None:
    files = {f"project_m{i:04d}.md": _memory() for i in range(600)}
    files["timeline/2026-01-01.jsonl"] = b'{"ts":"2026-01-01T00:00:00.000Z","type":"note","text":"t"}\n'
    files["project_z_local.md"] = _memory("x-magicfrog-local-only: true\n")
    files["MEMORY.md"] = b"# index\n"
    names, kept, days = firstload._checked("ipfs://x", files, False)  # noqa: SLF001
    assert names == [path for path in files if path.endswith(".md") and "/" not in path and path != "MEMORY.md"]
    assert kept == ["project_z_local.md"]
    assert days == ["2026-01-01.jsonl"]


@pytest.mark.parametrize(("first", "second", "named", "error"), [
    (_BAD_FRONTMATTER, _BAD_UTF8, "project_a.md", FrontmatterError),
    (_BAD_UTF8, _BAD_FRONTMATTER, "project_a.md", FrontmatterError),
])
def test_the_first_bad_memory_in_the_load_order_is_the_one_named(
    first: bytes, second: bytes, named: str, error: type[Exception]
) -> None:
    files = {"project_0.md": _memory(), "project_a.md": first, "project_b.md": second, "project_c.md": _memory()}
    with pytest.raises(error, match=named):
        firstload._checked("ipfs://x", files, False)  # noqa: SLF001


def test_a_bad_memory_before_a_bad_day_file_is_the_one_named() -> None:
    files = {"project_a.md": _BAD_FRONTMATTER, "timeline/2026-01-01.jsonl": _BAD_DAY}
    with pytest.raises(FrontmatterError, match="project_a.md"):
        firstload._checked("ipfs://x", files, False)  # noqa: SLF001


def test_a_bad_day_file_before_a_bad_memory_is_the_one_named() -> None:
    files = {"timeline/2026-01-01.jsonl": _BAD_DAY, "project_a.md": _BAD_FRONTMATTER}
    with pytest.raises(Exception, match="2026-01-01") as caught:
        firstload._checked("ipfs://x", files, False)  # noqa: SLF001
    assert not isinstance(caught.value, InvalidKeyError)
