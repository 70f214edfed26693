"""No god classes: every class in ``bundlekit/`` has at most :data:`MAX_PUBLIC_METHODS` public methods (issue 36).

A public method is one defined in the class body whose name does not start with ``_`` (properties and
static or class methods count; dunder methods and private helpers do not). A class past the bound is split
by concern, as ``Memory`` delegates to ``memory/access``, ``recall``, ``context``, ``meaning`` and
``transaction``, and the derived index to the objects of ``memory/catalog/``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "bundlekit"
MAX_PUBLIC_METHODS = 25


def public_methods(node: ast.ClassDef) -> list[str]:
    """The names of the public methods defined in ``node``'s body, each once (an ``@overload``'s signatures and a
    property's setter are one method with its definition)."""
    return list(dict.fromkeys(
        item.name
        for item in node.body
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and not item.name.startswith("_")
    ))


def classes_in(path: Path) -> list[tuple[str, list[str]]]:
    """Every class defined in ``path`` (nested ones too), with its public methods."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [(node.name, public_methods(node)) for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]


@pytest.mark.parametrize("path", sorted(ROOT.rglob("*.py")), ids=lambda p: str(p.relative_to(ROOT.parent)))
def test_no_class_has_more_than_25_public_methods(path: Path) -> None:
    too_big = [
        f"{path.relative_to(ROOT.parent)}: class {name} has {len(methods)} public methods (at most "
        f"{MAX_PUBLIC_METHODS}): split it by concern"
        for name, methods in classes_in(path)
        if len(methods) > MAX_PUBLIC_METHODS
    ]
    assert not too_big, "\n".join(too_big)


def test_the_count_sees_public_methods_and_properties_not_private_ones() -> None:
    source = (
        "class C:\n"
        "    def __init__(self): ...\n"
        "    def _helper(self): ...\n"
        "    @property\n"
        "    def mode(self): ...\n"
        "    async def run(self): ...\n"
        "    def close(self): ...\n"
    )
    (node,) = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ClassDef)]
    assert public_methods(node) == ["mode", "run", "close"]


def test_an_overloaded_method_counts_once() -> None:
    source = (
        "class C:\n"
        "    @overload\n"
        "    def text(self) -> str: ...\n"
        "    @overload\n"
        "    def text(self, *, raw: bool) -> str | bytes: ...\n"
        "    def text(self, *, raw: bool = False) -> str | bytes: ...\n"
        "    def close(self): ...\n"
    )
    (node,) = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ClassDef)]
    assert public_methods(node) == ["text", "close"]
