"""kubo's published IPIP-499 fixture CIDs (fixtures/vectors/unixfs/kubo-ipip499.json)."""

from __future__ import annotations

import io
from typing import Any

from bundlekit.ipld.cid import cid_to_str
from bundlekit.unixfs.importer import NullSink, import_file, import_tree
from bundlekit.unixfs.profiles import get_profile


def test_kubo_fixture_cid(kubo_case: dict[str, Any], seeded: Any, kubo_names: Any) -> None:
    profile = get_profile(kubo_case["profile"])
    spec = kubo_case["input"]
    if "bytes" in spec:
        root = import_file(io.BytesIO(spec["bytes"].encode()), NullSink(), profile).cid
    elif "seeded" in spec:
        size, seed = spec["seeded"]
        stream = io.BufferedReader(seeded(size, seed), buffer_size=1 << 20)
        root = import_file(stream, NullSink(), profile).cid
    else:
        files = [(name, b"x") for name in kubo_names(*spec["names"])]
        root = import_tree(files, NullSink(), profile).root
    assert cid_to_str(root) == kubo_case["cid"]
