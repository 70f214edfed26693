"""The one loopback rule of ``bundlekit mcp --http`` and the Host headers a loopback server answers."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from bundlekit.cli import cli
from bundlekit.cli import mcp as mcp_cli
from bundlekit.mcp_server.address import allowed_hosts, host_header, is_loopback
from bundlekit.memory import Memory


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


def test_the_status_line_of_an_ipv6_server_names_a_url_with_brackets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    served_at: list[tuple[str, int]] = []

    def run_http(_tools: object, host: str, port: int, announce: Callable[[], None]) -> None:
        announce()
        served_at.append((host, port))

    monkeypatch.setattr(mcp_cli, "_sdk_server", lambda: SimpleNamespace(run_http=run_http))
    Memory(tmp_path / "tree").init()
    result = CliRunner().invoke(cli, ["mcp", "--memory", str(tmp_path / "tree"), "--http", "[::1]:8765"])
    assert result.exit_code == 0, result.stderr
    assert served_at == [("::1", 8765)]
    assert "at http://[::1]:8765/mcp" in result.stderr
