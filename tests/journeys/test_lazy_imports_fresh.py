"""Each command whose module issue 37 made lazy (memory.merge, bundle.treemerge and treediff at the first merge;
cli._urls for load and diff; tomllib for a tree's share config; pinners.kubo when $BUNDLEKIT_KUBO_URL names a node;
car.verify; bundle.load at a first follow and a merge, flows.publish when a round's pins fail; flows.merge for
`merge`, memory.files at a first follow, storereport for `store verify`; cryptography's AES-GCM at a seal and an
open, scrypt for a passphrase, its serialization for a key written or a key file in another PEM layout) typed as a
fresh process, where that module is first needed there: it works, or fails with its
documented error and exit code, never an ImportError or AttributeError of a stand-in."""

from __future__ import annotations

import json
from pathlib import Path

from bundlekit.memory import Memory

from .typed import machine_env, set_up, typed


def _tree(root: Path, body: str) -> None:
    mem = Memory(root)
    try:
        mem.write("drills", name="Drills", description="d", type="user", body=body)
        mem.write("rondo", name="Rondo", description="r", type="project", body="rondo")
    finally:
        mem.close()


def test_every_lazily_imported_command_works_in_a_fresh_process(tmp_path: Path) -> None:
    env = machine_env(tmp_path)
    _tree(tmp_path / "a", "kick drills")
    _tree(tmp_path / "b", "kick drills on sunday")
    set_up("bundlekit build a -o a.car", cwd=tmp_path, env=env)
    set_up("bundlekit build b -o b.car", cwd=tmp_path, env=env)
    typed("bundlekit load a.car -o loaded", cwd=tmp_path, env=env)
    assert "~ drills  changed: body" in typed("bundlekit diff a.car b.car", cwd=tmp_path, env=env).stdout
    merged = typed("bundlekit merge b.car -d a --on-conflict both", cwd=tmp_path, env=env).stdout
    assert "drills.conflict-" in merged
    typed("bundlekit verify a.car", cwd=tmp_path, env=env)
    (tmp_path / "tree.key").write_bytes(bytes(range(32)))
    typed("bundlekit build a -o sealed.car --encrypt --key-file tree.key", cwd=tmp_path, env=env)
    typed("bundlekit load sealed.car -o opened --key-file tree.key", cwd=tmp_path, env=env)
    assert (tmp_path / "opened" / "drills.md").read_bytes() == (tmp_path / "a" / "drills.md").read_bytes()
    stretched = {**env, "TREE_PASSPHRASE": "a long enough passphrase"}
    typed("bundlekit build a -o stretched.car --encrypt --passphrase-env TREE_PASSPHRASE", cwd=tmp_path, env=stretched)
    (tmp_path / "a" / ".bundlekit" / "config.toml").write_text('[share]\ntypes = ["user"]\n', encoding="utf-8")
    typed("bundlekit build a -o shared.car", cwd=tmp_path, env=env)
    (tmp_path / "a" / ".bundlekit" / "config.toml").write_text("[share]\ntypes = [\n", encoding="utf-8")
    assert "not valid TOML" in typed("bundlekit build a -o bad.car", cwd=tmp_path, env=env, code=2).stderr
    (tmp_path / "a" / ".bundlekit" / "config.toml").unlink()
    name = set_up("bundlekit name create --name-key k.pem", cwd=tmp_path, env=env).stdout.strip()
    typed("bundlekit sync -d b --name-key k.pem", cwd=tmp_path, env=env)
    (tmp_path / "crlf.pem").write_bytes((tmp_path / "k.pem").read_bytes().replace(b"\n", b"\r\n"))
    typed("bundlekit sync -d b --name-key crlf.pem", cwd=tmp_path, env=env)  # the same key, read by the parser
    checked = typed("bundlekit store verify --json", cwd=tmp_path, env=env).stdout
    assert json.loads(checked)["ok"] is True and json.loads(checked)["blocks"] > 0
    set_up("bundlekit memory init -d follower", cwd=tmp_path, env=env)
    typed(f"bundlekit sync -d follower --name {name}", cwd=tmp_path, env=env)  # a first follow: the loader
    assert (tmp_path / "follower" / "rondo.md").is_file()
    typed("bundlekit sync -d a --name-key k.pem", cwd=tmp_path, env=env)  # merges b's record: the merge's modules
    kubo = {**env, "BUNDLEKIT_KUBO_URL": "http://127.0.0.1:9"}  # a node that refuses: the kubo pinner imported
    _tree(tmp_path / "a", "kick drills, then more")
    refused = typed("bundlekit sync -d a --name-key k.pem", cwd=tmp_path, env=kubo, code=4).stderr
    assert refused.startswith("error: kubo: ") and "Connection refused" in refused
