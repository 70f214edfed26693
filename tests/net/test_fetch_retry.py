"""Retrieval goes through the same retry loop: a block GET and a CAR GET obey the same rules."""

from __future__ import annotations

import io
from collections.abc import Callable

import httpx
import pytest
import respx

from bundlekit.car.writer import CarWriter
from bundlekit.errors import MissingBlock
from bundlekit.ipld.cid import RAW, cid_to_str, make_cid
from bundlekit.net.fetch import GatewayFetcher, RemoteGateway
from bundlekit.net.http import HttpOptions

A = b"alpha block"
CA = make_cid(1, RAW, A)
GW1 = RemoteGateway("http://gw1.test")
GW2 = RemoteGateway("http://gw2.test")


def _car() -> bytes:
    out = io.BytesIO()
    writer = CarWriter(out, [CA])
    writer.put(CA, A)
    writer.close()
    return out.getvalue()


def _block(f: GatewayFetcher) -> bool:
    try:
        return f.get(CA) == A
    except MissingBlock:
        return False


def _car_request(f: GatewayFetcher) -> bool:
    return f.prefetch_car(CA)


# (what is fetched, the successful body, the call)
KINDS: dict[str, tuple[bytes, Callable[[GatewayFetcher], bool]]] = {
    "block": (A, _block),
    "car": (_car(), _car_request),
}


def _fetcher(sleeps: list[float], *gws: RemoteGateway) -> GatewayFetcher:
    return GatewayFetcher(list(gws or [GW1]), http=HttpOptions(sleep=sleeps.append, jitter=lambda: 0.0))


# (first answer, the wait before the second attempt): the policy's rules, whatever is fetched.
WAITS = {
    "408-backoff": (httpx.Response(408), 0.125),
    "503-retry-after": (httpx.Response(503, headers={"Retry-After": "3"}), 3.0),
    "429-retry-after-capped": (httpx.Response(429, headers={"Retry-After": "3600"}), 30.0),
}


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("scenario", sorted(WAITS))
@respx.mock
def test_a_retryable_answer_waits_by_the_one_policy(kind: str, scenario: str) -> None:
    body, call = KINDS[kind]
    first, wait = WAITS[scenario]
    route = respx.get(f"http://gw1.test/ipfs/{cid_to_str(CA)}").mock(
        side_effect=[first, httpx.Response(200, content=body)])
    sleeps: list[float] = []
    with _fetcher(sleeps) as f:
        assert call(f)
    assert route.call_count == 2 and sleeps == [wait]


@pytest.mark.parametrize("kind", sorted(KINDS))
@respx.mock
def test_a_403_is_not_retried(kind: str) -> None:
    _body, call = KINDS[kind]
    route = respx.get(f"http://gw1.test/ipfs/{cid_to_str(CA)}").mock(return_value=httpx.Response(403))
    sleeps: list[float] = []
    with _fetcher(sleeps) as f:
        assert not call(f)
        assert any("HTTP 403" in note for note in f.notes)
    assert route.call_count == 1 and sleeps == []


@respx.mock
def test_a_gateway_that_kept_failing_is_tried_last_afterwards() -> None:
    other = make_cid(1, RAW, b"other")
    dead = respx.get(url__startswith="http://gw1.test/").mock(return_value=httpx.Response(503))
    respx.get(f"http://gw2.test/ipfs/{cid_to_str(CA)}").mock(return_value=httpx.Response(200, content=A))
    respx.get(f"http://gw2.test/ipfs/{cid_to_str(other)}").mock(return_value=httpx.Response(200, content=b"other"))
    with _fetcher([], GW1, GW2) as f:
        assert f.get(CA) == A
        assert dead.call_count == 3  # the policy's attempts, once
        assert f.get(other) == b"other"
    assert dead.call_count == 3  # not asked again while another gateway answers


@respx.mock
def test_a_gateway_that_answered_404_keeps_its_place() -> None:
    first = respx.get(f"http://gw1.test/ipfs/{cid_to_str(CA)}").mock(return_value=httpx.Response(404))
    respx.get(f"http://gw2.test/ipfs/{cid_to_str(CA)}").mock(return_value=httpx.Response(200, content=A))
    other = make_cid(1, RAW, b"other")
    second = respx.get(f"http://gw1.test/ipfs/{cid_to_str(other)}").mock(
        return_value=httpx.Response(200, content=b"other"))
    with _fetcher([], GW1, GW2) as f:
        assert f.get(CA) == A and f.get(other) == b"other"
    assert first.call_count == 1 and second.call_count == 1
