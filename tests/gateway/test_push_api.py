"""The team hub's push API (``bundlekit/gateway/kubo_api.py``): kubo's RPC calls, as kubo answers them.

Sources (what kubo answers, and so what these expect): ipfs/kubo commit 867cdc5d80d88f390f3ee2882ff50e056ffe3aad,
``core/commands/dag/dag.go`` and ``import.go`` (``dag import``: multipart files, ``pin-roots`` default true,
NDJSON ``{"Root": {"Cid": {"/": ...}, "PinErrorMsg": ...}}``, ``{"Stats": ...}``), ``core/commands/pin/pin.go``
(``pin add``: ``{"Pins": [...]}``, ``pin ls``: ``{"Keys": {...}}``, "path '%s' is not pinned"),
``core/commands/cmdutils/utils.go`` (``MaxPinNameBytes`` 255), ``core/commands/routing.go`` (``routing put``),
``core/corehttp/commands.go`` (``withAuthSecrets``: 403 ``text/plain``), ``config/api.go``; ipfs/go-ipfs-cmds
commit fce340ca96efd6c18c0bc00e7ff214c1e11bdede, ``http/handler.go`` (405 "405 - Method Not Allowed", 404
"404 page not found"), ``http/responseemitter.go`` and ``error.go`` (500 ``{"Message", "Code", "Type": "error"}``).
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from contextlib import AbstractContextManager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from bundlekit.blockstore import BlockStore
from bundlekit.car.reader import read_car
from bundlekit.car.writer import CarWriter
from bundlekit.crypto.signing import Ed25519Signer
from bundlekit.gateway.kubo_api import MOUNT, KuboAPI, PushLimits
from bundlekit.gateway.server import GatewayServer, serve_in_thread
from bundlekit.ipld.cid import as_cidv1, cid_to_str
from bundlekit.names.record import create_record, name_from_key
from bundlekit.names.routing_api import MOUNT as ROUTING_MOUNT
from bundlekit.names.routing_api import RoutingAPI
from pinners.kubo import KuboPinner
from tests.net.loopback import answer_head
from tests.pinners.conftest import Car, build_car

TOKEN = "hub-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
SIGNER = Ed25519Signer.from_seed(bytes([5]) * 32)
NAME = name_from_key(SIGNER.public)


@pytest.fixture
def store(tmp_path: Path) -> BlockStore:
    return BlockStore(tmp_path / "hub", fsync=False)


def hub(store: BlockStore, limits: PushLimits | None = None) -> AbstractContextManager[GatewayServer]:
    routing = RoutingAPI(store, token=TOKEN)
    return serve_in_thread(store=store, apps={ROUTING_MOUNT: routing.app(),
                                              MOUNT: KuboAPI(store, TOKEN, limits, records=routing.put).app()})


@pytest.fixture
def server(store: BlockStore) -> Iterator[GatewayServer]:
    with hub(store) as running:
        yield running


@pytest.fixture
def car(tmp_path: Path) -> Car:
    return build_car(tmp_path / "bundle.car", [b"hello team", b"second leaf"])


def push(server: GatewayServer, data: bytes, query: str = "pin-roots=true", headers: dict[str, str] | None = None
         ) -> httpx.Response:
    return httpx.post(f"{server.url}/api/v0/dag/import?{query}", files={"file": ("bundle.car", data)},
                      headers=AUTH if headers is None else headers, timeout=30)


def test_dag_import_keeps_every_block_pins_the_root_and_answers_kubos_ndjson(server: GatewayServer,
                                                                             store: BlockStore, car: Car) -> None:
    answer = push(server, car.path.read_bytes(), "pin-roots=true&stats=true")
    assert answer.status_code == 200 and answer.headers["content-type"] == "application/json"
    lines = [json.loads(line) for line in answer.text.splitlines()]
    assert lines[0] == {"Root": {"Cid": {"/": car.root_text}, "PinErrorMsg": ""}}
    assert lines[1]["Stats"]["BlockCount"] == 3
    assert as_cidv1(car.root) in store.pins()


def test_a_root_whose_dag_is_incomplete_is_kept_unpinned_with_its_reason(server: GatewayServer, store: BlockStore,
                                                                         car: Car, tmp_path: Path) -> None:
    root_only = tmp_path / "root-only.car"
    with open(root_only, "wb") as fh:
        writer = CarWriter(fh, [car.root])
        writer.put(car.root, _root_block(car))
        writer.close()
    answer = push(server, root_only.read_bytes())
    line = json.loads(answer.text.splitlines()[0])
    assert answer.status_code == 200 and line["Root"]["Cid"]["/"] == car.root_text
    assert "the DAG is incomplete" in line["Root"]["PinErrorMsg"]
    assert not store.pins() and store.has(car.root)


def test_a_truncated_car_is_refused_as_a_command_error(server: GatewayServer, store: BlockStore, car: Car) -> None:
    data = car.path.read_bytes()
    answer = push(server, data[: len(data) - 4])
    assert answer.status_code == 500 and answer.json()["Type"] == "error"
    assert not store.pins()


def _root_block(car: Car) -> bytes:
    with car.open() as fh:
        _roots, blocks = read_car(fh)
        return next(data for cid, data in blocks if cid == car.root)


def test_a_block_that_does_not_hash_to_its_cid_is_refused_and_nothing_is_pinned(server: GatewayServer,
                                                                                store: BlockStore, car: Car) -> None:
    data = bytearray(car.path.read_bytes())
    at = data.rfind(b"second leaf")
    data[at] ^= 0x01
    answer = push(server, bytes(data))
    assert answer.status_code == 500
    assert answer.json()["Type"] == "error" and "import failed" in answer.json()["Message"]
    assert not store.pins()


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong-token-0123456789"},
                                     {"Authorization": TOKEN}, {"Authorization": f"Basic {TOKEN}"}],
                         ids=["none", "wrong", "no-scheme", "basic"])
def test_without_the_token_every_call_is_403_text_as_kubo_and_nothing_is_kept(server: GatewayServer,
                                                                             store: BlockStore, car: Car,
                                                                             headers: dict[str, str]) -> None:
    answer = push(server, car.path.read_bytes(), headers=headers)
    assert answer.status_code == 403 and answer.headers["content-type"].startswith("text/plain")
    assert TOKEN not in answer.text
    assert httpx.post(f"{server.url}/api/v0/pin/ls", headers=headers).status_code == 403
    assert not store.pins() and not list(store.iter_blocks())


def test_a_get_is_405_and_an_unknown_command_404_as_go_ipfs_cmds(server: GatewayServer) -> None:
    got = httpx.get(f"{server.url}/api/v0/pin/ls", headers=AUTH)
    assert (got.status_code, got.text, got.headers["allow"]) == (405, "405 - Method Not Allowed\n", "POST")
    unknown = httpx.post(f"{server.url}/api/v0/swarm/peers", headers=AUTH)
    assert (unknown.status_code, unknown.text) == (404, "404 page not found\n")


def test_a_hub_without_a_token_has_no_push_paths(store: BlockStore, car: Car) -> None:
    with serve_in_thread(store=store, apps={ROUTING_MOUNT: RoutingAPI(store).app()}) as bare:
        assert push(bare, car.path.read_bytes()).status_code in (404, 405)
        assert httpx.get(f"{bare.url}/api/v0/id").status_code == 404


def test_a_body_past_the_bound_is_413_and_not_read(store: BlockStore, car: Car) -> None:
    with hub(store, PushLimits(max_body=200)) as small:
        answer = push(small, car.path.read_bytes())
    assert answer.status_code == 413 and "over this hub's limit of 200 bytes" in answer.json()["Message"]
    assert not list(store.iter_blocks())


def test_a_car_past_the_block_bound_is_refused_and_nothing_is_pinned(store: BlockStore, tmp_path: Path) -> None:
    many = build_car(tmp_path / "many.car", [bytes([i]) * 8 for i in range(10)])
    with hub(store, PushLimits(max_blocks=5)) as small:
        answer = push(small, many.path.read_bytes())
    assert answer.status_code == 500 and "more than 5 blocks" in answer.json()["Message"]
    assert not store.pins()


def test_a_push_that_would_pass_the_store_bound_is_refused_before_a_block_is_kept(store: BlockStore,
                                                                                  car: Car) -> None:
    with hub(store, PushLimits(max_store_bytes=100)) as small:
        answer = push(small, car.path.read_bytes())
    assert answer.status_code == 500 and "--max-store-bytes" in answer.json()["Message"]
    assert not list(store.iter_blocks())


def test_pin_add_names_a_pin_and_pin_ls_lists_it_as_kubo(server: GatewayServer, car: Car) -> None:
    push(server, car.path.read_bytes())
    added = httpx.post(f"{server.url}/api/v0/pin/add", params={"arg": car.root_text, "name": "sync-team"},
                       headers=AUTH)
    assert added.json() == {"Pins": [car.root_text]}
    listed = httpx.post(f"{server.url}/api/v0/pin/ls", params={"type": "recursive", "names": "true"}, headers=AUTH)
    assert listed.json() == {"Keys": {cid_to_str(as_cidv1(car.root)): {"Type": "recursive", "Name": "sync-team"}}}


def test_pin_ls_of_a_cid_not_pinned_is_kubos_refusal(server: GatewayServer, car: Car) -> None:
    answer = httpx.post(f"{server.url}/api/v0/pin/ls", params={"arg": car.root_text, "type": "recursive"},
                        headers=AUTH)
    assert answer.status_code == 500
    assert answer.json() == {"Message": f"path '{car.root_text}' is not pinned", "Code": 0, "Type": "error"}


def test_pin_add_of_a_dag_the_hub_lacks_is_refused(server: GatewayServer, car: Car) -> None:
    answer = httpx.post(f"{server.url}/api/v0/pin/add", params={"arg": car.root_text}, headers=AUTH)
    assert answer.status_code == 500 and "push the CAR first" in answer.json()["Message"]


def test_a_pin_name_over_255_bytes_is_refused_as_kubo(server: GatewayServer, car: Car) -> None:
    push(server, car.path.read_bytes())
    answer = httpx.post(f"{server.url}/api/v0/pin/add", params={"arg": car.root_text, "name": "n" * 256},
                        headers=AUTH)
    assert answer.json()["Message"] == "pin name is 256 bytes (max 255 bytes)"


def test_id_says_the_hub_has_no_peer_addresses(server: GatewayServer) -> None:
    answer = httpx.post(f"{server.url}/api/v0/id", headers=AUTH).json()
    assert answer["Addresses"] == [] and answer["AgentVersion"].startswith("bundlekit/")


def test_routing_put_keeps_a_verified_record_and_refuses_an_older_one(server: GatewayServer,
                                                                      store: BlockStore) -> None:
    validity = datetime.now(UTC) + timedelta(days=1)
    newer = create_record(SIGNER, "/ipfs/bafkqaaa", sequence=3, validity=validity, ttl_ns=0)
    older = create_record(SIGNER, "/ipfs/bafkqaaa", sequence=2, validity=validity, ttl_ns=0)

    def put(record: bytes) -> httpx.Response:
        return httpx.post(f"{server.url}/api/v0/routing/put", params={"arg": f"/ipns/{NAME}"},
                          files={"file": ("record", record)}, headers=AUTH)

    assert put(newer).json()["Type"] == 5
    refused = put(older)
    assert refused.status_code == 500 and "sequence 3" in refused.json()["Message"]
    assert store.get_record(NAME) == newer


def test_the_kubo_pinner_pins_into_the_hub_and_reads_its_status(server: GatewayServer, car: Car) -> None:
    with KuboPinner.from_env({"BUNDLEKIT_KUBO_URL": server.url, "BUNDLEKIT_KUBO_TOKEN": TOKEN}) as kubo:
        with car.open() as fh:
            result = kubo.pin(fh, car.root, name="sync-team")
        assert (result.cid, result.status) == (car.root_text, "pinned")
        assert kubo.status(car.root).status == "pinned"
        assert [e.name for e in kubo.list("sync-")] == ["sync-team"]
        kubo.check()
        kubo.unpin(car.root)
        kubo.unpin(car.root)  # not pinned any more: kubo's refusal, which the pinner takes as done
        assert kubo.status(car.root).status == "missing"


def test_a_push_without_the_token_is_refused_before_its_body_is_read(server: GatewayServer) -> None:
    port = int(server.server_address[1])
    head = (f"POST /api/v0/dag/import HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            "Content-Type: multipart/form-data; boundary=x\r\nContent-Length: 104857600\r\n\r\n")
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(head.encode())  # not one byte of the announced 100 MB follows
        answer = answer_head(sock)
    assert answer.startswith(b"HTTP/1.1 403 ") and b"Connection: close" in answer


def test_a_push_with_no_body_is_refused_as_malformed(server: GatewayServer) -> None:
    answer = httpx.post(f"{server.url}/api/v0/dag/import",
                        headers={**AUTH, "Content-Type": "multipart/form-data; boundary=x"})
    assert answer.status_code == 400 and "lacks its delimiters" in answer.json()["Message"]


def test_a_chunked_push_is_spooled_and_imported(server: GatewayServer, store: BlockStore, car: Car) -> None:
    boundary = "b0und4ry"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"bundle.car\"\r\n"
            "Content-Type: application/vnd.ipld.car\r\n\r\n").encode() + car.path.read_bytes() + \
        f"\r\n--{boundary}--\r\n".encode()
    pieces = (body[i:i + 7] for i in range(0, len(body), 7))  # no Content-Length: Transfer-Encoding: chunked
    answer = httpx.post(f"{server.url}/api/v0/dag/import", content=pieces,
                        headers={**AUTH, "Content-Type": f"multipart/form-data; boundary={boundary}"})
    assert answer.status_code == 200, answer.text
    assert json.loads(answer.text.splitlines()[0])["Root"]["Cid"]["/"] == car.root_text
    assert as_cidv1(car.root) in store.pins()
