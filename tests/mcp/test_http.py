"""``bundlekit mcp --http``: the streamable HTTP transport on loopback, driven by the SDK's own client."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.mcp.conftest import free_port, make_tree, run_client, server_env, skip_without_the_sdk, wait_listening

skip_without_the_sdk()


@pytest.fixture
def http_server(tree: Path) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """A server of the test's own (a test that stops it)."""
    yield from _serving(tree, "127.0.0.1")


@pytest.fixture(scope="module")
def shared_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tree(tmp_path_factory.mktemp("http") / "coach")


@pytest.fixture(scope="module")
def shared_server(shared_tree: Path) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """One server for the tests that only call it (each start costs ~1.5 s of CPU); none of them stops it, and
    none asserts on what another may have written."""
    yield from _serving(shared_tree, "127.0.0.1")


def _serving(tree: Path, host: str, *extra: str) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "bundlekit", "mcp", "--memory", str(tree), "--http", f"{host}:{port}", *extra],
        env=server_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    wait_listening(proc, host, port, lambda: proc.communicate()[1])
    try:
        yield f"http://{host}:{port}/mcp", proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def test_tools_work_over_the_http_transport(
    shared_server: tuple[str, subprocess.Popen[str]], shared_tree: Path
) -> None:
    url, _proc = shared_server

    async def session(client: Any) -> tuple[set[str], Any, Any, Any]:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        written = await client.call_tool("memory_write", {
            "key": "project_http", "name": "Over HTTP", "description": "written over HTTP",
            "type": "project", "body": "streamable transport",
        })
        recalled = await client.call_tool("memory_recall", {"query": "streamable", "rank": "salience"})
        index = await client.read_resource("memory://index")
        return tools, written, recalled, index

    tools, written, recalled, index = run_client(url, session)
    assert {"memory_write", "memory_recall"} <= tools
    assert not written.is_error
    assert [hit["key"] for hit in recalled.structured_content["result"]] == ["project_http"]
    assert "project_http.md" in index.contents[0].text
    assert (shared_tree / "project_http.md").is_file()


def test_interrupting_the_http_server_exits_cleanly(http_server: tuple[str, subprocess.Popen[str]]) -> None:
    _url, proc = http_server
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err  # an interrupt, as everywhere in the CLI
    assert "Traceback" not in err


def test_a_secret_and_a_stale_revision_are_tool_errors_over_http(
    shared_server: tuple[str, subprocess.Popen[str]], shared_tree: Path
) -> None:
    url, proc = shared_server
    secret = "sk-ant-api03-" + "Q" * 93 + "AA"

    async def session(client: Any) -> tuple[Any, Any, Any]:
        leak = await client.call_tool("memory_write", {
            "key": "leak", "name": "Leak", "description": "a key", "type": "reference", "body": secret,
        })
        stale = await client.call_tool("memory_write", {
            "key": "user_role", "name": "Role", "description": "changed", "type": "user",
            "body": "new body", "expected_revision": 0,
        })
        return leak, stale, await client.call_tool("memory_list", {})

    leak, stale, listed = run_client(url, session)
    assert leak.is_error and "Anthropic API key" in leak.content[0].text and secret not in leak.content[0].text
    assert stale.is_error and "revision" in stale.content[0].text
    assert not listed.is_error and proc.poll() is None  # the server answers on
    assert not (shared_tree / "leak.md").exists()


def test_a_port_in_use_is_a_usage_error_not_uvicorns_exit_3(tree: Path) -> None:
    # uvicorn logs its own "ERROR:" line and exits 3 (bundlekit's verification code) when it cannot bind.
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = subprocess.run(
            [sys.executable, "-m", "bundlekit", "mcp", "--memory", str(tree), "--http", str(port)],
            env=server_env(), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, check=False,
        )
    assert proc.returncode == 2
    assert f"error: cannot listen on 127.0.0.1:{port}" in proc.stderr
    assert "Traceback" not in proc.stderr and "ERROR:" not in proc.stderr


def _second_loopback_address_works() -> bool:
    try:
        with socket.socket() as sock:
            sock.bind(("127.0.0.2", 0))
        return True
    except OSError:  # macOS configures only 127.0.0.1
        return False


_other_loopback = pytest.mark.skipif(not _second_loopback_address_works(), reason="127.0.0.2 is not configured")


@pytest.fixture(scope="module")
def other_loopback_server(shared_tree: Path) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """A server bound to 127.0.0.2 with --http only, shared by the two tests that call it."""
    yield from _serving(shared_tree, "127.0.0.2")


def _lists_the_tree(url: str) -> None:
    async def session(client: Any) -> Any:
        return await client.call_tool("memory_list", {})

    listed = run_client(url, session)
    assert not listed.is_error
    assert "user_role" in {row["key"] for row in listed.structured_content["result"]}


# The SDK checks the Host header against allowed_hosts exactly (mcp/server/transport_security.py,
# modelcontextprotocol/python-sdk 2.3.0): the bound address must be in it.
@_other_loopback
def test_a_server_on_another_loopback_address_answers_clients_of_that_address(
    other_loopback_server: tuple[str, subprocess.Popen[str]],
) -> None:
    _lists_the_tree(other_loopback_server[0])


@_other_loopback
def test_a_server_given_host_another_loopback_address_answers_clients_of_that_address(tree: Path) -> None:
    served = _serving(tree, "127.0.0.2", "--host", "127.0.0.2")
    url, _proc = next(served)
    try:
        _lists_the_tree(url)
    finally:
        served.close()


@_other_loopback
def test_a_server_on_another_loopback_address_still_refuses_a_foreign_host_header(
    other_loopback_server: tuple[str, subprocess.Popen[str]],
) -> None:
    answer = httpx.post(other_loopback_server[0],
                        headers={"Host": "evil.example:80", "Accept": "application/json, text/event-stream"},
                        json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert answer.status_code == 421
