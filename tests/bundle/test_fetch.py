"""GatewayFetcher: CAR first, per-block fallback, verification, retries (HTTP mocked with respx)."""

from __future__ import annotations

import io
from pathlib import Path

import httpx
import pytest
import respx

from bundlekit.car.writer import CarWriter
from bundlekit.errors import BlockMismatch, MissingBlock
from bundlekit.ipld.cid import RAW, cid_to_str, make_cid
from bundlekit.net.fetch import GatewayFetcher, RemoteGateway
from bundlekit.net.http import HttpOptions

A = b"alpha block"
B = b"beta block"
CA = make_cid(1, RAW, A)
CB = make_cid(1, RAW, B)
GW1 = RemoteGateway("http://gw1.test")
GW2 = RemoteGateway("http://gw2.test")


def _car(blocks: list[tuple[bytes, bytes]], root: bytes = CA) -> bytes:
    out = io.BytesIO()
    w = CarWriter(out, [root])
    for cid, data in blocks:
        w.put(cid, data)
    w.close()
    return out.getvalue()


def _fetcher(*gws: RemoteGateway, sleeps: list[float] | None = None) -> GatewayFetcher:
    log = sleeps if sleeps is not None else []
    return GatewayFetcher(list(gws), http=HttpOptions(sleep=log.append, jitter=lambda: 0.0))


@respx.mock
def test_car_blocks_are_verified_and_cached() -> None:
    route = respx.get(f"http://gw1.test/ipfs/{cid_to_str(CA)}").mock(
        return_value=httpx.Response(200, content=_car([(CA, A), (CB, B)]))
    )
    with _fetcher(GW1) as f:
        assert f.prefetch_car(CA)
        assert f.get(CA) == A and f.get(CB) == B
    request = route.calls[0].request
    assert request.url.params["format"] == "car"
    assert request.headers["Accept"] == "application/vnd.ipld.car"


@respx.mock
def test_altered_block_in_car_is_dropped_not_trusted() -> None:
    respx.get(f"http://gw1.test/ipfs/{cid_to_str(CA)}", params={"format": "car"}).mock(
        return_value=httpx.Response(200, content=_car([(CA, A), (CB, b"evil")]))
    )
    respx.get(f"http://gw1.test/ipfs/{cid_to_str(CB)}", params={"format": "raw"}).mock(
        return_value=httpx.Response(200, content=b"evil")
    )
    with _fetcher(GW1) as f:
        f.prefetch_car(CA)
        with pytest.raises(BlockMismatch, match="gw1.test"):
            f.get(CB)


@respx.mock
def test_truncated_car_fails_but_keeps_verified_blocks() -> None:
    car = _car([(CA, A), (CB, B)])
    respx.get(f"http://gw1.test/ipfs/{cid_to_str(CA)}", params={"format": "car"}).mock(
        return_value=httpx.Response(200, content=car[:-3])
    )
    with _fetcher(GW1) as f:
        assert not f.prefetch_car(CA)
        assert f.get(CA) == A
        assert any("truncated" in n for n in f.notes)


@respx.mock
def test_dead_first_gateway_falls_through_to_the_next() -> None:
    respx.get(url__startswith="http://gw1.test/").mock(side_effect=httpx.ConnectError("refused"))
    respx.get(f"http://gw2.test/ipfs/{cid_to_str(CA)}").mock(return_value=httpx.Response(200, content=_car([(CA, A)])))
    with _fetcher(GW1, GW2) as f:
        assert f.prefetch_car(CA)
        assert f.get(CA) == A


@respx.mock
def test_per_block_fallback_asks_for_raw() -> None:
    route = respx.get(f"http://gw1.test/ipfs/{cid_to_str(CB)}").mock(return_value=httpx.Response(200, content=B))
    with _fetcher(GW1) as f:
        assert f.get(CB) == B
    assert route.calls[0].request.url.params["format"] == "raw"
    assert route.calls[0].request.headers["Accept"] == "application/vnd.ipld.raw"


@respx.mock
def test_bad_block_from_one_gateway_is_replaced_by_a_good_one() -> None:
    respx.get(f"http://gw1.test/ipfs/{cid_to_str(CB)}").mock(return_value=httpx.Response(200, content=b"evil"))
    respx.get(f"http://gw2.test/ipfs/{cid_to_str(CB)}").mock(return_value=httpx.Response(200, content=B))
    with _fetcher(GW1, GW2) as f:
        assert f.get(CB) == B


@respx.mock
def test_block_missing_everywhere_raises_missing_block() -> None:
    respx.get(url__startswith="http://gw1.test/").mock(return_value=httpx.Response(404))
    with _fetcher(GW1) as f, pytest.raises(MissingBlock):
        f.get(CB)


@respx.mock
def test_5xx_and_429_are_retried_with_backoff() -> None:
    route = respx.get(f"http://gw1.test/ipfs/{cid_to_str(CB)}").mock(
        side_effect=[httpx.Response(503), httpx.Response(429, headers={"Retry-After": "2"}), httpx.Response(200, content=B)]
    )
    sleeps: list[float] = []
    with _fetcher(GW1, sleeps=sleeps) as f:
        assert f.get(CB) == B
    assert route.call_count == 3
    assert sleeps == [0.125, 2.0]


@respx.mock
def test_car_request_honours_retry_after() -> None:
    route = respx.get(f"http://gw1.test/ipfs/{cid_to_str(CA)}").mock(
        side_effect=[
            httpx.Response(503),
            httpx.Response(429, headers={"Retry-After": "2"}),
            httpx.Response(200, content=_car([(CA, A)])),
        ]
    )
    sleeps: list[float] = []
    with _fetcher(GW1, sleeps=sleeps) as f:
        assert f.prefetch_car(CA)
    assert route.call_count == 3
    assert sleeps == [0.125, 2.0]


@respx.mock
def test_404_is_not_retried() -> None:
    route = respx.get(f"http://gw1.test/ipfs/{cid_to_str(CB)}").mock(return_value=httpx.Response(404))
    sleeps: list[float] = []
    with _fetcher(GW1, sleeps=sleeps) as f, pytest.raises(MissingBlock):
        f.get(CB)
    assert route.call_count == 1 and sleeps == []


@respx.mock
def test_unexpected_blocks_in_a_car_are_harmless() -> None:
    stray = b"stray"
    respx.get(f"http://gw1.test/ipfs/{cid_to_str(CA)}").mock(
        return_value=httpx.Response(200, content=_car([(make_cid(1, RAW, stray), stray), (CA, A)]))
    )
    with _fetcher(GW1) as f:
        assert f.prefetch_car(CA)
        assert f.get(CA) == A


@respx.mock
def test_oversized_block_response_is_not_buffered_or_accepted() -> None:
    respx.get(f"http://gw1.test/ipfs/{cid_to_str(CB)}").mock(
        return_value=httpx.Response(200, content=b"x" * (2 * 1024 * 1024 + 1))
    )
    with _fetcher(GW1) as f, pytest.raises(MissingBlock):
        f.get(CB)
    assert any("byte limit" in n for n in f.notes)


def test_check_block_fast_path_agrees_with_verify_block() -> None:
    from bundlekit.errors import BlockMismatch as Mismatch
    from bundlekit.ipld.cid import DAG_PB
    from bundlekit.net.fetch import check_block

    for cid in (make_cid(1, RAW, b"x"), make_cid(1, DAG_PB, b"x"), make_cid(0, DAG_PB, b"x")):
        check_block(cid, b"x")
        with pytest.raises(Mismatch):
            check_block(cid, b"y")


def test_check_block_refuses_oversized_blocks() -> None:
    from bundlekit.errors import UnsupportedBlock
    from bundlekit.net.fetch import check_block

    data = b"z" * (2 * 1024 * 1024 + 1)
    with pytest.raises(UnsupportedBlock):
        check_block(make_cid(1, RAW, data), data)


@respx.mock
def test_a_damaged_store_copy_is_fetched_from_the_gateways_and_noted(tmp_path: Path) -> None:
    """A block the store holds but whose copy does not hash (here its pack index points at another block's
    bytes: a damaged or forged index) is taken from a gateway, not a failed load (the store drops the bad copy)."""
    from bundlekit.blockstore import BlockStore

    store = BlockStore(tmp_path, fsync=False)
    writer = store.pack(CA)
    writer.put(CA, A)
    writer.put(CB, B)
    writer.commit()
    index = next((tmp_path / "packs").glob("*.idx"))
    body = index.read_bytes()
    head, first, second = body[:23], body[23:71], body[71:119]
    index.write_bytes(head + first[:36] + second[36:] + second[:36] + first[36:])  # each CID at the other's bytes
    respx.get(f"http://gw1.test/ipfs/{cid_to_str(CA)}", params={"format": "raw"}).mock(
        return_value=httpx.Response(200, content=A))
    with GatewayFetcher([GW1], store=store, http=HttpOptions(sleep=lambda _s: None, jitter=lambda: 0.0)) as f:
        assert f.get(CA) == A
        assert any("local store's copy" in note for note in f.notes)
    assert not store.has(CA)


def test_store_blocks_over_the_trustless_size_limit_are_refused(tmp_path: Path) -> None:
    from bundlekit.blockstore import BlockStore
    from bundlekit.errors import UnsupportedBlock

    store = BlockStore(tmp_path, fsync=False)
    big = b"x" * (2 * 1024 * 1024 + 1)
    store.put(make_cid(1, RAW, big), big)
    store.put(CA, A)
    with GatewayFetcher([], store=store) as f:
        assert f.get(CA) == A
        with pytest.raises(UnsupportedBlock, match="over the 2097152-byte limit"):
            f.get(make_cid(1, RAW, big))
