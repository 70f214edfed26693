"""A timeline line nested as deep as ``json.loads`` takes (~990 levels) is read by every command reading a day.

``memory context`` withholds credentials from each entry with ``_redact.each_string``, which recursed two Python
frames per level: a line nested ~450 deep (which ``build`` carries) made it "internal error (RecursionError)".
"""

from __future__ import annotations

from pathlib import Path

from bundlekit._redact import each_string

from .conftest import Run


def _deep_line(depth: int) -> str:
    return '{"ts":"2026-01-15T04:48:38Z","type":"note","text":"deep","a":' + "[" * depth + "]" * depth + "}\n"


def test_memory_context_reads_a_day_whose_line_nests_deeper_than_python_recurses(run: Run, tree: Path) -> None:
    (tree / "timeline").mkdir(exist_ok=True)
    (tree / "timeline" / "2026-01-15.jsonl").write_text(_deep_line(800), encoding="utf-8")
    result = run("memory", "context", "-d", tree)
    assert result.exit_code == 0, result.stderr
    assert "internal error" not in result.stderr


def test_each_string_walks_deep_and_self_holding_data_without_recursing() -> None:
    deep: list[object] = ["sk"]
    for _ in range(5000):
        deep = [deep]
    copied = each_string({"k": deep}, str.upper)["K"]
    for _ in range(5000):
        copied = copied[0]
    assert copied == ["SK"]
    loop: list[object] = ["a"]
    loop.append(loop)
    shown = each_string(loop, str.upper)
    assert shown[0] == "A" and shown[1] is shown
