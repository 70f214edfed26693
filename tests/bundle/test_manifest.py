"""The canonical manifest: exact bytes and the rejections validation implies."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from bundlekit.bundle.manifest import (
    canonical_json,
    format_created,
    make_manifest,
    parse_created,
    parse_manifest,
)
from bundlekit.errors import ManifestError, UsageError
from bundlekit.ipld.cid import RAW, make_cid

CID = make_cid(1, RAW, b"x")


def _manifest(**over: Any) -> dict[str, Any]:
    files = {"memory/MEMORY.md": (CID, 1), "memory/a.md": (CID, 1), "memory/timeline/2026-01-02.jsonl": (CID, 1)}
    kwargs: dict[str, Any] = dict(
        namespace="agent", created=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC), profile="unixfs-v1-2025",
        files=files, timeline=["memory/timeline/2026-01-02.jsonl"], encryption=None,
    )
    kwargs.update(over)
    return make_manifest(**kwargs)


def test_canonical_json_sorts_keys_compacts_and_ends_with_one_newline() -> None:
    assert canonical_json({"b": 1, "a": {"d": None, "c": "é"}}) == '{"a":{"c":"é","d":null},"b":1}\n'.encode()


def test_canonical_json_refuses_floats() -> None:
    with pytest.raises(ManifestError):
        canonical_json({"a": 1.5})


def test_manifest_bytes_are_pinned() -> None:
    data = canonical_json(_manifest())
    assert data.startswith(b'{"created":"2026-01-02T03:04:05Z","encryption":null,"format":"bundlekit/1",')
    assert b'"memory":{"files":{"memory/MEMORY.md":{"cid":"' in data
    assert data.endswith(b'"timeline":["memory/timeline/2026-01-02.jsonl"]},"namespace":"agent","profile":"unixfs-v1-2025"}\n')


def test_manifest_round_trips_through_parse() -> None:
    m = _manifest()
    assert parse_manifest(canonical_json(m)) == m


def test_unknown_format_is_refused() -> None:
    m = _manifest()
    m["format"] = "bundlekit/9"
    with pytest.raises(ManifestError, match="format"):
        parse_manifest(canonical_json(m))


@pytest.mark.parametrize("path", ["memory/../x.md", "memory/.hidden", "other/a.md", "memory/a/b.md", "/etc/passwd", "memory/"])
def test_unsafe_paths_are_refused(path: str) -> None:
    m = _manifest()
    m["memory"]["files"][path] = {"cid": m["memory"]["files"]["memory/a.md"]["cid"], "size": 1}
    with pytest.raises(ManifestError):
        parse_manifest(canonical_json(m))


def test_timeline_path_must_be_listed_in_files() -> None:
    with pytest.raises(ManifestError, match="timeline"):
        _manifest(timeline=["memory/timeline/2026-01-03.jsonl"])


def test_plaintext_names_in_encrypted_manifest_are_refused() -> None:
    with pytest.raises(ManifestError, match=".enc"):
        _manifest(encryption={"scheme": "x"})


def test_invalid_cid_is_refused() -> None:
    m = _manifest()
    m["memory"]["files"]["memory/a.md"]["cid"] = "notacid"
    with pytest.raises(ManifestError, match="invalid CID"):
        parse_manifest(canonical_json(m))


def test_float_in_fetched_manifest_is_refused() -> None:
    with pytest.raises(ManifestError):
        parse_manifest(b'{"format":"bundlekit/1","x":1.5}')


def test_created_accepts_iso_and_epoch_and_formats_utc_seconds() -> None:
    assert format_created(parse_created("2026-01-02T03:04:05.900+01:00")) == "2026-01-02T02:04:05Z"
    assert format_created(parse_created("0")) == "1970-01-01T00:00:00Z"


def test_created_garbage_is_refused() -> None:
    from bundlekit.errors import UsageError

    with pytest.raises(UsageError):
        parse_created("yesterday")


def test_fast_cid_parse_agrees_with_multiformats() -> None:
    from bundlekit.bundle.manifest import cid_from_text
    from bundlekit.ipld.cid import DAG_PB, cid_to_str, make_cid, parse_cid

    for i in range(200):
        for cid in (make_cid(1, RAW, bytes([i]) * i), make_cid(1, DAG_PB, bytes([i])), make_cid(0, DAG_PB, bytes([i]))):
            text = cid_to_str(cid)
            assert cid_from_text(text) == parse_cid(text) == cid


def test_fast_cid_parse_refuses_garbage() -> None:
    from bundlekit.bundle.manifest import cid_from_text
    from bundlekit.errors import CIDError

    for text in ("b", "baaaa", "bafy" + "a" * 55, "zzz", ""):
        with pytest.raises(CIDError):
            cid_from_text(text)


def test_fast_cid_parse_refuses_a_cidv0_written_in_base32() -> None:
    """A CIDv0 exists only in base58btc: "b" + base32 of its bytes is not a CID (parse_cid agrees)."""
    import base64

    from bundlekit.bundle.manifest import cid_from_text
    from bundlekit.errors import CIDError
    from bundlekit.ipld.cid import DAG_PB

    v0 = make_cid(0, DAG_PB, b"x")
    text = "b" + base64.b32encode(v0).decode().lower().rstrip("=")
    with pytest.raises(CIDError):
        cid_from_text(text)


@pytest.mark.parametrize("text", ["99999999999999999999", "-5", "0001-01-01T00:00:00-01:00", "10000-01-01"])
def test_created_out_of_range_is_a_usage_error(text: str) -> None:
    with pytest.raises(UsageError):
        parse_created(text)


def test_created_is_always_a_four_digit_year() -> None:
    assert format_created(datetime(999, 1, 2, 3, 4, 5, tzinfo=UTC)) == "0999-01-02T03:04:05Z"
