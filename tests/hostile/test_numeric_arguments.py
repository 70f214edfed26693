"""Numeric arguments are range-checked on their text before conversion, at every surface (``bundlekit/_bounds.py``).

The reproductions (issue 24, item 7): the MCP prompt ``memory_context`` with ``max_tokens`` of
5,000 digits passed a digit check, then ``int()`` raised (CPython refuses to convert more than
4,300 digits): error code 0 and a traceback. Found while attacking: ``memory recall --limit
9223372036854775808`` passed click's ``IntRange(min=0)`` and ended in ``OverflowError: Python
int too large to convert to SQLite INTEGER``; ``load --deadline nan`` was accepted (a deadline
that never passes); ``mcp --http`` with a 5,000-digit port raised from ``int()``.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from bundlekit._bounds import MAX_COUNT, Bound, parse_seconds
from bundlekit.cli import cli
from bundlekit.gateway.dag import parse_entity_bytes
from bundlekit.memory import Memory

from .conftest import child_env

DIGITS_5000 = "9" * 5000
JUST_OVER_64_BITS = str(2**63)
#: Every integer option of the CLI, with what it needs to reach its conversion.
INTEGER_OPTIONS = [
    ("memory", "-d", "{tree}", "recall", "x", "--limit"),
    ("memory", "-d", "{tree}", "context", "--max-tokens"),
    ("memory", "-d", "{tree}", "write", "k", "--name", "n", "--description", "d", "--type", "user", "--body", "b",
     "--expect-revision"),
    ("log", "{car}", "--depth"),
    ("unpin", "--pinner", "local", "--name-prefix", "m", "--keep"),
    ("verify", "{car}", "--max-entries"),
    ("verify", "{car}", "--max-visits"),
    ("verify", "{car}", "--max-depth"),
    ("verify", "{car}", "--max-links"),
    ("verify", "{car}", "--max-bytes"),
    ("verify", "{car}", "--max-block-size"),
    ("pack", "{tree}", "--chunk-size"),
    ("pack", "{tree}", "--max-links"),
    ("serve", "--port"),
    ("serve", "--max-connections"),
    ("load", "{car}", "--max-bytes"),
]


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("BUNDLEKIT_HOME", str(tmp_path / "home"))
    root = tmp_path / "t"
    Memory(root).write("k", name="n", description="d", type="user", body="b")
    return root


def _args(template: tuple[str, ...], tree: Path, value: str) -> list[str]:
    return [part.format(tree=tree, car=tree / "missing.car") for part in template] + [value]


@pytest.mark.parametrize("value", [DIGITS_5000, JUST_OVER_64_BITS, "-1", "1e3", "0x10", "٣"],
                         ids=["5000-digits", "2**63", "negative", "float", "hex", "arabic-digit"])
@pytest.mark.parametrize("template", INTEGER_OPTIONS, ids=lambda t: f"{t[0]}-{t[-1]}")
def test_an_integer_option_out_of_range_is_a_usage_error_that_does_not_echo_it(
    tree: Path, template: tuple[str, ...], value: str
) -> None:
    result = CliRunner().invoke(cli, _args(template, tree, value))
    assert result.exit_code == 2, (result.output, result.exception)
    assert f"Invalid value for '{template[-1]}'" in result.stderr
    assert not re.search(r"[0-9]{40}", result.stderr)


def test_recall_limit_past_a_64_bit_integer_no_longer_overflows_sqlite(tree: Path) -> None:
    result = CliRunner().invoke(cli, ["memory", "-d", str(tree), "recall", "n", "--limit", JUST_OVER_64_BITS])
    assert result.exit_code == 2 and "must be from 0 to 1000000" in result.stderr


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "0", "-5", "1e999", "1" * 500, "5 s"])
def test_a_deadline_that_is_not_a_finite_positive_number_is_a_usage_error(tree: Path, value: str) -> None:
    result = CliRunner().invoke(cli, ["load", str(tree / "missing.car"), "--deadline", value])
    assert result.exit_code == 2 and "Invalid value for '--deadline'" in result.stderr


def test_mcp_http_port_of_5000_digits_is_a_usage_error(tree: Path) -> None:
    result = CliRunner().invoke(cli, ["mcp", "--memory", str(tree), "--http", DIGITS_5000])
    assert result.exit_code == 2 and "a port from 1 to 65535" in result.stderr
    assert len(result.stderr) < 200


def test_gateway_entity_bytes_of_5000_digits_is_malformed() -> None:
    with pytest.raises(ValueError):
        parse_entity_bytes(f"{DIGITS_5000}:*")


def _mcp_exchange(tree: Path, home: Path, requests: list[dict[str, object]]) -> tuple[dict[int, dict[str, object]], str]:
    """Send ``requests`` (after the handshake) to ``bundlekit mcp`` over stdio, raw: the answers by id, stderr."""
    import mcp.types

    lines: list[dict[str, object]] = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize",
         "params": {"protocolVersion": mcp.types.LATEST_PROTOCOL_VERSION, "capabilities": {},
                    "clientInfo": {"name": "hostile", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        *requests,
    ]
    answers = {}
    with subprocess.Popen([sys.executable, "-m", "bundlekit", "mcp", "--memory", str(tree)],
                          env={**child_env(), "BUNDLEKIT_HOME": str(home)},
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        for line in lines:
            proc.stdin.write(json.dumps(line) + "\n")
            proc.stdin.flush()
            if "id" in line:
                answer = json.loads(proc.stdout.readline())
                answers[answer["id"]] = answer
        proc.stdin.close()  # end of input: the server stops
        proc.wait(timeout=60)
        stderr = proc.stderr.read()
    return answers, stderr


STRIPE = "sk_live_" + "Qz751HqW3eKz9Lm2Np4Qr6x9K"
# the hostile prompt requests, by id: 2 and 3 a too-long max_tokens; 4, 5 and 6 an unknown prompt or argument
# (6 a credential named as the prompt)
PROMPT_REQUESTS: list[dict[str, object]] = [
    {"jsonrpc": "2.0", "id": 2, "method": "prompts/get",
     "params": {"name": "memory_context", "arguments": {"max_tokens": DIGITS_5000}}},
    {"jsonrpc": "2.0", "id": 3, "method": "prompts/get",
     "params": {"name": "memory_context", "arguments": {"max_tokens": JUST_OVER_64_BITS}}},
    {"jsonrpc": "2.0", "id": 4, "method": "prompts/get", "params": {"name": "no_such_prompt"}},
    {"jsonrpc": "2.0", "id": 5, "method": "prompts/get", "params": {"name": "memory_context", "arguments": {"zz": "1"}}},
    {"jsonrpc": "2.0", "id": 6, "method": "prompts/get", "params": {"name": STRIPE}},
]


@pytest.fixture(scope="module")
def prompt_answers(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[int, dict[str, object]], str]:
    """One ``bundlekit mcp`` over stdio asked every hostile prompt request of the tests below (one server
    start, about a second of CPU, for both): the answers by id, and its stderr."""
    pytest.importorskip("mcp")
    tmp = tmp_path_factory.mktemp("mcp-prompts")
    root = tmp / "t"
    Memory(root).write("k", name="n", description="d", type="user", body="b")
    return _mcp_exchange(root, tmp / "home", PROMPT_REQUESTS)


def test_mcp_prompt_with_5000_digit_max_tokens_answers_invalid_params(
    prompt_answers: tuple[dict[int, dict[str, object]], str]
) -> None:
    answers, stderr = prompt_answers
    for request in (2, 3):
        error = answers[request]["error"]
        assert isinstance(error, dict)
        assert error["code"] == -32602 and "must be from 0 to 100000000" in error["message"]
        assert DIGITS_5000[:40] not in error["message"]
    assert "Traceback" not in stderr


def test_mcp_unknown_prompt_and_unknown_prompt_argument_answer_invalid_params(
    prompt_answers: tuple[dict[int, dict[str, object]], str]
) -> None:
    # The spec's code for an invalid prompt name or arguments (server/prompts, "Error Handling"); they left
    # as error code 0 with a traceback on stderr. A credential named as the prompt is not echoed.
    answers, stderr = prompt_answers
    for request in (4, 5, 6):
        error = answers[request]["error"]
        assert isinstance(error, dict) and error["code"] == -32602, answers[request]
    assert STRIPE not in json.dumps(answers) + stderr
    assert "Traceback" not in stderr


@given(st.text(max_size=60) | st.from_regex(r"[+-]?[0-9]{1,30}", fullmatch=True))
def test_bound_parse_gives_a_number_in_range_or_value_error(text: str) -> None:
    bound = Bound(-5, 10**12)
    try:
        value = bound.parse(text, "n")
    except ValueError as exc:
        assert "n must be" in str(exc)
    else:
        assert -5 <= value <= 10**12


def test_bound_never_converts_more_digits_than_a_64_bit_integer_has() -> None:
    with pytest.raises(ValueError, match="5000 digits"):
        Bound(0, MAX_COUNT).parse(DIGITS_5000, "n")
    assert Bound(0, MAX_COUNT).parse("0" * 30 + "7", "n") == 7  # leading zeros are not digits of the value


def test_seconds_must_be_finite_and_positive() -> None:
    assert parse_seconds("2.5", "d") == 2.5
    for text in ("nan", "inf", "0", "1e10", "-1", ""):
        with pytest.raises(ValueError):
            parse_seconds(text, "d")
