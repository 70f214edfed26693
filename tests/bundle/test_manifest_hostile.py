"""Manifest checks against hostile input (issue 12, items 5 and 9).

Path segments are matched whole (``fullmatch``): a pattern ending in ``$``
also matches before a trailing newline, which let ``memory/evil.md\\n`` in.
"""

from __future__ import annotations

import gc
import json
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bundlekit.bundle.manifest import check_bundle_path, parse_manifest, validate_manifest
from bundlekit.errors import ManifestError
from bundlekit.ipld.cid import RAW, cid_to_str, make_cid

CID = cid_to_str(make_cid(1, RAW, b"x"))
_CONTROL = [chr(c) for c in range(0x20)] + ["\x7f", "\x85", "\u2028", "\u2029"]


def _encrypted(**encryption: Any) -> dict[str, Any]:
    return {
        "format": "bundlekit/1", "namespace": "agent", "created": "2026-01-02T03:04:05Z",
        "profile": "unixfs-v1-2025",
        "encryption": {"scheme": "x", "key_source": "passphrase", "kdf": {}, "salt": "", "key_id": "",
                       "commitment": "", **encryption},
        "memory": {"index": "memory/MEMORY.md", "timeline": [],
                   "files": {"memory/MEMORY.md": {"cid": CID, "size": 1}}},
    }


@pytest.mark.parametrize("path", ["memory/evil.md\n", "memory/timeline/x.jsonl\n", "memory/a\n/b.md"])
def test_a_path_ending_in_a_newline_is_refused(path: str) -> None:
    with pytest.raises(ManifestError, match="unsafe"):
        check_bundle_path(path)


def test_a_created_time_ending_in_a_newline_is_refused() -> None:
    manifest = _encrypted()
    manifest["created"] += "\n"
    with pytest.raises(ManifestError, match="created"):
        validate_manifest(manifest)


@settings(max_examples=200, deadline=None)
@given(
    st.text(alphabet=st.characters(codec="utf-8"), max_size=20),
    st.sampled_from(_CONTROL),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=20),
)
def test_no_path_holding_a_control_character_passes(before: str, control: str, after: str) -> None:
    with pytest.raises(ManifestError):
        check_bundle_path(f"memory/{before}{control}{after}.md")


@pytest.mark.parametrize(
    ("field", "value"),
    [("key_source", []), ("key_source", {}), ("scheme", 1), ("salt", None), ("kdf", []), ("commitment", [1])],
)
def test_an_encryption_field_of_the_wrong_type_is_a_manifest_error(field: str, value: Any) -> None:
    with pytest.raises(ManifestError, match=f"encryption.{field}"):
        parse_manifest(json.dumps(_encrypted(**{field: value})).encode())


def test_deeply_nested_manifest_is_a_manifest_error() -> None:
    # Pin the recursion limit: a library imported earlier in the run (py_ecc, via eth-account)
    # may have raised it so far that this nesting would overflow the C stack instead.
    # And hold the garbage collector off meanwhile: a collection that runs a finalizer at the bottom of that
    # recursion (another test's leftovers) hits the limit inside pytest's unraisable-exception hook instead.
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    gc.collect()
    gc.disable()
    try:
        with pytest.raises(ManifestError, match="nested too deeply"):
            parse_manifest(b"[" * 100_000 + b"]" * 100_000)
    finally:
        gc.enable()
        sys.setrecursionlimit(old)
