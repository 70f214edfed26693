"""Issue 37: a writer builds incrementally (``specs/bundle.md``, "Build"; ``specs/encryption.md``, "Re-builds").

Each stored file is hashed once per build (its import is the CAR's blocks, not a second pass), and an
encrypted build keeps the ciphertext of every file whose plaintext did not change, so its CID stays: a
one-file change encrypts one file. A cache entry is used only when it provably holds the same bytes: the
plaintext's digest matches and its tag verifies under the bundle key; anything else is encrypted afresh.
"""

from __future__ import annotations

import hashlib
import io
import sqlite3
from collections.abc import Callable
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import bundlekit.bundle.build as build_module
import bundlekit.bundle.buildcache as buildcache
from bundlekit.bundle.build import BuildOptions, BundleResult, build_bundle
from bundlekit.bundle.buildcache import CACHE_NAME
from bundlekit.bundle.load import load_bundle
from bundlekit.crypto import RawKeyFile
from bundlekit.memory import Memory
from bundlekit.unixfs.importer import ListSink, import_bytes, import_file
from bundlekit.unixfs.profiles import PROFILES, get_profile

KEY = RawKeyFile(bytes(range(32)))
OTHER = RawKeyFile(bytes(range(1, 33)))
NOW = datetime(2026, 4, 14, 12, 0, 0, tzinfo=UTC)
COUNT = 12


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "memory"
    mem = Memory(root, namespace="agent", clock=lambda: NOW)
    mem.init()
    for i in range(COUNT):
        mem.write(f"note_{i:02d}", name=f"Note {i}", description=f"about {i}", type="project", body=f"body {i} " * 40)
    mem.note("tick", n=1)
    return root


def _edit_one(tree: Path) -> None:
    Memory(tree, namespace="agent", clock=lambda: NOW + timedelta(hours=1)).write(
        "note_05", name="Note 5", description="about 5", type="project", body="changed")


def _counting(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[str]:
    """Wrap ``module.name`` so each call's first argument is recorded (the bytes or path it was given)."""
    calls: list[str] = []
    real: Callable[..., Any] = getattr(module, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(str(args[2]) if name == "_encrypt_bytes" else str(len(args[0])))
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


def _rebuilt(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, edit: bool = False, key: RawKeyFile = KEY
) -> tuple[BundleResult, list[str], BundleResult]:
    """A build with ``KEY``, then (one memory edited when ``edit``) a build with ``key`` counting encryptions."""
    first = build_bundle(tree, tmp_path / "a.car", key=KEY)
    if edit:
        _edit_one(tree)
    encrypted = _counting(monkeypatch, buildcache, "_encrypt_bytes")
    return first, encrypted, build_bundle(tree, tmp_path / "b.car", key=key)


def _file_cids(result: BundleResult) -> dict[str, str]:
    return {path: entry["cid"] for path, entry in result.manifest["memory"]["files"].items()}


@pytest.mark.parametrize("profile", sorted(PROFILES))
@pytest.mark.parametrize("size", [0, 1, 1000, 256 * 1024, 256 * 1024 + 1, 1024 * 1024 + 7])
def test_import_bytes_gives_the_importers_cid_and_blocks(profile: str, size: int) -> None:
    prof = get_profile(profile)
    data = bytes((i * 7) % 251 for i in range(size))
    sink = ListSink()
    entry = import_file(io.BytesIO(data), sink, prof)
    got = import_bytes(data, prof)
    assert (got.cid, got.size, got.tsize) == (entry.cid, entry.size, entry.tsize)
    assert list(got.blocks) == sink.blocks


def test_a_plaintext_build_hashes_each_file_once(tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    imports = _counting(monkeypatch, build_module, "import_bytes")
    many: list[int] = []
    real_many = build_module.import_many
    monkeypatch.setattr(build_module, "import_many", lambda files, prof: many.append(len(files)) or real_many(files, prof))
    result = build_bundle(tree, tmp_path / "a.car")
    # every stored file, the index and the manifest, once each: the CAR takes the blocks already made
    assert len(imports) + sum(many) == result.files + 1


def test_an_unchanged_encrypted_tree_rebuilds_to_the_same_root_encrypting_nothing(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, encrypted, again = _rebuilt(tree, tmp_path, monkeypatch)
    assert encrypted == []
    assert again.root_cid == first.root_cid


def test_a_one_file_change_encrypts_one_file_and_keeps_every_other_cid(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, encrypted, second = _rebuilt(tree, tmp_path, monkeypatch, edit=True)
    assert encrypted == ["memory/note_05.md.enc"]
    before, after = _file_cids(first), _file_cids(second)
    changed = {path for path in after if before.get(path) != after[path]}
    assert changed == {"memory/note_05.md.enc", "memory/MEMORY.md"}  # the index links the new CID
    assert second.manifest["encryption"] == first.manifest["encryption"]
    loaded = load_bundle(str(second.car), key=KEY)
    assert b"changed" in loaded.files["note_05.md"]
    assert loaded.files["note_04.md"] == (tree / "note_04.md").read_bytes()


def test_another_key_reuses_nothing_and_draws_a_fresh_bundle_key(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, encrypted, other = _rebuilt(tree, tmp_path, monkeypatch, key=OTHER)
    assert len(encrypted) == first.files - 1  # every file but the plaintext index
    assert other.manifest["encryption"]["salt"] != first.manifest["encryption"]["salt"]
    assert not set(_file_cids(first).values()) & set(_file_cids(other).values())
    assert load_bundle(str(other.car), key=OTHER).files["note_03.md"] == (tree / "note_03.md").read_bytes()


def test_a_planted_cache_entry_is_never_published(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Plant under note_01's path the digest of its text and note_02's genuine ciphertext and tag (made by this
    very key): the tag binds that ciphertext to note_02's path, so note_01 is encrypted afresh, never published
    as note_02's text."""
    build_bundle(tree, tmp_path / "a.car", key=KEY)
    a, b = "memory/note_01.md.enc", "memory/note_02.md.enc"
    with closing(sqlite3.connect(tree / CACHE_NAME)) as db, db:
        cipher, tag = db.execute("SELECT cipher, tag FROM files WHERE path = ?", (b,)).fetchone()
        plain = hashlib.sha256((tree / "note_01.md").read_bytes()).digest()
        db.execute("UPDATE files SET plain = ?, cipher = ?, tag = ? WHERE path = ?", (plain, cipher, tag, a))
    encrypted = _counting(monkeypatch, buildcache, "_encrypt_bytes")
    result = build_bundle(tree, tmp_path / "b.car", key=KEY)
    assert encrypted == [a]
    loaded = load_bundle(str(result.car), key=KEY)
    assert loaded.files["note_01.md"] == (tree / "note_01.md").read_bytes()
    assert loaded.files["note_02.md"] == (tree / "note_02.md").read_bytes()


def test_a_damaged_cache_costs_a_re_encryption_not_the_build(tree: Path, tmp_path: Path) -> None:
    build_bundle(tree, tmp_path / "a.car", key=KEY)
    (tree / CACHE_NAME).write_bytes(b"not a database" * 100)
    result = build_bundle(tree, tmp_path / "b.car", key=KEY)
    assert load_bundle(str(result.car), key=KEY).files["note_00.md"] == (tree / "note_00.md").read_bytes()
