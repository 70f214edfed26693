"""Named profiles and their overrides."""

from __future__ import annotations

import pytest

from bundlekit.errors import ProfileError
from bundlekit.unixfs.profiles import DEFAULT_PROFILE, PROFILES, get_profile


def test_default_profile_is_ipip_499() -> None:
    p = get_profile()
    assert DEFAULT_PROFILE == "unixfs-v1-2025" == p.name
    assert (p.cid_version, p.raw_leaves, p.chunk_size, p.max_links, p.hamt, p.hamt_threshold) == (
        1, True, 1 << 20, 1024, "size", 262144,
    )


def test_unixfs_v0_2015_is_kubo_defaults() -> None:
    p = PROFILES["unixfs-v0-2015"]
    assert (p.cid_version, p.raw_leaves, p.chunk_size, p.max_links, p.hamt) == (0, False, 262144, 174, "kubo-estimate")


def test_kubo_cidv1_is_importer_defaults() -> None:
    p = PROFILES["kubo-cidv1"]
    assert (p.cid_version, p.raw_leaves, p.chunk_size, p.max_links, p.hamt) == (1, True, 262144, 174, "kubo-estimate")


def test_ipfs_car_shards_by_count_and_drops_empty_dirs() -> None:
    p = PROFILES["ipfs-car"]
    assert (p.chunk_size, p.max_links, p.hamt, p.hamt_threshold, p.keep_empty_dirs) == (1 << 20, 1024, "count", 1000, False)


def test_overrides_apply_on_top_of_a_profile() -> None:
    p = get_profile("ipfs-car", chunk_size=4096, max_links=8, cid_version=0, raw_leaves=False)
    assert (p.chunk_size, p.max_links, p.cid_version, p.raw_leaves, p.hamt) == (4096, 8, 0, False, "count")


def test_no_override_returns_the_named_profile_itself() -> None:
    assert get_profile("kubo-cidv1") is PROFILES["kubo-cidv1"]


def test_unknown_profile_is_refused_with_the_choices() -> None:
    with pytest.raises(ProfileError, match="unixfs-v1-2025"):
        get_profile("nope")


@pytest.mark.parametrize(
    "override", [{"chunk_size": 0}, {"chunk_size": 4 << 20}, {"max_links": 1}, {"cid_version": 2}]
)
def test_out_of_range_override_is_refused(override: dict[str, int]) -> None:
    with pytest.raises(ProfileError):
        get_profile(**override)  # type: ignore[arg-type]
