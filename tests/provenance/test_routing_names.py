"""Publishing and resolving IPNS names through routing endpoints (specs/provenance.md, 4.4 and 4.5).

The endpoint is a ``bundlekit serve``'s routing API on loopback, or, for answers a real one
does not give, an httpx ``MockTransport`` answering as the Delegated Routing V1 HTTP API
specification (github.com/ipfs/specs ``src/routing/http-routing-v1.md``, commit 8721f873;
IPIP-0513: a ``200`` with another content type, or a ``404``, is "no record") and the npm client
(``@helia/delegated-routing-v1-http-api-client`` 9.0.2 ``getIPNS``) read them.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from bundlekit.blockstore import BlockStore
from bundlekit.cli import cli
from bundlekit.crypto.signing import Ed25519Signer
from bundlekit.errors import LoadError, NameMovedError, PinRejected, UsageError
from bundlekit.gateway.server import GatewayServer, serve_in_thread
from bundlekit.ipld.cid import parse_cid
from bundlekit.names import PublishTargets, publish, resolve, resolve_uri
from bundlekit.names.record import create_record, name_from_key
from bundlekit.names.routing import RoutingEndpoint, default_routing, parse_routing, put_record
from bundlekit.hub.routing import MOUNT, RoutingAPI
from bundlekit.net.http import HttpOptions, RetryPolicy

SIGNER = Ed25519Signer.from_seed(bytes([7]) * 32)
OTHER = Ed25519Signer.from_seed(bytes([9]) * 32)
NAME = name_from_key(SIGNER.public)
CID_TEXT = "bafkreidfdrlkeq4m4xnxuyx6iae76fdm4wgl5d4xzsb77ixhyqwumhz244"
CID = parse_cid(CID_TEXT)
OTHER_CID = "bafkqaddwgevxmmraojswg33smq"
MEDIA = "application/vnd.ipfs.ipns-record"


VALIDITY = datetime.now(UTC) + timedelta(days=1)


def record(sequence: int, value: str = f"/ipfs/{OTHER_CID}", signer: Ed25519Signer = SIGNER) -> bytes:
    return create_record(signer, value, sequence=sequence, validity=VALIDITY, ttl_ns=300_000_000_000)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[GatewayServer, BlockStore]]:
    store = BlockStore(tmp_path / "served", fsync=False)
    with serve_in_thread(store=store, apps={MOUNT: RoutingAPI(store).app()}) as server:
        yield server, store


def endpoint_of(served: tuple[GatewayServer, BlockStore]) -> RoutingEndpoint:
    return parse_routing(served[0].url)


def mocked(handler: Callable[[httpx.Request], httpx.Response]) -> HttpOptions:
    return HttpOptions(client=httpx.Client(transport=httpx.MockTransport(handler)), retry=RetryPolicy(attempts=1))


# -- publish --------------------------------------------------------------------------------


def test_publish_puts_the_record_to_the_routing_endpoint(served, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    published = publish(SIGNER, CID, store=BlockStore(tmp_path / "mine"),
                        targets=PublishTargets(routing=[endpoint_of(served)]))
    assert served[1].get_record(NAME) == published.record
    assert published.routers == ["store", endpoint_of(served).label]


def test_publish_continues_above_the_sequence_the_endpoint_keeps(served, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    served[1].put_record(NAME, record(41))
    published = publish(SIGNER, CID, store=BlockStore(tmp_path / "fresh"),
                        targets=PublishTargets(routing=[endpoint_of(served)]))
    assert published.sequence == 42


def test_a_publish_the_endpoint_refuses_as_stale_keeps_nothing_locally(tmp_path: Path) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            return httpx.Response(200, headers={"Content-Type": "text/plain"}, content=b"none")
        return httpx.Response(409, content=b"keeps sequence 7\n")

    mine = BlockStore(tmp_path / "mine")
    with pytest.raises(NameMovedError, match="keeps sequence 7"):
        publish(SIGNER, CID, store=mine,
                targets=PublishTargets(routing=[parse_routing("http://routing.test")]),
                http=mocked(handler))
    assert mine.get_record(NAME) is None


def test_a_publish_the_endpoint_refuses_as_invalid_is_pin_rejected_quoting_it(tmp_path: Path) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            return httpx.Response(404)
        assert request.headers["Content-Type"] == MEDIA
        return httpx.Response(400, content=b"provided record is invalid\x1b[2J\nsecond line")

    with pytest.raises(PinRejected, match=r"provided record is invalid\\x1b\[2J$"):
        publish(SIGNER, CID, store=BlockStore(tmp_path / "mine"),
                targets=PublishTargets(routing=[parse_routing("http://routing.test")]),
                http=mocked(handler))


def test_two_writers_who_saw_one_sequence_put_above_it_and_the_second_is_told(served) -> None:  # type: ignore[no-untyped-def]
    served[1].put_record(NAME, record(3))
    first, second = record(4, value=f"/ipfs/{CID_TEXT}"), record(4)
    put_record(endpoint_of(served), NAME, first, HttpOptions())
    with pytest.raises(NameMovedError, match="sequence 4"):
        put_record(endpoint_of(served), NAME, second, HttpOptions())
    assert served[1].get_record(NAME) == first


def test_publish_following_the_kept_sequence_wins_at_the_endpoint(served, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    served[1].put_record(NAME, record(3))
    published = publish(SIGNER, CID, store=BlockStore(tmp_path / "mine"),
                        targets=PublishTargets(routing=[endpoint_of(served)]), follows=3)
    assert (published.sequence, served[1].get_record(NAME)) == (4, published.record)


def test_publish_following_a_sequence_the_endpoint_moved_past_is_refused(served, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    served[1].put_record(NAME, record(4))  # another writer published 4 after we merged 3
    mine = BlockStore(tmp_path / "mine")
    with pytest.raises(NameMovedError, match="moved to sequence 4 after 3"):
        publish(SIGNER, CID, store=mine, targets=PublishTargets(routing=[endpoint_of(served)]), follows=3)
    assert (served[1].get_record(NAME), mine.get_record(NAME)) == (record(4), None)


def test_publish_following_a_sequence_loses_to_a_put_between_its_get_and_its_put(tmp_path: Path) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "GET":  # sequence 3 when asked ...
            return httpx.Response(200, headers={"Content-Type": MEDIA}, content=record(3))
        return httpx.Response(409, content=b"this server keeps a record with sequence 4\n")  # ... 4 when put

    mine = BlockStore(tmp_path / "mine")
    with pytest.raises(NameMovedError, match="sequence 4"):
        publish(SIGNER, CID, store=mine,
                targets=PublishTargets(routing=[parse_routing("http://routing.test")]),
                http=mocked(handler),
                follows=3)
    assert mine.get_record(NAME) is None


# -- resolve --------------------------------------------------------------------------------


def test_resolve_takes_the_endpoints_record_when_it_is_newer(served, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    served[1].put_record(NAME, record(5))
    mine = BlockStore(tmp_path / "mine")
    mine.put_record(NAME, record(4, value=f"/ipfs/{CID_TEXT}"))
    found = resolve(NAME, store=mine, routing=[endpoint_of(served)])
    assert (found.record.sequence, found.sources) == (5, [endpoint_of(served).label])
    assert mine.get_record(NAME) == record(5)


def test_resolve_ignores_a_record_of_another_key_from_an_endpoint(tmp_path: Path) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"Content-Type": MEDIA}, content=record(99, signer=OTHER))

    mine = BlockStore(tmp_path / "mine")
    mine.put_record(NAME, record(2))
    found = resolve(NAME, store=mine, routing=[parse_routing("http://routing.test")], http=mocked(handler))
    assert found.record.sequence == 2
    assert any("not signed by the name's key" in note for note in found.notes)


@pytest.mark.parametrize("answer", [
    httpx.Response(404),
    httpx.Response(200, headers={"Content-Type": "text/plain"}, content=record(9)),  # IPIP-0513: no record
])
def test_an_endpoint_answering_no_record_leaves_the_name_unresolved(tmp_path: Path, answer: httpx.Response) -> None:
    with pytest.raises(LoadError, match="routing.test/routing/v1: no IPNS record"):
        resolve(NAME, store=BlockStore(tmp_path / "mine"), routing=[parse_routing("http://routing.test")],
                http=mocked(lambda _request: answer))


def test_an_endpoint_sending_more_than_a_record_is_cut_off(tmp_path: Path) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"Content-Type": MEDIA}, content=b"\x00" * (11 * 1024))

    with pytest.raises(LoadError, match="over the 10240-byte limit"):
        resolve(NAME, store=BlockStore(tmp_path / "mine"), routing=[parse_routing("http://routing.test")],
                http=mocked(handler))


def test_load_resolves_ipns_uris_through_the_routing_endpoints_of_the_environment(
    served, tmp_path: Path, monkeypatch: pytest.MonkeyPatch  # type: ignore[no-untyped-def]
) -> None:
    served[1].put_record(NAME, record(1))
    monkeypatch.setenv("BUNDLEKIT_ROUTING", served[0].url)
    uri, _found = resolve_uri(f"ipns://{NAME}", gateways=[], store=BlockStore(tmp_path / "mine"))
    assert uri == f"ipfs://{OTHER_CID}/manifest.json"


# -- endpoints ------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["http://h:8080", "http://h:8080/", "http://h:8080/routing/v1",
                                  "http://h:8080/routing/v1/"])
def test_a_routing_endpoint_is_its_base_url(text: str) -> None:
    assert parse_routing(text).url(NAME) == f"http://h:8080/routing/v1/ipns/{NAME}"


@pytest.mark.parametrize("text", ["ftp://h", "h:8080", "http://h:x/", "http://h/?q=1"])
def test_a_routing_endpoint_that_is_not_an_http_base_url_is_a_usage_error(text: str) -> None:
    with pytest.raises(UsageError):
        parse_routing(text)


def test_the_environment_names_routing_endpoints_in_order() -> None:
    found = default_routing({"BUNDLEKIT_ROUTING": "http://a:1, http://b:2/routing/v1"})
    assert [e.base for e in found] == ["http://a:1", "http://b:2"]


# -- command line ---------------------------------------------------------------------------


def test_name_publish_and_resolve_with_routing_meet_at_a_serve(served, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    key = tmp_path / "name.pem"
    SIGNER.write(key)
    url = served[0].url
    writer = {"BUNDLEKIT_HOME": str(tmp_path / "writer")}
    reader = {"BUNDLEKIT_HOME": str(tmp_path / "reader"), "BUNDLEKIT_ROUTING": url}
    published = CliRunner().invoke(cli, ["name", "publish", "--key-file", str(key), "--routing", url, OTHER_CID],
                                   env=writer)
    assert published.exit_code == 0, published.stderr
    resolved = CliRunner().invoke(cli, ["name", "resolve", NAME], env=reader)
    assert (resolved.exit_code, resolved.stdout.strip()) == (0, OTHER_CID)


def test_name_publish_to_an_unreachable_routing_endpoint_exits_4_and_keeps_nothing(tmp_path: Path) -> None:
    key = tmp_path / "name.pem"
    SIGNER.write(key)
    home = tmp_path / "writer"
    result = CliRunner().invoke(cli, ["name", "publish", "--key-file", str(key), "--routing", "http://127.0.0.1:9",
                                      OTHER_CID], env={"BUNDLEKIT_HOME": str(home)})
    assert result.exit_code == 4
    assert "could not take the record" in result.stderr
    assert BlockStore(home).get_record(NAME) is None


def test_serve_answers_the_routing_api_for_its_store(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "bundlekit", "serve", "--port", "0", "--store", str(tmp_path / "s")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        base = proc.stderr.readline().split()[-1]
        kept = record(0)
        put = httpx.put(f"{base}/routing/v1/ipns/{NAME}", content=kept, headers={"Content-Type": MEDIA}, timeout=10)
        got = httpx.get(f"{base}/routing/v1/ipns/{NAME}", timeout=10)
        assert (put.status_code, got.content) == (200, kept)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if proc.stderr is not None:
            proc.stderr.close()
