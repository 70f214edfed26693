"""Pinata requests as the official SDK sends them, and Pinata's asynchronous CAR processing (issue 13).

Source: PinataCloud/pinata at 8c033da81d401149aff8693a202b914f91f5d612:
``src/core/functions/uploads/file.ts`` (multipart fields ``network``, ``name``, ``group_id``,
``keyvalues`` as JSON, ``car``; the switch to TUS above 94371840 bytes; the final PATCH's
``upload-cid`` header) and ``src/core/functions/files/list.ts`` (``cid``, ``name``, ``cidPending``,
``limit``, ``pageToken``); ``src/core/types/files.ts`` (a file's ``cid`` may be ``"pending"``).
"""

from __future__ import annotations

import httpx
import respx

from bundlekit.pinning.protocol import PINNED, PINNING
from pinners.pinata import TUS_THRESHOLD, PinataPinner

from .conftest import SECRET, Car

UP = "https://uploads.pinata.test"
API = "https://api.pinata.test"


def pinata(http_kwargs: dict[str, object], **env: str) -> PinataPinner:
    base = {"PINATA_JWT": SECRET, "BUNDLEKIT_PINATA_UPLOAD_URL": UP, "BUNDLEKIT_PINATA_API_URL": API}
    return PinataPinner.from_env({**base, **env}, **http_kwargs)


def files(*items: dict[str, object], token: str = "") -> httpx.Response:
    return httpx.Response(200, json={"data": {"files": list(items), "next_page_token": token}})


def test_the_switch_to_resumable_uploads_is_the_sdks_90_mib() -> None:
    assert TUS_THRESHOLD == 94_371_840


@respx.mock
def test_group_and_keyvalues_go_as_the_sdks_multipart_fields(car: Car, http_kwargs: dict[str, object]) -> None:
    respx.get(f"{API}/v3/files/public").mock(return_value=files())
    upload = respx.post(f"{UP}/v3/files").mock(return_value=httpx.Response(
        200, json={"data": {"id": "f-1", "cid": car.root_text, "is_duplicate": False}}))
    pinner = pinata(http_kwargs)
    pinner.describe(group="grp-7", keyvalues={"release": "v1", "repo": "me/x"})
    with car.open() as fh:
        assert pinner.pin(fh, car.root, name="memory-42").status == PINNED
    body = upload.calls.last.request.content
    assert b'name="group_id"\r\n\r\ngrp-7' in body
    assert b'name="keyvalues"\r\n\r\n{"release":"v1","repo":"me/x"}' in body
    assert b'name="name"\r\n\r\nmemory-42' in body and b'name="network"\r\n\r\npublic' in body


@respx.mock
def test_a_duplicate_answer_is_the_existing_file(car: Car, http_kwargs: dict[str, object]) -> None:
    respx.get(f"{API}/v3/files/public").mock(return_value=files())
    upload = respx.post(f"{UP}/v3/files").mock(return_value=httpx.Response(
        200, json={"data": {"id": "f-0", "cid": car.root_text, "is_duplicate": True}}))
    with car.open() as fh:
        result = pinata(http_kwargs).pin(fh, car.root)
    assert (result.status, result.cid) == (PINNED, car.root_text) and upload.call_count == 1


@respx.mock
def test_a_pending_cid_is_polled_until_it_resolves(car: Car, http_kwargs: dict[str, object]) -> None:
    respx.get(f"{API}/v3/files/public").mock(return_value=files())
    respx.post(f"{UP}/v3/files").mock(return_value=httpx.Response(
        200, json={"data": {"id": "f-5", "cid": "pending", "name": "rel"}}))
    record = respx.get(f"{API}/v3/files/public/f-5").mock(side_effect=[
        httpx.Response(200, json={"data": {"id": "f-5", "cid": "pending"}}),
        httpx.Response(200, json={"data": {"id": "f-5", "cid": car.root_text}}),
    ])
    with car.open() as fh:
        result = pinata(http_kwargs).pin(fh, car.root, name="rel")
    assert (result.status, result.cid) == (PINNED, car.root_text) and record.call_count == 2


@respx.mock
def test_a_cid_still_pending_at_the_deadline_is_not_durable(car: Car, http_kwargs: dict[str, object]) -> None:
    respx.get(f"{API}/v3/files/public").mock(return_value=files())
    respx.post(f"{UP}/v3/files").mock(return_value=httpx.Response(
        200, json={"data": {"id": "f-5", "cid": "pending"}}))
    respx.get(f"{API}/v3/files/public/f-5").mock(return_value=httpx.Response(
        200, json={"data": {"id": "f-5", "cid": "pending"}}))
    with car.open() as fh:
        result = pinata(http_kwargs, BUNDLEKIT_PINATA_DEADLINE="0").pin(fh, car.root)
    assert result.status == PINNING and not result.durable and "still processing" in (result.error or "")


@respx.mock
def test_a_rerun_awaits_our_pending_file_instead_of_uploading_again(car: Car, http_kwargs: dict[str, object]) -> None:
    by_cid = respx.get(f"{API}/v3/files/public", params={"cid": car.root_text}).mock(return_value=files())
    pending = respx.get(f"{API}/v3/files/public", params={"cidPending": "true"}).mock(
        return_value=files({"id": "f-8", "cid": "pending", "name": "rel"}))
    respx.get(f"{API}/v3/files/public/f-8").mock(return_value=httpx.Response(
        200, json={"data": {"id": "f-8", "cid": car.root_text}}))
    upload = respx.post(f"{UP}/v3/files")
    with car.open() as fh:
        assert pinata(http_kwargs).pin(fh, car.root, name="rel").status == PINNED
    assert upload.call_count == 0 and by_cid.call_count == 1
    assert pending.calls.last.request.url.params["name"] == "rel"


@respx.mock
def test_list_filters_by_name_prefix_itself_and_follows_pages(http_kwargs: dict[str, object]) -> None:
    route = respx.get(f"{API}/v3/files/public").mock(side_effect=[
        files({"id": "a", "cid": "bafy-a", "name": "memory-1", "created_at": "2026-01-01T00:00:00Z"}, token="t2"),
        files({"id": "b", "cid": "bafy-b", "name": "memory-2"}, {"id": "c", "cid": "bafy-c", "name": "other-memory-"}),
    ])
    entries = pinata(http_kwargs).list(name_prefix="memory-")
    assert [(e.cid, e.name) for e in entries] == [("bafy-a", "memory-1"), ("bafy-b", "memory-2")]
    assert entries[0].created == "2026-01-01T00:00:00Z"
    # Pinata does not document whether its name filter is exact or partial: none is sent.
    assert "name" not in route.calls[0].request.url.params
    assert route.calls[1].request.url.params["pageToken"] == "t2"
