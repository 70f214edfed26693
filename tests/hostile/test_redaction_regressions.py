"""Regressions of issue 24, item 3: a credential in a message. Each reproduction of the issue, then payloads
of our own against the same choke point (``bundlekit/_redact.py``): encoded, split, in file names, in
environment values and in third-party exception text.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from unittest import mock
from urllib.parse import quote

import pytest
from click.testing import CliRunner, Result

from bundlekit._redact import WITHHELD, redact
from bundlekit.bundle.build import BuildOptions
from bundlekit.cli import cli
from bundlekit.memory import Memory
from tests.net import loopback

KEY = "sk-ant-api03-Qz7aB3cD4eF5gH6iJ7kL8mN9oP0x9K"
AWS = "AKIAQ7ABCDEFGHIJKLMZ"
TOKEN = "Qz7kubo7oken5ecretx9K"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    memory = Memory(tmp_path / "tree")
    memory.write("plain", name="Plain", description="nothing secret", type="user", body="hello")
    memory.close()
    return tmp_path / "tree"


def _memory(tree: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["memory", "-d", str(tree), *args])


def _shown(result: Result) -> str:
    return result.stdout + result.stderr


# -- the reproductions -----------------------------------------------------------------------------


def test_memory_note_of_a_credential_refuses_without_printing_it(tree: Path) -> None:
    result = _memory(tree, "note", KEY)
    assert result.exit_code == 1
    assert KEY not in _shown(result)
    assert "looks like an Anthropic API key" in result.stderr


@pytest.mark.parametrize("command", ["show", "forget"])
def test_memory_show_and_forget_of_a_credential_key_do_not_echo_it(tree: Path, command: str) -> None:
    result = _memory(tree, command, KEY)
    assert result.exit_code != 0
    assert KEY not in _shown(result)
    assert WITHHELD in result.stderr


def _call_tool(tree: Path, name: str, arguments: dict[str, Any]) -> str:
    pytest.importorskip("mcp")
    from mcp import Client

    from bundlekit.mcp_server.server import build_server
    from bundlekit.mcp_server.source import ServedMemory
    from bundlekit.mcp_server.tools import MemoryTools

    tools = MemoryTools(ServedMemory(Memory(tree), read_only=False, origin=str(tree)))

    async def call() -> str:
        async with Client(build_server(tools)) as client:
            result = await client.call_tool(name, arguments)
            assert result.is_error
            return " ".join(getattr(block, "text", "") for block in result.content)

    return asyncio.run(call())


def test_mcp_memory_note_of_a_credential_does_not_return_it(tree: Path) -> None:
    text = _call_tool(tree, "memory_note", {"type": KEY})
    assert KEY not in text
    assert "looks like an Anthropic API key" in text


@pytest.mark.parametrize(("field", "value"), [("tags", KEY), ("expected_revision", KEY), ("important", KEY)])
def test_mcp_argument_validation_names_the_field_not_the_value(tree: Path, field: str, value: str) -> None:
    # pydantic's own message quotes the value cut to its ends ("sk-ant-api03-Qz7aB...N9oP0x9K"), which no
    # rule recognises: the server's message names the field and the reason only.
    arguments = {"key": "k", "name": "n", "description": "d", "type": "user", "body": "b", field: value}
    text = _call_tool(tree, "memory_write", arguments)
    assert f"{field}:" in text
    assert KEY[:16] not in text and KEY[-12:] not in text


@pytest.fixture
def echoing_node() -> Iterator[tuple[str, list[str]]]:
    """A kubo stand-in that records each request target and answers 404 echoing it, as a proxy's error
    page may."""
    seen: list[str] = []

    def answer(handler: Any) -> None:
        seen.append(handler.path)
        loopback.send(handler, 404, f"404 page not found: {handler.path}".encode())

    with loopback.serve(answer) as url:
        yield url, seen


def test_a_kubo_url_keeps_its_query_after_the_api_path(echoing_node: tuple[str, list[str]], tmp_path: Path) -> None:
    url, seen = echoing_node
    env = {"BUNDLEKIT_KUBO_URL": f"{url}/node/?token={TOKEN}", "BUNDLEKIT_HOME": str(tmp_path)}
    CliRunner(env=env).invoke(cli, ["pinners", "--check"])
    assert seen == [f"/node/api/v0/version?token={TOKEN}"]


def test_pinners_check_does_not_print_a_token_in_the_kubo_url(
    echoing_node: tuple[str, list[str]], tmp_path: Path
) -> None:
    url, _seen = echoing_node
    env = {"BUNDLEKIT_KUBO_URL": f"{url}/?token={TOKEN}", "BUNDLEKIT_HOME": str(tmp_path)}
    for args in (["pinners", "--check"], ["pinners", "--check", "--json"]):
        result = CliRunner(env=env).invoke(cli, args)
        assert "kubo" in _shown(result)
        assert TOKEN not in _shown(result)


def _planted_bundle(tmp_path: Path) -> Path:
    """A bundle carrying a credential in a memory's description and body and in a timeline entry, and a bidi
    override in its name: what a foreign or older writer may publish (our guard would refuse to build it)."""
    from bundlekit.bundle.build import build_bundle
    from bundlekit import _secrets as secrets
    from bundlekit.memory import screen

    clock = datetime(2026, 4, 14, 12, 0, tzinfo=UTC)
    root = tmp_path / "planted"
    memory = Memory(root, namespace="coach", clock=lambda: clock)
    memory.write("leaky", name="Le\u202eaky", description=f"desc {KEY}", type="user",
                 body=f"body {AWS} and [a link](https://agent:{TOKEN}@example.org/x)", allow_secrets=True)
    memory.note("session", summary="fine")
    memory.close()
    day = next((root / "timeline").glob("*.jsonl"))
    day.write_text(day.read_text() + json.dumps({"ts": "2026-04-14T12:00:01Z", "type": "session",
                                                 "summary": f"pasted {KEY}"}) + "\n")
    car = tmp_path / "planted.car"
    noop = lambda *args, **kwargs: None  # noqa: E731
    with mock.patch.object(secrets, "guard", noop), mock.patch.object(screen, "guard", noop), \
            mock.patch.object(screen, "guard_record", noop), mock.patch.object(screen, "guard_entry", noop):
        build_bundle(root, car, options=BuildOptions(created=clock, namespace="coach"))
    return car


def _pages(car: Path) -> dict[str, str]:
    pytest.importorskip("jinja2")
    from bundlekit.car.index import CarIndex
    from bundlekit.ipld.cid import cid_to_str
    from bundlekit.ui.app import UIApp

    pages = {}
    with CarIndex(car) as index:
        root = cid_to_str(index.roots[0])
        app = UIApp(index.get, lambda: [])
        for target in (f"/ui/bundle/{root}", f"/ui/bundle/{root}/memory/leaky",
                       f"/ui/bundle/{root}/timeline?day=2026-04-14", f"/ui/bundle/{root}?q={quote(KEY)}",
                       f"/ui/bundle/{root}/memory/{quote(KEY)}"):
            response = app("GET", target, {})
            pages[target] = b"".join(response.body).decode("utf-8")
    return pages


def test_the_interface_withholds_what_the_cli_withholds(tmp_path: Path) -> None:
    pages = _pages(_planted_bundle(tmp_path))
    for target, html in pages.items():
        for secret in (KEY, AWS, TOKEN):
            assert secret not in html, f"{target} shows {secret}"
    memory_page = next(html for target, html in pages.items() if target.endswith("/memory/leaky"))
    assert memory_page.count(WITHHELD) >= 3  # description, body's key, the link's password
    assert WITHHELD in next(html for target, html in pages.items() if "timeline" in target)


def test_the_interface_shows_a_bidi_override_as_a_visible_escape(tmp_path: Path) -> None:
    pages = _pages(_planted_bundle(tmp_path))
    for html in pages.values():
        assert "\u202e" not in html
    assert any("Le\\u202eaky" in html for html in pages.values())


# -- payloads of our own ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spelled",
    [
        quote(KEY, safe=""),  # percent-encoded
        quote(quote(KEY, safe=""), safe=""),  # twice
        KEY.replace("s", "\\u0073", 1),  # a JSON escape
        KEY.replace("s", "\\\\x73", 1),  # a repr'd Python escape
        base64.b64encode(KEY.encode()).decode(),  # base64
        base64.urlsafe_b64encode(f"user:{KEY}".encode()).decode().rstrip("="),  # a Basic header's base64url
        json.dumps({"k": KEY})[1:-1],  # inside JSON
    ],
)
def test_an_encoded_credential_is_withheld(spelled: str) -> None:
    shown = redact(f"error: cannot use '{spelled}': refused")
    assert WITHHELD in shown
    assert spelled not in shown and KEY not in shown


def test_the_rest_of_a_credential_after_an_escaped_line_break_is_withheld() -> None:
    # repr() of a token pasted over two lines: the first line matches a rule, the second must go with it.
    shown = redact(repr(f"{KEY}\nQz7secondhalfx9K"))
    assert "Qz7secondhalfx9K" not in shown


def test_a_pem_private_key_is_withheld_whole() -> None:
    pem = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----"
    assert redact(f"bad key file: {pem!r}") == f"bad key file: '{WITHHELD}'"


def test_a_credential_in_a_file_name_is_not_printed(tmp_path: Path) -> None:
    car = tmp_path / f"{AWS}.car"
    car.write_bytes(b"not a car")
    result = CliRunner().invoke(cli, ["verify", str(car)])
    assert result.exit_code != 0
    assert AWS not in _shown(result)


def test_a_credential_in_an_environment_value_echoed_by_an_error_is_not_printed(tmp_path: Path) -> None:
    # BUNDLEKIT_MEMORY_DIR names a directory that does not exist: the error names the path.
    env = {"BUNDLEKIT_MEMORY_DIR": str(tmp_path / KEY)}
    result = CliRunner(env=env).invoke(cli, ["memory", "list"])
    assert result.exit_code != 0
    assert KEY not in _shown(result)


def test_a_url_password_normalised_to_one_slash_is_withheld() -> None:
    # click.Path and os.path turn "https://u:p@h" into "https:/u:p@h".
    assert TOKEN not in redact(f"cannot read https:/agent:{TOKEN}@127.0.0.1/x: no such file")


def test_redaction_keeps_a_json_line_json() -> None:
    line = json.dumps({"error": f"no memory {KEY}", "url": f"http://h/?api_key={TOKEN}&page=2"})
    shown = json.loads(redact(line))
    assert shown == {"error": f"no memory {WITHHELD}", "url": f"http://h/?api_key={WITHHELD}&page=2"}


def test_prose_that_only_resembles_a_credential_is_left_alone() -> None:
    prose = "use sk-learn-compatible-pipeline, risk-taking, AKIA and eyJ; see https://example.org/?page=2"
    assert redact(prose) == prose


def test_a_credential_split_by_a_line_break_before_any_rule_matches_is_withheld(tree: Path) -> None:
    # The first line alone ("sk-ant-api03-Qz7") is too short for the rule; joined, it is the key.
    result = _memory(tree, "show", KEY[:16] + "\n" + KEY[16:])
    assert KEY[:16] not in _shown(result) and KEY[16:] not in _shown(result)


def test_a_credential_with_a_zero_width_space_inside_is_withheld(tree: Path) -> None:
    result = _memory(tree, "show", KEY[:20] + "\u200b" + KEY[20:])
    assert KEY[:20] not in _shown(result) and KEY[20:] not in _shown(result)


def test_a_base64_credential_after_the_folders_of_a_path_is_withheld(tmp_path: Path) -> None:
    # The run of base64 characters starts at the path's first "/": the credential is at another alignment.
    name = base64.b64encode(KEY.encode()).decode()
    result = CliRunner().invoke(cli, ["verify", str(tmp_path / "abc" / f"{name}.car")])
    assert name not in _shown(result) and name.rstrip("=")[:24] not in _shown(result)


def test_the_gateway_error_answers_do_not_echo_a_credential(tree: Path, tmp_path: Path) -> None:
    import urllib.error
    import urllib.request

    from bundlekit.bundle.build import build_bundle
    from bundlekit.gateway.server import close_source, make_source, serve_in_thread

    root = build_bundle(tree, tmp_path / "b.car").root_cid
    source = make_source(cars=[tmp_path / "b.car"])
    try:
        with serve_in_thread(source) as server:
            base = f"http://127.0.0.1:{server.server_address[1]}"
            for path in (f"/ipfs/{KEY}/", f"/ipfs/{root}/{KEY}", f"/ipfs/{root}?format={KEY}"):
                with pytest.raises(urllib.error.HTTPError) as refused:
                    urllib.request.urlopen(base + path, timeout=30)  # noqa: S310 - loopback
                body = refused.value.read().decode()
                refused.value.close()
                assert WITHHELD in body and KEY not in body, path
    finally:
        close_source(source)


def test_a_credential_behind_markdown_escapes_is_withheld_by_show_and_by_the_interface(tmp_path: Path) -> None:
    # "sk\-ant\-api03\-..." is no rule's match as stored, and Markdown renders it as the key.
    escaped = KEY.replace("-", "\\-")
    memory = Memory(tmp_path / "tree")
    memory.write("escaped", name="Escaped", description="d", type="user", body=f"the key: {escaped}")
    memory.close()
    shown = _shown(_memory(tmp_path / "tree", "show", "escaped"))
    assert escaped not in shown and WITHHELD in shown

    from bundlekit.bundle.build import build_bundle

    car = tmp_path / "escaped.car"
    build_bundle(tmp_path / "tree", car)
    pytest.importorskip("jinja2")
    from bundlekit.car.index import CarIndex
    from bundlekit.ipld.cid import cid_to_str
    from bundlekit.ui.app import UIApp

    with CarIndex(car) as index:
        root = cid_to_str(index.roots[0])
        page = b"".join(UIApp(index.get, lambda: [])("GET", f"/ui/bundle/{root}/memory/escaped", {}).body).decode()
    assert KEY not in page and escaped not in page


def test_the_mcp_sdks_log_lines_pass_the_redaction(tree: Path, caplog: pytest.LogCaptureFixture) -> None:
    # The SDK warns "Invalid Host header: <the header>" on the server's stderr; a peer chooses the header.
    pytest.importorskip("mcp")
    import logging

    from bundlekit.mcp_server.server import build_server
    from bundlekit.mcp_server.source import ServedMemory
    from bundlekit.mcp_server.tools import MemoryTools

    build_server(MemoryTools(ServedMemory(Memory(tree), read_only=True, origin=str(tree))))
    logging.getLogger("mcp.server.transport_security").warning("Invalid Host header: %s", KEY)
    assert KEY not in caplog.text and WITHHELD in caplog.text


def test_a_query_credential_split_into_a_json_key_and_value_is_withheld() -> None:
    """``memory note`` reads ``K=V`` pairs: ``url?token=VALUE`` prints as ``{"url?token":"VALUE"}``."""
    from bundlekit._redact import redact

    shown = redact('{"http://127.0.0.1:9/api?token":"Qz7tok3n5ecretx9K","ts":"x"}')
    assert "Qz7tok3n5ecretx9K" not in shown and '"ts":"x"' in shown
    assert redact('{"key": "plain", "tokens": 3}') == '{"key": "plain", "tokens": 3}'


def test_a_text_still_decoding_to_a_credential_withholds_only_its_lines_that_do() -> None:
    """The last resort (a credential spread over several escaped words, which no word decodes to alone) withholds
    the lines that decode to one, not the whole text: one line of a listing does not hide the others."""
    escaped = "-----B\\u0045GIN RSA PRIVATE KEY-----"
    assert redact(escaped) == WITHHELD
    assert redact(f"a\tfirst\n{escaped} here\nb\tlast!") == f"a\tfirst\n{WITHHELD}\nb\tlast!"
    key = f"{escaped}\nQz7keyb0dy5ecretx9K\nQz7m0re5ecretx9K\n-----END RSA PRIVATE KEY-----"
    assert redact(f"first line\n{key}\nlast line") == "\n".join(["first line", *[WITHHELD] * 4, "last line"])
    assert redact(f"first line\n{escaped}\nQz7keyb0dy5ecretx9K") == "\n".join(["first line", WITHHELD, WITHHELD])


def test_memory_list_shows_every_other_memory_beside_one_holding_an_escaped_key_header(tree: Path) -> None:
    memory = Memory(tree)
    spread = "see -----B\u200bEGIN RSA PRIVATE KEY----- here"  # no word of it decodes to a credential alone
    memory.write("spread", name="S", description=spread, type="user", body="b")
    memory.write("zulu", name="Z", description="after it", type="user", body="b")
    memory.close()
    for _listing in ("joined", "kept"):  # the rows SQLite joined, then the lines the first list kept
        result = _memory(tree, "list")
        lines = result.stdout.splitlines()
        assert result.exit_code == 0 and "BEGIN" not in result.stdout and lines[1] == WITHHELD
        assert lines[0].startswith("plain\t") and lines[2].startswith("zulu\t") and len(lines) == 3

@pytest.mark.parametrize("between", [" ", "  ", "\t", "\n", "\r\n", "\u3000", "\x85", "\u2028", "\xa0", "\x1c"])
def test_a_query_credential_in_a_json_key_with_whitespace_before_its_colon_is_withheld(between: str) -> None:
    """JSON allows whitespace between a key and its ``:`` and the rule's ``\\s*`` matches it: the mark that gates
    the rule (``_marks.JSON_KEY``) must be found there too, not only for ``":`` (it was: the value leaked)."""
    shown = redact('{"http://127.0.0.1:9/api?token"' + between + ':"Qz7tok3n5ecretx9K","ts":"x"}')
    assert "Qz7tok3n5ecretx9K" not in shown and WITHHELD in shown
