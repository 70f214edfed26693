"""``GET``/``PUT /routing/v1/ipns/{name}`` of ``bundlekit serve`` (specs/gateway.md, "Routing API").

Against the Delegated Routing V1 HTTP API specification (github.com/ipfs/specs
``src/routing/http-routing-v1.md`` and ``src/ipips/ipip-0513.md``, commit
8721f8736bbc434f2c14ba05f3bf42e67b653d9d) and boxo's server (github.com/ipfs/boxo
``routing/http/server/server.go``, ``GetIPNS``/``PutIPNS``/``setIPNSCacheControl``, commit
8df89a787fac5f3e2dd37b045c4018197bfb805c): 406 for a wrong ``Accept``/``Content-Type``, 400 for
a name or record that is not valid, 200 ``text/plain`` for "no record". The compare-and-swap
(409 for a sequence at or below the kept one) is bundlekit's (``hub/routing.py``).
"""

from __future__ import annotations

import calendar
import socket
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from bundlekit.blockstore import BlockStore
from bundlekit.crypto.signing import Ed25519Signer
from bundlekit.gateway.respond import Response
from bundlekit.gateway.server import GatewayServer, serve_in_thread
from bundlekit.ipld.bases import BASE36, decode
from bundlekit.names.record import create_record, name_from_key
from bundlekit.hub.routing import MOUNT, RoutingAPI

MEDIA = "application/vnd.ipfs.ipns-record"
SIGNER = Ed25519Signer.from_seed(bytes([7]) * 32)
OTHER = Ed25519Signer.from_seed(bytes([9]) * 32)
NAME = name_from_key(SIGNER.public)
NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
NOW_NS = calendar.timegm(NOW.timetuple()) * 1_000_000_000
CID_A = "/ipfs/bafkreidfdrlkeq4m4xnxuyx6iae76fdm4wgl5d4xzsb77ixhyqwumhz244"
CID_B = "/ipfs/bafkqaddwgevxmmraojswg33smq"
PUT = {"content-type": MEDIA}


def record(sequence: int, *, value: str = CID_A, signer: Ed25519Signer = SIGNER, days: int = 30,
           ttl_s: int = 300) -> bytes:
    return create_record(signer, value, sequence=sequence, validity=NOW + timedelta(days=days),
                         ttl_ns=ttl_s * 1_000_000_000)


def base32_name(name: str) -> str:
    """``name`` (``k51...``) as the npm client writes it: base32 CIDv1 (``bafz...``)."""
    import base64

    return "b" + base64.b32encode(decode(name[1:], BASE36)).decode().lower().rstrip("=")


@pytest.fixture
def store(tmp_path: Path) -> BlockStore:
    return BlockStore(tmp_path / "store", fsync=False)


@pytest.fixture
def api(store: BlockStore) -> RoutingAPI:
    return RoutingAPI(store, clock=lambda: NOW_NS)


def put(api: RoutingAPI, body: bytes | None, name: str = NAME, headers: dict[str, str] = PUT) -> Response:
    return api.respond("PUT", f"/routing/v1/ipns/{name}", headers, body)


def get(api: RoutingAPI, name: str = NAME, accept: str = MEDIA) -> Response:
    return api.respond("GET", f"/routing/v1/ipns/{name}", {"accept": accept}, b"")


def text(response: Response) -> str:
    return b"".join(response.body).decode()


# -- GET ------------------------------------------------------------------------------------


def test_get_answers_the_kept_record_as_an_ipns_record(api: RoutingAPI, store: BlockStore) -> None:
    store.put_record(NAME, record(3))
    response = get(api)
    assert response.status == 200
    assert response.header("Content-Type") == MEDIA
    assert b"".join(response.body) == record(3)


def test_get_sets_boxo_routing_cache_headers(api: RoutingAPI, store: BlockStore) -> None:
    store.put_record(NAME, record(3, days=1, ttl_s=300))
    response = get(api)
    left = 24 * 3600
    assert response.header("Cache-Control") == (
        f"public, max-age=300, stale-while-revalidate={left - 300}, stale-if-error={left - 300}")
    assert response.header("Expires") == "Sat, 03 Jan 2026 03:04:05 GMT"
    assert response.header("Last-Modified") == "Fri, 02 Jan 2026 03:04:05 GMT"
    assert response.header("Vary") == "Accept"
    assert response.header("Content-Disposition") == f'attachment; filename="{NAME}.ipns-record"'


def test_get_derives_the_etag_from_the_record(api: RoutingAPI, store: BlockStore) -> None:
    store.put_record(NAME, record(3))
    first = get(api).header("Etag")
    store.put_record(NAME, record(4))
    assert first is not None and get(api).header("Etag") not in (None, first)


def test_get_of_an_expired_record_is_not_cacheable(api: RoutingAPI, store: BlockStore) -> None:
    store.put_record(NAME, record(3, days=-1))
    assert get(api).header("Cache-Control") == "no-store"


def test_get_cuts_max_age_to_the_validity_left(api: RoutingAPI, store: BlockStore) -> None:
    store.put_record(NAME, create_record(SIGNER, CID_A, sequence=1, validity=NOW + timedelta(seconds=100),
                                         ttl_ns=3600 * 1_000_000_000))
    assert get(api).header("Cache-Control") == "public, max-age=100, stale-while-revalidate=0, stale-if-error=0"


def test_get_without_a_record_answers_200_text_plain(api: RoutingAPI) -> None:
    response = get(api)
    assert response.status == 200
    assert response.header("Content-Type") == "text/plain; charset=utf-8"
    assert response.header("Cache-Control") == "public, max-age=15, stale-while-revalidate=172800, stale-if-error=172800"


def test_get_takes_the_name_in_base32_as_the_npm_client_sends_it(api: RoutingAPI, store: BlockStore) -> None:
    store.put_record(NAME, record(3))
    assert b"".join(get(api, base32_name(NAME)).body) == record(3)


@pytest.mark.parametrize("accept", ["", "*/*", f"application/json, {MEDIA}"])
def test_get_serves_the_record_to_an_accept_boxo_takes(api: RoutingAPI, store: BlockStore, accept: str) -> None:
    store.put_record(NAME, record(3))
    assert get(api, accept=accept).header("Content-Type") == MEDIA


def test_get_with_another_accept_is_406(api: RoutingAPI) -> None:
    assert get(api, accept="application/json").status == 406


@pytest.mark.parametrize("name", [
    "QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG",  # a CIDv0: not a libp2p-key
    "bafkreidfdrlkeq4m4xnxuyx6iae76fdm4wgl5d4xzsb77ixhyqwumhz244",  # a raw CID
    "example.com",  # a DNSLink name
    "",
])
def test_get_of_something_that_is_not_an_ipns_name_is_400(api: RoutingAPI, name: str) -> None:
    assert get(api, name).status == 400


# -- PUT ------------------------------------------------------------------------------------


def test_put_of_a_valid_record_is_kept(api: RoutingAPI, store: BlockStore) -> None:
    assert put(api, record(0)).status == 200
    assert store.get_record(NAME) == record(0)


def test_put_above_the_kept_sequence_replaces_it(api: RoutingAPI, store: BlockStore) -> None:
    put(api, record(4))
    assert put(api, record(5, value=CID_B)).status == 200
    assert store.get_record(NAME) == record(5, value=CID_B)


def test_put_of_the_kept_record_again_is_200_and_changes_nothing(api: RoutingAPI, store: BlockStore) -> None:
    put(api, record(4))
    assert put(api, record(4)).status == 200
    assert store.get_record(NAME) == record(4)


def test_put_of_another_record_with_the_kept_sequence_is_409(api: RoutingAPI, store: BlockStore) -> None:
    put(api, record(4))
    response = put(api, record(4, value=CID_B, days=60))  # later validity: a DHT would take it
    assert response.status == 409
    assert "sequence 4" in text(response)
    assert store.get_record(NAME) == record(4)


def test_put_below_the_kept_sequence_is_409(api: RoutingAPI, store: BlockStore) -> None:
    put(api, record(4))
    assert put(api, record(3)).status == 409
    assert store.get_record(NAME) == record(4)


def test_put_below_an_expired_kept_record_is_still_409(api: RoutingAPI, store: BlockStore) -> None:
    store.put_record(NAME, record(4, days=-1))
    assert put(api, record(3)).status == 409


def test_put_replaces_a_damaged_kept_copy(api: RoutingAPI, store: BlockStore) -> None:
    store.put_record(NAME, b"not a record")
    assert put(api, record(0)).status == 200
    assert store.get_record(NAME) == record(0)


def test_put_of_a_record_signed_by_another_key_is_400(api: RoutingAPI, store: BlockStore) -> None:
    response = put(api, record(9, signer=OTHER))
    assert response.status == 400
    assert store.get_record(NAME) is None


def test_put_of_an_expired_record_is_400(api: RoutingAPI) -> None:
    assert "expired" in text(put(api, record(0, days=-1)))


def test_put_without_the_record_content_type_is_406(api: RoutingAPI) -> None:
    assert put(api, record(0), headers={"content-type": "application/octet-stream"}).status == 406


def test_put_of_a_body_past_the_bound_is_400(api: RoutingAPI) -> None:
    assert put(api, None).status == 400


def test_put_of_a_new_name_past_the_name_limit_is_507(store: BlockStore) -> None:
    api = RoutingAPI(store, clock=lambda: NOW_NS, max_names=1)
    assert put(api, record(0, signer=OTHER), name=name_from_key(OTHER.public)).status == 200
    assert put(api, record(0)).status == 507


def test_put_for_a_kept_name_past_the_name_limit_is_taken(store: BlockStore) -> None:
    api = RoutingAPI(store, clock=lambda: NOW_NS, max_names=1)
    put(api, record(0))
    assert put(api, record(1)).status == 200


def test_put_keeps_the_record_under_its_base36_name_whatever_the_path_encoding(api: RoutingAPI, store: BlockStore) -> None:
    assert put(api, record(0), name=base32_name(NAME)).status == 200
    assert store.get_record(NAME) == record(0)


# -- other paths and methods ----------------------------------------------------------------


@pytest.mark.parametrize("path", ["providers/bafkqaaa", "peers/k51x", "dht/closest/peers/k51x"])
def test_the_apis_other_paths_are_501(api: RoutingAPI, path: str) -> None:
    assert api.respond("GET", f"/routing/v1/{path}", {}, b"").status == 501


def test_an_unknown_routing_path_is_400(api: RoutingAPI) -> None:
    assert api.respond("GET", "/routing/v1/names/x", {}, b"").status == 400


def test_another_method_on_a_name_is_405_with_allow(api: RoutingAPI) -> None:
    response = api.respond("DELETE", f"/routing/v1/ipns/{NAME}", {}, b"")
    assert response.status == 405
    assert response.header("Allow") == "GET, HEAD, PUT, OPTIONS"


# -- over HTTP ------------------------------------------------------------------------------


@pytest.fixture
def server(store: BlockStore) -> Iterator[GatewayServer]:
    with serve_in_thread(store=store, apps={MOUNT: RoutingAPI(store).app()}) as running:
        yield running


def test_a_put_over_http_is_read_and_kept(server: GatewayServer, store: BlockStore) -> None:
    fresh = create_record(SIGNER, CID_A, sequence=0, validity=datetime.now(UTC) + timedelta(days=1), ttl_ns=0)
    answer = httpx.put(f"{server.url}/routing/v1/ipns/{NAME}", content=fresh, headers=PUT)
    assert answer.status_code == 200
    assert store.get_record(NAME) == fresh


def test_a_connection_stays_open_after_a_put(server: GatewayServer) -> None:
    with httpx.Client(base_url=server.url) as client:
        first = client.put(f"/routing/v1/ipns/{NAME}", content=b"junk", headers=PUT)
        second = client.get(f"/routing/v1/ipns/{NAME}")
    assert (first.status_code, first.headers.get("connection")) == (400, None)
    assert second.status_code == 200


def test_a_client_waiting_for_100_continue_gets_it_and_its_put_answered(server: GatewayServer) -> None:
    fresh = create_record(SIGNER, CID_A, sequence=0, validity=datetime.now(UTC) + timedelta(days=1), ttl_ns=0)
    host, port = server.server_address[:2]
    with socket.create_connection((str(host), int(port)), timeout=10) as sock:
        sock.sendall((f"PUT /routing/v1/ipns/{NAME} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                      f"Content-Type: {MEDIA}\r\nContent-Length: {len(fresh)}\r\nExpect: 100-continue\r\n\r\n").encode())
        assert sock.recv(64).startswith(b"HTTP/1.1 100 Continue\r\n")
        sock.sendall(fresh)
        assert sock.recv(64).startswith(b"HTTP/1.1 200 ")


def test_the_routing_api_refuses_a_host_that_is_not_loopback_when_bound_to_loopback(server: GatewayServer) -> None:
    answer = httpx.put(f"{server.url}/routing/v1/ipns/{NAME}", content=record(0),
                       headers={**PUT, "Host": "rebound.example"})
    assert answer.status_code == 421


def test_a_chunked_put_is_read_whole_and_kept(server: GatewayServer, store: BlockStore) -> None:
    fresh = create_record(SIGNER, CID_A, sequence=0, validity=datetime.now(UTC) + timedelta(days=1), ttl_ns=0)
    halves = iter([fresh[:50], fresh[50:]])  # an iterator: httpx sends it chunked
    answer = httpx.put(f"{server.url}/routing/v1/ipns/{NAME}", content=halves, headers=PUT)
    assert answer.status_code == 200
    assert store.get_record(NAME) == fresh
