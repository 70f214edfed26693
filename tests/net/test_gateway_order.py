"""gateway_order: where load and open ask for blocks (the URI's gateway first; ipfs:// alone: store, then env)."""

from __future__ import annotations

import pytest

from bundlekit.errors import UsageError
from bundlekit.net.fetch import gateway_order, parse_gateway, parse_uri

CID = "bafkqaaa"


def test_the_uris_own_gateway_comes_first_and_no_store() -> None:
    given = [parse_gateway("http://b.test"), parse_gateway("http://a.test")]
    gws, use_store = gateway_order(parse_uri(f"http://a.test/ipfs/{CID}"), given)
    assert [g.base for g in gws] == ["http://a.test", "http://b.test"] and use_store is False


def test_ipfs_alone_asks_the_store_then_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BUNDLEKIT_GATEWAYS", "http://env.test")
    gws, use_store = gateway_order(parse_uri(f"ipfs://{CID}"), [])
    assert [g.base for g in gws] == ["http://env.test"] and use_store is True


def test_nothing_to_ask_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BUNDLEKIT_GATEWAYS", raising=False)
    with pytest.raises(UsageError, match="no gateway to load from"):
        gateway_order(parse_uri(f"ipfs://{CID}"), [], use_store=False)
