"""Pinata listing: every page by ``pageToken``, and listings that would never end.

The fake answers ``GET /v3/files/public`` as Pinata documents it: docs.pinata.cloud
``api-reference/endpoint/list-files`` (``limit``, ``pageToken``, ``cid``, ``name``; the answer
``{"data": {"files": [...], "next_page_token": ...}}``) and the official SDK PinataCloud/pinata
at 8c033da81d401149aff8693a202b914f91f5d612: ``src/core/functions/files/list.ts`` (the query
parameters; 401/403 are authentication errors) and ``src/core/classes/files/FilterFiles.ts``
(its iterator passes the last ``next_page_token`` as ``pageToken`` until the token is empty).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import httpx
import pytest
import respx

from bundlekit.errors import PinAuthError, PinUnavailable
from pinners import pinata as pinata_module
from pinners.pinata import PinataPinner

from .conftest import SECRET, Car

API = "https://api.pinata.test"


def pinata(http_kwargs: dict[str, object], jwt: str = SECRET) -> PinataPinner:
    return PinataPinner.from_env({"PINATA_JWT": jwt, "BUNDLEKIT_PINATA_API_URL": API}, **http_kwargs)  # type: ignore[arg-type]


@dataclass
class FakeFiles:
    """Pinata's public files, newest first, answered a page at a time with an opaque ``next_page_token``."""

    files: list[dict[str, object]] = field(default_factory=list)
    asked: list[httpx.QueryParams] = field(default_factory=list)

    def __call__(self, request: httpx.Request) -> httpx.Response:
        params = request.url.params
        self.asked.append(params)
        if request.headers.get("authorization") != f"Bearer {SECRET}":
            return httpx.Response(401, text="Unauthorized")
        limit = int(params.get("limit", "10"))
        chosen = [f for f in self.files if "cid" not in params or f["cid"] == params["cid"]]
        start = int(params.get("pageToken", "0") or "0")
        page = chosen[start:start + limit]
        token = str(start + limit) if start + limit < len(chosen) else ""
        return httpx.Response(200, json={"data": {"files": page, "next_page_token": token}})


def test_list_reads_every_page_and_keeps_the_names_under_the_prefix(
        http_kwargs: dict[str, object], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pinata_module, "PAGE_LIMIT", 2)
    fake = FakeFiles([{"id": f"f{i}", "cid": f"bafy{i}", "name": f"memory-{i}" if i % 3 else f"other-{i}",
                       "created_at": f"2026-01-0{9 - i}T00:00:00Z"} for i in range(7)])
    with respx.mock:
        respx.get(f"{API}/v3/files/public").mock(side_effect=fake)
        entries = pinata(http_kwargs).list("memory-")
    assert [e.name for e in entries] == ["memory-1", "memory-2", "memory-4", "memory-5"]
    assert [p.get("pageToken") for p in fake.asked] == [None, "2", "4", "6"]
    assert all(p["limit"] == "2" for p in fake.asked)


def test_a_page_token_that_comes_back_stops_the_listing_with_an_error(http_kwargs: dict[str, object]) -> None:
    looping = httpx.Response(200, json={"data": {"files": [{"id": "a", "cid": "bafya", "name": "memory-a"}],
                                                 "next_page_token": "again"}})
    with respx.mock:
        route = respx.get(f"{API}/v3/files/public").mock(return_value=looping)
        with pytest.raises(PinUnavailable, match="'again' came back a second time") as caught:
            pinata(http_kwargs).list("memory-")
    assert route.call_count == 2 and caught.value.exit_code == 4


def test_pages_that_never_end_stop_at_the_page_bound(
        http_kwargs: dict[str, object], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pinata_module, "PAGE_LIMIT", 1)
    monkeypatch.setattr(pinata_module, "MAX_PAGES", 4)
    fake = FakeFiles([{"id": f"f{i}", "cid": f"bafy{i}", "name": f"memory-{i}"} for i in range(10)])
    with respx.mock:
        respx.get(f"{API}/v3/files/public").mock(side_effect=fake)
        with pytest.raises(PinUnavailable, match="more than 4 pages of 1 files"):
            pinata(http_kwargs).list("memory-")
    assert len(fake.asked) == 4


def test_unpin_deletes_the_files_of_every_page(
        car: Car, http_kwargs: dict[str, object], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pinata_module, "PAGE_LIMIT", 2)
    fake = FakeFiles([{"id": f"f{i}", "cid": car.root_text, "name": "rel"} for i in range(3)])
    with respx.mock:
        respx.get(f"{API}/v3/files/public").mock(side_effect=fake)
        deletes = [respx.delete(f"{API}/v3/files/public/f{i}").mock(return_value=httpx.Response(200, json={"data": None}))
                   for i in range(3)]
        pinata(http_kwargs).unpin(car.root)
    assert [d.call_count for d in deletes] == [1, 1, 1]
    assert all(p["cid"] == car.root_text for p in fake.asked)


def test_a_401_while_listing_is_an_auth_error(http_kwargs: dict[str, object]) -> None:
    with respx.mock:
        respx.get(f"{API}/v3/files/public").mock(side_effect=FakeFiles())
        with pytest.raises(PinAuthError):
            pinata(http_kwargs, jwt="wrong").list("memory-")
