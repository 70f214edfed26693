"""kubo RPC: dag/import with pin-roots, NDJSON answers, auth, errors."""

from __future__ import annotations

import json

import httpx
import pytest
import respx

from bundlekit.errors import CIDMismatch, PinAuthError, PinnerNotConfigured, PinRejected
from bundlekit.pinning.protocol import MISSING, PINNED
from pinners.kubo import KuboPinner

from .conftest import SECRET, Car

BASE = "http://kubo.test:5001"


def ndjson(*items: object) -> str:
    return "\n".join(json.dumps(i) for i in items) + "\n"


def kubo(http_kwargs: dict[str, object], **env: str) -> KuboPinner:
    return KuboPinner.from_env({"BUNDLEKIT_KUBO_URL": BASE, **env}, **http_kwargs)


@respx.mock
def test_pin_posts_the_car_as_multipart_with_pin_roots(car: Car, http_kwargs: dict[str, object]) -> None:
    route = respx.post(f"{BASE}/api/v0/dag/import").mock(return_value=httpx.Response(
        200, text=ndjson({"Root": {"Cid": {"/": car.root_text}, "PinErrorMsg": ""}}, {"Stats": {"BlockCount": 3}})
    ))
    with car.open() as fh:
        result = kubo(http_kwargs).pin(fh, car.root)
    assert (result.cid, result.status) == (car.root_text, PINNED)
    request = route.calls.last.request
    assert request.url.params["pin-roots"] == "true"
    assert request.headers["content-type"].startswith("multipart/form-data")
    assert b'name="file"' in request.content and car.path.read_bytes() in request.content


@respx.mock
def test_bearer_token_is_sent(car: Car, http_kwargs: dict[str, object]) -> None:
    route = respx.post(f"{BASE}/api/v0/dag/import").mock(return_value=httpx.Response(
        200, text=ndjson({"Root": {"Cid": {"/": car.root_text}, "PinErrorMsg": ""}})))
    with car.open() as fh:
        kubo(http_kwargs, BUNDLEKIT_KUBO_TOKEN=SECRET).pin(fh, car.root)
    assert route.calls.last.request.headers["authorization"] == f"Bearer {SECRET}"


@respx.mock
def test_basic_auth_is_sent(car: Car, http_kwargs: dict[str, object]) -> None:
    route = respx.post(f"{BASE}/api/v0/version").mock(return_value=httpx.Response(200, json={"Version": "0.30"}))
    kubo(http_kwargs, BUNDLEKIT_KUBO_BASIC_AUTH=f"ci:{SECRET}").check()
    assert route.calls.last.request.headers["authorization"].startswith("Basic ")


@respx.mock
def test_a_pin_error_in_the_answer_is_rejected(car: Car, http_kwargs: dict[str, object]) -> None:
    respx.post(f"{BASE}/api/v0/dag/import").mock(return_value=httpx.Response(
        200, text=ndjson({"Root": {"Cid": {"/": car.root_text}, "PinErrorMsg": "blockstore full"}})))
    with car.open() as fh, pytest.raises(PinRejected, match="blockstore full"):
        kubo(http_kwargs).pin(fh, car.root)


@respx.mock
def test_a_different_root_is_a_cid_mismatch(car: Car, other_car: Car, http_kwargs: dict[str, object]) -> None:
    respx.post(f"{BASE}/api/v0/dag/import").mock(return_value=httpx.Response(
        200, text=ndjson({"Root": {"Cid": {"/": other_car.root_text}, "PinErrorMsg": ""}})))
    with car.open() as fh, pytest.raises(CIDMismatch):
        kubo(http_kwargs).pin(fh, car.root)


@respx.mock
def test_401_from_a_proxy_is_an_auth_error_not_retried(car: Car, http_kwargs: dict[str, object]) -> None:
    route = respx.post(f"{BASE}/api/v0/dag/import").mock(return_value=httpx.Response(401))
    with car.open() as fh, pytest.raises(PinAuthError):
        kubo(http_kwargs, BUNDLEKIT_KUBO_TOKEN=SECRET).pin(fh, car.root)
    assert route.call_count == 1


@respx.mock
def test_a_retried_upload_resends_the_whole_car(car: Car, http_kwargs: dict[str, object]) -> None:
    route = respx.post(f"{BASE}/api/v0/dag/import").mock(side_effect=[
        httpx.Response(503),
        httpx.Response(200, text=ndjson({"Root": {"Cid": {"/": car.root_text}, "PinErrorMsg": ""}})),
    ])
    with car.open() as fh:
        kubo(http_kwargs).pin(fh, car.root)
    assert car.path.read_bytes() in route.calls[1].request.content


@respx.mock
def test_status_reads_pin_ls_and_reports_missing(car: Car, http_kwargs: dict[str, object]) -> None:
    respx.post(f"{BASE}/api/v0/pin/ls").mock(side_effect=[
        httpx.Response(200, json={"Keys": {car.root_text: {"Type": "recursive"}}}),
        httpx.Response(500, json={"Message": f"path '{car.root_text}' is not pinned", "Code": 0, "Type": "error"}),
    ])
    pinner = kubo(http_kwargs)
    assert pinner.status(car.root).status == PINNED
    assert pinner.status(car.root).status == MISSING


@pytest.mark.parametrize("var", ["BUNDLEKIT_KUBO_TOKEN", "BUNDLEKIT_KUBO_BASIC_AUTH"])
def test_a_credential_holding_a_line_break_is_a_configuration_error_naming_it(
    var: str, http_kwargs: dict[str, object]
) -> None:
    with pytest.raises(PinnerNotConfigured, match=var) as info:
        kubo(http_kwargs, **{var: f"user:{SECRET}\n"})
    assert SECRET not in str(info.value)


@respx.mock
def test_a_blank_token_counts_as_unset(http_kwargs: dict[str, object]) -> None:
    route = respx.post(f"{BASE}/api/v0/version").mock(return_value=httpx.Response(200, json={"Version": "0.30.0"}))
    kubo(http_kwargs, BUNDLEKIT_KUBO_TOKEN="  ").check()
    assert "authorization" not in route.calls.last.request.headers
