"""Each package's docstring names every one of its modules, as ``errors.py``'s drawing names every error.

A module added without a word in its package's docstring is a module no reader of the package finds; the
docstring is where DEVELOPERS.md's module map sends them. A name counts when it is spelled as code: in an
inline literal, alone (``tree``) or in a dotted or slashed path (``bundlekit.crypto._stream``,
``memory/secrets``). Read from the source (an AST walk, nothing imported).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def packages() -> list[Path]:
    return sorted(p.parent for p in [*ROOT.joinpath("bundlekit").rglob("__init__.py"),
                                     *ROOT.joinpath("pinners").rglob("__init__.py")])


def members(package: Path) -> list[str]:
    """The package's modules (``.py`` files but ``__init__``, and the C extension's source) and subpackages."""
    modules = {p.stem for p in package.glob("*.py") if p.name != "__init__.py"}
    modules |= {p.stem for p in package.glob("*.c")}
    modules |= {p.name for p in package.iterdir() if (p / "__init__.py").is_file()}
    return sorted(modules)


@pytest.mark.parametrize("package", packages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_package_docstring_names_each_of_its_modules(package: Path) -> None:
    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text(encoding="utf-8"))) or ""
    named = {word for literal in re.findall(r"`+([^`]+)`+", doc) for word in re.split(r"[^\w]+", literal)}
    unnamed = [name for name in members(package) if name not in named]
    assert not unnamed, f"{package.relative_to(ROOT)}/__init__.py's docstring does not name: {', '.join(unnamed)}"
