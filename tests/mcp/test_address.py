"""The one loopback rule of ``bundlekit mcp --http`` and the Host headers a loopback server answers."""

from __future__ import annotations

import pytest

from bundlekit.mcp_server.address import allowed_hosts, host_header, is_loopback


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "127.255.0.9", "localhost", "::1", "[::1]"])
def test_every_loopback_address_is_loopback(host: str) -> None:
    assert is_loopback(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "10.0.0.1", "::", "example.com", "localhost.example"])
def test_other_addresses_are_not_loopback(host: str) -> None:
    assert not is_loopback(host)


def test_a_server_bound_to_another_loopback_address_answers_that_address_as_host() -> None:
    assert allowed_hosts("127.0.0.2", 8000) == ["127.0.0.1:8000", "localhost:8000", "[::1]:8000", "127.0.0.2:8000"]


def test_the_usual_loopback_names_are_not_listed_twice() -> None:
    assert allowed_hosts("::1", 9) == ["127.0.0.1:9", "localhost:9", "[::1]:9"]
    assert allowed_hosts("localhost", 9) == ["127.0.0.1:9", "localhost:9", "[::1]:9"]


def test_an_ipv6_host_header_is_bracketed() -> None:
    assert host_header("::1", 80) == "[::1]:80"
    assert host_header("[::1]", 80) == "[::1]:80"
