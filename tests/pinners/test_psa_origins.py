"""psa pins by CID with origins from a node holding the blocks, or refuses at once (issue 13).

Source: ipfs/pinning-services-api-spec ``ipfs-pinning-service.yaml`` at
bbfaa5896d9378c8c613f2ed18d227a7a18d2880: ``Pin.origins`` are multiaddrs (ending ``/p2p/<peer ID>``)
of peers the service fetches from over bitswap ("Provider hints"); the list filters ``name``,
``match`` (exact/iexact/partial/ipartial), ``status``, ``limit`` (max 1000); errors are
``{"error": {"reason", "details"}}``.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
import respx
from click.testing import CliRunner

from bundlekit.cli import cli
from bundlekit.errors import PinRejected, UsageError
from bundlekit.pinning.orchestrate import pin_all
from bundlekit.pinning.origins import link_origins
from pinners.kubo import KuboPinner
from pinners.local import LocalPinner
from pinners.psa import PSAPinner

from .conftest import SECRET, Car

BASE = "https://psa.test/api"
KUBO = "http://kubo.test:5001"
NODE = "/ip4/203.0.113.5/tcp/4001/p2p/12D3KooWnode"


def psa(http_kwargs: dict[str, object], **env: str) -> PSAPinner:
    return PSAPinner.from_env({"BUNDLEKIT_PSA_URL": BASE, "PSA_TOKEN": SECRET, **env}, **http_kwargs)


def pinned(car: Car) -> dict[str, object]:
    return {"requestid": "r1", "status": "pinned", "created": "2026-01-01T00:00:00Z",
            "pin": {"cid": car.root_text, "name": "memory-1"}, "delegates": [], "info": {}}


def test_psa_alone_without_origins_is_refused_saying_what_to_add(http_kwargs: dict[str, object]) -> None:
    with pytest.raises(UsageError, match="--psa-origin MULTIADDR") as info:
        link_origins([psa(http_kwargs)])
    assert "--pinner kubo" in str(info.value) and "bitswap" in str(info.value)


def test_psa_with_only_the_local_store_is_refused(http_kwargs: dict[str, object], tmp_path: Path) -> None:
    with pytest.raises(UsageError):
        link_origins([LocalPinner.from_env({"BUNDLEKIT_HOME": str(tmp_path)}), psa(http_kwargs)])


def test_given_origins_replace_the_pinners_own(http_kwargs: dict[str, object]) -> None:
    pinner = psa(http_kwargs, BUNDLEKIT_PSA_ORIGINS="/ip4/1.1.1.1/tcp/1/p2p/QmOld")
    link_origins([pinner], [NODE])
    assert pinner.origins == [NODE]


@respx.mock
def test_with_kubo_the_nodes_addresses_are_the_origins_and_psa_runs_after(
    car: Car, http_kwargs: dict[str, object]
) -> None:
    order: list[str] = []
    respx.post(f"{KUBO}/api/v0/dag/import").mock(side_effect=lambda r: order.append("kubo") or httpx.Response(
        200, text=f'{{"Root":{{"Cid":{{"/":"{car.root_text}"}},"PinErrorMsg":""}}}}\n'))
    respx.post(f"{KUBO}/api/v0/id").mock(return_value=httpx.Response(200, json={"ID": "x", "Addresses": [NODE]}))
    respx.get(f"{BASE}/pins").mock(return_value=httpx.Response(200, json={"count": 0, "results": []}))
    create = respx.post(f"{BASE}/pins").mock(
        side_effect=lambda r: order.append("psa") or httpx.Response(202, json=pinned(car)))
    kubo = KuboPinner.from_env({"BUNDLEKIT_KUBO_URL": KUBO}, **http_kwargs)
    service = psa(http_kwargs)
    link_origins([service, kubo])
    report = pin_all(car.path, car.root, [service, kubo])
    assert report.ok and order == ["kubo", "psa"]
    body = create.calls.last.request.read()
    assert f'"origins":["{NODE}"]'.encode() in body.replace(b" ", b"")


@respx.mock
def test_list_uses_the_name_filter_with_partial_match(http_kwargs: dict[str, object], car: Car) -> None:
    route = respx.get(f"{BASE}/pins").mock(return_value=httpx.Response(200, json={"count": 1, "results": [pinned(car)]}))
    entries = psa(http_kwargs).list(name_prefix="memory-")
    assert [(e.cid, e.name, e.created) for e in entries] == [(car.root_text, "memory-1", "2026-01-01T00:00:00Z")]
    params = route.calls.last.request.url.params
    assert (params["name"], params["match"], params["limit"]) == ("memory-", "partial", "1000")
    assert params["status"] == "queued,pinning,pinned,failed"


@respx.mock
def test_the_specs_error_body_is_quoted_and_rejected(car: Car, http_kwargs: dict[str, object]) -> None:
    respx.get(f"{BASE}/pins").mock(return_value=httpx.Response(200, json={"count": 0, "results": []}))
    respx.post(f"{BASE}/pins").mock(return_value=httpx.Response(
        400, json={"error": {"reason": "BAD_REQUEST", "details": "origins must end with /p2p/"}}))
    pinner = psa(http_kwargs)
    link_origins([pinner], [NODE])
    with car.open() as fh, pytest.raises(PinRejected, match="BAD_REQUEST"):
        pinner.pin(fh, car.root)


@pytest.mark.parametrize("origin", ["/ip4/203.0.113.5/tcp/4001", "203.0.113.5:4001", "http://127.0.0.1:8080",
                                    "/ip4/203.0.113.5/tcp/4001/p2p/"])
def test_an_origin_without_a_peer_id_is_a_usage_error(origin: str, http_kwargs: dict[str, object]) -> None:
    with pytest.raises(UsageError, match="--psa-origin.*/p2p/<peer ID>"):
        link_origins([psa(http_kwargs)], [origin])


def test_an_env_origin_without_a_peer_id_is_a_usage_error(http_kwargs: dict[str, object]) -> None:
    with pytest.raises(UsageError, match="BUNDLEKIT_PSA_ORIGINS"):
        psa(http_kwargs, BUNDLEKIT_PSA_ORIGINS=f"{NODE},garbage")


def test_an_origin_without_psa_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="--pinner psa only"):
        link_origins([LocalPinner.from_env({"BUNDLEKIT_HOME": str(tmp_path)})], [NODE])


def test_cli_refuses_psa_alone_before_anything_is_built(car: Car, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BUNDLEKIT_PSA_URL", BASE)
    monkeypatch.setenv("PSA_TOKEN", SECRET)
    monkeypatch.delenv("BUNDLEKIT_PSA_ORIGINS", raising=False)
    with respx.mock(assert_all_called=False) as router:
        result = CliRunner().invoke(cli, ["pin", str(car.path), "--pinner", "psa"])
        assert router.calls.call_count == 0
    assert result.exit_code == 2 and "--psa-origin MULTIADDR" in result.stderr
