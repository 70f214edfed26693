"""What ``bundlekit mcp`` serves from a bundle URI or layers: verified first, read-only unless --memory says where writes go."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import httpx
import pytest

from bundlekit.bundle.build import BuildOptions, build_bundle
from bundlekit.gateway.server import serve_in_thread
from tests.mcp.conftest import make_tree, run_client, server_env, shared_client, SharedClient, skip_without_the_sdk, stdio_params
from tests.net.loopback import Answer, send, serve

skip_without_the_sdk()

WRITE_TOOLS = {"memory_write", "memory_forget", "memory_note"}


@pytest.fixture
def bundle(tmp_path: Path, tree: Path) -> tuple[Path, str]:
    car = tmp_path / "coach.car"
    result = build_bundle(tree, car, options=BuildOptions(created=None))
    return car, result.root_cid


@pytest.fixture(scope="module")
def layered(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SharedClient, Path]]:
    """One read-only server of two layers (user, agent) and the agent layer's tree, for the tests that only call
    it: a write it refuses changes nothing."""
    root = tmp_path_factory.mktemp("layers")
    user_layer, agent_layer = make_tree(root / "user"), make_tree(root / "agent")
    for client in shared_client(stdio_params("--layer", f"user={user_layer}", "--layer", f"agent={agent_layer}")):
        yield client, agent_layer


def _names(params: Any) -> set[str]:
    async def session(client: Any) -> set[str]:
        return {tool.name for tool in (await client.list_tools()).tools}

    return run_client(params, session)


def test_a_bundle_loaded_through_a_gateway_is_served_read_only(bundle: tuple[Path, str]) -> None:
    car, root = bundle
    with serve_in_thread(cars=[car]) as gateway:
        params = stdio_params("--from", f"ipfs://{root}", "--gateway", gateway.url)

        async def session(client: Any) -> tuple[set[str], Any]:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            return tools, await client.call_tool("memory_recall", {"query": "winger"})

        tools, hits = run_client(params, session)
    assert not tools & WRITE_TOOLS  # a read-only server does not list the write tools
    assert hits.structured_content["result"][0]["key"] == "user_role"  # by meaning: the nearest first


def tampering_proxy(upstream: str, old: bytes, new: bytes) -> Answer:
    """A gateway in front of ``upstream`` that swaps ``old`` for ``new`` (same length) in every answer."""

    def answer(handler: BaseHTTPRequestHandler) -> None:
        got = httpx.get(upstream + handler.path, headers={"Accept": handler.headers.get("Accept", "*/*")})
        content_type = got.headers.get("Content-Type", "application/octet-stream")
        send(handler, got.status_code, got.content.replace(old, new), {"Content-Type": content_type})

    return answer


def test_a_tampered_bundle_is_refused_at_start_with_exit_3(bundle: tuple[Path, str]) -> None:
    car, root = bundle
    with serve_in_thread(cars=[car]) as gateway, \
            serve(tampering_proxy(gateway.url, b"Plays as a winger", b"Plays as a keeper")) as evil:
        run = subprocess.run(
            [sys.executable, "-m", "bundlekit", "mcp", "--from", f"ipfs://{root}", "--gateway", evil],
            env=server_env(), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120, check=False,
        )
    assert run.returncode == 3, run.stderr
    assert run.stderr.startswith("error: ") and "Traceback" not in run.stderr
    assert run.stdout == ""  # no server ever answered


def test_a_write_called_on_a_read_only_server_is_a_tool_error(layered: tuple[SharedClient, Path]) -> None:
    reader, tree = layered

    async def session(client: Any) -> tuple[Any, Any]:
        written = await client.call_tool("memory_write", {
            "key": "project_new", "name": "New", "description": "d", "type": "project", "body": "x",
        })
        return written, await client.call_tool("memory_list", {})

    written, listed = reader.run(session)
    assert written.is_error and written.content[0].text == "Unknown tool: memory_write"
    assert "project_new" not in {row["key"] for row in listed.structured_content["result"]}
    assert not (tree / "project_new.md").exists()


def test_from_with_memory_dir_loads_there_and_is_writable(tmp_path: Path, bundle: tuple[Path, str]) -> None:
    car, _root = bundle
    work = tmp_path / "work"
    params = stdio_params("--from", str(car), "--memory", str(work))

    async def session(client: Any) -> Any:
        return await client.call_tool("memory_write", {
            "key": "project_new", "name": "New", "description": "added over MCP", "type": "project", "body": "x",
        })

    result = run_client(params, session)
    assert not result.is_error, result.content
    assert (work / "project_new.md").is_file() and (work / "user_role.md").is_file()


def test_layers_are_served_as_the_effective_view_read_only(layered: tuple[SharedClient, Path]) -> None:
    reader, _tree = layered

    async def session(client: Any) -> tuple[set[str], Any]:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        return tools, await client.call_tool("memory_list", {})

    tools, listed = reader.run(session)
    assert not tools & WRITE_TOOLS
    assert len(listed.structured_content["result"]) == 3


def test_publish_is_offered_only_when_allowed_and_pins_locally(tmp_path: Path, tree: Path) -> None:
    assert "bundle_publish" not in _names(stdio_params("--memory", str(tree)))
    params = stdio_params("--memory", str(tree), "--allow-publish")
    params.env["BUNDLEKIT_HOME"] = str(tmp_path / "home")

    async def session(client: Any) -> Any:
        return await client.call_tool("bundle_publish", {"pinners": ["local"]})

    result = run_client(params, session)
    assert not result.is_error, result.content
    report = result.structured_content
    assert report["ok"] is True and report["root"].startswith("bafy")
    assert [pin["pinner"] for pin in report["pins"]] == ["local"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "say what to serve"),
        (["--memory", "nowhere"], "no memory tree at nowhere"),
        (["--memory", ".", "--http", "0.0.0.0:9"], "add --host 0.0.0.0"),
        (["--memory", ".", "--host", "0.0.0.0"], "--host applies to --http only"),
        (["--memory", ".", "--http", "99999"], "a port from 1 to 65535"),
        (["--from", "x.car", "--layer", "agent=."], "not both"),
        (["--from", "ftp://nope"], "cannot tell what 'ftp://nope' is"),
        (["--memory", ".", "--layer", "junk"], "is not NAME=URI"),
        (["--memory", ".", "--workspace", "bad!label=x.car"], "the label must be a plain name"),
        (["--memory", ".", "--allow-publish", "--pinner", "nosuch"], "no pinner named 'nosuch'"),
    ],
)
def test_bad_options_exit_2_with_one_line_before_the_sdk_is_imported(
        tmp_path: Path, args: list[str], message: str) -> None:
    run = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "bundlekit", "mcp", *args], cwd=tmp_path, env=server_env(),
        check=False, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
    )
    assert run.returncode == 2, run.stderr
    errors = [line for line in run.stderr.splitlines() if not line.startswith("import time:")]
    assert len(errors) == 1 and message in errors[0], errors
    imported = {line.rsplit("|", 1)[1].strip() for line in run.stderr.splitlines() if line.startswith("import time:")}
    assert imported and not {name.split(".")[0] for name in imported} & {"mcp", "pydantic", "uvicorn", "starlette"}


def test_a_missing_sdk_names_the_extra(tmp_path: Path, tree: Path) -> None:
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "mcp.py").write_text("raise ModuleNotFoundError(\"No module named 'mcp'\", name='mcp')\n")
    env = server_env()
    env["PYTHONPATH"] = f"{blocker}:{env['PYTHONPATH']}"
    run = subprocess.run(
        [sys.executable, "-m", "bundlekit", "mcp", "--memory", str(tree)], env=env, check=False,
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
    )
    assert run.returncode == 2
    assert "pip install -e '.[mcp]'" in run.stderr and "Traceback" not in run.stderr


def test_the_missing_tree_hint_is_a_command_that_makes_the_tree(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "bundlekit", "mcp", "--memory", "fresh"], cwd=tmp_path, env=server_env(), check=False,
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
    )
    hint = run.stderr.split("run `")[1].split("`")[0]
    assert hint == "bundlekit memory -d fresh init"
    made = subprocess.run([sys.executable, "-m", *hint.split()], cwd=tmp_path, env=server_env(), check=False,
                          capture_output=True, text=True, timeout=60)
    assert made.returncode == 0, made.stderr
    assert (tmp_path / "fresh" / "MEMORY.md").is_file()


def test_without_a_source_option_it_serves_the_tree_bundlekit_memory_dir_names(tmp_path: Path, tree: Path) -> None:
    env = {**server_env(), "BUNDLEKIT_MEMORY_DIR": str(tree)}
    run = subprocess.run(
        [sys.executable, "-m", "bundlekit", "mcp"], cwd=tmp_path, env=env, check=False,
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
    )
    assert run.returncode == 0, run.stderr  # stdin closed at once: the client went away
    assert f"serving {tree} read-write over stdio" in run.stderr
