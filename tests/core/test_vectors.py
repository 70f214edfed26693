"""Our CIDs equal the reference tools' on the committed vectors, for every profile.

The vectors (fixtures/vectors/unixfs/*.json) were computed by
ipfs-unixfs-importer 17.1.1 (unixfs-v1-2025, unixfs-v0-2015, kubo-cidv1, and
two profiles with overrides, keyed "<profile> key=value ...") and the ipfs-car
3.1.0 command line (ipfs-car) over trees from gen_tree.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bundlekit.ipld.cid import cid_to_str
from bundlekit.unixfs.importer import NullSink, import_path
from bundlekit.unixfs.profiles import Profile, get_profile

PROFILES = ["unixfs-v0-2015", "unixfs-v1-2025", "kubo-cidv1", "ipfs-car"]
OVERRIDES = [
    "kubo-cidv1 chunk_size=4096 max_links=3 cid_version=0 raw_leaves=true",
    "unixfs-v1-2025 chunk_size=65536 max_links=5 raw_leaves=false",
]


def _profile(key: str) -> Profile:
    """A vector key: a profile name, optionally followed by key=value overrides."""
    name, *overrides = key.split()
    kwargs: dict[str, Any] = {}
    for item in overrides:
        k, v = item.split("=")
        kwargs[k] = v == "true" if v in ("true", "false") else int(v)
    return get_profile(name, **kwargs)


def _expected(vector: dict[str, Any], profile: str) -> dict[str, str]:
    entries: dict[str, str] = vector["profiles"][profile]["entries"]
    if profile == "ipfs-car" and vector["kind"] == "file":
        # `ipfs-car pack FILE` wraps the file in a directory; our root is the file itself.
        return {"": entries[vector["scenario"]]}
    return entries


def _import(path: Path, profile: str) -> dict[str, str]:
    result = import_path(path, NullSink(), _profile(profile))
    return {e.path: cid_to_str(e.cid) for e in result.entries}


def test_vectors_cover_every_profile(all_vectors: list[dict[str, Any]]) -> None:
    assert len(all_vectors) >= 12
    for vector in all_vectors:
        assert sorted(vector["profiles"]) == sorted(PROFILES + OVERRIDES), vector["scenario"]


def test_every_path_cid_matches_reference(vector_tree: Path, vector: dict[str, Any], profile_name: str) -> None:
    got = _import(vector_tree / vector["scenario"], profile_name)
    assert got == _expected(vector, profile_name)


@pytest.mark.parametrize("key", OVERRIDES)
def test_overrides_match_reference(vector_tree: Path, vector: dict[str, Any], key: str) -> None:
    assert _import(vector_tree / vector["scenario"], key) == _expected(vector, key)


@pytest.mark.parametrize("key", OVERRIDES)
def test_two_level_file_with_overrides_matches_reference(big_file: Path, big_vector: dict[str, Any], key: str) -> None:
    assert _import(big_file, key) == _expected(big_vector, key)


def test_two_level_file_matches_reference(big_file: Path, big_vector: dict[str, Any], profile_name: str) -> None:
    assert _import(big_file, profile_name) == _expected(big_vector, profile_name)


def test_long_names_shard_by_size_but_not_under_ipfs_car(all_vectors: list[dict[str, Any]]) -> None:
    roots = next(v for v in all_vectors if v["scenario"] == "dir-long-names")["profiles"]
    assert roots["unixfs-v1-2025"]["root"] == roots["kubo-cidv1"]["root"]
    assert roots["ipfs-car"]["root"] != roots["unixfs-v1-2025"]["root"]


def test_many_short_names_shard_only_under_ipfs_car(all_vectors: list[dict[str, Any]]) -> None:
    roots = next(v for v in all_vectors if v["scenario"] == "dir-many-short")["profiles"]
    assert roots["unixfs-v1-2025"]["root"] == roots["kubo-cidv1"]["root"]
    assert roots["ipfs-car"]["root"] != roots["unixfs-v1-2025"]["root"]


def test_hidden_file_is_not_in_the_vectors(all_vectors: list[dict[str, Any]]) -> None:
    names = next(v for v in all_vectors if v["scenario"] == "dir-names")
    for profile in PROFILES:
        assert ".hidden" not in names["profiles"][profile]["entries"]
