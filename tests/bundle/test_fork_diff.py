"""Fork (merge and replace, all or nothing, source set) and diff (dirs, CARs, CIDs)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from bundlekit.bundle.build import BuildOptions, BundleResult, build_bundle
from bundlekit.bundle.diff import diff_sources
from bundlekit.bundle.fork import fork_bundle
from bundlekit.bundle.lineage import read_parents
from bundlekit.bundle.load import LoadOptions
from bundlekit.bundle.sources import Gateways
from bundlekit.cli import cli
from bundlekit.crypto._keys import RawKeyFile
from bundlekit.errors import IntegrityError, SecretDetectedError, UsageError
from bundlekit.gateway.server import serve_in_thread
from bundlekit.ipld.cid import cid_to_str
from bundlekit.memory import Memory
from bundlekit.memory import screen as screen_module
from bundlekit import _secrets as secrets_module
from bundlekit._secrets import guard
from bundlekit.net.http import HttpOptions

from .conftest import CREATED, BlockGateway, car_blocks, make_tree


@pytest.fixture
def bundle(tree: Path, tmp_path: Path) -> BundleResult:
    return build_bundle(tree, tmp_path / "b.car", options=BuildOptions(created=CREATED))


def _local(root: Path) -> Memory:
    mem = Memory(root, clock=lambda: CREATED)
    mem.write("user_role", name="Role", description="local view", type="user", body="Local body.")
    mem.write("local_only", name="Local", description="only here", type="reference", body="Mine.")
    return mem


def test_fork_into_a_new_tree_keeps_each_file_and_records_the_root_in_the_lineage(
        bundle: BundleResult, tree: Path, tmp_path: Path) -> None:
    result = fork_bundle(str(bundle.car), tmp_path / "fork")
    mem = Memory(tmp_path / "fork")
    source = f"ipfs://{cid_to_str(bundle.root)}"
    records = {r.key: r for r in mem.list()}
    assert set(records) == {"user_role", "feedback_tone", "project_season", "reference_reel"}
    assert all((tmp_path / "fork" / f"{k}.md").read_bytes() == (tree / f"{k}.md").read_bytes()
               for k in records)
    assert read_parents(tmp_path / "fork") == [cid_to_str(bundle.root)]
    assert result.loaded.source == source
    assert any("drills" in str(e) for e in mem.timeline())


def test_fork_over_http_gateway(bundle: BundleResult, tmp_path: Path) -> None:
    with serve_in_thread(cars=[bundle.car]) as server:
        fork_bundle(f"ipfs://{cid_to_str(bundle.root)}", tmp_path / "fork", source=Gateways([server.url]))
    assert Memory(tmp_path / "fork").read("feedback_tone") is not None


def test_fork_merge_keeps_local_memories_on_conflict(bundle: BundleResult, tmp_path: Path) -> None:
    _local(tmp_path / "dest")
    fork_bundle(str(bundle.car), tmp_path / "dest", strategy="merge")
    mem = Memory(tmp_path / "dest")
    role = mem.read("user_role")
    assert role is not None and role.body == "Local body."
    assert mem.read("local_only") is not None and mem.read("feedback_tone") is not None


def test_fork_replace_takes_the_bundle_memories(bundle: BundleResult, tmp_path: Path) -> None:
    _local(tmp_path / "dest")
    fork_bundle(str(bundle.car), tmp_path / "dest", strategy="replace")
    mem = Memory(tmp_path / "dest")
    role = mem.read("user_role")
    assert role is not None and "Plays as a winger" in role.body and "source" not in role.meta
    assert mem.read("local_only") is not None


def test_fork_of_a_tampered_bundle_changes_nothing(
    bundle: BundleResult, tmp_path: Path, block_gateway: tuple[BlockGateway, str, object]
) -> None:
    from bundlekit.ipld.cid import parse_cid

    gateway, url, _server = block_gateway
    gateway.blocks.update(car_blocks(bundle.car))
    gateway.tamper.add(parse_cid(bundle.manifest["memory"]["files"]["memory/project_season.md"]["cid"]))
    _local(tmp_path / "dest")
    before = sorted((p.name, p.read_bytes()) for p in (tmp_path / "dest").glob("*.md"))
    with pytest.raises(IntegrityError):
        fork_bundle(f"ipfs://{cid_to_str(bundle.root)}", tmp_path / "dest", source=Gateways([url]),
                    options=LoadOptions(http=HttpOptions(sleep=lambda s: None)))
    assert sorted((p.name, p.read_bytes()) for p in (tmp_path / "dest").glob("*.md")) == before


def test_fork_into_a_new_tree_that_fails_leaves_no_directory(bundle: BundleResult, tmp_path: Path) -> None:
    from bundlekit.errors import KeySourceError

    enc = build_bundle(make_tree(tmp_path / "t2"), tmp_path / "e.car", key=RawKeyFile(bytes(32)),
                       options=BuildOptions(created=CREATED))
    with pytest.raises(KeySourceError):
        fork_bundle(str(enc.car), tmp_path / "new")
    assert not (tmp_path / "new").exists()


def test_fork_of_an_encrypted_bundle_decrypts(tmp_path: Path) -> None:
    key = RawKeyFile(bytes(32))
    enc = build_bundle(make_tree(tmp_path / "t"), tmp_path / "e.car", key=key,
                       options=BuildOptions(created=CREATED))
    fork_bundle(str(enc.car), tmp_path / "fork", key=key)
    role = Memory(tmp_path / "fork").read("user_role")
    assert role is not None and "Plays as a winger" in role.body


def test_fork_unknown_strategy_is_refused(bundle: BundleResult, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="strategy"):
        fork_bundle(str(bundle.car), tmp_path / "fork", strategy="union")


# -- diff -------------------------------------------------------------------------------------


def test_diff_of_a_tree_and_its_bundle_is_empty(tree: Path, bundle: BundleResult) -> None:
    result = diff_sources(tree, bundle.car)
    assert not result.different and result.unchanged == 4


def test_diff_names_added_removed_and_changed_fields(tree: Path, bundle: BundleResult, tmp_path: Path) -> None:
    mem = Memory(tree, clock=lambda: CREATED.replace(day=15))
    mem.write("user_role", name="Role", description="now a goalkeeper", type="user", body="Plays in goal.")
    mem.write("new_one", name="New", description="fresh", type="project", body="New.")
    mem.forget("reference_reel")
    result = diff_sources(bundle.car, tree)
    assert result.added == ["new_one"] and result.removed == ["reference_reel"]
    assert [(c.key, c.fields) for c in result.changed] == [
        ("user_role", ("body", "description", "revision", "updated"))
    ]


def test_diff_of_two_cids_over_a_gateway(tree: Path, bundle: BundleResult, tmp_path: Path) -> None:
    Memory(tree, clock=lambda: CREATED).write("extra", name="X", description="x", type="user", body="x")
    second = build_bundle(tree, tmp_path / "c.car", options=BuildOptions(created=CREATED))
    with serve_in_thread(cars=[bundle.car, second.car]) as server:
        result = diff_sources(cid_to_str(bundle.root), cid_to_str(second.root), source=Gateways([server.url]))
    assert result.added == ["extra"] and not result.removed and not result.changed


def test_diff_counts_timeline_entries_added(tree: Path, bundle: BundleResult) -> None:
    Memory(tree, clock=lambda: CREATED).note("session", summary="another one")
    result = diff_sources(bundle.car, tree)
    assert (result.timeline_added, result.timeline_removed) == (1, 0)
    assert result.different and not result.changed


def test_fork_refusing_a_secret_names_what_a_forker_can_do_not_a_missing_option(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A bundle another tool built with a credential in it (bundlekit's own build refuses one):
    # the tree's guard is switched off for the build only.
    tree = tmp_path / "tree"
    Memory(tree, clock=lambda: CREATED).write(
        "leak", name="Leak", description="a key", type="reference",
        body="sk-ant-api03-ABCDEFGHIJKLMNOPQRSTUVWXYZabcd", allow_secrets=True,
    )
    with monkeypatch.context() as patched:
        patched.setattr(secrets_module, "guard", lambda *a, **k: None)  # looked up by the tree when it runs
        for name in ("guard_key", "guard_record"):
            patched.setattr(screen_module, name, lambda *a, **k: None)
        built = build_bundle(tree, tmp_path / "leak.car", options=BuildOptions(created=CREATED))
    result = CliRunner().invoke(cli, ["fork", str(built.car), str(tmp_path / "fork")])
    assert result.exit_code == SecretDetectedError.exit_code
    assert "leak.md line" in result.stderr and "rule anthropic-api-key" in result.stderr
    assert "--allow-secrets" not in result.stderr
    assert "ask its publisher to remove it" in result.stderr and "`bundlekit load`" in result.stderr
    assert "sk-ant-api03" not in result.stderr
    assert not (tmp_path / "fork").exists()


def test_the_guard_hands_its_finding_apart_from_its_advice() -> None:
    with pytest.raises(SecretDetectedError) as caught:
        guard("token: sk-ant-api03-ABCDEFGHIJKLMNOPQRSTUVWXYZabcd", "x.md")
    assert caught.value.finding == "x.md line 1 looks like an Anthropic API key (rule anthropic-api-key)"
    assert str(caught.value).startswith(f"{caught.value.finding}; memory must not carry credentials")
