"""Issue 39 (sharing): owners share only their project memories; a teammate mounts them read-only.

Typed as the people would (each line through the CLI in the test process, the MCP servers as processes the SDK's
client starts): alice builds ``--share project``, bob shares through his tree's ``[share]``
config, carol serves her own tree with both bundles as workspace layers (``bundlekit mcp -d carol
--workspace alice.car --workspace bob=bob.car``) to the official MCP SDK's client, recalls across all
three (each hit names its source, as MassGen labels ``[Agent: x]``: github.com/massgen/MassGen
``docs/source/user_guide/memory_filesystem_mode.rst`` at 304dbaa1), writes through MCP (the write lands in
her tree, never in a layer), then builds and merges her own bundle (no layer memory is ever pulled in).
The sharing model is Magic Context's (seed 002, "Workspaces"): only named categories, read-only for
non-owners, a malformed share list fails closed.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

import bundlekit.bundle.build as build_module
from bundlekit.bundle.build import BuildOptions, build_bundle
from bundlekit.bundle.share import SharePolicy
from tests.journeys.typed import in_process, set_up
from tests.mcp.conftest import run_client, skip_without_the_sdk, stdio_params

skip_without_the_sdk()


def _cli(cwd: Path, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    """``bundlekit ARGS`` through the CLI in this process (``typed.in_process``): what the journey checks is what
    each command reads, writes and prints, not a fresh process's start-up; the MCP servers stay processes."""
    done = in_process(args, cwd=cwd, env={**os.environ, "CI": "true"})
    if ok:
        assert done.returncode == 0, f"bundlekit {' '.join(args)}: exit {done.returncode}\n{done.stderr}"
    return done


# the memories the team's set-up writes: (tree, key, type, text)
_MEMORIES = (
    ("alice", "alice_deploys", "project", "deploys go out on tuesdays after review"),
    ("alice", "alice_health", "user", "alice-private-health-note deploys never on her day off"),
    ("bob", "bob_deploys", "project", "deploys need the canary green for an hour"),
    ("bob", "bob_salary", "user", "bob-private-salary deploys bonus"),
    ("carol", "carol_deploys", "project", "deploys are frozen in december"),
)


def _structured(result: Any) -> Any:
    assert not result.is_error, result.content
    data = result.structured_content
    return data["result"] if isinstance(data, dict) and set(data) == {"result"} else data


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _set_up(cwd: Path, *args: str) -> None:
    set_up(shlex.join(["bundlekit", *args]), cwd=cwd, env={**os.environ, "CI": "true"})


@pytest.fixture(scope="session")
def typed_team(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """alice and bob have shared their project memories; carol has her own tree. Set up once per test process
    with the ten command lines a person types (through the CLI in this process: the set-up, not what any test
    checks); each test works in a copy of it (``team``)."""
    tmp_path = tmp_path_factory.mktemp("team")
    for who in ("alice", "bob", "carol"):
        _set_up(tmp_path, "memory", "-d", who, "init")
    for tree, key, kind, text in _MEMORIES:
        _set_up(tmp_path, "memory", "-d", tree, "write", key, "--type", kind, "--name", key.replace("_", " "),
                "--description", text, "--body", text)
    _set_up(tmp_path, "build", "-d", "alice", "--share", "project", "-o", "alice.car")
    (tmp_path / "bob" / ".bundlekit").mkdir(exist_ok=True)
    (tmp_path / "bob" / ".bundlekit" / "config.toml").write_text('[share]\ntypes = ["project"]\n')
    _set_up(tmp_path, "build", "-d", "bob", "-o", "bob.car")
    for car in ("alice.car", "bob.car"):
        assert b"private" not in (tmp_path / car).read_bytes()
    return tmp_path


@pytest.fixture
def team(typed_team: Path, tmp_path: Path) -> Path:
    """This test's own copy of the typed team folder (a test may change it)."""
    copy = tmp_path / "team"
    shutil.copytree(typed_team, copy, symlinks=True)
    return copy


def test_a_teammate_recalls_across_two_shared_layers_and_writes_only_to_her_own_tree(team: Path) -> None:
    before = {car: _digest(team / car) for car in ("alice.car", "bob.car")}

    async def session(client: Any) -> tuple[Any, ...]:
        recalled = await client.call_tool("memory_recall", {"query": "deploys", "limit": 10, "rank": "salience"})
        context = await client.call_tool("memory_context", {})
        written = await client.call_tool("memory_write", {
            "key": "carol_release", "name": "Release", "description": "carol's release note",
            "type": "project", "body": "the release train leaves on fridays"})
        shadow = await client.call_tool("memory_write", {
            "key": "alice_deploys", "name": "Overwrite", "description": "try to write into alice's layer",
            "type": "project", "body": "carol-overwrite"})
        listed = await client.call_tool("memory_list", {})
        return recalled, context, written, shadow, listed

    params = stdio_params("-d", str(team / "carol"), "--workspace", str(team / "alice.car"),
                          "--workspace", f"bob={team / 'bob.car'}")
    recalled, context, written, shadow, listed = run_client(params, session)
    hits = _structured(recalled)
    assert {(hit["key"], hit["source"]) for hit in hits} == {
        ("carol_deploys", "own"), ("alice_deploys", "alice"), ("bob_deploys", "bob")}
    assert all(hit["read_only"] is (hit["source"] != "own") for hit in hits)
    text = _structured(context)
    assert "[Agent: alice]" in text and "[Agent: bob]" in text and "private" not in text
    assert _structured(written)["file"] == "carol_release.md"
    # A write of a layer's key goes to carol's own tree; the layer's memory is untouched.
    assert _structured(shadow)["file"] == "alice_deploys.md"
    rows = _structured(listed)
    assert ("alice_deploys", "alice") in {(row["key"], row["source"]) for row in rows}
    assert {car: _digest(team / car) for car in before} == before
    assert sorted(p.name for p in (team / "carol").glob("*.md")) == [
        "MEMORY.md", "alice_deploys.md", "carol_deploys.md", "carol_release.md"]
    assert "carol-overwrite" in (team / "carol" / "alice_deploys.md").read_text()
    assert not list((team / "alice").glob("carol*")) and not list((team / "bob").glob("carol*"))


def test_a_merge_never_pulls_layer_memories_into_the_own_tree(team: Path) -> None:
    _cli(team, "build", "-d", "carol", "-o", "carol-before.car")

    async def session(client: Any) -> Any:
        return await client.call_tool("memory_write", {
            "key": "carol_retro", "name": "Retro", "description": "retro notes", "type": "project",
            "body": "fewer meetings"})

    run_client(stdio_params("-d", str(team / "carol"), "--workspace", str(team / "alice.car"),
                            "--workspace", str(team / "bob.car")), session)
    _cli(team, "merge", "carol-before.car", "-d", "carol")
    _cli(team, "build", "-d", "carol", "-o", "carol-after.car")
    data = (team / "carol-after.car").read_bytes()
    assert b"tuesdays" not in data and b"canary" not in data  # alice's and bob's shared memories
    assert sorted(p.name for p in (team / "carol").glob("*.md")) == ["MEMORY.md", "carol_deploys.md", "carol_retro.md"]


def test_a_layer_that_does_not_verify_stops_the_server_before_it_serves(team: Path) -> None:
    data = bytearray((team / "alice.car").read_bytes())
    at = data.index(b"tuesdays")
    data[at] ^= 0x01
    (team / "tampered.car").write_bytes(bytes(data))
    done = _cli(team, "mcp", "-d", "carol", "--workspace", "tampered.car", ok=False)
    assert done.returncode == 3 and "Traceback" not in done.stderr


def test_an_unknown_share_type_shares_nothing(team: Path) -> None:
    done = _cli(team, "build", "-d", "alice", "--share", "projects", "-o", "x.car", ok=False)
    assert done.returncode == 2 and "projects" in done.stderr and not (team / "x.car").exists()


def test_memory_recall_and_context_see_the_workspace_from_the_shell(team: Path) -> None:
    done = _cli(team, "memory", "-d", "carol", "recall", "deploys", "--rank", "salience", "--json",
                "--workspace", "alice.car", "--workspace", "bob=bob.car")
    assert {(hit["key"], hit["source"]) for hit in json.loads(done.stdout)} == {
        ("carol_deploys", "own"), ("alice_deploys", "alice"), ("bob_deploys", "bob")}
    text = _cli(team, "memory", "-d", "carol", "recall", "deploys", "--rank", "salience",
                "--workspace", "alice.car").stdout
    assert "\talice_deploys\t" in text and text.count("[alice]") == 1 and "[own]" in text
    context = _cli(team, "memory", "-d", "carol", "context", "--workspace", "alice.car").stdout
    assert "### alice deploys [Agent: alice]" in context and "private" not in context
    refused = _cli(team, "memory", "-d", "carol", "context", "--workspace", "alice.car", "--query", "x", ok=False)
    assert refused.returncode == 2


def test_an_encrypted_shared_bundle_is_a_layer_with_the_team_key(team: Path) -> None:
    (team / "team.key").write_text("ab" * 32)
    (team / "team.key").chmod(0o600)
    _cli(team, "build", "-d", "alice", "--share", "project", "--encrypt", "--key-file", "team.key", "--redact-index",
         "-o", "enc.car")
    assert b"tuesdays" not in (team / "enc.car").read_bytes()

    async def session(client: Any) -> Any:
        return await client.call_tool("memory_recall", {"query": "deploys", "limit": 10, "rank": "salience"})

    hits = _structured(run_client(stdio_params("-d", str(team / "carol"), "--workspace", f"alice={team / 'enc.car'}",
                                               "--key-file", str(team / "team.key")), session))
    assert ("alice_deploys", "alice") in {(hit["key"], hit["source"]) for hit in hits}
    wrong = _cli(team, "mcp", "-d", "carol", "--workspace", "enc.car", ok=False)
    assert wrong.returncode in (2, 3) and "Traceback" not in wrong.stderr


def test_a_bundle_claiming_types_it_does_not_hold_is_cut_to_its_claim_with_a_warning(
    team: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # mallory's builder writes share={types: [project]} into the manifest but packs every memory.
    monkeypatch.setattr(build_module, "select_shared", lambda files, records, policy, warn: (files, records))
    build_bundle(team / "alice", team / "mallory.car", options=BuildOptions(share=SharePolicy(("project",))))
    monkeypatch.undo()
    assert b"alice-private-health-note" in (team / "mallory.car").read_bytes()
    done = _cli(team, "memory", "-d", "carol", "recall", "deploys", "--rank", "salience", "--json",
                "--workspace", "mallory=mallory.car")
    assert "alice-private-health-note" not in done.stdout
    assert "alice_health.md: dropped" in done.stderr and "project" in done.stderr
    assert {hit["key"] for hit in json.loads(done.stdout)} == {"carol_deploys", "alice_deploys"}


def test_a_layer_named_by_a_bare_ipns_name_is_resolved_and_verified(team: Path) -> None:
    name = _cli(team, "name", "create", "--name-key", "alice.pem").stdout.strip()
    _cli(team, "pin", "-d", "alice", "--share", "project", "--name-key", "alice.pem")
    done = _cli(team, "memory", "-d", "carol", "recall", "deploys", "--rank", "salience", "--json",
                "--workspace", name)
    assert {(hit["key"], hit["source"]) for hit in json.loads(done.stdout)} == {
        ("carol_deploys", "own"), ("alice_deploys", "alice")}
