"""three.ws export blobs and localStorage dumps."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from bundlekit.cli import cli
from bundlekit.convert._common import Entry, ForeignTree
from bundlekit.convert.threews import blob_to_tree, read_blob, read_threews, tree_to_blob, write_threews
from bundlekit.errors import ConvertError
from bundlekit.memory import Memory

from .conftest import THREEWS_REEL, THREEWS_TONE, through_bundlekit


def by_key(tree: ForeignTree) -> dict[str, Entry]:
    return {e.key: e for e in tree.entries}


def test_reads_export_blob_files_and_fields(threews_file: Path) -> None:
    tree = by_key(read_threews(threews_file))
    tone = tree["feedback_tone"]
    assert (tone.meta["name"], tone.meta["type"]) == ("Tone", "feedback")
    assert tone.meta["created"] == "2026-03-22T00:00:00Z"
    assert tone.meta["x-threews-created"] == "2026-03-22"
    assert tree["reference_reel"].meta["decay"] == "90d"


def test_reads_timeline_events(threews_file: Path) -> None:
    assert [ev["type"] for ev in read_threews(threews_file).timeline] == ["user_said", "waved"]


def test_reads_local_storage_dump(threews_storage: Path) -> None:
    assert sorted(by_key(read_threews(threews_storage))) == ["feedback_tone", "reference_reel"]


def test_dump_with_several_agents_needs_an_agent_id(threews_blob: dict[str, Any]) -> None:
    dump = {"agent:a:memory": json.dumps(threews_blob), "agent:b:memory": json.dumps(threews_blob)}
    with pytest.raises(ConvertError, match="several agents"):
        read_blob(dump)
    assert read_blob(dump, agent_id="b")["namespace"] == "agent-7"


def test_unknown_blob_version_is_refused(threews_blob: dict[str, Any]) -> None:
    with pytest.raises(ConvertError, match="version"):
        read_blob({**threews_blob, "version": "memory/9"})


def test_not_json_is_refused(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text("nope")
    with pytest.raises(ConvertError, match="not a JSON"):
        read_threews(tmp_path / "x.json")


def test_round_trip_through_bundlekit_gives_identical_files(threews_blob: dict[str, Any]) -> None:
    tree = through_bundlekit(blob_to_tree(threews_blob))
    blob = tree_to_blob(tree, namespace="agent-7")
    assert blob["files"] == {"feedback_tone.md": THREEWS_TONE, "reference_reel.md": THREEWS_REEL}
    assert blob["timeline"] == sorted(threews_blob["timeline"], key=lambda e: e["ts"])
    assert (blob["version"], blob["mode"], blob["namespace"]) == ("memory/0.1", "local", "agent-7")


def test_index_lists_memories_by_type() -> None:
    tree = ForeignTree(
        [
            Entry("u", {"name": "U", "description": "du", "type": "user"}, ""),
            Entry("r", {"name": "R", "description": "dr", "type": "reference"}, ""),
        ]
    )
    assert tree_to_blob(tree, namespace=None)["index"] == (
        "# Memory\n\n## User\n- [U](u.md) — du\n\n## Reference\n- [R](r.md) — dr\n"
    )


def test_storage_form_writes_the_blob_as_a_json_string(threews_blob: dict[str, Any], tmp_path: Path) -> None:
    write_threews(blob_to_tree(threews_blob), tmp_path / "ls.json", namespace="agent-7", storage=True)
    dump = json.loads((tmp_path / "ls.json").read_text())
    assert list(dump) == ["agent:agent-7:memory"]
    assert json.loads(dump["agent:agent-7:memory"])["files"]["feedback_tone.md"] == THREEWS_TONE


def test_storage_form_needs_the_agent_id(threews_blob: dict[str, Any], tmp_path: Path) -> None:
    with pytest.raises(ConvertError, match="agent id"):
        write_threews(blob_to_tree(threews_blob), tmp_path / "ls.json", storage=True)


def test_file_without_dates_needs_now(threews_blob: dict[str, Any]) -> None:
    blob = {**threews_blob, "files": {"x.md": "---\nname: X\ndescription: d\ntype: user\n---\nbody\n"}}
    with pytest.raises(ConvertError, match="no created; pass --now"):
        blob_to_tree(blob)
    assert blob_to_tree(blob, now="2026-01-01T00:00:00Z").entries[0].meta["updated"] == "2026-01-01T00:00:00Z"


# --- the encrypted per-file form (bundlekit.crypto.threews) ---------------------------------

WALLET = "0x" + "4c" * 32  # a throwaway test private key


def encrypted_blob(blob: dict[str, Any]) -> dict[str, Any]:
    from bundlekit.crypto._keys import PrivateKeySigner
    from bundlekit.crypto.threews import threews_encrypt, threews_key_from_spec

    key = threews_key_from_spec(PrivateKeySigner(WALLET), "agent-7")
    return {**blob, "files": {n: threews_encrypt(t.encode(), key) for n, t in blob["files"].items()}}


def test_encrypted_files_are_decrypted_with_the_wallet_key(
    threews_blob: dict[str, Any], tmp_path: Path
) -> None:
    from bundlekit.crypto._keys import PrivateKeySigner

    path = tmp_path / "enc.json"
    path.write_text(json.dumps(encrypted_blob(threews_blob)))
    tree = read_threews(path, key=PrivateKeySigner(WALLET))
    assert by_key(tree)["feedback_tone"].meta["name"] == "Tone"


def test_encrypted_files_without_a_key_are_refused_with_what_to_pass(
    threews_blob: dict[str, Any], tmp_path: Path
) -> None:
    path = tmp_path / "enc.json"
    path.write_text(json.dumps(encrypted_blob(threews_blob)))
    with pytest.raises(ConvertError, match="--agent-id"):
        read_threews(path)


def test_wrong_wallet_fails_decryption(threews_blob: dict[str, Any], tmp_path: Path) -> None:
    from bundlekit.crypto._keys import PrivateKeySigner
    from bundlekit.errors import DecryptionError

    path = tmp_path / "enc.json"
    path.write_text(json.dumps(encrypted_blob(threews_blob)))
    with pytest.raises(DecryptionError):
        read_threews(path, key=PrivateKeySigner("0x" + "5d" * 32))


def test_encrypted_export_reads_back(threews_blob: dict[str, Any], tmp_path: Path) -> None:
    from bundlekit.crypto._keys import PrivateKeySigner

    key = PrivateKeySigner(WALLET)
    write_threews(
        blob_to_tree(threews_blob),
        tmp_path / "o.json",
        namespace="agent-7",
        key=key,
        rng=lambda n: b"\x01" * n,
    )
    out = json.loads((tmp_path / "o.json").read_text())
    assert out["mode"] == "encrypted-ipfs" and not out["files"]["feedback_tone.md"].startswith("---")
    back = read_threews(tmp_path / "o.json", key=key)
    assert tree_to_blob(back, namespace="agent-7")["files"]["feedback_tone.md"] == THREEWS_TONE


def test_index_listed_as_a_file_is_not_a_memory(threews_blob: dict[str, Any]) -> None:
    blob = {**threews_blob, "files": {**threews_blob["files"], "MEMORY.md": "# Agent Memory\n"}}
    assert sorted(by_key(blob_to_tree(blob))) == ["feedback_tone", "reference_reel"]


# --- the runtime's localStorage value (``_persist`` in src/memory/index.js of nirholas/three.ws) ----------


def test_storage_value_is_the_runtimes_index_text_files_and_timeline(
    threews_blob: dict[str, Any], tmp_path: Path
) -> None:
    write_threews(blob_to_tree(threews_blob), tmp_path / "ls.json", namespace="agent-7", storage=True)
    value = json.loads(json.loads((tmp_path / "ls.json").read_text())["agent:agent-7:memory"])
    assert list(value) == ["index", "files", "timeline"]
    assert value["index"]["text"].startswith("# Memory\n\n## Feedback\n- [Tone](feedback_tone.md) — ")


def test_storage_value_keeps_the_last_200_timeline_events(threews_blob: dict[str, Any], tmp_path: Path) -> None:
    events = [{"ts": f"2026-04-14T12:{i // 60:02d}:{i % 60:02d}Z", "type": "tick", "n": i} for i in range(250)]
    tree = blob_to_tree({**threews_blob, "timeline": events})
    write_threews(tree, tmp_path / "ls.json", namespace="agent-7", storage=True)
    value = json.loads(json.loads((tmp_path / "ls.json").read_text())["agent:agent-7:memory"])
    assert [ev["n"] for ev in value["timeline"]] == list(range(50, 250))


def test_storage_value_is_written_as_json_stringify_writes_it(threews_blob: dict[str, Any], tmp_path: Path) -> None:
    write_threews(blob_to_tree(threews_blob), tmp_path / "ls.json", namespace="agent-7", storage=True)
    raw = json.loads((tmp_path / "ls.json").read_text())["agent:agent-7:memory"]
    assert raw == json.dumps(json.loads(raw), ensure_ascii=False, separators=(",", ":"))


def test_a_runtime_storage_value_with_index_text_reads(threews_blob: dict[str, Any]) -> None:
    value = {"index": {"text": "# Memory\n"}, "files": threews_blob["files"], "timeline": []}
    blob = read_blob({"agent:a1:memory": json.dumps(value)})
    assert (blob["index"], blob["namespace"]) == ("# Memory\n", "a1")


def test_yaml_failure_falls_back_to_the_runtimes_line_reader_with_a_warning(threews_blob: dict[str, Any]) -> None:
    text = THREEWS_REEL.replace("description: shared Drive folder where user stores match clips",
                                "description: Drive: shared folder")
    tree = blob_to_tree({**threews_blob, "files": {"reference_reel.md": text}})
    assert tree.entries[0].meta["description"] == "Drive:\u00a0shared folder"
    assert any("read line by line" in w for w in tree.warnings)


def test_file_without_frontmatter_imports_with_a_warning(threews_blob: dict[str, Any]) -> None:
    # The runtime's parseFrontmatter finds no frontmatter and keeps the whole text as the body.
    tree = blob_to_tree({**threews_blob, "files": {"loose.md": "just a note\n"}}, now="2026-01-01T00:00:00Z")
    assert (tree.entries[0].meta["name"], tree.entries[0].body) == ("loose", "just a note\n")
    assert tree.warnings == ["three.ws file 'loose.md' has no frontmatter; name taken from the file name"]


def test_export_writes_strings_as_the_runtime_writes_them(threews_blob: dict[str, Any]) -> None:
    tree = blob_to_tree(threews_blob)
    tree.entries[0].meta["description"] = "He said \"go\": now"
    text = tree_to_blob(tree, namespace="agent-7")["files"]["feedback_tone.md"]
    assert "\ndescription: He said \"go\": now\n" in text


# Absurdly deep JSON is a ConvertError, not a RecursionError.

DEEP = "[" * 5_000 + "]" * 5_000


@pytest.mark.usefixtures("default_recursion_limit")
def test_deep_json_file_is_not_a_json_file(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text(DEEP)
    with pytest.raises(ConvertError, match="is not a JSON file"):
        read_threews(path)


@pytest.mark.usefixtures("default_recursion_limit")
def test_deep_json_in_a_local_storage_value_is_not_json(tmp_path: Path) -> None:
    path = tmp_path / "ls.json"
    path.write_text(json.dumps({"agent:a1:memory": DEEP}))
    with pytest.raises(ConvertError, match="is not JSON"):
        read_threews(path, agent_id="a1")


@pytest.mark.parametrize(("line", "shown"), [("name: Fix issue #12", "Fix issue #12"), ("name: done #", "done #"),
                                             ("name: yes", "yes"), ("name: 12", "12"), ("name: null", "null")])
def test_import_reads_a_name_yaml_reads_otherwise_as_the_runtime_shows_it(
    line: str, shown: str, threews_blob: dict[str, Any], tmp_path: Path
) -> None:
    # three.ws's parseFrontmatter shows the whole line after the first ':' (nirholas/three.ws 7c55ae7
    # src/memory/index.js); YAML read ' #12' as a comment and yes as a boolean, and the import kept that
    text = THREEWS_TONE.replace("name: Tone", line)
    blob = tmp_path / "blob.json"
    blob.write_text(json.dumps({**threews_blob, "files": {"feedback_tone.md": text}}), encoding="utf-8")
    done = CliRunner().invoke(cli, ["convert", "--from", "three.ws", str(blob), "-o", str(tmp_path / "tree")])
    assert done.exit_code == 0, done.output
    [record] = [r for r in Memory(tmp_path / "tree").list() if r.key == "feedback_tone"]
    assert record.name.replace("\u00a0", " ") == shown  # ': ' and ' #' may be kept with a no-break space
