"""A kept ``memory list`` printed as the bytes it was read as (``Memory.list_text(printed=True)``,
``_redact.shown_as_is``, ``cli/output.data`` given bytes): only when every output check would leave its text as
it is, and then the very bytes the text path prints; a kept file changed by hand to hold anything a check acts
on (a terminal escape, a credential, a line separator, an ``@``, bytes that are not UTF-8) takes the text path
and is shown as any listing is. The listings here are past ``DEEP_SEARCH_LIMIT`` characters: shorter ones always
take the text path."""

from __future__ import annotations

import io
import os
import sqlite3
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bundlekit._redact as redact_module
from bundlekit._redact import DEEP_SEARCH_LIMIT, redact, shown_as_is
from bundlekit._secrets import find_secrets
from bundlekit._terminal import printable
from bundlekit.cli import cli, output
from bundlekit.memory import Memory, listfile

from .conftest import count_joins

pytestmark = pytest.mark.skipif(listfile._listing_matches is None, reason="the compiled listing check is not built here")

_HEADER = struct.Struct("<8sIIqqQQ")
COUNT = 700  # lines of ~100 characters: past DEEP_SEARCH_LIMIT


def _memory_file(key: str) -> str:
    return (f"---\nname: Memory {key}\ndescription: what the team decided about {key} — in short\ntype: project\n"
            f"created: 2026-01-01\nupdated: 2026-01-02\n---\n\nThe body of {key}.\n")


def _large(root: Path) -> Path:
    """A tree whose listing is past DEEP_SEARCH_LIMIT characters, listed once (its lines kept)."""
    root.mkdir()
    for n in range(COUNT):
        path = root / f"memory_{n:04d}.md"
        path.write_text(_memory_file(f"memory_{n:04d}"), encoding="utf-8")
        os.utime(path, (1_767_225_600, 1_767_225_600))  # dated in the past: never racy against the index
    Memory(root).init()
    text = Memory(root).list_text()
    assert len(text) > DEEP_SEARCH_LIMIT and (root / ".bundlekit" / listfile.LISTING_FILE).is_file()
    return root


@pytest.fixture
def large(tmp_path: Path) -> Path:
    return _large(tmp_path / "large")


def _kept(root: Path) -> Path:
    return root / ".bundlekit" / listfile.LISTING_FILE


def _forge(root: Path, line: str | bytes) -> Path:
    """``root`` with its kept listing's second line replaced by ``line`` (the index state kept: still read)."""
    data = _kept(root).read_bytes()
    magic, version, reserved, gen, written_ns, text_len, _flags_len = _HEADER.unpack_from(data)
    lines = data[_HEADER.size : _HEADER.size + text_len].split(b"\n")
    lines[1] = line.encode("utf-8") if isinstance(line, str) else line
    body = b"\n".join(lines)
    _kept(root).write_bytes(_HEADER.pack(magic, version, reserved, gen, written_ns, len(body), 0) + body)
    return root


def _printed(root: Path) -> bytes:
    """``memory list``'s stdout, as the command prints it (the user's home never read: a temporary one)."""
    env = {"BUNDLEKIT_HOME": str(root.parent / "home"), "BUNDLEKIT_MEMORY_DIR": None, "CI": None}
    result = CliRunner().invoke(cli, ["memory", "list", "-d", str(root)], env=env, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout_bytes


def test_a_clean_kept_listing_is_given_as_its_bytes_and_prints_what_the_text_path_prints(large: Path) -> None:
    printed = Memory(large).list_text(printed=True)
    text = Memory(large).list_text()
    assert isinstance(printed, bytes) and printed == text.encode("utf-8")
    assert printed == _kept(large).read_bytes()[_HEADER.size :]  # no flagged names in this tree
    assert _printed(large) == printed + b"\n"


def test_a_clean_listing_joined_by_sqlite_is_given_as_its_bytes_too(large: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kept = _printed(large)
    _kept(large).unlink()  # no kept lines: SQLite joins the rows (as bytes) and keeps them
    joined = count_joins(monkeypatch)
    printed = Memory(large).list_text(printed=True)
    assert joined == [1] and isinstance(printed, bytes) and printed + b"\n" == kept
    assert _kept(large).is_file() and _printed(large) == kept and joined == [1]


def test_joined_lines_that_are_not_utf8_are_not_shown(large: Path) -> None:
    """A row's ``line`` put there by hand as bytes that are not UTF-8: the listing is made from the files."""
    before = Memory(large).list_text()
    _kept(large).unlink()
    conn = sqlite3.connect(large / ".bundlekit" / "index.sqlite")
    conn.execute("UPDATE memory SET line = CAST(X'6869FF' AS TEXT) WHERE key = 'memory_0001'")
    conn.commit()
    conn.close()
    assert Memory(large).list_text() == before


@pytest.mark.parametrize(
    ("planted", "shown"),
    [
        ("\x1b[2J", "\\x1b[2J"),  # a terminal escape: escaped, as any listing's
        ("\u202e", "\\u202e"),  # a bidi override
        ("\x85", "\\x85"),  # a C1 control
    ],
)
def test_a_kept_line_with_a_control_is_escaped_not_printed_as_bytes(large: Path, planted: str, shown: str) -> None:
    second = Memory(large).list_text().split("\n")[1]
    _forge(large, f"{second} {planted}")
    assert isinstance(Memory(large).list_text(printed=True), str)
    out = _printed(large).decode("utf-8")
    assert out.split("\n")[1] == f"{second} {shown}" and planted not in out


def test_a_kept_line_showing_a_credential_is_made_from_its_file(large: Path) -> None:
    before = _printed(large)
    second = Memory(large).list_text().split("\n")[1]
    _forge(large, second + " sk-ant-api03-Qz7aB3cD4eF5gH6iJ7kL8mN9x9K")
    assert _printed(large) == before


@pytest.mark.parametrize("separator", ["\u2028", "\u2029"])
def test_a_kept_line_with_a_line_separator_is_not_shown(large: Path, separator: str) -> None:
    before = _printed(large)
    second = Memory(large).list_text().split("\n")[1]
    _forge(large, f"{second}{separator}planted\tuser\tr1\tthen\tforged row")
    assert _printed(large) == before


def test_a_kept_line_with_a_url_password_is_redacted(large: Path) -> None:
    second = Memory(large).list_text().split("\n")[1]
    _forge(large, f"{second} https://agent:Qz7pw4567890x9K@127.0.0.1:9/x")
    out = _printed(large).decode("utf-8")
    assert "Qz7pw4567890x9K" not in out and "[withheld]" in out.split("\n")[1]


@pytest.mark.parametrize("bad", [b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\xe2\x82"])
def test_kept_bytes_that_are_not_utf8_are_passed_over(large: Path, bad: bytes) -> None:
    before = _printed(large)
    second = Memory(large).list_text().split("\n")[1].encode("utf-8")
    _forge(large, second + b" " + bad)
    assert _printed(large) == before


def test_a_registered_process_secret_sends_bytes_through_the_text_path(
    large: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    printed = Memory(large).list_text(printed=True)
    assert isinstance(printed, bytes) and shown_as_is(printed)
    secret = "memory_0001\tproject"  # a "secret" the listing holds: it must be replaced
    monkeypatch.setattr(redact_module, "_PROCESS_SECRETS", {secret})
    assert not shown_as_is(printed)
    assert secret not in redact_module.redact(printed.decode("utf-8"))


def _printed_as(root: Path, charset: str) -> bytes:
    """``memory list``'s stdout written by a stdout that encodes text as ``charset`` (``PYTHONIOENCODING``, a
    Latin-1 or cp1252 locale)."""
    env = {"BUNDLEKIT_HOME": str(root.parent / "home"), "BUNDLEKIT_MEMORY_DIR": None, "CI": None}
    result = CliRunner(charset=charset).invoke(cli, ["memory", "list", "-d", str(root)], env=env,
                                               catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout_bytes


def test_a_kept_listing_printed_to_a_stdout_not_utf8_is_encoded_as_that_stdout_encodes_text(large: Path) -> None:
    text = Memory(large).list_text()
    assert shown_as_is(text.encode("utf-8"))  # would take the bytes path
    assert _printed_as(large, "cp1252") == (text + "\n").encode("cp1252")  # the em dash: 0x97, not E2 80 94


def test_a_forged_kept_listing_printed_to_a_latin1_stdout_writes_no_c1_control_byte(large: Path) -> None:
    # Every line forged to hold "Û" (UTF-8 C3 9B) and no em dash: Latin-1 encodes it, so the text path prints
    # it as the one byte DB; its UTF-8 written as is would put 0x9B, an 8-bit CSI, on a Latin-1 terminal.
    data = _kept(large).read_bytes()
    magic, version, reserved, gen, written_ns, text_len, _flags_len = _HEADER.unpack_from(data)
    lines = data[_HEADER.size : _HEADER.size + text_len].split(b"\n")
    forged = b"\n".join(line.split(b"\t", 1)[0] + b"\tproject\tr1\t" + "Ûber plan ".encode("utf-8") * 10
                        for line in lines)
    _kept(large).write_bytes(_HEADER.pack(magic, version, reserved, gen, written_ns, len(forged), 0) + forged)
    assert shown_as_is(forged)
    out = _printed_as(large, "latin-1")
    assert out == forged.decode("utf-8").encode("latin-1") + b"\n"
    assert not any(0x80 <= byte <= 0x9F for byte in out)



# What a forged kept line may hold: every mark cut short or whole, credentials (plain, split by an invisible
# character, base64), escapes, controls of each kind, line separators, multibyte whitespace before a ':', bytes
# that are not UTF-8, a newline that forges a row, and plain text of every UTF-8 length.
CREDENTIAL_PIECES = [
    "sk-ant-api03-Qz7aB3cD4eF5gH6iJ7kL8mN9x9K", "AKIAQ7ABCDEFGHIJKLMZ", "ghp_Qz7aaBBccDDeeFFggHHiiJJkkLLmmNNooPPx9K",
    "xoxb-Qz7k2k3k4k5k6x9K", "sk_live_Qz751HqW3eKz9Lm2Np4Qr6x9K", "AIzaQz7abcdefghijklmnopqrstuvwxyzABCx9K",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.Qz7aB3cD4eF5gH6x9K", "-----BEGIN RSA PRIVATE KEY-----",
    "https://agent:Qz7pw4567890x9K@127.0.0.1:9/x", "http://h/?token=Qz7tok4567890x9K", '{"u?api_key" :"Qz7tok4567890x9K"}',
]
FORGED_PIECES = [
    *(f" {piece} ".encode() for piece in CREDENTIAL_PIECES),  # a token glued to a word is not one (_secrets)
    "s\u200bk-ant-api03-Zw8aB3cD4eF5gH6iJ7kL8mN9w8Z".encode(),  # hidden by an invisible character: past the
    # deep-search limit the text path shows it too (``_redact``), so it is not among the values checked below
    b"c2stYW50LWFwaTAzLVF6N2FCM2NENGVGNWdINmlKN2tMOG1OOXg5Sw==", b"sk\\-ant\\-api03", b"%73k-", b"\\u0073k",
    b"[withheld]", b"[withheld]\\", b"\x1b[2J", b"\x1b]0;title\x07", b"\r", b"\x00", b"\x0b", b"\x1c", b"\x7f",
    "\x85\x9b\u061c\u200e\u202e\u2066\u2069".encode(), "\u2028".encode(), "\u2029".encode(), b'"', b":", b" ",
    '"\u3000:'.encode(), '"\xa0\x85:'.encode(), b"@", b"=", b"%", b"\\", b"A", b"k", b"-", b"y", b"x", b"g",
    "\u00db\u00e9\u2014\u3042\U0001f600\ufeff\u200b".encode(), b"plain words", b"\t", b"\nmemory_0001\tforged row",
    b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x80",
]


@pytest.fixture(scope="module")
def shared_large(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _large(tmp_path_factory.mktemp("shared") / "large")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(lines=st.lists(st.tuples(st.integers(0, COUNT - 1), st.lists(st.sampled_from(FORGED_PIECES), max_size=6)),
                      min_size=1, max_size=4))
def test_a_forged_kept_listing_prints_what_the_text_path_prints_and_nothing_a_check_would_change(
    shared_large: Path, lines: list[tuple[int, list[bytes]]]
) -> None:
    original = _kept(shared_large).read_bytes()
    magic, version, reserved, gen, written_ns, text_len, _flags_len = _HEADER.unpack_from(original)
    rows = original[_HEADER.size : _HEADER.size + text_len].split(b"\n")
    for row, pieces in lines:
        rows[row] += b" " + b"".join(pieces)
    body = b"\n".join(rows)
    _kept(shared_large).write_bytes(_HEADER.pack(magic, version, reserved, gen, written_ns, len(body), 0) + body)
    try:
        out = _printed(shared_large)
        assert out == (redact(Memory(shared_large).list_text()) + "\n").encode("utf-8")  # the text path's bytes
    finally:
        _kept(shared_large).write_bytes(original)
    shown = out.decode("utf-8")  # UTF-8, always
    if out == body + b"\n":  # the forged bytes themselves: every check leaves them as they are
        text = body.decode("utf-8")
        assert redact(text) == text and printable(text) == text and find_secrets(text) == []
    assert not any(c in shown for c in "\x1b\x00\x0b\x1c\x7f\x85\x9b\u061c\u200e\u202e\u2066\u2069\u2028\u2029")
    assert "\r" not in shown.replace("\r\n", "")  # a CR ending a line stays, as printable leaves it
    assert not any(secret in shown for secret in ("Qz7aB3cD4eF5gH6iJ7kL8mN9x9K", "Qz7pw4567890x9K", "Qz7tok4567890x9K",
                                                  "Q7ABCDEFGHIJKLMZ", "Qz751HqW3eKz9Lm2Np4Qr6x9K", "Qz7k2k3k4k5k6x9K"))
    assert [line.split("\t", 1)[0] for line in shown.split("\n")[:-1]] == [f"memory_{n:04d}" for n in range(COUNT)]


def _clean_listing() -> str:
    line = "memory_0001\tproject\tr1\t2026-01-02T00:00:00Z\tÛber plan, in short"
    return "\n".join([line] * (DEEP_SEARCH_LIMIT // len(line) + 1))


@pytest.mark.parametrize("encoding", ["utf-16", "utf-8-sig", "latin-1", "cp1252", "UTF8", "utf_8"])
def test_bytes_given_to_the_output_are_what_the_text_prints_through_any_stdout(
    monkeypatch: pytest.MonkeyPatch, encoding: str
) -> None:
    text = _clean_listing()
    assert shown_as_is(text.encode("utf-8"))
    stream = io.BytesIO()
    stdout = io.TextIOWrapper(stream, encoding=encoding, errors="strict", write_through=True)
    monkeypatch.setattr(sys, "stdout", stdout)
    output.data(text.encode("utf-8"))
    stdout.flush()
    assert stream.getvalue() == (text + "\n").encode(encoding)


def test_bytes_given_to_a_text_only_stdout_print_as_their_text(monkeypatch: pytest.MonkeyPatch) -> None:
    text = _clean_listing()
    stdout = io.StringIO()  # no binary buffer under it
    monkeypatch.setattr(sys, "stdout", stdout)
    output.data(text.encode("utf-8"))
    assert stdout.getvalue() == text + "\n"


@pytest.mark.parametrize("encoding", ["cp1252", "utf-8"])
def test_memory_list_in_a_process_whose_stdout_encodes_another_charset_prints_the_text_in_it(
    large: Path, encoding: str
) -> None:
    # As a person with a cp1252 locale (PYTHONIOENCODING here) types it: the kept listing, which would be printed
    # as its bytes to a UTF-8 stdout, is the same text in the stdout's charset.
    text = Memory(large).list_text()
    env = {**os.environ, "PYTHONIOENCODING": encoding, "BUNDLEKIT_HOME": str(large.parent / "home")}
    for name in ("BUNDLEKIT_MEMORY_DIR", "CI"):
        env.pop(name, None)
    done = subprocess.run([sys.executable, "-m", "bundlekit", "memory", "list", "-d", str(large)],
                          capture_output=True, env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (text + "\n").encode(encoding)


def test_only_a_printed_listing_is_ever_given_as_bytes(large: Path) -> None:
    mem = Memory(large)
    printed = mem.list_text(printed=True)
    assert isinstance(printed, bytes)  # the kept listing, shown as is
    for text in (mem.list_text(), mem.list_text(printed=False)):  # typed str (list_text's overloads), and str
        assert isinstance(text, str) and text.encode("utf-8") == printed
    assert mem.list_lines() == printed.decode("utf-8").split("\n")
