"""Issue 28's routing endpoint attacked for what it keeps on disk: many new names at once, a crash mid-write.

``bundlekit serve`` promises that a flood of freshly made keys cannot fill its disk: records for at most
``MAX_NAMES`` names (specs/gateway.md section 6, PUT step 5). Found: the limit was counted before the
store's record lock was taken, so writers of new names racing past the count were all kept (24 of 24
with a limit of 3). It is counted under the lock now (``BlockStore.put_record(max_names=...)``).

A ``bundlekit serve`` stopped by SIGTERM while ``PUT``s ran left a record's temp file in ``<store>/ipns/``
(2 of 3 stops: the handler threads are daemons, cut at exit mid-write). A stopping server now waits,
boundedly, for the answers that write (``GatewayServer.server_close``) and refuses new ones (503).
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from collections.abc import Mapping
from pathlib import Path

import httpx
import pytest

from bundlekit.blockstore import BlockStore, RecordLimitError
from bundlekit.crypto.signing import Ed25519Signer
from bundlekit.gateway.respond import Response
from bundlekit.gateway.server import BodyApp, serve_in_thread
from bundlekit.names.record import create_record, name_from_key
from bundlekit.hub.routing import RoutingAPI

MEDIA = "application/vnd.ipfs.ipns-record"
VALIDITY = datetime.now(UTC) + timedelta(days=1)
WRITERS = 24


def _new_name_record(seed: int) -> tuple[str, bytes]:
    signer = Ed25519Signer.from_seed(bytes([seed]) * 32)
    return name_from_key(signer.public), create_record(signer, "/ipfs/bafkqaaa", sequence=1, validity=VALIDITY,
                                                       ttl_ns=0)


def test_writers_of_new_names_racing_at_the_limit_keep_no_more_names_than_it(tmp_path: Path) -> None:
    store = BlockStore(tmp_path / "served", fsync=False)
    api = RoutingAPI(store, max_names=3)
    puts = [_new_name_record(seed) for seed in range(1, WRITERS + 1)]
    start = threading.Barrier(WRITERS)
    statuses: list[int] = []

    def put(name: str, record: bytes) -> None:
        start.wait()
        statuses.append(api.respond("PUT", f"/routing/v1/ipns/{name}", {"content-type": MEDIA}, record).status)

    threads = [threading.Thread(target=put, args=pair) for pair in puts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(statuses) == [200] * 3 + [507] * (WRITERS - 3)
    assert store.record_count() == 3


def test_a_name_already_kept_takes_a_newer_record_at_the_limit(tmp_path: Path) -> None:
    store = BlockStore(tmp_path / "served", fsync=False)
    signer = Ed25519Signer.from_seed(bytes([1]) * 32)
    name = name_from_key(signer.public)
    store.put_record(name, create_record(signer, "/ipfs/bafkqaaa", sequence=1, validity=VALIDITY, ttl_ns=0))
    newer = create_record(signer, "/ipfs/bafkqaaa", sequence=2, validity=VALIDITY, ttl_ns=0)
    assert store.put_record(name, newer, max_names=1)
    assert store.get_record(name) == newer


def test_the_store_refuses_a_record_of_a_new_name_past_its_limit(tmp_path: Path) -> None:
    store = BlockStore(tmp_path / "served", fsync=False)
    first, second = _new_name_record(1), _new_name_record(2)
    store.put_record(*first, max_names=1)
    with pytest.raises(RecordLimitError):
        store.put_record(*second, max_names=1)
    assert store.get_record(second[0]) is None


_WAIT = 30.0  # seconds any step may take: a bound for a hung server, never a timing assertion


def test_a_stopping_server_lets_a_put_under_way_finish_and_refuses_new_ones(tmp_path: Path) -> None:
    entered, release = threading.Event(), threading.Event()
    order: list[str] = []

    def writing(method: str, target: str, headers: Mapping[str, str], body: bytes | None) -> Response:
        entered.set()
        release.wait(_WAIT)
        order.append("written")
        return Response(200)

    def instant(method: str, target: str, headers: Mapping[str, str], body: bytes | None) -> Response:
        return Response(200)

    statuses: list[int] = []
    with serve_in_thread(store=BlockStore(tmp_path / "served"), apps={"/routing/v1/": BodyApp(writing, 1024)}) as server:
        put = threading.Thread(target=lambda: statuses.append(
            httpx.put(f"{server.url}/routing/v1/ipns/x", content=b"r", timeout=_WAIT).status_code))
        put.start()
        assert entered.wait(_WAIT)

        def close() -> None:
            server.shutdown()
            server.server_close()
            order.append("closed")

        closer = threading.Thread(target=close)
        closer.start()
        probe = BodyApp(instant, 0)
        deadline = time.monotonic() + _WAIT
        while server.answer_writing(probe, "PUT", "/routing/v1/ipns/x", {}, b"").status != 503:
            assert time.monotonic() < deadline, "the server never started closing"
            time.sleep(0.01)
        release.set()
        closer.join(_WAIT)
        put.join(_WAIT)
    assert order == ["written", "closed"]
    assert statuses == [200]
