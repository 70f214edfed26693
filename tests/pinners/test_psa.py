"""IPFS Pinning Service API: reuse, create, poll to pinned/failed/deadline."""

from __future__ import annotations

import json

import httpx
import pytest
import respx

from bundlekit.errors import PinAuthError, PinRejected, UsageError
from bundlekit.pinning.protocol import PINNED, QUEUED
from pinners.psa import PSAPinner

from .conftest import SECRET, Car, Sleeps

BASE = "https://psa.test/api"


def psa(http_kwargs: dict[str, object], **env: str) -> PSAPinner:
    return PSAPinner.from_env({"BUNDLEKIT_PSA_URL": BASE, "PSA_TOKEN": SECRET, **env}, **http_kwargs)


def status(car: Car, state: str, rid: str = "r1") -> dict[str, object]:
    return {"requestid": rid, "status": state, "created": "2026-01-01T00:00:00Z",
            "pin": {"cid": car.root_text}, "delegates": [], "info": {}}


@respx.mock
def test_creates_a_pin_then_polls_until_pinned(car: Car, http_kwargs: dict[str, object], sleeps: Sleeps) -> None:
    listing = respx.get(f"{BASE}/pins").mock(return_value=httpx.Response(200, json={"count": 0, "results": []}))
    create = respx.post(f"{BASE}/pins").mock(return_value=httpx.Response(202, json=status(car, "queued")))
    respx.get(f"{BASE}/pins/r1").mock(side_effect=[
        httpx.Response(200, json=status(car, "pinning")), httpx.Response(200, json=status(car, "pinned")),
    ])
    with car.open() as fh:
        result = psa(http_kwargs, BUNDLEKIT_PSA_ORIGINS="/ip4/1.2.3.4/tcp/4001/p2p/QmPeer",
                     BUNDLEKIT_PSA_POLL_INTERVAL="3").pin(fh, car.root, name="rel")
    assert result.status == PINNED
    params = listing.calls.last.request.url.params
    assert params["cid"] == car.root_text and params["status"] == "queued,pinning,pinned"
    body = json.loads(create.calls.last.request.content)
    assert body == {"cid": car.root_text, "name": "rel", "origins": ["/ip4/1.2.3.4/tcp/4001/p2p/QmPeer"],
                    "meta": {"app": "bundlekit"}}
    assert create.calls.last.request.headers["authorization"] == f"Bearer {SECRET}"
    assert sleeps.calls == [3.0, 3.0]


@respx.mock
def test_an_existing_pin_is_reused_not_duplicated(car: Car, http_kwargs: dict[str, object]) -> None:
    respx.get(f"{BASE}/pins").mock(return_value=httpx.Response(
        200, json={"count": 1, "results": [status(car, "pinned", "old")]}))
    create = respx.post(f"{BASE}/pins")
    with car.open() as fh:
        assert psa(http_kwargs).pin(fh, car.root).status == PINNED
    assert create.call_count == 0


@respx.mock
def test_a_failed_pin_is_rejected(car: Car, http_kwargs: dict[str, object]) -> None:
    respx.get(f"{BASE}/pins").mock(return_value=httpx.Response(200, json={"count": 0, "results": []}))
    respx.post(f"{BASE}/pins").mock(return_value=httpx.Response(202, json=status(car, "failed")))
    with car.open() as fh, pytest.raises(PinRejected, match="failed"):
        psa(http_kwargs).pin(fh, car.root)


@respx.mock
def test_the_deadline_leaves_a_non_durable_result(car: Car, http_kwargs: dict[str, object]) -> None:
    respx.get(f"{BASE}/pins").mock(return_value=httpx.Response(200, json={"count": 0, "results": []}))
    respx.post(f"{BASE}/pins").mock(return_value=httpx.Response(202, json=status(car, "queued")))
    respx.get(f"{BASE}/pins/r1").mock(return_value=httpx.Response(200, json=status(car, "queued")))
    ticks = iter(range(0, 1000, 10))
    pinner = psa(http_kwargs, BUNDLEKIT_PSA_DEADLINE="25")
    pinner.polling.clock = lambda: float(next(ticks))
    with car.open() as fh:
        result = pinner.pin(fh, car.root)
    assert result.status == QUEUED and not result.durable


@respx.mock
def test_401_is_an_auth_error(car: Car, http_kwargs: dict[str, object]) -> None:
    respx.get(f"{BASE}/pins").mock(return_value=httpx.Response(401, json={"error": {"reason": "UNAUTHORIZED"}}))
    with car.open() as fh, pytest.raises(PinAuthError):
        psa(http_kwargs).pin(fh, car.root)


@respx.mock
def test_unpin_deletes_every_request_for_the_cid(car: Car, http_kwargs: dict[str, object]) -> None:
    respx.get(f"{BASE}/pins").mock(return_value=httpx.Response(
        200, json={"count": 2, "results": [status(car, "pinned", "a"), status(car, "failed", "b")]}))
    a = respx.delete(f"{BASE}/pins/a").mock(return_value=httpx.Response(202))
    b = respx.delete(f"{BASE}/pins/b").mock(return_value=httpx.Response(202))
    psa(http_kwargs).unpin(car.root)
    assert a.call_count == b.call_count == 1


@pytest.mark.parametrize("var", ["BUNDLEKIT_PSA_POLL_INTERVAL", "BUNDLEKIT_PSA_DEADLINE"])
@pytest.mark.parametrize("raw", ["nan", "NaN", "inf", "-Infinity", "-1", "soon"])
def test_a_poll_interval_or_deadline_that_is_not_a_number_of_seconds_is_refused(var: str, raw: str) -> None:
    with pytest.raises(UsageError, match=var):
        PSAPinner.from_env({"BUNDLEKIT_PSA_URL": BASE, "PSA_TOKEN": SECRET, var: raw})
