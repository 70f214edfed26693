"""web3.storage legacy API and Storacha bridge: request shapes, splitting, sunset answers."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import httpx
import pytest
import respx

from bundlekit.car.reader import read_car
from bundlekit.car.writer import CarFileWriter
from bundlekit.errors import CIDMismatch, PinnerNotConfigured, PinRejected, PinServiceSunset, PinUnavailable
from bundlekit.ipld.cid import cid_from_digest, cid_to_str
from bundlekit.ipld.walk import block_links
from bundlekit.pinning.protocol import MISSING, PINNED
from bundlekit.unixfs.importer import import_tree
from bundlekit.unixfs.profiles import get_profile
from pinners.web3storage import Web3StoragePinner

from .conftest import SECRET, Car, build_car

BASE = "https://w3s.test"
SUNSET_BODY = {
    "code": "HTTP_ERROR",
    "message": "This API feature has been sunset, and is no longer available. To continue uploading, "
               "use the new web3.storage API: https://web3.storage/docs.",
}
AUTH = "uOqJlcm9vdHOB2CpYJQABcRIg-bridge-auth"
SPACE = "did:key:z6MkSpace"


def legacy(http_kwargs: dict[str, object]) -> Web3StoragePinner:
    return Web3StoragePinner.from_env(
        {"WEB3_STORAGE_TOKEN": SECRET, "BUNDLEKIT_WEB3_STORAGE_URL": BASE}, **http_kwargs)


def bridge(http_kwargs: dict[str, object]) -> Web3StoragePinner:
    return Web3StoragePinner.from_env({
        "STORACHA_AUTH_SECRET": SECRET, "STORACHA_AUTH_TOKEN": AUTH, "STORACHA_SPACE_DID": SPACE,
        "BUNDLEKIT_WEB3_STORAGE_URL": BASE}, **http_kwargs)


@respx.mock
def test_legacy_posts_the_car_body_with_bearer_and_x_name(car: Car, http_kwargs: dict[str, object]) -> None:
    route = respx.post(f"{BASE}/car").mock(return_value=httpx.Response(200, json={"cid": car.root_text}))
    with car.open() as fh:
        result = legacy(http_kwargs).pin(fh, car.root, name="my release", size=car.size)
    assert result.status == PINNED
    request = route.calls.last.request
    assert request.headers["authorization"] == f"Bearer {SECRET}"
    assert request.headers["x-name"] == "my%20release"
    assert request.headers["content-type"] == "application/vnd.ipld.car"
    assert request.content == car.path.read_bytes()
    assert request.headers["content-length"] == str(car.size)


@respx.mock
def test_legacy_splits_large_cars_into_parts_rooted_at_our_root(tmp_path: Path, http_kwargs: dict[str, object]) -> None:
    big = build_car(tmp_path / "big.car", [bytes([i]) * 300 for i in range(6)])
    bodies: list[bytes] = []

    def record(request: httpx.Request) -> httpx.Response:
        bodies.append(request.content)
        return _w3s_car_check(request.content)

    respx.post(f"{BASE}/car").mock(side_effect=record)
    pinner = legacy(http_kwargs)
    pinner.split_size = 800
    with big.open() as fh:
        pinner.pin(fh, big.root, size=big.size)
    assert len(bodies) > 1
    seen: dict[bytes, bytes] = {}
    for body in bodies:
        assert len(body) <= 800
        roots, blocks = read_car(io.BytesIO(body))
        assert roots == [big.root]
        seen.update(blocks)
    with big.open() as fh:
        assert seen == dict(read_car(fh)[1])


@respx.mock
def test_the_sunset_answer_fails_fast_suggesting_other_pinners(car: Car, http_kwargs: dict[str, object]) -> None:
    route = respx.post(f"{BASE}/car").mock(return_value=httpx.Response(403, json=SUNSET_BODY))
    with car.open() as fh, pytest.raises(PinServiceSunset) as info:
        legacy(http_kwargs).pin(fh, car.root)
    assert route.call_count == 1
    assert "Pinata" in str(info.value) and "kubo" in str(info.value)


@respx.mock
def test_410_gone_is_a_sunset(car: Car, http_kwargs: dict[str, object]) -> None:
    respx.post(f"{BASE}/car").mock(return_value=httpx.Response(410, text="Gone"))
    with car.open() as fh, pytest.raises(PinServiceSunset):
        legacy(http_kwargs).pin(fh, car.root)


@respx.mock
def test_legacy_cid_mismatch(car: Car, other_car: Car, http_kwargs: dict[str, object]) -> None:
    respx.post(f"{BASE}/car").mock(return_value=httpx.Response(200, json={"cid": other_car.root_text}))
    with car.open() as fh, pytest.raises(CIDMismatch):
        legacy(http_kwargs).pin(fh, car.root)


def receipt(ok: object = None, error: object = None) -> list[dict[str, object]]:
    out = {"ok": ok} if error is None else {"error": error}
    return [{"p": {"out": out}}]


@respx.mock
def test_bridge_runs_store_add_put_then_upload_add(car: Car, http_kwargs: dict[str, object]) -> None:
    shard = cid_to_str(cid_from_digest(1, 0x0202, hashlib.sha256(car.path.read_bytes()).digest()))
    tasks: list[list[object]] = []

    def bridge_call(request: httpx.Request) -> httpx.Response:
        assert request.headers["x-auth-secret"] == SECRET and request.headers["authorization"] == AUTH
        task = json.loads(request.content)["tasks"][0]
        tasks.append(task)
        if task[0] == "store/add":
            return httpx.Response(200, json=receipt({"status": "upload", "url": "https://bucket.test/put",
                                                     "headers": {"x-amz-checksum-sha256": "abc"}}))
        return httpx.Response(200, json=receipt({"root": {"/": car.root_text}}))

    respx.post(f"{BASE}/bridge").mock(side_effect=bridge_call)
    put = respx.put("https://bucket.test/put").mock(return_value=httpx.Response(200))
    with car.open() as fh:
        assert bridge(http_kwargs).pin(fh, car.root).status == PINNED
    assert tasks[0] == ["store/add", SPACE, {"link": {"/": shard}, "size": car.size}]
    assert tasks[1] == ["upload/add", SPACE, {"root": {"/": car.root_text}, "shards": [{"/": shard}]}]
    put_request = put.calls.last.request
    assert put_request.content == car.path.read_bytes()
    assert put_request.headers["x-amz-checksum-sha256"] == "abc"
    assert put_request.headers["content-length"] == str(car.size)
    assert "transfer-encoding" not in put_request.headers
    assert "x-auth-secret" not in put_request.headers and "authorization" not in put_request.headers


@respx.mock
def test_bridge_skips_the_put_when_the_shard_is_already_stored(car: Car, http_kwargs: dict[str, object]) -> None:
    respx.post(f"{BASE}/bridge").mock(side_effect=[
        httpx.Response(200, json=receipt({"status": "done"})),
        httpx.Response(200, json=receipt({"root": {"/": car.root_text}})),
    ])
    with car.open() as fh:
        assert bridge(http_kwargs).pin(fh, car.root).status == PINNED


@respx.mock
def test_bridge_task_error_is_rejected(car: Car, http_kwargs: dict[str, object]) -> None:
    respx.post(f"{BASE}/bridge").mock(return_value=httpx.Response(
        200, json=receipt(error={"name": "InsufficientStorage", "message": "space full"})))
    with car.open() as fh, pytest.raises(PinRejected, match="InsufficientStorage"):
        bridge(http_kwargs).pin(fh, car.root)


@respx.mock
def test_bridge_sunset_answer_fails_fast(car: Car, http_kwargs: dict[str, object]) -> None:
    route = respx.post(f"{BASE}/bridge").mock(return_value=httpx.Response(
        410, json={"message": "The Storacha upload service has been shut down."}))
    with car.open() as fh, pytest.raises(PinServiceSunset):
        bridge(http_kwargs).pin(fh, car.root)
    assert route.call_count == 1


def test_partial_bridge_settings_name_the_missing_variables() -> None:
    with pytest.raises(PinnerNotConfigured, match="STORACHA_SPACE_DID"):
        Web3StoragePinner.from_env({"STORACHA_AUTH_SECRET": SECRET, "STORACHA_AUTH_TOKEN": AUTH})


def test_no_settings_mention_the_sunset_and_alternatives() -> None:
    with pytest.raises(PinnerNotConfigured, match="Pinata"):
        Web3StoragePinner.from_env({})


@pytest.mark.parametrize("blank", ["", "   ", "\t"])
def test_a_blank_token_counts_as_missing(blank: str) -> None:
    env = {"WEB3_STORAGE_TOKEN": blank}
    assert not Web3StoragePinner.is_configured(env)
    with pytest.raises(PinnerNotConfigured, match="WEB3_STORAGE_TOKEN"):
        Web3StoragePinner.from_env(env)


def test_a_blank_bridge_variable_counts_as_missing() -> None:
    env = {"STORACHA_AUTH_SECRET": SECRET, "STORACHA_AUTH_TOKEN": AUTH, "STORACHA_SPACE_DID": " "}
    assert not Web3StoragePinner.is_configured(env)
    with pytest.raises(PinnerNotConfigured, match="STORACHA_SPACE_DID"):
        Web3StoragePinner.from_env(env)


@pytest.mark.parametrize("var", ["WEB3_STORAGE_TOKEN", "STORACHA_AUTH_TOKEN"])
def test_a_secret_holding_a_line_break_is_a_configuration_error_naming_it(var: str) -> None:
    env = {"STORACHA_AUTH_SECRET": SECRET, "STORACHA_AUTH_TOKEN": AUTH, "STORACHA_SPACE_DID": SPACE}
    if var == "WEB3_STORAGE_TOKEN":
        env = {var: SECRET + "\n" + SECRET}
    else:
        env[var] = AUTH + "\r\n"
    with pytest.raises(PinnerNotConfigured, match=var) as info:
        Web3StoragePinner.from_env(env)
    assert SECRET not in str(info.value) and AUTH not in str(info.value)


def _w3s_car_check(body: bytes) -> httpx.Response:
    """The legacy API's CAR check (web3-storage/web3.storage packages/api/src/car.js ``carStat`` at
    045d026de16d9cb9da4b2571f837482edd22ff00): a CAR whose root block is not in it is refused
    (``InvalidCarError('missing root block')``, an HTTP 400)."""
    roots, blocks = read_car(io.BytesIO(body))
    present = dict(blocks)
    if roots[0] not in present:
        return httpx.Response(400, json={"name": "HTTPError", "message": "missing root block"})
    return httpx.Response(200, json={"cid": cid_to_str(roots[0])})


@respx.mock
def test_every_split_part_holds_the_root_block_and_the_path_to_its_blocks(
    tmp_path: Path, http_kwargs: dict[str, object]
) -> None:
    """issue 13: the official client splits with a tree walk (alanshaw/carbites lib/treewalk/splitter.js,
    used by web3-storage/web3.storage packages/client/src/lib.js putCar at 10 MiB per part)."""
    with CarFileWriter(tmp_path / "deep.car") as writer:
        files = [(f"d{i}/f{j}.bin", bytes([i, j]) * 700) for i in range(3) for j in range(3)]
        imported = import_tree(files, writer, get_profile(chunk_size=256, max_links=3))
        writer.finish(imported.root)
    bodies: list[bytes] = []
    route = respx.post(f"{BASE}/car").mock(side_effect=lambda r: bodies.append(r.content) or _w3s_car_check(r.content))
    pinner = legacy(http_kwargs)
    pinner.split_size = 2000
    with open(tmp_path / "deep.car", "rb") as fh:
        assert pinner.pin(fh, imported.root).status == PINNED
    assert route.call_count == len(bodies) > 2
    seen: dict[bytes, bytes] = {}
    for body in bodies:
        assert len(body) <= 2000
        roots, blocks = read_car(io.BytesIO(body))
        part = dict(blocks)
        assert roots == [imported.root] and imported.root in part
        reachable = {imported.root}
        for cid, data in part.items():  # blocks come in walk order: each one's parent is already in
            if cid in reachable:
                reachable.update(child for child, _ in block_links(cid, data))
        assert set(part) <= reachable
        seen.update(part)
    with open(tmp_path / "deep.car", "rb") as fh:
        assert seen == dict(read_car(fh)[1])


def _upload_pages(pages: list[list[str]], *, endless: bool = False) -> tuple[list[object], object]:
    """A bridge answering ``upload/list`` page by page (w3up's ``{results, size, cursor}``); ``endless``
    hands out a cursor on every page, as a listing that never ends would."""
    seen: list[object] = []

    def answer(request: httpx.Request) -> httpx.Response:
        task = json.loads(request.content)["tasks"][0]
        assert task[0] == "upload/list"
        seen.append(task[2].get("cursor"))
        n = len(seen) - 1
        roots = pages[n] if n < len(pages) else ["bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy"]
        more = endless or n + 1 < len(pages)
        ok: dict[str, object] = {"results": [{"root": {"/": r}} for r in roots], "size": len(roots)}
        if more:
            ok["cursor"] = f"c{n + 1}"
        return httpx.Response(200, json=receipt(ok))

    return seen, answer


@respx.mock
def test_bridge_status_follows_the_upload_list_cursor_to_find_the_root(car: Car, http_kwargs: dict[str, object]) -> None:
    other = "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy"
    seen, answer = _upload_pages([[other], [cid_to_str(car.root)]])
    respx.post(f"{BASE}/bridge").mock(side_effect=answer)
    assert bridge(http_kwargs).status(car.root).status == PINNED
    assert seen == [None, "c1"]


@respx.mock
def test_bridge_status_is_missing_only_when_the_whole_listing_was_read(car: Car, http_kwargs: dict[str, object]) -> None:
    seen, answer = _upload_pages([["bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy"]] * 3)
    respx.post(f"{BASE}/bridge").mock(side_effect=answer)
    assert bridge(http_kwargs).status(car.root).status == MISSING
    assert len(seen) == 3


@respx.mock
def test_bridge_status_of_a_listing_past_the_page_bound_is_an_error_not_missing(
    car: Car, http_kwargs: dict[str, object]
) -> None:
    seen, answer = _upload_pages([], endless=True)
    respx.post(f"{BASE}/bridge").mock(side_effect=answer)
    with pytest.raises(PinUnavailable, match="status is unknown") as info:
        bridge(http_kwargs).status(car.root)
    assert info.value.exit_code == 4
    assert len(seen) == 100
