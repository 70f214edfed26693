"""The CAR stream's inline check of the usual block accepts exactly what ``GatewayFetcher._verified`` accepts.

``_pulling``'s ``accept`` hashes a sha2-256 CIDv1 dag-pb or raw block itself and
hands every other block (CIDv0, identity or other multihashes, other codecs,
oversized, mismatched) to ``_verified``; for any CID and bytes both must agree,
and a mismatch must still be noted.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from functools import partial

import httpx
from hypothesis import given, settings
from hypothesis import strategies as st

from bundlekit.errors import BundlekitError
from bundlekit.ipld.block import MAX_BLOCK_SIZE
from bundlekit.ipld.cid import DAG_PB, RAW
from bundlekit.net.fetch import GatewayFetcher, RemoteGateway

GW = RemoteGateway("https://gw.example")
IDENTITY = 0x00
SHA2_512 = 0x13
DAG_CBOR = 0x71
LIBP2P_KEY = 0x72


def _cid(version: int, codec: int, hash_code: int, digest: bytes) -> bytes:
    if version == 0:
        return bytes((hash_code, len(digest))) + digest
    return bytes((1, codec, hash_code, len(digest))) + digest


datas = st.binary(max_size=40)
cids_for = {
    "usual": lambda d, c: _cid(1, c, 0x12, hashlib.sha256(d).digest()),
    "v0": lambda d, c: _cid(0, DAG_PB, 0x12, hashlib.sha256(d).digest()),
    "other digest": lambda d, c: _cid(1, c, 0x12, hashlib.sha256(d + b"x").digest()),
    "identity": lambda d, c: _cid(1, c, IDENTITY, d[:30]),
    "sha2-512": lambda d, c: _cid(1, c, SHA2_512, hashlib.sha512(d).digest()),
    "short digest": lambda d, c: _cid(1, c, 0x12, hashlib.sha256(d).digest()[:31]),
}


def _accept(fetcher: GatewayFetcher) -> Callable[[bytes, bytes], bool]:
    response = httpx.Response(200, content=b"")
    return fetcher._pulling(GW, b"", iter(()), response.close, None)._accept


def _outcome(check: Callable[[bytes, bytes], bool], cid: bytes, data: bytes) -> object:
    try:
        return check(cid, data)
    except BundlekitError as exc:  # a CID the CAR reader would not have passed: the same error either way
        return type(exc), str(exc)


@settings(max_examples=300)
@given(datas, st.sampled_from([DAG_PB, RAW, DAG_CBOR, LIBP2P_KEY]), st.sampled_from(sorted(cids_for)),
       st.binary(max_size=38))
def test_inline_accept_agrees_with_verified(data: bytes, codec: int, kind: str, noise: bytes) -> None:
    with GatewayFetcher([GW]) as fetcher:
        accept = _accept(fetcher)
        for cid in (cids_for[kind](data, codec), noise, b"\x01" + noise):
            assert _outcome(accept, cid, data) == _outcome(partial(fetcher._verified, gw=GW), cid, data)


def test_an_oversized_block_is_refused_even_when_its_digest_matches() -> None:
    data = bytes(MAX_BLOCK_SIZE + 1)
    cid = _cid(1, RAW, 0x12, hashlib.sha256(data).digest())
    with GatewayFetcher([GW]) as fetcher:
        assert _accept(fetcher)(cid, data) is False


def test_a_usual_block_with_the_wrong_bytes_is_refused_and_noted() -> None:
    cid = _cid(1, RAW, 0x12, hashlib.sha256(b"right").digest())
    with GatewayFetcher([GW]) as fetcher:
        assert _accept(fetcher)(cid, b"wrong") is False
        assert any("wrong content" in note for note in fetcher.notes)
