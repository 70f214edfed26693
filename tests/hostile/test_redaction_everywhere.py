"""A credential placed in any argument of any command or MCP tool never comes back (issue 24, "one choke point").

The command tree is read from click itself (every leaf command, every parameter that takes a value, the
``memory`` group's ``-d`` too), so a command added later is covered without editing this file. Each run
is in process (click's ``CliRunner``), with the blocking serve loops of ``serve``, ``open`` and ``mcp``
replaced by an immediate return: everything a command checks and prints before serving still runs.
The MCP tools are read from the server's own list (every property of every input schema) and called
through the SDK's in-process client.
"""

from __future__ import annotations

import asyncio
import base64
import importlib.util
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bundlekit.cli import cli
from bundlekit.memory import Memory

HERE = Path(__file__).parent


def _helpers() -> Any:
    spec = importlib.util.spec_from_file_location("hostile_credentials", HERE / "credentials.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


creds = _helpers()
Credential = creds.Credential

A_CID = "bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e"
SETTINGS = settings(max_examples=60, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

# -- the command tree ------------------------------------------------------------------------------


def _leaves(group: click.Group, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None
        if isinstance(command, click.Group):
            yield from _leaves(command, (*path, name))
        else:
            yield (*path, name), command


def _takes_value(param: click.Parameter) -> bool:
    return not (isinstance(param, click.Option) and (param.is_flag or param.count)) and param.name != "help"


def _slots() -> list[tuple[tuple[str, ...], str]]:
    """(command path, parameter name) for every parameter of every command that takes a value;
    ``("memory", "<group -d>")`` for the memory group's own directory option."""
    slots = [(path, param.name or "") for path, command in _leaves(cli) for param in command.params
             if _takes_value(param)]
    slots.append((("memory", "list"), "<group -d>"))
    return slots


SLOTS = _slots()


def _benign(param: click.Parameter, workspace: Path) -> list[str]:
    """A value the parameter accepts, for the required parameters the credential is not placed in."""
    kind = param.type
    if isinstance(kind, click.Choice):
        return [str(kind.choices[0])]
    if isinstance(kind, (click.IntRange, click.FloatRange)) or kind in (click.INT, click.FLOAT):
        return ["1"]
    if isinstance(kind, (click.Path, click.File)):
        return [str(workspace / "tree")]
    if getattr(kind, "name", "") == "cid":
        return [A_CID]
    return ["x"]


def _argv(path: tuple[str, ...], slot: str, text: str, workspace: Path) -> list[str]:
    """The command line with ``text`` in parameter ``slot`` and an accepted value in every other required one."""
    if slot == "<group -d>":
        return ["memory", "-d", text, *path[1:]]
    command = dict(_leaves(cli))[path]
    options: list[str] = []
    arguments: list[str] = []
    if path[0] in ("serve", "open") and slot != "port":
        options += ["--port", "0"]
    for param in command.params:
        if not _takes_value(param):
            continue
        if param.name == slot:
            values = [text] * max(1, param.nargs)
        elif param.required:
            values = _benign(param, workspace) * max(1, param.nargs)
        else:
            continue
        if isinstance(param, click.Argument):
            arguments += values
        else:
            options += [param.opts[0], *values]
    return [*path, *options, "--", *arguments] if arguments else [*path, *options]


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A memory tree, a block store and no network; the serve loops return at once."""
    memory = Memory(tmp_path / "tree")
    memory.write("plain", name="Plain", description="nothing secret", type="user", body="hello")
    memory.close()
    monkeypatch.setenv("BUNDLEKIT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("BUNDLEKIT_MEMORY_DIR", str(tmp_path / "tree"))
    monkeypatch.setenv("CI", "true")
    monkeypatch.chdir(tmp_path)
    from bundlekit.gateway.server import GatewayServer
    from bundlekit.mcp_server import server as mcp_server

    monkeypatch.setattr(GatewayServer, "serve_forever", lambda self, poll_interval=0.5: None)
    monkeypatch.setattr(mcp_server, "run_stdio", lambda tools: None)
    monkeypatch.setattr(mcp_server, "run_http", lambda tools, host, port: None)
    return tmp_path


def _run(argv: list[str]) -> str:
    result = CliRunner().invoke(cli, argv, catch_exceptions=True)
    shown = result.stdout + result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        shown += repr(result.exception)  # a traceback would print it
    return shown


def _command_leaks(credential: Any, slot: tuple[tuple[str, ...], str], workspace: Path) -> str | None:
    argv = _argv(*slot, credential.text, workspace)
    shown = _run(argv)
    return f"{' '.join(slot[0])} [{slot[1]}] printed the {credential.family} credential:\n{shown}" \
        if credential.leaked_in(shown) else None


def test_the_command_tree_is_read_whole() -> None:
    # The sweep is only as good as its reach: every command family is in it.
    families = {path[0] for path, _name in SLOTS}
    assert {"memory", "build", "pin", "load", "serve", "mcp", "convert", "name", "store"} <= families
    assert len(SLOTS) > 150


def test_no_argument_of_any_command_prints_a_credential(workspace: Path) -> None:
    # Every parameter of every command, each with one family's credential in turn.
    examples = creds.examples()
    leaks = [leak for n, slot in enumerate(SLOTS)
             if (leak := _command_leaks(examples[n % len(examples)], slot, workspace)) is not None]
    assert not leaks, "\n\n".join(leaks[:5])


@SETTINGS
@given(credential=creds.CREDENTIALS, slot=st.sampled_from(SLOTS))
def test_a_drawn_credential_in_a_drawn_argument_is_never_printed(
    workspace: Path, credential: Any, slot: tuple[tuple[str, ...], str]
) -> None:
    leak = _command_leaks(credential, slot, workspace)
    assert leak is None, leak


# -- the MCP tools ---------------------------------------------------------------------------------


def _values_for(schema: dict[str, Any], text: str) -> list[Any]:
    """Ways to put ``text`` into a property of this schema: as its type wants it, and as a bare string."""
    kinds = {schema.get("type")} | {item.get("type") for item in schema.get("anyOf", [])}
    values: list[Any] = [text]
    if "array" in kinds:
        values.append([text])
    if "object" in kinds:
        values += [{text: text}, {"summary": text}]
    return values


def _mcp_outputs(tree: Path, credential: Any) -> list[str]:
    """Every text the server answers when ``credential`` is put in each property of each tool, in a tool's
    name, a resource URI and the prompt's argument."""
    pytest.importorskip("mcp")
    from mcp import Client

    from bundlekit.mcp_server.server import build_server
    from bundlekit.mcp_server.source import ServedMemory
    from bundlekit.mcp_server.tools import MemoryTools

    tools = MemoryTools(ServedMemory(Memory(tree), read_only=False, origin=str(tree)))
    shown: list[str] = []

    async def session() -> None:
        async with Client(build_server(tools)) as client:
            listed = await client.list_tools()
            for tool in listed.tools:
                properties: dict[str, Any] = tool.input_schema.get("properties", {})
                base = {"key": "plain", "name": "n", "description": "d", "type": "user", "body": "b", "query": "q"}
                for prop, schema in properties.items():
                    for value in _values_for(schema, credential.text):
                        arguments = {k: v for k, v in base.items() if k in properties}
                        arguments[prop] = value
                        result = await client.call_tool(tool.name, arguments)
                        shown.append(json.dumps(result.model_dump(mode="json"), ensure_ascii=False))
            result = await client.call_tool(credential.text, {})
            shown.append(json.dumps(result.model_dump(mode="json"), ensure_ascii=False))
            for call in (lambda: client.read_resource(f"memory://{credential.text}"),
                         lambda: client.read_resource(f"memory://timeline/{credential.text}"),
                         lambda: client.get_prompt("memory_context", {"max_tokens": credential.text})):
                try:
                    answer = await call()
                    shown.append(json.dumps(answer.model_dump(mode="json"), ensure_ascii=False))
                except Exception as exc:  # noqa: BLE001 - an error's text is what the client sees
                    shown.append(str(exc))

    asyncio.run(session())
    return shown


def test_no_argument_of_any_mcp_tool_returns_a_credential(tmp_path: Path) -> None:
    memory = Memory(tmp_path / "tree")
    memory.write("plain", name="Plain", description="nothing secret", type="user", body="hello")
    memory.close()
    for credential in creds.examples():
        leaks = [text for text in _mcp_outputs(tmp_path / "tree", credential) if credential.leaked_in(text)]
        assert not leaks, f"{credential.family}: {leaks[:3]}"


@settings(max_examples=15, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(credential=creds.CREDENTIALS)
def test_a_drawn_credential_in_any_mcp_argument_is_never_returned(tmp_path: Path, credential: Any) -> None:
    tree = tmp_path / "tree"
    if not tree.exists():
        Memory(tree).close()
    leaks = [text for text in _mcp_outputs(tree, credential) if credential.leaked_in(text)]
    assert not leaks, leaks[:3]


# -- the redaction itself, over spellings of a credential -----------------------------------------

SPELLINGS = ("plain", "percent", "percent twice", "one \\u escape", "repr split", "zero-width space", "base64",
             "base64url", "markdown escapes", "json string")


def _spelled(kind: str, text: str, at: int) -> str:
    """``text`` spelled as ``kind``; ``at`` picks the place of a split, an escape or a zero-width space."""
    from urllib.parse import quote

    place = 1 + at % (len(text) - 1)
    return {
        "plain": lambda: text,
        "percent": lambda: quote(text, safe=""),
        "percent twice": lambda: quote(quote(text, safe=""), safe=""),
        "one \\u escape": lambda: text[:place] + f"\\u{ord(text[place]):04x}" + text[place + 1:],
        "repr split": lambda: repr(text[:place] + "\n" + text[place:])[1:-1],
        "zero-width space": lambda: text[:place] + "\u200b" + text[place:],
        "base64": lambda: base64.b64encode((":" * (at % 3) + text).encode()).decode(),
        "base64url": lambda: base64.urlsafe_b64encode(text.encode()).decode().rstrip("="),
        "markdown escapes": lambda: text.replace("-", "\\-").replace("_", "\\_"),
        "json string": lambda: json.dumps(text)[1:-1],
    }[kind]()


@settings(max_examples=400, deadline=None, derandomize=True)
@given(credential=creds.CREDENTIALS, kind=st.sampled_from(SPELLINGS), at=st.integers(0, 10_000),
       before=st.sampled_from(["error: ", "'", '"', "(", "key=", "path/", "[", "<"]),
       after=st.sampled_from(["", "'", '"', ")", " more", ".", ",x", "/y", ">"]))
def test_no_spelling_of_a_credential_survives_the_redaction(
    credential: Any, kind: str, at: int, before: str, after: str
) -> None:
    from bundlekit._redact import redact

    if credential.family == "pem" and kind == "repr split":
        return  # a PEM key holds line breaks already: repr spells them the same way
    spelled = _spelled(kind, credential.text, at)
    shown = redact(f"{before}{spelled}{after}")
    assert not credential.leaked_in(shown), shown
    assert kind == "plain" or spelled not in shown, shown
