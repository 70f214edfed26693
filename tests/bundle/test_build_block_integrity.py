"""A built bundle's blocks hash to their CIDs (attack39w): a memory file of one chunk takes its raw leaf's CID from
the SHA-256 the tree's read took (``unixfs.importer.import_many``), so a CAR whose blocks were checked by nothing
else would carry that digest's word alone. Every profile, files exactly at its chunk size and one byte over, one
empty-bodied and a timeline day: each block read back with verification, the root's DAG complete, and each file's
CID the one its bytes import to with no digest given."""

from __future__ import annotations

from pathlib import Path

import pytest

from bundlekit.bundle.build import BuildOptions, build_bundle
from bundlekit.car.reader import read_car
from bundlekit.ipld.cid import cid_to_str
from bundlekit.ipld.walk import walk_dag
from bundlekit.memory import Memory
from bundlekit.unixfs.importer import import_bytes
from bundlekit.unixfs.profiles import PROFILES, get_profile

_HEAD = "---\nname: {name}\ndescription: d\ntype: user\ncreated: 2026-01-01T00:00:00Z\nupdated: 2026-01-01T00:00:00Z\n---\n"


def _memory(tree: Path, name: str, size: int) -> bytes:
    head = _HEAD.format(name=name).encode()
    data = head + b"x" * (size - len(head))
    (tree / f"{name}.md").write_bytes(data)
    return data


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_every_block_of_a_build_hashes_to_its_cid(tmp_path: Path, profile: str) -> None:
    chunk = get_profile(profile).chunk_size
    tree = tmp_path / "memory"
    Memory(tree, namespace="agent").init()
    files = {f"memory/{name}.md": _memory(tree, name, size)
             for name, size in (("at-chunk", chunk), ("one-over", chunk + 1), ("small", len(_HEAD) + 20))}
    (tree / "timeline" / "2026-01-01.jsonl").write_bytes(b"")
    built = build_bundle(tree, tmp_path / "out.car", options=BuildOptions(profile=profile))
    with open(built.car, "rb") as fh:
        roots, blocks = read_car(fh, verify=True)  # BlockMismatch for a block that does not hash to its CID
        held = dict(blocks)
    assert roots == [built.root_bytes]
    assert len(list(walk_dag(built.root_bytes, held.__getitem__))) == len(held)
    prof = get_profile(profile)
    listed = built.manifest["memory"]["files"]
    for path, data in files.items():
        assert listed[path]["cid"] == cid_to_str(import_bytes(data, prof).cid), path
