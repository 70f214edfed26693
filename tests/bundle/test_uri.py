"""Bundle URI forms and gateway addressing."""

from __future__ import annotations

from pathlib import Path

import pytest

from bundlekit.errors import UsageError
from bundlekit.ipld.cid import DAG_PB, cid_to_str, make_cid
from bundlekit.net.fetch import RemoteGateway, default_gateways, parse_gateway, parse_uri

ROOT = make_cid(1, DAG_PB, b"root")
ROOT_S = cid_to_str(ROOT)
V0 = make_cid(0, DAG_PB, b"root")


@pytest.mark.parametrize("uri", [f"ipfs://{ROOT_S}", f"ipfs://{ROOT_S}/manifest.json", f"/ipfs/{ROOT_S}", ROOT_S])
def test_ipfs_forms_give_the_root(uri: str) -> None:
    target = parse_uri(uri)
    assert (target.kind, target.root) == ("ipfs", ROOT)


def test_path_gateway_url_gives_root_and_gateway() -> None:
    target = parse_uri(f"http://127.0.0.1:8080/ipfs/{ROOT_S}/manifest.json")
    assert (target.kind, target.root, target.gateway) == ("gateway", ROOT, RemoteGateway("http://127.0.0.1:8080"))


def test_subdomain_gateway_url_gives_root_and_gateway() -> None:
    target = parse_uri(f"https://{ROOT_S}.ipfs.dweb.link/manifest.json")
    assert target.root == ROOT
    assert target.gateway == RemoteGateway("https://dweb.link", subdomain=True)


def test_subdomain_gateway_addresses_v0_as_base32_v1() -> None:
    url = RemoteGateway("https://dweb.link", subdomain=True).url(V0)
    assert url.startswith("https://bafy") and url.endswith(".ipfs.dweb.link/")


def test_path_gateway_addresses_by_path() -> None:
    assert RemoteGateway("http://h:1").url(ROOT) == f"http://h:1/ipfs/{ROOT_S}"


def test_plain_https_manifest_is_the_unverified_form() -> None:
    target = parse_uri("https://example.org/agents/a/manifest.json")
    assert (target.kind, target.url, target.root) == ("https", "https://example.org/agents/a/manifest.json", None)


def test_local_car_file(tmp_path: Path) -> None:
    car = tmp_path / "b.car"
    car.write_bytes(b"")
    assert parse_uri(str(car)).car == car


def test_missing_car_file_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="does not exist"):
        parse_uri(str(tmp_path / "nope.car"))


def test_path_inside_the_bundle_is_refused() -> None:
    with pytest.raises(UsageError, match="inside a bundle"):
        parse_uri(f"ipfs://{ROOT_S}/memory/MEMORY.md")


def test_bad_cid_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="valid CID"):
        parse_uri("ipfs://notacid")


def test_gateway_option_strips_trailing_ipfs() -> None:
    assert parse_gateway("https://ipfs.io/ipfs/") == RemoteGateway("https://ipfs.io")


def test_gateway_option_needs_http() -> None:
    with pytest.raises(UsageError):
        parse_gateway("ftp://x")


def test_default_gateways_come_from_the_environment() -> None:
    gws = default_gateways({"BUNDLEKIT_GATEWAYS": "https://a.example, https://b.example"})
    assert gws == [RemoteGateway("https://a.example"), RemoteGateway("https://b.example")]


@pytest.mark.parametrize("uri", ["https://bafy.ipfs.localhost:X/", "http://[::1/manifest.json", "https:///x.json"])
def test_a_uri_that_is_no_usable_url_is_a_usage_error(uri: str) -> None:
    with pytest.raises(UsageError, match="URI"):
        parse_uri(uri)


@pytest.mark.parametrize("value", ["http://[::1", "http://host:port", "https://"])
def test_a_gateway_that_is_no_usable_url_is_a_usage_error(value: str) -> None:
    with pytest.raises(UsageError, match="gateway"):
        parse_gateway(value)
