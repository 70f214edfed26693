"""Issue 28: hostile ``PUT /routing/v1/ipns/{name}`` requests to ``bundlekit serve``'s routing API.

What was sent, over real HTTP to a server on loopback (``hub/routing.py`` behind
``gateway/server.py``'s ``BodyApp`` body reading): bodies past every bound (declared, chunked,
within the read bound but over a record's 10 KiB), truncated protobufs, records of another
name or with a flipped signature bit, a negative and the last possible sequence, names that
are no CID or no ``libp2p-key`` (DNSLink, CIDv0, a raw CID, an RSA-style hashed key), path
tricks (``..%2F``, a second segment, white space, NUL), a request smuggled in a body, and many
writers racing with one sequence. Each is refused with the status the specification or boxo
gives (400; 409 for the compare-and-swap), nothing is written for it, and the server keeps
answering. Found while writing these: a name with white space around it (``%20k51...``,
``k51...%0A``) was taken as the name (``parse_name`` strips); it is a 400 now.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import socket
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import dag_cbor
import httpx
import pytest

from bundlekit.blockstore import BlockStore
from bundlekit.crypto.signing import Ed25519Signer, libp2p_ed25519_public_key
from bundlekit.errors import UsageError
from bundlekit.gateway.server import GatewayServer, serve_in_thread
from bundlekit.ipld.bases import BASE36, encode
from bundlekit.ipld.cid import parse_cid
from bundlekit.names import PublishTargets, publish
from bundlekit.names.record import MAX_UINT64, SIGNATURE_PREFIX, create_record, encode_entry, name_from_key
from bundlekit.names.routing import parse_routing
from bundlekit.hub.routing import MOUNT, RoutingAPI
from tests.net.loopback import answer_head

MEDIA = "application/vnd.ipfs.ipns-record"
HEADERS = {"Content-Type": MEDIA}
SIGNER = Ed25519Signer.from_seed(bytes([7]) * 32)
OTHER = Ed25519Signer.from_seed(bytes([9]) * 32)
NAME = name_from_key(SIGNER.public)
OTHER_NAME = name_from_key(OTHER.public)
VALIDITY = datetime.now(UTC) + timedelta(days=1)
_WAIT = 30.0  # seconds a socket read may wait: a bound for a hung server, never a timing assertion


def record(sequence: int, signer: Ed25519Signer = SIGNER) -> bytes:
    return create_record(signer, "/ipfs/bafkqaaa", sequence=sequence, validity=VALIDITY, ttl_ns=0)


def signed(sequence: int, signer: Ed25519Signer = SIGNER, **extra: bytes) -> bytes:
    """A record signed by ``signer`` whatever its fields hold (``create_record`` refuses what this makes)."""
    data = dag_cbor.encode({"Value": b"/ipfs/bafkqaaa", "Validity": VALIDITY.strftime("%Y-%m-%dT%H:%M:%SZ").encode(),
                            "ValidityType": 0, "Sequence": sequence, "TTL": 0})
    return encode_entry({"signatureV2": signer.sign(SIGNATURE_PREFIX + data), "data": data, **extra})


@pytest.fixture
def store(tmp_path: Path) -> BlockStore:
    return BlockStore(tmp_path / "store", fsync=False)


@pytest.fixture
def server(store: BlockStore) -> Iterator[GatewayServer]:
    with serve_in_thread(store=store, apps={MOUNT: RoutingAPI(store).app()}) as running:
        yield running


def put(server: GatewayServer, body: bytes, name: str = NAME) -> httpx.Response:
    return httpx.put(f"{server.url}/routing/v1/ipns/{name}", content=body, headers=HEADERS, timeout=_WAIT)


def raw(server: GatewayServer, head: str, body: bytes = b"") -> bytes:
    """Send a request head and ``body`` on a fresh socket; what the server sends until it closes or pauses."""
    port = int(server.server_address[1])
    with socket.create_connection(("127.0.0.1", port), timeout=_WAIT) as sock:
        sock.sendall(head.replace("{port}", str(port)).encode() + body)
        return answer_head(sock)


def put_head(length_line: str) -> str:
    return (f"PUT /routing/v1/ipns/{NAME} HTTP/1.1\r\nHost: 127.0.0.1:{{port}}\r\nContent-Type: {MEDIA}\r\n"
            f"{length_line}\r\n\r\n")


@pytest.mark.parametrize("body", [
    record(5)[:-10],  # truncated inside the data field
    record(5)[:1],  # a tag with no value
    b"",
    b"\xff" * 64,
], ids=["truncated", "one-byte", "empty", "garbage"])
def test_a_body_that_is_no_record_is_400_and_nothing_is_kept(server: GatewayServer, store: BlockStore,
                                                              body: bytes) -> None:
    assert put(server, body).status_code == 400
    assert store.get_record(NAME) is None


def test_a_record_of_another_name_is_400_under_both_names(server: GatewayServer, store: BlockStore) -> None:
    assert put(server, record(6, OTHER)).status_code == 400
    assert (store.get_record(NAME), store.get_record(OTHER_NAME)) == (None, None)


def test_a_record_with_a_flipped_signature_bit_is_400(server: GatewayServer, store: BlockStore) -> None:
    good = record(5)
    assert put(server, good[:2] + bytes([good[2] ^ 1]) + good[3:]).status_code == 400
    assert store.get_record(NAME) is None


def test_a_record_embedding_another_public_key_is_400(server: GatewayServer) -> None:
    answer = put(server, signed(1, SIGNER, pubKey=libp2p_ed25519_public_key(OTHER.public)), OTHER_NAME)
    assert answer.status_code == 400


def test_a_negative_sequence_is_400(server: GatewayServer) -> None:
    assert "not an unsigned 64-bit integer" in put(server, signed(-1)).text


def test_the_last_sequence_is_kept_and_nothing_can_be_published_above_it(server: GatewayServer, tmp_path: Path) -> None:
    assert put(server, signed(MAX_UINT64)).status_code == 200
    with pytest.raises(UsageError, match="used every sequence number"):
        publish(SIGNER, parse_cid("bafkqaaa"), store=BlockStore(tmp_path / "mine"),
                targets=PublishTargets(routing=[parse_routing(server.url)]))


@pytest.mark.parametrize("name", [
    "example.com",  # DNSLink: no CID at all
    "QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG",  # CIDv0
    "bafkreidfdrlkeq4m4xnxuyx6iae76fdm4wgl5d4xzsb77ixhyqwumhz244",  # a CIDv1 of another codec
    "k" + encode(b"\x01\x72\x12\x20" + hashlib.sha256(b"key").digest(), BASE36),  # libp2p-key, key not inlined
    "..%2F..%2Fpins.json",
    f"{NAME}%2Fx",
    f"%20{NAME}",
    f"{NAME}%0A",
    "k51%00",
], ids=["dnslink", "cidv0", "raw-cid", "hashed-key", "dot-dot", "second-segment", "space", "newline", "nul"])
def test_a_name_that_is_no_inlined_libp2p_key_cid_is_400(server: GatewayServer, store: BlockStore, name: str) -> None:
    assert put(server, record(1), name).status_code == 400
    assert store.record_count() == 0


def test_a_name_followed_by_another_path_segment_is_400(server: GatewayServer, store: BlockStore) -> None:
    assert put(server, record(1), f"{NAME}/x").status_code == 400
    assert store.record_count() == 0


def test_a_body_over_a_record_but_within_the_read_bound_is_400_and_the_connection_lives(server: GatewayServer) -> None:
    with httpx.Client(base_url=server.url, timeout=_WAIT) as client:
        refused = client.put(f"/routing/v1/ipns/{NAME}", content=record(1) + bytes(40_000), headers=HEADERS)
        after = client.put(f"/routing/v1/ipns/{NAME}", content=record(1), headers=HEADERS)
    assert (refused.status_code, refused.headers.get("connection"), after.status_code) == (400, None, 200)


def test_a_declared_100_mb_body_is_refused_unread_and_closes(server: GatewayServer, store: BlockStore) -> None:
    answer = raw(server, put_head("Content-Length: 100000000"), b"x" * 100_000)
    assert answer.startswith(b"HTTP/1.1 400 ")
    assert b"connection: close" in answer.lower()
    assert store.get_record(NAME) is None


def test_an_endless_chunked_body_is_answered_once_past_the_bound(server: GatewayServer) -> None:
    chunk = b"10000\r\n" + b"x" * 0x10000 + b"\r\n"  # 64 KiB chunks, never a last one
    answer = raw(server, put_head("Transfer-Encoding: chunked"), chunk * 3)
    assert answer.startswith(b"HTTP/1.1 400 ")
    assert b"connection: close" in answer.lower()


def test_a_request_smuggled_in_a_put_body_is_never_answered(server: GatewayServer) -> None:
    smuggled = f"DELETE /routing/v1/ipns/{NAME} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode()
    answer = raw(server, put_head(f"Content-Length: {len(smuggled)}"), smuggled)
    assert answer.count(b"HTTP/1.1 ") == 1
    assert answer.startswith(b"HTTP/1.1 400 ")


def test_writers_racing_with_one_sequence_see_exactly_one_win(server: GatewayServer, store: BlockStore) -> None:
    rivals = [create_record(SIGNER, "/ipfs/bafkqaaa", sequence=7, validity=VALIDITY + timedelta(seconds=i), ttl_ns=i)
              for i in range(24)]
    with concurrent.futures.ThreadPoolExecutor(len(rivals)) as pool:
        codes = list(pool.map(lambda body: put(server, body).status_code, rivals))
    assert sorted(codes) == [200] + [409] * 23
    assert store.get_record(NAME) == rivals[codes.index(200)]
