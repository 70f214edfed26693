"""kubo RPC: dag/import with pin-roots, NDJSON answers, auth, errors."""

from __future__ import annotations

import json

import httpx
import pytest
import respx

from bundlekit.errors import CIDMismatch, PinAuthError, PinnerNotConfigured, PinRejected, PinUnavailable
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


# issue 13. Sources: ipfs/kubo core/commands/dag/dag.go + core/commands/cmdutils/utils.go
# (dag import's allow-big-block option; SoftBlockLimit), ipfs/go-ipfs-cmds http/responseemitter.go
# (a command error is HTTP 500 with {"Message", "Code", "Type": "error"}), core/commands/id.go (Addresses).


@respx.mock
def test_dag_import_allows_big_blocks(car: Car, http_kwargs: dict[str, object]) -> None:
    route = respx.post(f"{BASE}/api/v0/dag/import").mock(return_value=httpx.Response(
        200, text=ndjson({"Root": {"Cid": {"/": car.root_text}, "PinErrorMsg": ""}})))
    with car.open() as fh:
        kubo(http_kwargs).pin(fh, car.root)
    assert route.calls.last.request.url.params["allow-big-block"] == "true"


@respx.mock
def test_a_command_error_500_is_rejected_at_once_not_retried(car: Car, http_kwargs: dict[str, object]) -> None:
    route = respx.post(f"{BASE}/api/v0/dag/import").mock(return_value=httpx.Response(
        500, json={"Message": "produced block is over 1MiB", "Code": 0, "Type": "error"}))
    with car.open() as fh, pytest.raises(PinRejected, match="over 1MiB"):
        kubo(http_kwargs).pin(fh, car.root)
    assert route.call_count == 1


@respx.mock
def test_a_500_without_kubos_error_body_is_retried_as_an_outage(car: Car, http_kwargs: dict[str, object]) -> None:
    route = respx.post(f"{BASE}/api/v0/dag/import").mock(side_effect=[
        httpx.Response(500, text="<html>bad gateway</html>"),
        httpx.Response(200, text=ndjson({"Root": {"Cid": {"/": car.root_text}, "PinErrorMsg": ""}})),
    ])
    with car.open() as fh:
        assert kubo(http_kwargs).pin(fh, car.root).status == PINNED
    assert route.call_count == 2


def test_kubo_counts_as_configured_only_with_its_url() -> None:
    assert not KuboPinner.is_configured({})
    assert KuboPinner.is_configured({"BUNDLEKIT_KUBO_URL": BASE})


@respx.mock
def test_origins_are_the_nodes_p2p_addresses(http_kwargs: dict[str, object]) -> None:
    respx.post(f"{BASE}/api/v0/id").mock(return_value=httpx.Response(200, json={
        "ID": "12D3KooWabc", "Addresses": ["/ip4/203.0.113.5/tcp/4001/p2p/12D3KooWabc", "/ip4/127.0.0.1/tcp/4001"]}))
    assert kubo(http_kwargs).origins() == ["/ip4/203.0.113.5/tcp/4001/p2p/12D3KooWabc"]


@respx.mock
def test_list_reads_named_recursive_pins(http_kwargs: dict[str, object]) -> None:
    route = respx.post(f"{BASE}/api/v0/pin/ls").mock(return_value=httpx.Response(200, json={"Keys": {
        "bafy-a": {"Type": "recursive", "Name": "memory-1"}, "bafy-b": {"Type": "recursive", "Name": "other"}}}))
    entries = kubo(http_kwargs).list(name_prefix="memory-")
    assert [(e.cid, e.name) for e in entries] == [("bafy-a", "memory-1")]
    assert route.calls.last.request.url.params["names"] == "true"


@respx.mock
def test_a_list_answer_that_is_not_json_is_unavailable(http_kwargs: dict[str, object]) -> None:
    # A proxy's login page instead of kubo's RPC: `bundlekit unpin --pinner kubo` printed a JSONDecodeError traceback.
    respx.post(f"{BASE}/api/v0/pin/ls").mock(return_value=httpx.Response(200, text="<html>sign in</html>"))
    with pytest.raises(PinUnavailable, match="kubo: pin/ls: .* did not answer a JSON object"):
        kubo(http_kwargs).list(name_prefix="memory-")


@respx.mock
def test_a_named_pin_is_labelled_with_pin_add(car: Car, http_kwargs: dict[str, object]) -> None:
    respx.post(f"{BASE}/api/v0/dag/import").mock(return_value=httpx.Response(
        200, text=ndjson({"Root": {"Cid": {"/": car.root_text}, "PinErrorMsg": ""}})))
    label = respx.post(f"{BASE}/api/v0/pin/add").mock(return_value=httpx.Response(200, json={"Pins": [car.root_text]}))
    with car.open() as fh:
        kubo(http_kwargs).pin(fh, car.root, name="memory-7")
    assert dict(label.calls.last.request.url.params) == {"arg": car.root_text, "name": "memory-7"}
