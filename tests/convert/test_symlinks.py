"""A symbolic link inside a foreign store is left out with a warning, never followed.

A link may point anywhere on the machine; following it would copy that file
into a memory tree that may then be published.
"""

from __future__ import annotations

from pathlib import Path

from bundlekit.convert.claude_code import read_claude_code
from bundlekit.convert.magicfrog import read_magicfrog
from bundlekit.convert.massgen import read_massgen

NOTE = "---\nname: n\ndescription: d\n---\nbody\n"


def outside_file(tmp_path: Path) -> Path:
    target = tmp_path / "outside" / "private.md"
    target.parent.mkdir()
    target.write_text("---\nname: private\ndescription: not for the tree\n---\nsecret body\n")
    return target


def test_massgen_leaves_a_linked_file_out_with_a_warning(tmp_path: Path) -> None:
    tier = tmp_path / "ws" / "memory" / "short_term"
    tier.mkdir(parents=True)
    (tier / "n.md").write_text(NOTE)
    (tier / "link.md").symlink_to(outside_file(tmp_path))
    tree = read_massgen(tmp_path / "ws", timezone="UTC")
    assert [e.meta["name"] for e in tree.entries] == ["n"]
    assert f"skipped {tier / 'link.md'}: a symbolic link (not followed; copy the file in instead)" in tree.warnings


def test_claude_code_leaves_a_linked_file_out_with_a_warning(tmp_path: Path) -> None:
    root = tmp_path / "cc"
    root.mkdir()
    (root / "n.md").write_text(NOTE)
    (root / "link.md").symlink_to(outside_file(tmp_path))
    tree = read_claude_code(root)
    assert [e.meta["name"] for e in tree.entries] == ["n"]
    assert any(w.startswith(f"skipped {root / 'link.md'}: a symbolic link") for w in tree.warnings)


def test_magicfrog_leaves_a_linked_note_out_with_a_warning(tmp_path: Path) -> None:
    user = tmp_path / "mf" / "user"
    user.mkdir(parents=True)
    (user / "n.md").write_text(NOTE)
    (user / "link.md").symlink_to(outside_file(tmp_path))
    tree = read_magicfrog(tmp_path / "mf")
    assert all("secret body" not in e.body for e in tree.entries)
    assert len(tree.entries) == 1
    assert any(w.startswith(f"skipped {user / 'link.md'}: a symbolic link") for w in tree.warnings)
