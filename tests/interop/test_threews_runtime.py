"""bundlekit against three.ws's own runtime: ``src/memory/index.js`` and ``src/memory/crypto.js`` of
nirholas/three.ws at commit 2071392cf490202c2c8a9f21a5991197c6fbc130.

The fixtures in fixtures/interop/threews/ were written and read by that runtime under Node
(``generate.py`` drives it through ``runtime.mjs``): what it persisted and exported, and every file it
loaded from bundles bundlekit built. These tests check bundlekit reads the former with every field right,
that the runtime loaded every memory of each bundle with every field right, and that bundlekit still
builds exactly those bundles (so the recorded loads describe the current code).
"""

from __future__ import annotations

import json
import re
import runpy
import shutil
from pathlib import Path
from typing import Any

import pytest

from bundlekit.convert import import_from
from bundlekit.convert.threews import parse_threews_file, read_threews
from bundlekit.memory import parse_memory_file

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "interop" / "threews"
RECORD = json.loads((FIXTURES / "bundles.json").read_text(encoding="utf-8"))
BUNDLES = {b["name"]: b for b in RECORD["bundles"]}
SAMPLE = ROOT / "fixtures" / "memory"


def _generator_build() -> Any:
    """``build`` of generate.py: the one definition of how the recorded bundles were built."""
    return runpy.run_path(str(FIXTURES / "generate.py"))["build"]


def loaded(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / f"loaded-{name}.json").read_text(encoding="utf-8"))
    return data


def runtime_value() -> dict[str, Any]:
    dump = json.loads((FIXTURES / "runtime-localstorage.json").read_text(encoding="utf-8"))
    value: dict[str, Any] = json.loads(dump[f"agent:{RECORD['agent']}:memory"])
    return value


# --- what the runtime wrote, read by bundlekit -----------------------------------------------


def test_the_runtime_persists_index_files_and_timeline_in_local_storage() -> None:
    value = runtime_value()
    assert list(value) == ["index", "files", "timeline"] and list(value["index"]) == ["text"]


def test_runtime_files_read_back_with_every_field_right() -> None:
    entries = {e.key: e.meta for e in read_threews(FIXTURES / "runtime-localstorage.json").entries}
    assert set(entries) == {"user_role", "feedback_origin", "project_plan", "reference_quotes",
                            "reference_leading_quote", "user_tags"}
    assert entries["user_role"]["description"] == "Argentina fan, plays weekly 5-a-side on Saturdays"
    assert entries["project_plan"]["name"] == "Plan:phase 2"
    assert entries["project_plan"]["decay"] == "90d"
    assert entries["reference_quotes"]["description"] == "He said \"ship it\" and 'soon'"
    assert entries["reference_leading_quote"]["name"] == '"Quoted" title'
    assert entries["user_tags"]["tags"] == ["football", "schedule"]
    assert entries["user_tags"]["x-threews-extra"] == {"moods": ["calm", "focused"]}
    assert {m["type"] for m in entries.values()} == {"user", "feedback", "project", "reference"}
    assert all(m["created"] == "2026-04-14T00:00:00Z" and m["x-threews-created"] == "2026-04-14"
               for m in entries.values())


def test_a_value_yaml_cannot_read_is_read_as_the_runtime_reads_it_with_a_warning() -> None:
    warnings: list[str] = []
    meta, _body = parse_threews_file("feedback_origin.md", runtime_value()["files"]["feedback_origin.md"], warnings)
    assert meta["description"] == "Note: written by three.ws"
    assert len(warnings) == 1 and "line 3" in warnings[0] and "read line by line" in warnings[0]


def test_colon_space_is_kept_with_a_no_break_space_so_both_readers_agree() -> None:
    tree = read_threews(FIXTURES / "runtime-localstorage.json")
    origin = next(e for e in tree.entries if e.key == "feedback_origin")
    assert origin.meta["description"] == "Note:\u00a0written by three.ws"
    assert any("no-break space" in w for w in tree.warnings)


def test_runtime_timeline_events_read_back() -> None:
    tree = read_threews(FIXTURES / "runtime-localstorage.json")
    assert [(ev["type"], ev.get("style") or ev.get("text")) for ev in tree.timeline] == [
        ("waved", "enthusiastic"), ("user_said", "how's my form?")]


def test_runtime_export_blob_reads_the_same_memories() -> None:
    from_export = read_threews(FIXTURES / "runtime-export.json")
    from_storage = read_threews(FIXTURES / "runtime-localstorage.json")
    assert [(e.key, e.meta) for e in from_export.entries] == [(e.key, e.meta) for e in from_storage.entries]


# --- what bundlekit built, loaded by the runtime ---------------------------------------------


@pytest.mark.parametrize("name", sorted(BUNDLES))
def test_the_runtime_loaded_every_memory_of_the_bundle(name: str) -> None:
    result = loaded(name)
    assert result["mode"] == ("encrypted-ipfs" if BUNDLES[name]["encrypted"] else "ipfs")
    assert sorted(result["files"]) == BUNDLES[name]["memories"] and result["files"]


@pytest.mark.parametrize("name", ["sample-plain", "sample-encrypted", "sample-encrypted-v0"])
def test_the_runtime_got_each_memory_file_byte_for_byte(name: str) -> None:
    for filename, text in loaded(name)["files"].items():
        assert text == (SAMPLE / filename).read_text(encoding="utf-8")


@pytest.mark.parametrize("name", ["sample-plain", "sample-encrypted"])
def test_the_runtime_reads_our_frontmatter_as_we_do(name: str) -> None:
    for filename, meta in loaded(name)["meta"].items():
        record = parse_memory_file((SAMPLE / filename).read_text(encoding="utf-8"), key=filename[:-3])
        assert (meta["name"], meta["description"], meta["type"]) == (record.name, record.description, record.type)
        assert (meta["created"], meta["updated"]) == (record.meta["created"], record.meta["updated"])
        if record.tags:  # a flow list: the runtime sees its text, never a stray key
            assert meta["tags"] == "[" + ", ".join(record.tags) + "]"
        assert not any(k.startswith("-") for k in meta)


def test_runtime_memories_come_back_to_the_runtime_unchanged_through_a_bundle() -> None:
    """Runtime -> localStorage -> bundlekit tree -> plain bundle -> runtime: the runtime's own fields agree,
    except the two values bundlekit reports on import (see bundles.json's import_warnings)."""
    before = {name: parse_threews_file(name, text)[0] for name, text in runtime_value()["files"].items()}
    after = loaded("imported-plain")["meta"]
    assert set(after) == set(before)
    for name, meta in before.items():
        for field in ("name", "description", "type", "decay"):
            got = after[name].get(field)
            if name == "feedback_origin.md" and field == "description":
                assert got == meta[field].replace(": ", ":\u00a0")
            elif name == "reference_leading_quote.md" and field == "name":
                assert got == json.dumps(meta[field])  # kept double-quoted, as the import warned
            else:
                assert got == meta.get(field), (name, field)
    assert len(RECORD["import_warnings"]) == 4


@pytest.mark.parametrize("name", sorted(BUNDLES))
def test_bundlekit_still_builds_the_bundles_the_runtime_loaded(name: str, tmp_path: Path) -> None:
    build = _generator_build()
    bundle = BUNDLES[name]
    if bundle["tree"] == "imported":
        tree = tmp_path / "imported"
        import_from("three.ws", FIXTURES / "runtime-localstorage.json", tree)
    else:  # a copy without .bundlekit/: a build records lineage there, and the next build would name a parent
        tree = tmp_path / "tree"
        shutil.copytree(ROOT / bundle["tree"], tree, ignore=shutil.ignore_patterns(".bundlekit"))
    signature = bytes.fromhex(bundle["signature_hex"]) if bundle["signature_hex"] else None
    assert build(name, tree, tmp_path / "b.car", signature=signature)["root"] == bundle["root"]


def test_the_three_ws_link_pattern_finds_every_memory_in_what_the_runtime_loaded() -> None:
    index = loaded("sample-plain")["index"]
    targets = [m[1] for m in re.findall(r"\[([^\]]+)\]\(([^)]+\.md)\)", index)]
    assert sorted(targets) == BUNDLES["sample-plain"]["memories"]
