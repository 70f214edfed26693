"""The error tree drawn in ``bundlekit/errors.py``'s docstring is the class tree, exit codes included.

A line names a class under its parent; ``(exit N)`` appears where a class's code
differs from its parent's (and on the root). README's exit-code table lists
exactly the codes the classes use, plus 0 (success) and 130 (Ctrl-C, set by the CLI).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from bundlekit import errors

README = Path(__file__).resolve().parents[2] / "README.md"
_LINE = re.compile(r"^    (?P<indent>[│├└─ ]*)(?P<name>[A-Za-z]+)\s+(?P<text>.*)$")


def drawn_tree() -> list[tuple[str, str | None, int | None]]:
    """(class, parent drawn above it, exit code written on the line) for each line of the drawing."""
    drawing = (errors.__doc__ or "").split("::", 1)[1]
    stack: list[tuple[int, str]] = []
    rows: list[tuple[str, str | None, int | None]] = []
    for line in drawing.splitlines():
        match = _LINE.match(line)
        if match is None:
            continue
        depth = len(match["indent"]) // 4
        while stack and stack[-1][0] >= depth:
            stack.pop()
        code = re.search(r"\(exit (\d+)\)", match["text"])
        rows.append((match["name"], stack[-1][1] if stack else None, int(code[1]) if code else None))
        stack.append((depth, match["name"]))
    return rows


def test_the_drawing_names_every_exported_class_once_in_order() -> None:
    assert [name for name, _, _ in drawn_tree()] == errors.__all__


def test_each_class_sits_under_its_base_class() -> None:
    for name, parent, _ in drawn_tree():
        cls = getattr(errors, name)
        bases = [base.__name__ for base in cls.__bases__ if issubclass(base, errors.BundlekitError)]
        assert bases == ([parent] if parent else []), name


def test_an_exit_code_is_written_exactly_where_it_differs_from_the_parents() -> None:
    for name, parent, written in drawn_tree():
        code = getattr(errors, name).exit_code
        inherited = getattr(errors, parent).exit_code if parent else None
        assert written == (code if code != inherited else None), name


def test_readme_exit_code_table_lists_exactly_the_codes_in_use() -> None:
    table = re.findall(r"^\| (\d+) \| ", README.read_text(encoding="utf-8"), flags=re.MULTILINE)
    used = {getattr(errors, name).exit_code for name in errors.__all__}
    assert sorted(map(int, table)) == sorted(used | {0, 130})


def test_every_error_class_is_drawn_in_the_tree() -> None:
    # A class deriving from one of the tree's classes anywhere else in bundlekit/ or pinners/ sits outside the
    # drawing (an AST walk: a base named as a class of errors.__all__, bare or as errors.X).
    root = README.parent
    outside = []
    for path in sorted([*root.joinpath("bundlekit").rglob("*.py"), *root.joinpath("pinners").rglob("*.py")]):
        if path == root / "bundlekit" / "errors.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases = {base.id if isinstance(base, ast.Name) else getattr(base, "attr", "") for base in node.bases}
                if bases & set(errors.__all__):
                    outside.append(f"{path.relative_to(root)}:{node.lineno} {node.name}")
    assert not outside, "error classes outside bundlekit/errors.py's tree:\n" + "\n".join(outside)
