"""``bundlekit/extension_points.py`` lists every entry-point group: those pyproject registers in and the code reads."""

from __future__ import annotations

import ast
import importlib
import re
import tomllib
from pathlib import Path

import pytest

from bundlekit.extension_points import EXTENSION_POINTS

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def groups_read_by_the_code() -> set[str]:
    """Every ``bundlekit.*`` string a module of bundlekit/ or pinners/ names as an entry-point group: the value
    of an ``ENTRY_POINT_GROUP`` constant or a literal ``group=`` argument."""
    found: set[str] = set()
    for path in [*ROOT.joinpath("bundlekit").rglob("*.py"), *ROOT.joinpath("pinners").rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "ENTRY_POINT_GROUP" for t in node.targets):
                found.add(ast.literal_eval(node.value))
            elif isinstance(node, ast.keyword) and node.arg == "group" and isinstance(node.value, ast.Constant):
                if isinstance(node.value.value, str) and node.value.value.startswith("bundlekit."):
                    found.add(node.value.value)
    return found


def test_the_groups_listed_are_those_pyproject_registers_in() -> None:
    assert {point.group for point in EXTENSION_POINTS} == set(PYPROJECT["project"]["entry-points"])


def test_the_groups_listed_are_those_the_code_reads() -> None:
    assert {point.group for point in EXTENSION_POINTS} == groups_read_by_the_code()


def test_each_group_is_read_by_the_module_named_and_its_spec_exists() -> None:
    for point in EXTENSION_POINTS:
        assert importlib.import_module(point.reader).ENTRY_POINT_GROUP == point.group
        assert (ROOT / point.spec).read_text(encoding="utf-8").count(point.group), point.spec


@pytest.mark.parametrize(
    ("group", "name", "target"),
    [(group, name, target) for group, entries in PYPROJECT["project"]["entry-points"].items()
     for name, target in entries.items()],
)
def test_each_built_in_entry_point_meets_its_factory_contract(group: str, name: str, target: str) -> None:
    point = next(p for p in EXTENSION_POINTS if p.group == group)
    module, _, attribute = target.partition(":")
    factory = getattr(importlib.import_module(module), attribute)
    wanted = [m for m in vars(point.factory) if re.fullmatch(r"[a-z]\w*", m)]
    assert wanted and all(callable(getattr(factory, m, None)) for m in wanted), (name, wanted)
