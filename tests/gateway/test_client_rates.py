"""Issue 35 item 5, "bounded per-client request rates": ``transport.ClientRates`` and the 429 of ``serve``."""

from __future__ import annotations

import httpx

from bundlekit.gateway.server import serve_in_thread
from bundlekit.gateway.sources import MemorySource
from bundlekit.gateway.transport import ClientRates
from bundlekit.ipld.cid import RAW, cid_to_str, make_cid

DATA = b"one block"
CID = make_cid(1, RAW, DATA)


def test_a_client_gets_two_seconds_worth_at_once_then_is_refused() -> None:
    rates = ClientRates(5, loopback=False)
    taken = [rates.allow("203.0.113.5") for _ in range(12)]
    assert taken == [True] * 10 + [False] * 2
    assert rates.allow("203.0.113.6")  # another address has its own bucket


def test_loopback_clients_are_bounded_only_when_asked() -> None:
    assert all(ClientRates(1).allow("127.0.0.1") for _ in range(100))
    asked = ClientRates(1, loopback=True)
    assert [asked.allow("::1") for _ in range(3)] == [True, True, False]


def test_zero_bounds_nothing() -> None:
    assert all(ClientRates(0, loopback=True).allow("203.0.113.5") for _ in range(1000))


def test_a_request_past_the_rate_is_429_with_retry_after_and_the_rest_are_answered() -> None:
    with serve_in_thread(MemorySource({CID: DATA}, [CID], "test")) as server:
        server.rates = ClientRates(3, loopback=True)
        with httpx.Client(base_url=server.url) as client:
            answers = [client.get(f"/ipfs/{cid_to_str(CID)}", params={"format": "raw"}) for _ in range(10)]
    statuses = [a.status_code for a in answers]
    assert statuses[:6] == [200] * 6 and 429 in statuses
    refused = next(a for a in answers if a.status_code == 429)
    assert refused.headers["retry-after"] == "1" and "too many requests" in refused.text


def test_by_default_a_loopback_benchmark_is_not_throttled() -> None:
    with serve_in_thread(MemorySource({CID: DATA}, [CID], "test")) as server, httpx.Client(base_url=server.url) as client:
        assert {client.get(f"/ipfs/{cid_to_str(CID)}", params={"format": "raw"}).status_code
                for _ in range(1200)} == {200}


def test_an_ipv6_client_is_bounded_by_its_64_however_it_rotates_addresses() -> None:
    """One host commonly holds a whole /64: rotating through it must not escape the bound (``client_of``)."""
    rates = ClientRates(2, loopback=False)
    taken = [rates.allow(f"2001:db8:1:2::{n:x}") for n in range(1, 7)]
    assert taken == [True] * 4 + [False] * 2
    assert rates.allow("2001:db8:1:3::1")  # the next /64 is another client
    assert rates.allow("203.0.113.5")


def test_an_ipv4_mapped_address_counts_as_its_ipv4_client() -> None:
    rates = ClientRates(1, loopback=False)
    assert [rates.allow("::ffff:203.0.113.5"), rates.allow("203.0.113.5"), rates.allow("::ffff:203.0.113.5")] == [
        True, True, False]


def test_the_ipv6_loopback_address_stays_unbounded_by_default() -> None:
    assert all(ClientRates(1).allow("::1") for _ in range(100))
