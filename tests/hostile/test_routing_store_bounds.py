"""Issue 28's routing endpoint attacked for what it keeps on disk: many new names at once, a crash mid-write.

``bundlekit serve`` promises that a flood of freshly made keys cannot fill its disk: records for at most
``MAX_NAMES`` names (specs/gateway.md section 6, PUT step 5). Found: the limit was counted before the
store's record lock was taken, so writers of new names racing past the count were all kept (24 of 24
with a limit of 3). It is counted under the lock now (``BlockStore.put_record(max_names=...)``).
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bundlekit.blockstore import BlockStore, RecordLimitError
from bundlekit.crypto.signing import Ed25519Signer
from bundlekit.names.record import create_record, name_from_key
from bundlekit.names.routing_api import RoutingAPI

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
