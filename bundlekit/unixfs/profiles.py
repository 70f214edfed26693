"""Named UnixFS import profiles: the settings that decide every CID.

A profile pins every choice that changes the bytes of a UnixFS DAG (CID
version, leaf codec, chunk size, links per file node, when a directory becomes
a HAMT), so that the same input gives the same CIDs as a named reference tool.
Determinism lives here and nowhere else; ``specs/unixfs-profiles.md`` is the
normative description and ``fixtures/vectors/unixfs/`` proves it.

Profiles:

``unixfs-v1-2025`` (default)
    IPIP-499: CIDv1, raw leaves, 1 MiB chunks, 1024 links, HAMT when the
    serialized directory block would exceed 256 KiB.
``unixfs-v0-2015``
    kubo ``ipfs add -r`` defaults: CIDv0, dag-pb leaves, 256 KiB chunks, 174
    links, HAMT when kubo's link estimate (name bytes + CID bytes) exceeds 256 KiB.
``kubo-cidv1``
    ``ipfs add -r --cid-version=1`` and ipfs-unixfs-importer 17 defaults: CIDv1,
    raw leaves, 256 KiB chunks, 174 links, kubo's link estimate.
``ipfs-car``
    ipfs-car 3.x ``pack DIR``: CIDv1, raw leaves, 1 MiB chunks, 1024 links,
    HAMT above 1000 entries, empty directories dropped.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from bundlekit.errors import ProfileError

__all__ = [
    "DEFAULT_PROFILE",
    "HAMT_MODES",
    "MAX_CHUNK_SIZE",
    "MAX_LINKS",
    "PROFILES",
    "Profile",
    "get_profile",
]

KIB = 1024
MIB = 1024 * KIB

#: "size": serialized flat directory block > threshold bytes (IPIP-499 "block").
#: "kubo-estimate": sum of (name bytes + CID bytes) > threshold (boxo "links").
#: "count": number of entries > threshold (ipfs-car).
HAMT_MODES = ("size", "kubo-estimate", "count")

#: Largest chunk accepted: a dag-pb leaf adds a few bytes of framing and the
#: verifier rejects blocks over 2 MiB by default, so leave headroom.
MAX_CHUNK_SIZE = 2 * MIB - 1024
#: Largest links-per-node accepted: keeps a file node well under 1 MiB.
MAX_LINKS = 16384


@dataclass(frozen=True)
class Profile:
    """Every setting that changes the bytes of an imported DAG."""

    name: str
    cid_version: int
    raw_leaves: bool
    chunk_size: int
    max_links: int
    hamt: str
    hamt_threshold: int
    keep_empty_dirs: bool
    #: Root a directory import at the deepest directory that holds every file
    #: (``ipfs-car pack DIR`` strips the path prefix common to all its files).
    root_at_common_dir: bool = False

    def __post_init__(self) -> None:
        if self.cid_version not in (0, 1):
            raise ProfileError(f"profile {self.name!r}: cid_version must be 0 or 1, not {self.cid_version!r}")
        if not 1 <= self.chunk_size <= MAX_CHUNK_SIZE:
            raise ProfileError(
                f"profile {self.name!r}: chunk_size must be between 1 and {MAX_CHUNK_SIZE} bytes, "
                f"not {self.chunk_size!r}"
            )
        if not 2 <= self.max_links <= MAX_LINKS:
            raise ProfileError(
                f"profile {self.name!r}: max_links must be between 2 and {MAX_LINKS}, not {self.max_links!r}"
            )
        if self.hamt not in HAMT_MODES:
            raise ProfileError(f"profile {self.name!r}: hamt must be one of {', '.join(HAMT_MODES)}")
        if self.hamt_threshold < 0:
            raise ProfileError(f"profile {self.name!r}: hamt_threshold must not be negative")


PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        Profile("unixfs-v1-2025", 1, True, 1 * MIB, 1024, "size", 256 * KIB, True),
        Profile("unixfs-v0-2015", 0, False, 256 * KIB, 174, "kubo-estimate", 256 * KIB, True),
        Profile("kubo-cidv1", 1, True, 256 * KIB, 174, "kubo-estimate", 256 * KIB, True),
        Profile("ipfs-car", 1, True, 1 * MIB, 1024, "count", 1000, False, root_at_common_dir=True),
    )
}
DEFAULT_PROFILE = "unixfs-v1-2025"


def get_profile(
    name: str | None = None,
    *,
    chunk_size: int | None = None,
    max_links: int | None = None,
    cid_version: int | None = None,
    raw_leaves: bool | None = None,
) -> Profile:
    """The named profile (default ``unixfs-v1-2025``) with explicit overrides applied.

    An override keeps the profile's name (the name says which directory rules
    apply); callers that record the profile should record the overrides too.
    Raises ``ProfileError`` for an unknown name or an out-of-range override.
    """
    key = DEFAULT_PROFILE if name is None else name
    base = PROFILES.get(key)
    if base is None:
        raise ProfileError(f"unknown UnixFS profile {key!r}; choose one of: {', '.join(sorted(PROFILES))}")
    changes: dict[str, object] = {}
    if chunk_size is not None:
        changes["chunk_size"] = chunk_size
    if max_links is not None:
        changes["max_links"] = max_links
    if cid_version is not None:
        changes["cid_version"] = cid_version
    if raw_leaves is not None:
        changes["raw_leaves"] = raw_leaves
    if not changes:
        return base
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]
