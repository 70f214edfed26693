"""The cluster pinner against a fake that answers as the IPFS Cluster REST API does.

Source: ipfs-cluster/ipfs-cluster at 2182e887ef378f906455784396f1011df968822c: api/rest/restapi.go
(routes), api/add.go (AddParams query: format, local; AddedOutput), api/types.go (PinOptions.ToQuery:
replication-min, replication-max, name; GlobalPinInfo with peer_map of PinInfoShort; tracker status
strings; Error {"code", "message"}).
"""

from __future__ import annotations

import io
import json
from importlib import metadata
from pathlib import Path

import httpx
import pytest
import respx
from click.testing import CliRunner

from bundlekit.car.reader import read_car
from bundlekit.cli import cli
from bundlekit.errors import PinAuthError, PinnerNotConfigured, PinRejected, PinUnavailable, UsageError
from bundlekit.ipld.cid import cid_to_str
from bundlekit.pinning import registry
from bundlekit.pinning.protocol import MISSING, PINNED, PINNING
from pinners.cluster import ClusterPinner

from .conftest import SECRET, Car

BASE = "http://cluster.test:9094"
PEERS = {"12D3KooWA": "alpha", "12D3KooWB": "beta", "12D3KooWC": "gamma"}


class FakeCluster:
    """Tracks pins; each peer's status advances one step per GET /pins/<cid> unless it is stuck."""

    def __init__(self, allocations: list[str], *, stuck: str | None = None, error: str | None = None,
                 settle: int = 2) -> None:
        self.allocations = allocations
        self.settle = settle
        self.stuck = stuck
        self.error = error
        self.pins: dict[str, dict[str, object]] = {}
        self.polls = 0

    def add(self, request: httpx.Request) -> httpx.Response:
        body = request.content
        car_bytes = body[body.index(b"\r\n\r\n") + 4:body.rindex(b"\r\n--")]
        roots, _ = read_car(io.BytesIO(car_bytes))
        cid = cid_to_str(roots[0])
        params = request.url.params
        self.pins[cid] = {"cid": cid, "name": params["name"], "type": "pin", "allocations": self.allocations,
                          "replication_factor_min": int(params["replication-min"]),
                          "replication_factor_max": int(params["replication-max"]),
                          "timestamp": "2026-11-30T10:00:00Z"}
        return httpx.Response(200, json={"name": params["name"], "cid": cid, "bytes": len(car_bytes),
                                         "allocations": self.allocations})

    def allocation(self, request: httpx.Request, cid: str) -> httpx.Response:
        if cid not in self.pins:
            return httpx.Response(404, json={"code": 404, "message": "pin not found"})
        return httpx.Response(200, json=self.pins[cid])

    def status(self, request: httpx.Request, cid: str) -> httpx.Response:
        self.polls += 1
        peer_map = {}
        for peer, name in PEERS.items():
            if peer not in self.allocations:
                state = "remote"
            elif peer == self.error:
                state = "pin_error"
            elif peer == self.stuck or self.polls < self.settle:
                state = "pinning"
            else:
                state = "pinned"
            peer_map[peer] = {"peername": name, "status": state, "timestamp": "2026-11-30T10:00:01Z",
                              "error": "context deadline exceeded" if state == "pin_error" else "",
                              "attempt_count": 1, "priority_pin": False}
        return httpx.Response(200, json={"cid": cid, "name": self.pins.get(cid, {}).get("name", ""),
                                         "allocations": self.allocations, "origins": [], "metadata": None,
                                         "created": "2026-11-30T10:00:00Z", "peer_map": peer_map})

    def listing(self, request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, text="".join(json.dumps(p) + "\n" for p in self.pins.values()))

    def mount(self, router: respx.MockRouter) -> dict[str, respx.Route]:
        return {
            "add": router.post(f"{BASE}/add").mock(side_effect=self.add),
            "allocation": router.get(url__regex=rf"{BASE}/allocations/(?P<cid>\w+)").mock(side_effect=self.allocation),
            "list": router.get(f"{BASE}/allocations").mock(side_effect=self.listing),
            "status": router.get(url__regex=rf"{BASE}/pins/(?P<cid>\w+)").mock(side_effect=self.status),
            "delete": router.delete(url__regex=rf"{BASE}/pins/(?P<cid>\w+)").mock(
                side_effect=lambda r, cid: httpx.Response(200, json=self.pins.pop(cid, {}))),
        }


def cluster(http_kwargs: dict[str, object], **env: str) -> ClusterPinner:
    return ClusterPinner.from_env({"BUNDLEKIT_CLUSTER_URL": BASE, **env}, **http_kwargs)


def test_the_url_is_required() -> None:
    with pytest.raises(PinnerNotConfigured, match="BUNDLEKIT_CLUSTER_URL"):
        ClusterPinner.from_env({})


@pytest.mark.parametrize("raw", ["maybe", "on", "2"])
def test_a_local_flag_that_is_not_true_or_false_is_refused(raw: str, http_kwargs: dict[str, object]) -> None:
    with pytest.raises(UsageError, match="BUNDLEKIT_CLUSTER_LOCAL"):
        cluster(http_kwargs, BUNDLEKIT_CLUSTER_LOCAL=raw)


@pytest.mark.parametrize("raw", ["inf", "nan", "-1"])
def test_a_poll_interval_that_is_not_a_finite_number_of_seconds_is_refused(
    raw: str, http_kwargs: dict[str, object]
) -> None:
    with pytest.raises(UsageError, match="BUNDLEKIT_CLUSTER_POLL_INTERVAL"):
        cluster(http_kwargs, BUNDLEKIT_CLUSTER_POLL_INTERVAL=raw)


def test_add_sends_format_car_name_replication_and_local(car: Car, http_kwargs: dict[str, object]) -> None:
    fake = FakeCluster(["12D3KooWA", "12D3KooWB"])
    with respx.mock(assert_all_called=False) as router:
        routes = fake.mount(router)
        pinner = cluster(http_kwargs, BUNDLEKIT_CLUSTER_REPLICATION_MIN="2", BUNDLEKIT_CLUSTER_REPLICATION_MAX="3",
                         BUNDLEKIT_CLUSTER_LOCAL="true")
        with car.open() as fh:
            result = pinner.pin(fh, car.root, name="memory-9")
    assert (result.status, result.cid) == (PINNED, car.root_text)
    params = routes["add"].calls.last.request.url.params
    assert (params["format"], params["name"], params["replication-min"], params["replication-max"],
            params["local"]) == ("car", "memory-9", "2", "3", "true")
    assert b'name="file"' in routes["add"].calls.last.request.content


def test_an_existing_pin_is_not_added_again(car: Car, http_kwargs: dict[str, object]) -> None:
    fake = FakeCluster(["12D3KooWA"])
    fake.pins[car.root_text] = {"cid": car.root_text, "name": "old"}
    with respx.mock(assert_all_called=False) as router:
        routes = fake.mount(router)
        with car.open() as fh:
            assert cluster(http_kwargs).pin(fh, car.root).status == PINNED
    assert routes["add"].call_count == 0


def test_a_peer_stuck_pinning_is_reported_at_the_deadline(car: Car, http_kwargs: dict[str, object]) -> None:
    fake = FakeCluster(["12D3KooWA", "12D3KooWB"], stuck="12D3KooWB", settle=1)
    with respx.mock(assert_all_called=False) as router:
        fake.mount(router)
        with car.open() as fh:
            result = cluster(http_kwargs, BUNDLEKIT_CLUSTER_DEADLINE="0").pin(fh, car.root)
    assert result.status == PINNING and not result.durable
    assert "beta (pinning)" in (result.error or "") and "alpha" not in (result.error or "")


def test_a_peers_pin_error_fails_the_pin_naming_it(car: Car, http_kwargs: dict[str, object]) -> None:
    fake = FakeCluster(["12D3KooWA", "12D3KooWC"], error="12D3KooWC")
    with respx.mock(assert_all_called=False) as router:
        fake.mount(router)
        with car.open() as fh, pytest.raises(PinRejected, match="gamma .pin_error: context deadline exceeded"):
            cluster(http_kwargs).pin(fh, car.root)


def test_status_unpin_and_list(car: Car, http_kwargs: dict[str, object]) -> None:
    fake = FakeCluster(["12D3KooWA"])
    with respx.mock(assert_all_called=False) as router:
        routes = fake.mount(router)
        pinner = cluster(http_kwargs)
        with car.open() as fh:
            pinner.pin(fh, car.root, name="memory-1")
        assert [(e.cid, e.name) for e in pinner.list(name_prefix="memory-")] == [(car.root_text, "memory-1")]
        assert routes["list"].calls.last.request.url.params["filter"] == "pin"
        pinner.unpin(car.root)
        assert pinner.status(car.root).status == MISSING


@respx.mock
def test_a_list_answer_that_is_not_json_is_unavailable(http_kwargs: dict[str, object]) -> None:
    # A proxy's page instead of the REST API: `bundlekit unpin --pinner cluster` printed a JSONDecodeError traceback.
    respx.get(f"{BASE}/allocations").mock(return_value=httpx.Response(200, text="<html>sign in</html>"))
    with pytest.raises(PinUnavailable, match="/allocations answered something that is not JSON"):
        cluster(http_kwargs).list(name_prefix="memory-")


@respx.mock
def test_a_refused_token_is_an_auth_error(http_kwargs: dict[str, object]) -> None:
    route = respx.get(f"{BASE}/id").mock(return_value=httpx.Response(
        401, json={"code": 401, "message": "Unauthorized"}))
    with pytest.raises(PinAuthError) as info:
        cluster(http_kwargs, BUNDLEKIT_CLUSTER_TOKEN=SECRET).check()
    assert route.calls.last.request.headers["authorization"] == f"Bearer {SECRET}"
    assert SECRET not in str(info.value)


@respx.mock
def test_basic_auth_is_sent(http_kwargs: dict[str, object]) -> None:
    route = respx.get(f"{BASE}/id").mock(return_value=httpx.Response(200, json={"id": "12D3KooWA"}))
    cluster(http_kwargs, BUNDLEKIT_CLUSTER_BASIC_AUTH=f"ci:{SECRET}").check()
    assert route.calls.last.request.headers["authorization"].startswith("Basic ")


@respx.mock
def test_a_bad_request_answer_is_rejected(car: Car, http_kwargs: dict[str, object]) -> None:
    respx.get(url__regex=rf"{BASE}/allocations/\w+").mock(return_value=httpx.Response(404, json={}))
    respx.post(f"{BASE}/add").mock(return_value=httpx.Response(
        400, json={"code": 400, "message": "format parameter is invalid"}))
    with car.open() as fh, pytest.raises(PinRejected, match="format parameter is invalid"):
        cluster(http_kwargs).pin(fh, car.root)


def test_cli_require_all_fails_when_a_peer_stays_pinning_and_any_passes(
    car: Car, monkeypatch: pytest.MonkeyPatch, store_home: Path
) -> None:
    extra = metadata.EntryPoint("cluster", "pinners.cluster:ClusterPinner", registry.ENTRY_POINT_GROUP)
    found = registry._entry_points()
    monkeypatch.setattr(registry, "_entry_points", lambda: [*found, extra])
    monkeypatch.setenv("BUNDLEKIT_CLUSTER_URL", BASE)
    monkeypatch.setenv("BUNDLEKIT_CLUSTER_DEADLINE", "0")
    fake = FakeCluster(["12D3KooWA", "12D3KooWB"], stuck="12D3KooWB", settle=1)
    runner = CliRunner()
    with respx.mock(assert_all_called=False) as router:
        fake.mount(router)
        strict = runner.invoke(cli, ["pin", str(car.path), "--pinner", "local", "--pinner", "cluster", "--json"])
        lenient = runner.invoke(cli, ["pin", str(car.path), "--pinner", "local", "--pinner", "cluster",
                                      "--require", "any", "--json"])
    assert strict.exit_code == 4 and lenient.exit_code == 0
    pins = {p["pinner"]: p for p in json.loads(lenient.stdout)["pins"]}
    assert pins["cluster"]["status"] == "pinning" and "beta" in pins["cluster"]["error"]
    assert pins["local"]["status"] == "pinned"
