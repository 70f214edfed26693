"""Pinning Service API listing: every page, ties at a page boundary, services that never end.

The fake answers ``GET /pins`` as ipfs/pinning-services-api-spec ``ipfs-pinning-service.yaml``
(commit bbfaa5896d9378c8c613f2ed18d227a7a18d2880) documents it: "Pagination and filtering"
(newest first by ``created``; ``count`` is the total matching the filters; the client reads
on with ``before`` = the oldest ``created`` of a page), ``before``/``after`` as exclusive
"created before/after" filters, ``limit`` 1..1000 (default 10), ``name`` with ``match``
(``exact`` by default, ``partial`` anywhere in the name), ``cid``, ``status`` (default ``pinned``),
and errors as ``{"error": {"reason", "details"}}`` with 400/401.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from itertools import takewhile

import httpx
import pytest
import respx
from click.testing import CliRunner

from bundlekit.cli import cli
from bundlekit.errors import PinAuthError, PinUnavailable
from pinners import psa as psa_module
from pinners.psa import PSAPinner

from .conftest import SECRET, Car

BASE = "https://psa.test/api"


def failure(status: int, reason: str, details: str) -> httpx.Response:
    return httpx.Response(status, json={"error": {"reason": reason, "details": details}})


def when(text: str) -> tuple[datetime, int]:
    """A timestamp to the nanosecond: services written in Go send up to 9 fractional digits (RFC3339Nano)."""
    head, dot, rest = text.partition(".")
    if not dot:
        return datetime.fromisoformat(text), 0
    digits = "".join(takewhile(str.isdigit, rest))
    return datetime.fromisoformat(head + rest[len(digits):]), int(digits[:9].ljust(9, "0"))


@dataclass
class FakeService:
    """A Pinning Service API holding ``pins`` (PinStatus objects), answering ``GET /pins`` as the spec says."""

    pins: list[dict[str, object]] = field(default_factory=list)
    asked: list[httpx.QueryParams] = field(default_factory=list)

    def add(self, rid: str, name: str, created: str, cid: str | None = None, state: str = "pinned") -> None:
        self.pins.append({"requestid": rid, "status": state, "created": created,
                          "pin": {"cid": cid or f"bafy{rid}", "name": name}, "delegates": [], "info": {}})

    def __call__(self, request: httpx.Request) -> httpx.Response:
        params = request.url.params
        self.asked.append(params)
        if request.headers.get("authorization") != f"Bearer {SECRET}":
            return failure(401, "UNAUTHORIZED", "access token is missing or invalid")
        try:
            limit = int(params.get("limit", "10"))
        except ValueError:
            return failure(400, "BAD_REQUEST", "limit is not an integer")
        if not 1 <= limit <= 1000:
            return failure(400, "BAD_REQUEST", "limit must be between 1 and 1000")
        statuses = params.get("status", "pinned").split(",")
        name, match = params.get("name"), params.get("match", "exact")
        matching = [p for p in self.pins if p["status"] in statuses and self._named(p, name, match)
                    and ("cid" not in params or p["pin"]["cid"] == params["cid"])  # type: ignore[index]
                    and ("before" not in params or when(str(p["created"])) < when(params["before"]))
                    and ("after" not in params or when(str(p["created"])) > when(params["after"]))]
        matching.sort(key=lambda p: when(str(p["created"])), reverse=True)  # stable: ties keep insertion order
        return httpx.Response(200, json={"count": len(matching), "results": matching[:limit]})

    @staticmethod
    def _named(pin: dict[str, object], name: str | None, match: str) -> bool:
        if name is None:
            return True
        own = str(pin["pin"]["name"])  # type: ignore[index]
        return name in own if match == "partial" else name == own


def pinner(http_kwargs: dict[str, object]) -> PSAPinner:
    return PSAPinner.from_env({"BUNDLEKIT_PSA_URL": BASE, "PSA_TOKEN": SECRET}, **http_kwargs)  # type: ignore[arg-type]


def stamp(second: int) -> str:
    return f"2026-03-01T10:{second // 60:02d}:{second % 60:02d}.000Z"


def releases(count: int) -> FakeService:
    """A service holding requests ``r<i>`` named ``memory-<i>``, created ``i`` seconds after 10:00."""
    service = FakeService()
    for i in range(count):
        service.add(f"r{i}", f"memory-{i}", stamp(i))
    return service


@respx.mock
def test_list_reads_every_page_of_the_largest_size(http_kwargs: dict[str, object]) -> None:
    service = releases(2100)
    respx.get(f"{BASE}/pins").mock(side_effect=service)
    entries = pinner(http_kwargs).list("memory-")
    assert sorted(e.name or "" for e in entries) == sorted(f"memory-{i}" for i in range(2100))
    assert [e.name for e in entries[:2]] == ["memory-2099", "memory-2098"]  # newest first
    assert len(service.asked) == 3 and all(p["limit"] == "1000" for p in service.asked)
    assert "before" not in service.asked[0] and service.asked[1]["before"] == stamp(1101)


@pytest.mark.parametrize(("seconds", "befores"), [
    # A tie straddling the first page's end: the next page is asked before 10:00:08, not 10:00:05.
    ({"a": 9, "b": 8, "c": 5, "d": 5, "e": 4, "f": 3, "g": 2}, [None, stamp(8), stamp(5)]),
    # A tie filling the second page: asked before it, the count shows none was left at it.
    ({"a": 9, "c": 5, "d": 5, "e": 5, "g": 2}, [None, stamp(9), stamp(5)]),
], ids=["straddling", "filling-a-page"])
@respx.mock
def test_requests_sharing_a_boundary_timestamp_are_neither_lost_nor_duplicated(
        seconds: dict[str, int], befores: list[str | None], http_kwargs: dict[str, object],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(psa_module, "LIST_LIMIT", 3)
    service = FakeService()
    for rid, second in seconds.items():
        service.add(rid, f"memory-{rid}", stamp(second))
    respx.get(f"{BASE}/pins").mock(side_effect=service)
    entries = pinner(http_kwargs).list("memory-")
    assert [e.cid for e in entries] == [f"bafy{r}" for r in seconds]
    assert [p.get("before") for p in service.asked] == befores


@respx.mock
def test_one_entry_per_cid_keeps_the_newest_request_across_pages(
        http_kwargs: dict[str, object], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(psa_module, "LIST_LIMIT", 2)
    service = FakeService()
    service.add("new", "memory-2", stamp(30), cid="bafyshared")
    service.add("x", "memory-x", stamp(20))
    service.add("old", "memory-1", stamp(10), cid="bafyshared", state="failed")
    respx.get(f"{BASE}/pins").mock(side_effect=service)
    entries = pinner(http_kwargs).list("memory-")
    assert [(e.cid, e.name) for e in entries] == [("bafyshared", "memory-2"), ("bafyx", "memory-x")]


@respx.mock
def test_partial_name_matches_outside_the_prefix_are_left_out(http_kwargs: dict[str, object]) -> None:
    service = FakeService()
    service.add("a", "memory-1", stamp(1))
    service.add("b", "old-memory-1", stamp(2))
    respx.get(f"{BASE}/pins").mock(side_effect=service)
    assert [e.name for e in pinner(http_kwargs).list("memory-")] == ["memory-1"]
    assert service.asked[0]["match"] == "partial" and service.asked[0]["status"] == "queued,pinning,pinned,failed"


@respx.mock
def test_a_service_repeating_its_first_page_stops_with_an_error(
        http_kwargs: dict[str, object], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(psa_module, "LIST_LIMIT", 2)
    service = releases(5)
    first = service(httpx.Request("GET", f"{BASE}/pins?limit=2&status=pinned",
                                  headers={"authorization": f"Bearer {SECRET}"})).json()
    route = respx.get(f"{BASE}/pins").mock(return_value=httpx.Response(200, json=first))
    with pytest.raises(PinUnavailable, match="'before' ignored") as caught:
        pinner(http_kwargs).list("memory-")
    assert route.call_count == 2 and SECRET not in str(caught.value)


@respx.mock
def test_a_service_whose_pages_never_end_stops_at_the_page_bound(
        http_kwargs: dict[str, object], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(psa_module, "LIST_LIMIT", 2)
    monkeypatch.setattr(psa_module, "LIST_MAX_PAGES", 5)
    service = releases(40)  # more than 5 pages, and count says so
    route = respx.get(f"{BASE}/pins").mock(side_effect=service)
    with pytest.raises(PinUnavailable, match="more than 5 pages"):
        pinner(http_kwargs).list("memory-")
    assert route.call_count == 5


@respx.mock
def test_more_requests_at_one_timestamp_than_a_page_is_an_error_not_a_silent_loss(
        http_kwargs: dict[str, object], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(psa_module, "LIST_LIMIT", 2)
    service = FakeService()
    for rid in "abc":
        service.add(rid, f"memory-{rid}", stamp(7))
    respx.get(f"{BASE}/pins").mock(side_effect=service)
    with pytest.raises(PinUnavailable, match=f"3 requests were created at {stamp(7)}, more than a page of 2"):
        pinner(http_kwargs).list("memory-")


@respx.mock
def test_a_count_that_runs_ahead_of_the_pages_ends_at_the_boundary_requests(
        http_kwargs: dict[str, object], monkeypatch: pytest.MonkeyPatch) -> None:
    """A lenient service whose ``count`` ignores ``before``: the last page holds only requests read already."""
    monkeypatch.setattr(psa_module, "LIST_LIMIT", 2)
    service = releases(3)

    def total_count(request: httpx.Request) -> httpx.Response:
        answer = service(request).json()
        return httpx.Response(200, json={"count": len(service.pins), "results": answer["results"]})

    respx.get(f"{BASE}/pins").mock(side_effect=total_count)
    assert sorted(e.name or "" for e in pinner(http_kwargs).list("memory-")) == ["memory-0", "memory-1", "memory-2"]


@respx.mock
def test_an_answer_without_count_ends_the_listing(http_kwargs: dict[str, object]) -> None:
    page = releases(2)(httpx.Request("GET", f"{BASE}/pins?limit=1000&status=pinned",
                                      headers={"authorization": f"Bearer {SECRET}"})).json()["results"]
    route = respx.get(f"{BASE}/pins").mock(return_value=httpx.Response(200, json={"results": page}))
    assert [e.name for e in pinner(http_kwargs).list("memory-")] == ["memory-1", "memory-0"]
    assert route.call_count == 1


@respx.mock
def test_a_request_without_created_cannot_be_paged_past(
        http_kwargs: dict[str, object], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(psa_module, "LIST_LIMIT", 1)
    respx.get(f"{BASE}/pins").mock(return_value=httpx.Response(200, json={"count": 2, "results": [
        {"requestid": "a", "status": "pinned", "pin": {"cid": "bafya", "name": "memory-a"}, "delegates": []}]}))
    with pytest.raises(PinUnavailable, match="request a has no RFC 3339 'created'"):
        pinner(http_kwargs).list("memory-")


@respx.mock
def test_unpin_deletes_the_requests_of_every_page_of_the_cid_listing(
        car: Car, http_kwargs: dict[str, object], monkeypatch: pytest.MonkeyPatch) -> None:
    """More requests for the CID than the spec's default page of 10, read 5 to a page."""
    monkeypatch.setattr(psa_module, "LIST_LIMIT", 5)
    service = FakeService()
    mine = [f"r{i}" for i in range(12)]
    for i, rid in enumerate(mine):
        service.add(rid, "memory-1", stamp(i), cid=car.root_text, state="failed" if i == 0 else "pinned")
    service.add("other", "memory-2", stamp(30))
    respx.get(f"{BASE}/pins").mock(side_effect=service)
    deletes = {rid: respx.delete(f"{BASE}/pins/{rid}").mock(return_value=httpx.Response(202))
               for rid in [*mine, "other"]}
    pinner(http_kwargs).unpin(car.root)
    assert {rid: route.call_count for rid, route in deletes.items()} == {**dict.fromkeys(mine, 1), "other": 0}
    assert all(p["cid"] == car.root_text for p in service.asked)


@respx.mock
def test_a_401_failure_body_while_listing_is_an_auth_error(http_kwargs: dict[str, object]) -> None:
    respx.get(f"{BASE}/pins").mock(side_effect=FakeService())
    bad = PSAPinner.from_env({"BUNDLEKIT_PSA_URL": BASE, "PSA_TOKEN": "wrong"}, **http_kwargs)  # type: ignore[arg-type]
    with pytest.raises(PinAuthError) as caught:
        bad.list("memory-")
    assert caught.value.exit_code == 4


@respx.mock
def test_the_unpin_command_exits_4_on_a_listing_that_never_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BUNDLEKIT_PSA_URL", BASE)
    monkeypatch.setenv("PSA_TOKEN", SECRET)
    looping = {"count": 5, "results": [
        {"requestid": "a", "status": "pinned", "created": stamp(2), "pin": {"cid": "bafya", "name": "memory-a"},
         "delegates": []},
        {"requestid": "b", "status": "pinned", "created": stamp(1), "pin": {"cid": "bafyb", "name": "memory-b"},
         "delegates": []}]}
    respx.get(f"{BASE}/pins").mock(return_value=httpx.Response(200, json=looping))
    result = CliRunner().invoke(cli, ["unpin", "--pinner", "psa", "--name-prefix", "memory-", "--keep", "1"])
    assert result.exit_code == 4 and "'before' ignored" in result.stderr and result.stdout == ""
    assert "Traceback" not in result.output and SECRET not in result.output


@pytest.mark.parametrize("results", [5, True, 1.5], ids=["number", "boolean", "float"])
@respx.mock
def test_results_that_are_not_an_array_are_a_clear_error_not_a_traceback(
    http_kwargs: dict[str, object], results: object
) -> None:
    # PinResults.results is an array of PinStatus in the spec; a service answering otherwise does not follow it.
    respx.get(f"{BASE}/pins").mock(return_value=httpx.Response(200, json={"count": 1, "results": results}))
    with pytest.raises(PinUnavailable, match=r"^pinning service: list pins: https://psa\.test/api answered "
                       r"(int|bool|float) 'results' where the Pinning Service API has an array of pin statuses"):
        pinner(http_kwargs).list()
    with pytest.raises(PinUnavailable, match="an array of pin statuses"):
        pinner(http_kwargs).unpin(bytes.fromhex("01551220" + "00" * 32))


@respx.mock
def test_requests_apart_by_less_than_a_microsecond_page_in_order(
        http_kwargs: dict[str, object], monkeypatch: pytest.MonkeyPatch) -> None:
    # Go's RFC3339Nano: these five fall within one microsecond, which Python's datetime cannot tell apart.
    monkeypatch.setattr(psa_module, "LIST_LIMIT", 2)
    service = FakeService()
    for rid, nanos in (("e", "000000900"), ("d", "0000007"), ("c", "000000500"), ("b", "0000003"), ("a", "000000001")):
        service.add(rid, f"memory-{rid}", f"2026-03-01T10:00:00.{nanos}Z")
    respx.get(f"{BASE}/pins").mock(side_effect=service)
    entries = pinner(http_kwargs).list("memory-")
    assert [e.cid for e in entries] == ["bafye", "bafyd", "bafyc", "bafyb", "bafya"]
    # Each page is asked before the second-oldest of the one before (ties at the oldest are not skipped).
    assert [p.get("before") for p in service.asked] == [
        None, "2026-03-01T10:00:00.000000900Z", "2026-03-01T10:00:00.0000007Z", "2026-03-01T10:00:00.000000500Z"]


def test_created_timestamps_are_read_to_the_nanosecond() -> None:
    parse = psa_module._parse_created
    assert parse("1970-01-01T00:00:01.000000001Z") == 1_000_000_001
    assert parse("2026-03-01T10:00:00.0000007Z") == parse("2026-03-01T10:00:00.000000700Z")
    assert parse("2026-03-01T11:00:00.5+01:00") == parse("2026-03-01T10:00:00.500Z")
    assert parse("2026-03-01T10:00:00") == parse("2026-03-01T10:00:00Z")  # no zone: UTC
    assert parse("2026-03-01T10:00:00.1234567891Z") == parse("2026-03-01T10:00:00.123456789Z")  # past 9: cut
    for bad in ("yesterday", "", None, 5, "2026-13-01T00:00:00Z"):
        assert parse(bad) is None


def test_a_fraction_after_a_comma_is_kept_to_the_nanosecond() -> None:
    # ISO 8601's decimal comma, which datetime.fromisoformat also reads: its digits were once cut to the second.
    parse = psa_module._parse_created
    assert parse("2026-03-01T10:00:00,5Z") == parse("2026-03-01T10:00:00.5Z") != parse("2026-03-01T10:00:00Z")
    assert parse("2026-03-01T10:00:00,000000007Z") == parse("2026-03-01T10:00:00.000000007Z")
