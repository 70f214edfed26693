"""A streamed CAR answer is kept as a file (gateway/car_cache.py) and sent again byte for byte."""

from __future__ import annotations

import httpx

from bundlekit.gateway.car_cache import CarCache
from bundlekit.gateway.respond import Response
from bundlekit.gateway.server import serve_in_thread
from bundlekit.ipld.cid import cid_to_str

from .conftest import Dag, DictSource

CAR = "application/vnd.ipld.car"


def _car(url: str, root: bytes, scope: str = "all") -> httpx.Response:
    return httpx.get(f"{url}/ipfs/{cid_to_str(root)}", params={"format": "car", "dag-scope": scope}, timeout=30)


def test_a_kept_car_is_sent_again_with_the_same_headers_and_bytes(sample_dag: Dag) -> None:
    with serve_in_thread(DictSource(sample_dag.blocks)) as server:
        first, second = _car(server.url, sample_dag.root), _car(server.url, sample_dag.root)
        block = _car(server.url, sample_dag.root, "block")
        assert len(server.cars._entries) == 2  # the whole CAR and the one of scope block
    with serve_in_thread(DictSource(sample_dag.blocks)) as fresh:
        streamed = _car(fresh.url, sample_dag.root)
    assert first.status_code == second.status_code == 200
    assert second.content == first.content == streamed.content
    assert block.content != first.content
    drop = {"date"}
    assert [h for h in second.headers.items() if h[0] not in drop] == [h for h in first.headers.items() if h[0] not in drop]


def test_a_car_cut_short_is_not_kept(sample_dag: Dag) -> None:
    blocks = dict(sample_dag.blocks)
    leaf = next(cid for cid in blocks if cid != sample_dag.root)
    del blocks[leaf]  # the stream is cut when the walk reaches it
    with serve_in_thread(DictSource(blocks)) as server:
        try:
            _car(server.url, sample_dag.root)
        except httpx.HTTPError:
            pass  # a truncated transfer: what the client is meant to see
        assert server.cars._entries == {}


def test_only_immutable_car_answers_to_a_get_have_a_key() -> None:
    car = Response(200, [("Content-Type", CAR + "; version=1"), ("Etag", '"x"'),
                         ("Cache-Control", "public, max-age=29030400, immutable")], iter(()), None)
    assert CarCache.key("GET", car) == ('"x"', CAR + "; version=1")
    assert CarCache.key("HEAD", car) is None
    assert CarCache.key("GET", Response(200, car.headers, [b"x"], 1)) is None  # not streamed
    assert CarCache.key("GET", Response(200, car.headers[:1] + car.headers[2:], iter(()), None)) is None
    assert CarCache.key("GET", Response(404, car.headers, iter(()), None)) is None
