"""Journey: a memory file that breaks on a writer's machine is never published as deleted to its followers.

A writer syncs three memories to a name and a follower follows. Then a hand edit breaks ``b.md`` on the
writer (a ``[`` left open). A build leaves a file that does not parse out with a warning (one memory never
blocks the rest), but a sync round that left ``b`` out would publish its deletion, and the follower's next
round would delete its copy of a memory the writer still holds. So the writer's round is refused, naming the
file, before anything is pinned or published; the follower keeps ``b``. ``memory forget b`` is how the writer
deletes it everywhere; a broken file no bundle carried yet only waits with its warning.
"""

from __future__ import annotations

import json
from pathlib import Path

from bundlekit.blockstore import BlockStore
from bundlekit.gateway.server import serve_in_thread
from tests.journeys.typed import machine_env, typed

UNCLOSED = "---\nname: Half a list\ndescription: d\ntype: user\ntags: [unclosed\n---\n\nb\n"


def _follower_keys(follower: Path) -> list[str]:
    return sorted(path.stem for path in follower.glob("*.md") if path.name != "MEMORY.md")


def _writer_and_follower(tmp_path: Path, keys: tuple[str, ...]) -> tuple[Path, Path, dict[str, str], dict[str, str], str]:
    """A writer that synced memories ``keys`` to a new name, and a follower's empty tree: the writer's and the
    follower's directories and environments, and the name."""
    writer, reader = tmp_path / "writer", tmp_path / "reader"
    writer.mkdir()
    reader.mkdir()
    env_w, env_f = machine_env(writer), machine_env(reader)
    typed("bundlekit memory init -d mem", cwd=writer, env=env_w)
    for key in keys:
        typed(f"bundlekit memory write {key} -d mem --type project --name 'Goal: {key}' --description 'about {key}' "
              f"--body 'body {key}'", cwd=writer, env=env_w)
    name = typed("bundlekit name create --name-key k.pem", cwd=writer, env=env_w).stdout.strip()
    typed("bundlekit sync -d mem --name-key k.pem", cwd=writer, env=env_w)
    typed("bundlekit memory init -d mem", cwd=reader, env=env_f)
    return writer, reader, env_w, env_f, name


def _one_memory_synced(tmp_path: Path, env: dict[str, str], key: str, options: str = "") -> None:
    """A tree ``mem`` in ``tmp_path`` with the memory ``key``, synced to a new name (``k.pem``) with ``options``."""
    typed("bundlekit memory init -d mem", cwd=tmp_path, env=env)
    typed(f"bundlekit memory write {key} -d mem --type project --name N --description 'about it' --body y",
          cwd=tmp_path, env=env)
    typed("bundlekit name create --name-key k.pem", cwd=tmp_path, env=env)
    typed(f"bundlekit sync -d mem --name-key k.pem {options}", cwd=tmp_path, env=env)


def test_a_broken_memory_is_not_published_as_deleted_and_forget_deletes_it_everywhere(tmp_path: Path) -> None:
    writer, reader, env_w, env_f, name = _writer_and_follower(tmp_path, ("a", "b", "c"))
    with serve_in_thread(store=BlockStore(writer / "store")) as server:
        follow = f"bundlekit sync -d mem --name {name} --gateway {server.url}"
        typed(follow, cwd=reader, env=env_f)
        assert _follower_keys(reader / "mem") == ["a", "b", "c"]

        (writer / "mem" / "b.md").write_text(UNCLOSED, encoding="utf-8")
        refused = typed("bundlekit sync -d mem --name-key k.pem --json", cwd=writer, env=env_w, code=1)
        assert refused.stdout == ""
        assert "bundle holds b, and publishing the tree without it would delete it" in refused.stderr
        assert "nothing was pinned or published" in refused.stderr
        typed(follow, cwd=reader, env=env_f)
        assert _follower_keys(reader / "mem") == ["a", "b", "c"]

        typed("bundlekit memory forget b -d mem", cwd=writer, env=env_w)
        synced = json.loads(typed("bundlekit sync -d mem --name-key k.pem --json", cwd=writer, env=env_w).stdout)
        assert synced["published"] is not None
        typed(follow, cwd=reader, env=env_f)
        assert _follower_keys(reader / "mem") == ["a", "c"]


def test_a_broken_memory_no_bundle_carried_yet_waits_with_its_warning(tmp_path: Path) -> None:
    env = machine_env(tmp_path)
    _one_memory_synced(tmp_path, env, "a")
    (tmp_path / "mem" / "new.md").write_text(UNCLOSED, encoding="utf-8")
    typed("bundlekit memory write b -d mem --type project --name B --description 'about b' --body y", cwd=tmp_path,
          env=env)
    synced = typed("bundlekit sync -d mem --name-key k.pem --json", cwd=tmp_path, env=env)
    report = json.loads(synced.stdout)
    assert report["published"] is not None
    assert any("new.md" in warning and "left out" in warning for warning in report["warnings"])


def test_a_broken_memory_is_not_published_as_deleted_from_a_store_without_the_last_bundle(tmp_path: Path) -> None:
    writer, reader, env_w, env_f, name = _writer_and_follower(tmp_path, ("a", "b"))
    with serve_in_thread(store=BlockStore(writer / "store")) as server:
        follow = f"bundlekit sync -d mem --name {name} --gateway {server.url}"
        typed(follow, cwd=reader, env=env_f)
    fresh = machine_env(tmp_path / "fresh")  # the same tree and key, a store that never held the name's bundles
    (writer / "mem" / "b.md").write_text(UNCLOSED, encoding="utf-8")
    with serve_in_thread(store=BlockStore(writer / "store")) as server:
        refused = typed(f"bundlekit sync -d mem --name-key k.pem --gateway {server.url}", cwd=writer, env=fresh,
                        code=1)
        assert "bundle holds b, and publishing the tree without it would delete it" in refused.stderr


def test_a_round_that_cannot_read_its_last_bundle_does_not_publish_a_left_out_memory_as_deleted(
    tmp_path: Path,
) -> None:
    writer, _reader, _env_w, _env_f, _name = _writer_and_follower(tmp_path, ("b",))
    (writer / "mem" / "b.md").write_text(UNCLOSED, encoding="utf-8")
    fresh = machine_env(tmp_path / "fresh")  # a store that never held the tree's last bundle, no gateway
    refused = typed("bundlekit sync -d mem --name-key k.pem", cwd=writer, env=fresh, code=1)
    assert "last bundle holds b cannot be read" in refused.stderr
    assert "nothing was pinned or published" in refused.stderr


def test_a_broken_memory_of_an_encrypted_name_is_not_published_as_deleted(tmp_path: Path) -> None:
    env = machine_env(tmp_path)
    (tmp_path / "tree.key").write_text("ab" * 32, encoding="utf-8")
    _one_memory_synced(tmp_path, env, "b", "--key-file tree.key")
    (tmp_path / "mem" / "b.md").write_text(UNCLOSED, encoding="utf-8")
    refused = typed("bundlekit sync -d mem --name-key k.pem --key-file tree.key", cwd=tmp_path, env=env, code=1)
    assert "bundle holds b, and publishing the tree without it would delete it" in refused.stderr
