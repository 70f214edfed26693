"""Attacks on the encrypted build cache (issue 37, ``specs/encryption.md`` 4.1): a cache hit is provably the
same bytes, nothing is written through what stands in the cache's place, and a key that draws a fresh bundle
key every build (recipients, an identity re-encrypting as sync does) reuses nothing of an earlier bundle."""

from __future__ import annotations

import os
import sqlite3
import tracemalloc
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bundlekit.bundle.build import BuildOptions, BundleResult, build_bundle
import bundlekit.bundle.buildcache as buildcache
from bundlekit.bundle.buildcache import CACHE_NAME, EncryptionCache
from bundlekit.bundle.load import load_bundle
from bundlekit.bundle.share import SharePolicy
from bundlekit.crypto import RawKeyFile
from bundlekit.crypto.recipients import IdentityKey, RecipientsKey, new_identity, recipient_of
from bundlekit.errors import WrongKeyError
from bundlekit.memory import Memory

KEY = RawKeyFile(bytes(range(32)))
NOW = datetime(2026, 4, 14, 12, 0, 0, tzinfo=UTC)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "memory"
    mem = Memory(root, namespace="agent", clock=lambda: NOW)
    mem.init()
    for i in range(4):
        mem.write(f"note_{i}", name=f"Note {i}", description=f"about {i}", type="project", body=f"body {i} " * 30)
    return root


def _cids(result: BundleResult) -> set[str]:
    return {entry["cid"] for path, entry in result.manifest["memory"]["files"].items() if path.endswith(".enc")}


def _decrypts_to_the_tree(result: BundleResult, tree: Path, key: object) -> None:
    loaded = load_bundle(str(result.car), key=key)  # type: ignore[arg-type]
    for name in ("note_0.md", "note_1.md", "note_2.md", "note_3.md"):
        assert loaded.files[name] == (tree / name).read_bytes()


@pytest.mark.parametrize("edit", [
    "UPDATE files SET plain = 'not bytes'",
    "UPDATE files SET plain = 5, cipher = 'x'",
    "UPDATE files SET tag = x'00'",
    "UPDATE files SET cipher = NULL",
])
def test_a_cache_row_edited_into_another_shape_is_re_encrypted_not_a_crash(
    tree: Path, tmp_path: Path, edit: str
) -> None:
    build_bundle(tree, tmp_path / "a.car", key=KEY)
    with closing(sqlite3.connect(tree / CACHE_NAME)) as db, db:
        db.execute("CREATE TABLE loose (path, plain, cipher, tag)")
        db.execute("INSERT INTO loose SELECT * FROM files")
        db.execute("DROP TABLE files")
        db.execute("ALTER TABLE loose RENAME TO files")  # no NOT NULL, no types: any edit holds
        db.execute(edit)
    _decrypts_to_the_tree(build_bundle(tree, tmp_path / "b.car", key=KEY), tree, KEY)


@pytest.mark.parametrize("suffix", ["", "-journal"])
def test_nothing_is_written_through_a_link_in_the_cache_s_place(tree: Path, tmp_path: Path, suffix: str) -> None:
    outside = tmp_path / "outside.sqlite"
    (tree / ".bundlekit").mkdir(exist_ok=True)
    (tree / f"{CACHE_NAME}{suffix}").symlink_to(outside)
    result = build_bundle(tree, tmp_path / "a.car", key=KEY)
    assert not outside.exists()
    _decrypts_to_the_tree(result, tree, KEY)


def test_a_link_to_another_tree_s_cache_is_not_read(tree: Path, tmp_path: Path) -> None:
    other = build_bundle(tree, tmp_path / "a.car", key=KEY)
    moved = tmp_path / "other-cache.sqlite"
    (tree / CACHE_NAME).rename(moved)
    (tree / CACHE_NAME).symlink_to(moved)
    again = build_bundle(tree, tmp_path / "b.car", key=KEY)
    assert again.manifest["encryption"]["salt"] != other.manifest["encryption"]["salt"]


def test_a_fifo_in_the_cache_s_place_neither_hangs_nor_stops_the_build(tree: Path, tmp_path: Path) -> None:
    (tree / ".bundlekit").mkdir(exist_ok=True)
    os.mkfifo(tree / CACHE_NAME)
    _decrypts_to_the_tree(build_bundle(tree, tmp_path / "a.car", key=KEY), tree, KEY)


def test_a_rebuild_for_fewer_recipients_shares_no_ciphertext_and_the_removed_reader_cannot_open_it(
    tree: Path, tmp_path: Path
) -> None:
    kept, removed = new_identity(), new_identity()
    first = build_bundle(tree, tmp_path / "a.car", key=RecipientsKey([recipient_of(kept), recipient_of(removed)]))
    second = build_bundle(tree, tmp_path / "b.car", key=RecipientsKey([recipient_of(kept)]))
    assert not _cids(first) & _cids(second)
    _decrypts_to_the_tree(second, tree, IdentityKey([kept]))
    with pytest.raises(WrongKeyError):
        load_bundle(str(second.car), key=IdentityKey([removed]))


def test_an_identity_re_encrypting_never_reopens_the_last_build_s_key_for_a_removed_reader(
    tree: Path, tmp_path: Path
) -> None:
    """As ``sync`` does: the identity opened a bundle its publisher rebuilt without ``removed``, and re-encrypts
    the tree, whose last build (and cache) still lists ``removed``: the new bundle lists ``kept`` alone, under a
    fresh key, and shares no ciphertext with the earlier one."""
    kept, removed = new_identity(), new_identity()
    narrowed = build_bundle(tree, tmp_path / "a.car", key=RecipientsKey([recipient_of(kept)]))
    identity = IdentityKey([kept])
    identity.open_bundle_key(narrowed.manifest["encryption"], narrowed.manifest["namespace"])
    wide = build_bundle(tree, tmp_path / "b.car", key=RecipientsKey([recipient_of(kept), recipient_of(removed)]))
    rebuilt = build_bundle(tree, tmp_path / "c.car", key=identity)
    assert rebuilt.manifest["encryption"]["recipients"] == [recipient_of(kept)]
    assert not _cids(wide) & _cids(rebuilt)
    with pytest.raises(WrongKeyError):
        load_bundle(str(rebuilt.car), key=IdentityKey([removed]))


def test_a_shared_build_between_two_whole_builds_keeps_every_private_file_s_cid(tree: Path, tmp_path: Path) -> None:
    """A shared bundle stores part of the tree: its build keeps the cache rows of the files it leaves out, so
    the next whole build re-encrypts none of them; no private ciphertext enters the shared bundle."""
    Memory(tree, namespace="agent", clock=lambda: NOW).write(
        "private_note", name="Private", description="mine", type="user", body="not for the team")
    whole = build_bundle(tree, tmp_path / "a.car", key=KEY)
    shared = build_bundle(tree, tmp_path / "b.car", key=KEY, options=BuildOptions(share=SharePolicy(("project",))))
    again = build_bundle(tree, tmp_path / "c.car", key=KEY)
    assert "memory/private_note.md.enc" not in shared.manifest["memory"]["files"]
    assert _cids(again) == _cids(whole)
    assert _cids(shared) < _cids(whole)


def test_a_cache_row_larger_than_its_file_encrypts_to_is_never_read_and_a_stray_path_is_dropped(
    tree: Path, tmp_path: Path
) -> None:
    """What a build reads of the cache is bounded by what it stores: a 64 MB row at a path the tree does not
    have, or at a path it has but of another size than its plaintext encrypts to, is never loaded."""
    build_bundle(tree, tmp_path / "a.car", key=KEY)
    with closing(sqlite3.connect(tree / CACHE_NAME)) as db, db:
        db.execute("INSERT INTO files VALUES ('memory/stray.md.enc', zeroblob(32), zeroblob(67108864), zeroblob(32))")
        db.execute("UPDATE files SET cipher = zeroblob(67108864) WHERE path = 'memory/note_1.md.enc'")
    tracemalloc.start()
    try:
        result = build_bundle(tree, tmp_path / "b.car", key=KEY)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 * 1024 * 1024
    _decrypts_to_the_tree(result, tree, KEY)
    with closing(sqlite3.connect(tree / CACHE_NAME)) as db:
        assert db.execute("SELECT count(*) FROM files WHERE path = 'memory/stray.md.enc'").fetchone() == (0,)


def test_a_build_saving_after_another_key_s_build_saved_leaves_a_cache_all_of_its_own(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two builds of one tree at once with different keys: the one that saves last finds the other's rows
    (under another key) in place of the ones it read, and rewrites them all, so its next build reuses all."""
    build_bundle(tree, tmp_path / "a.car", key=KEY)
    real_save = EncryptionCache.save
    raced: list[bool] = []

    def racing_save(self: EncryptionCache, namespace: str, params: dict[str, object]) -> None:
        if not raced:
            raced.append(True)
            build_bundle(tree, tmp_path / "other.car", key=RawKeyFile(bytes(range(1, 33))))  # saves first
        real_save(self, namespace, params)

    monkeypatch.setattr(EncryptionCache, "save", racing_save)
    build_bundle(tree, tmp_path / "b.car", key=KEY)
    monkeypatch.setattr(EncryptionCache, "save", real_save)
    encrypted = []
    real_encrypt = buildcache._encrypt_bytes
    monkeypatch.setattr(buildcache, "_encrypt_bytes", lambda *a: encrypted.append(a[2]) or real_encrypt(*a))
    _decrypts_to_the_tree(build_bundle(tree, tmp_path / "c.car", key=KEY), tree, KEY)
    assert encrypted == []


def test_a_recipients_build_between_two_key_file_builds_leaves_their_cache_as_it_was(
    tree: Path, tmp_path: Path
) -> None:
    whole = build_bundle(tree, tmp_path / "a.car", key=KEY)
    before = (tree / CACHE_NAME).read_bytes()
    build_bundle(tree, tmp_path / "b.car", key=RecipientsKey([recipient_of(new_identity())]))
    assert (tree / CACHE_NAME).read_bytes() == before
    assert _cids(build_bundle(tree, tmp_path / "c.car", key=KEY)) == _cids(whole)
