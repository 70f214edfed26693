"""Pinata v3: multipart CAR upload, dedupe by CID, TUS resumable upload, check, faults."""

from __future__ import annotations

import base64
from dataclasses import replace

import httpx
import pytest
import respx

from bundlekit.errors import CIDMismatch, PinAuthError, PinRateLimited, PinUnavailable
from bundlekit.net.http import RetryPolicy
from bundlekit.pinning.http import UPLOAD_OPTIONS
from bundlekit.pinning.protocol import PINNED
from pinners.pinata import PinataPinner

from .conftest import SECRET, Car, Sleeps

UP = "https://uploads.pinata.test"
API = "https://api.pinata.test"


def pinata(http_kwargs: dict[str, object], **kw: object) -> PinataPinner:
    env = {"PINATA_JWT": SECRET, "BUNDLEKIT_PINATA_UPLOAD_URL": UP, "BUNDLEKIT_PINATA_API_URL": API}
    pinner = PinataPinner.from_env(env, **http_kwargs)
    for k, v in kw.items():
        setattr(pinner, k, v)
    return pinner


def no_files() -> httpx.Response:
    return httpx.Response(200, json={"data": {"files": [], "next_page_token": ""}})


def uploaded(cid: str) -> httpx.Response:
    return httpx.Response(200, json={"data": {"id": "f-1", "cid": cid, "name": "x", "network": "public"}})


@respx.mock
def test_upload_is_multipart_with_network_public_and_car_true(car: Car, http_kwargs: dict[str, object]) -> None:
    listing = respx.get(f"{API}/v3/files/public").mock(return_value=no_files())
    upload = respx.post(f"{UP}/v3/files").mock(return_value=uploaded(car.root_text))
    with car.open() as fh:
        result = pinata(http_kwargs).pin(fh, car.root, name="release", size=car.size)
    assert (result.cid, result.status) == (car.root_text, PINNED)
    assert listing.calls[0].request.url.params["cid"] == car.root_text
    request = upload.calls.last.request
    assert request.headers["authorization"] == f"Bearer {SECRET}"
    body = request.content
    assert b'name="network"\r\n\r\npublic' in body
    assert b'name="car"\r\n\r\ntrue' in body
    assert b'name="name"\r\n\r\nrelease' in body
    assert b'name="file"; filename="release.car"' in body
    assert car.path.read_bytes() in body


@respx.mock
def test_an_existing_file_with_the_root_is_reused(car: Car, http_kwargs: dict[str, object]) -> None:
    respx.get(f"{API}/v3/files/public").mock(return_value=httpx.Response(
        200, json={"data": {"files": [{"id": "f-0", "cid": car.root_text}], "next_page_token": ""}}))
    upload = respx.post(f"{UP}/v3/files")
    with car.open() as fh:
        assert pinata(http_kwargs).pin(fh, car.root).status == PINNED
    assert upload.call_count == 0


@respx.mock
def test_a_different_cid_in_the_answer_is_a_mismatch(car: Car, other_car: Car, http_kwargs: dict[str, object]) -> None:
    respx.get(f"{API}/v3/files/public").mock(return_value=no_files())
    respx.post(f"{UP}/v3/files").mock(return_value=uploaded(other_car.root_text))
    with car.open() as fh, pytest.raises(CIDMismatch, match=other_car.root_text):
        pinata(http_kwargs).pin(fh, car.root)


@respx.mock
def test_429_then_success_honours_retry_after(car: Car, http_kwargs: dict[str, object], sleeps: Sleeps) -> None:
    respx.get(f"{API}/v3/files/public").mock(return_value=no_files())
    upload = respx.post(f"{UP}/v3/files").mock(side_effect=[
        httpx.Response(429, headers={"Retry-After": "11"}), uploaded(car.root_text)])
    with car.open() as fh:
        pinata(http_kwargs).pin(fh, car.root)
    assert sleeps.calls == [11.0]
    assert car.path.read_bytes() in upload.calls[1].request.content


@respx.mock
def test_5xx_until_giving_up_raises_unavailable(car: Car, sleeps: Sleeps) -> None:
    respx.get(f"{API}/v3/files/public").mock(return_value=no_files())
    upload = respx.post(f"{UP}/v3/files").mock(return_value=httpx.Response(503))
    pinner = pinata({"options": replace(UPLOAD_OPTIONS, sleep=sleeps, jitter=lambda: 0.0, retry=RetryPolicy(attempts=3))})
    with car.open() as fh, pytest.raises(PinUnavailable):
        pinner.pin(fh, car.root)
    assert upload.call_count == 3 and len(sleeps.calls) == 2


@respx.mock
def test_401_is_not_retried(car: Car, http_kwargs: dict[str, object]) -> None:
    listing = respx.get(f"{API}/v3/files/public").mock(return_value=httpx.Response(401))
    with car.open() as fh, pytest.raises(PinAuthError) as info:
        pinata(http_kwargs).pin(fh, car.root)
    assert listing.call_count == 1
    assert SECRET not in str(info.value)


@respx.mock
def test_a_timed_out_upload_is_not_sent_again_and_a_landed_file_is_used(car: Car, http_kwargs: dict[str, object]) -> None:
    # issue 13: a re-sent POST can store a duplicate file; the lost attempt is looked up instead.
    respx.get(f"{API}/v3/files/public").mock(side_effect=[no_files(), no_files(), httpx.Response(
        200, json={"data": {"files": [{"id": "f-1", "cid": car.root_text}], "next_page_token": ""}})])
    upload = respx.post(f"{UP}/v3/files").mock(side_effect=[httpx.WriteTimeout("slow"), uploaded(car.root_text)])
    with car.open() as fh:
        assert pinata(http_kwargs).pin(fh, car.root).status == PINNED
    assert upload.call_count == 1


@respx.mock
def test_a_timed_out_upload_not_listed_yet_fails_without_a_second_post(car: Car, http_kwargs: dict[str, object]) -> None:
    respx.get(f"{API}/v3/files/public").mock(return_value=no_files())
    upload = respx.post(f"{UP}/v3/files").mock(side_effect=[httpx.ReadTimeout("slow"), uploaded(car.root_text)])
    with car.open() as fh, pytest.raises(PinUnavailable, match="not sent again"):
        pinata(http_kwargs).pin(fh, car.root)
    assert upload.call_count == 1


@respx.mock
def test_large_cars_use_tus_and_resume_from_head_after_a_failed_chunk(
    car: Car, http_kwargs: dict[str, object]
) -> None:
    respx.get(f"{API}/v3/files/public", params={"cidPending": "true"}).mock(return_value=no_files())
    create = respx.post(f"{UP}/v3/files").mock(return_value=httpx.Response(
        201, headers={"Location": f"{UP}/v3/files/upl-42", "Tus-Resumable": "1.0.0"}))
    data = car.path.read_bytes()
    received = bytearray()
    failed = {"once": False}

    def patch(request: httpx.Request) -> httpx.Response:
        offset = int(request.headers["upload-offset"])
        assert offset == len(received)
        if offset > 0 and not failed["once"]:
            failed["once"] = True
            received.extend(request.content[:5])  # the server kept part of the chunk
            return httpx.Response(503)
        received.extend(request.content)
        return httpx.Response(204, headers={"Upload-Offset": str(len(received))})

    def patch_with_cid(request: httpx.Request) -> httpx.Response:
        # The SDK (file.ts) reads the CID from the final PATCH's upload-cid header.
        answer = patch(request)
        if answer.status_code == 204 and len(received) == len(data):
            answer.headers["upload-cid"] = car.root_text
        return answer

    patches = respx.patch(f"{UP}/v3/files/upl-42").mock(side_effect=patch_with_cid)
    head = respx.head(f"{UP}/v3/files/upl-42").mock(
        side_effect=lambda request: httpx.Response(200, headers={"Upload-Offset": str(len(received))}))
    record = respx.get(f"{API}/v3/files/public", params={"cid": car.root_text}).mock(
        side_effect=[no_files(), httpx.Response(200, json={"data": {"files": [
            {"id": "f-42", "cid": car.root_text, "name": "big"}], "next_page_token": ""}})])
    with car.open() as fh:
        result = pinata(http_kwargs, tus_threshold=10, tus_chunk=40).pin(fh, car.root, name="big", size=car.size)
    assert result.status == PINNED
    assert bytes(received) == data
    created = create.calls.last.request.headers
    assert created["upload-length"] == str(car.size) and created["tus-resumable"] == "1.0.0"
    meta = dict(item.split(" ") for item in created["upload-metadata"].split(","))
    assert base64.b64decode(meta["network"]) == b"public" and base64.b64decode(meta["car"]) == b"true"
    assert base64.b64decode(meta["filename"]) == b"big"
    first = patches.calls[0].request.headers
    assert first["content-type"] == "application/offset+octet-stream" and first["tus-resumable"] == "1.0.0"
    assert head.call_count == 1 and record.call_count == 2  # the existing-pin check, then the lookup by upload-cid


@respx.mock
def test_tus_gives_up_after_repeated_rate_limits(car: Car, http_kwargs: dict[str, object]) -> None:
    respx.get(f"{API}/v3/files/public").mock(return_value=no_files())
    respx.post(f"{UP}/v3/files").mock(return_value=httpx.Response(201, headers={"Location": f"{UP}/v3/files/u"}))
    respx.patch(f"{UP}/v3/files/u").mock(return_value=httpx.Response(429))
    respx.head(f"{UP}/v3/files/u").mock(return_value=httpx.Response(200, headers={"Upload-Offset": "0"}))
    with car.open() as fh, pytest.raises(PinRateLimited):
        pinata(http_kwargs, tus_threshold=10, tus_chunk=40).pin(fh, car.root, size=car.size)


@respx.mock
def test_check_calls_test_authentication(http_kwargs: dict[str, object]) -> None:
    route = respx.get(f"{API}/data/testAuthentication").mock(return_value=httpx.Response(200, json={"message": "ok"}))
    pinata(http_kwargs).check()
    assert route.calls.last.request.headers["authorization"] == f"Bearer {SECRET}"


@respx.mock
def test_unpin_deletes_the_files_holding_the_cid(car: Car, http_kwargs: dict[str, object]) -> None:
    respx.get(f"{API}/v3/files/public").mock(return_value=httpx.Response(
        200, json={"data": {"files": [{"id": "f-9", "cid": car.root_text}]}}))
    delete = respx.delete(f"{API}/v3/files/public/f-9").mock(return_value=httpx.Response(200, json={"data": None}))
    pinata(http_kwargs).unpin(car.root)
    assert delete.call_count == 1
