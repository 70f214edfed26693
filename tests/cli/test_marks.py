"""The one-pass marks (``bundlekit/_marks.py``): the compiled scan (``_textscan.c``) finds exactly what Python's
searches find, and every output check prints the same bytes with either.

The marks only gate the rules (a rule runs where its mark is found, and none of its matches can exist where it
is not), so the redaction, the terminal escaping and the secret guard must give the same text whichever scan
found them: compared here on random text, on text built from every rule's credentials, their triggers cut
short, escapes, C0, C1 and bidi controls, lone surrogates and characters of every string width, and on
listings of more than ``DEEP_SEARCH_LIMIT`` characters (the path a 100,000-memory ``memory list`` takes) with
credentials planted in rows and split across them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bundlekit._marks as marks_module
import bundlekit._secrets as secrets_module
from bundlekit._marks import TRIGGERS, marks, marks_in_python, marks_utf8
from bundlekit._redact import DEEP_SEARCH_LIMIT, WITHHELD, mask, redact, shown_as_is
from bundlekit._secrets import _rule_plan, find_secrets
from bundlekit._terminal import printable

pytestmark = pytest.mark.skipif(not marks_module.compiled(), reason="the compiled scan is not built here")

# One credential of each of the secret rules and of the URL rules.
CREDENTIALS = [
    "AKIAQ7ABCDEFGHIJKLMZ",
    "ASIAQ7ABCDEFGHIJKLMZ",
    "ghp_Qz7aaBBccDDeeFFggHHiiJJkkLLmmNNooPPx9K",
    "github_pat_Qz7aaBBccDDeeFFggHHiiJJkkLLmmNNooPPx9Kaaaaaaaaaaaaaa",
    "sk-ant-api03-Qz7aB3cD4eF5gH6iJ7kL8mN9x9K",
    "sk-proj-Qz7pQ1rS2tU3vW4xY5zA6bC7x9K",
    "xoxb-Qz7k2k3k4k5k6x9K",
    "sk_live_Qz751HqW3eKz9Lm2Np4Qr6x9K",
    "rk_test_Qz751HqW3eKz9Lm2Np4Qr6x9K",
    "AIzaQz7abcdefghijklmnopqrstuvwxyzABCx9K",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.Qz7aB3cD4eF5gH6x9K",
    "-----BEGIN RSA PRIVATE KEY-----\nQz7aB3cD4eF5gH6iJ7kL8mN9x9K\n-----END RSA PRIVATE KEY-----",
    "https://agent:Qz7pw4567890x9K@127.0.0.1:9/bundle",
    "http://127.0.0.1:9/api?token=Qz7tok4567890x9K",
    '{"url?api_key":"Qz7tok4567890x9K"}',
    '{"url?api_key" :"Qz7tok4567890x9K"}',
    '{"url?api_key"\u3000\x85:"Qz7tok4567890x9K"}',
]
# Every mark, each cut short, near misses, escapes, controls, and characters of each string width.
PIECES = [
    *CREDENTIALS,
    *TRIGGERS,
    "AKIA", "ASIA", "AKI", "AS", "A", "AIza", "AIz", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "ghx_", "gh", "g",
    "github_pat_", "github_pat", "k-", "k", "k_live_", "k_test_", "k_prod_", "k_live", "k_", "xox", "xo", "x",
    "-----BEGIN ", "-----BEGIN", "----BEGIN ", "-", "yJ", "y", "J", "@", "=", '":', '" :', '"\t\n:', '"\u2028:', '"\xa0', '"', ":", "%", "%41", "%2",
    "%25", "\\", "\\u0073", "\\x41", "\\n", "\\-", "\\_", WITHHELD, WITHHELD + "\\", "[withheld", "[", "withheld]",
    "\x1b", "\x1b[31m", "\r", "\r\n", "\n", "\t", "\x00", "\x07", "\x0b", "\x7f", "\x80", "\x85", "\x9f", "\xa0",
    "é", "\u061c", "\u200b", "\u200e", "\u200f", "\u202a", "\u202e", "\u2066", "\u2069", "\u2028", "\ufeff",
    "—", "\ud800", "\udfff", "\U0001f600", "sk", "risk-averse", "key", "token", "a", "Z", "9", " ", "_", ".",
]
ADVERSARIAL = st.lists(st.sampled_from(PIECES), max_size=40).map("".join)
ANY_TEXT = st.text(st.characters(blacklist_categories=()), max_size=200)  # surrogates too


def _forget_last() -> None:
    """Nothing remembered from an earlier scan (the marks, the guard's last clean text)."""
    marks_module._last[:] = [("", (0, 0)), ("", (0, 0))]
    marks_module._last_utf8[0] = (b"", (0, 0, 0))
    secrets_module._last_clean.clear()


@contextmanager
def _python_scan() -> Iterator[None]:
    """The marks found by Python's searches, as where the compiled scan is not built."""
    compiled = marks_module._textscan
    _forget_last()
    marks_module._textscan = None  # type: ignore[assignment]
    try:
        yield
    finally:
        marks_module._textscan = compiled
        _forget_last()


def _either_way(check: Callable[[str], object], text: str) -> None:
    _forget_last()
    compiled = check(text)
    with _python_scan():
        python = check(text)
    assert compiled == python


def _checks(text: str) -> tuple[object, ...]:
    return redact(text), printable(text), printable(redact(text)), mask(text), find_secrets(text)


@settings(max_examples=300, deadline=None)
@given(ADVERSARIAL)
def test_the_compiled_marks_are_pythons_on_adversarial_text(text: str) -> None:
    _forget_last()
    assert marks(text) == marks_in_python(text)


@settings(max_examples=300, deadline=None)
@given(ANY_TEXT)
def test_the_compiled_marks_are_pythons_on_any_text(text: str) -> None:
    _forget_last()
    assert marks(text) == marks_in_python(text)


@pytest.mark.parametrize("piece", PIECES)
def test_each_mark_is_found_at_every_place_and_string_width(piece: str) -> None:
    for wide in ("", "é", "—", "\U0001f600"):  # one, two and four bytes a character
        for text in (piece, "ab " + piece, piece + " ab", wide + piece, piece + wide, "x" * 70 + piece + wide):
            _forget_last()
            assert marks(text) == marks_in_python(text), repr(text)


@settings(max_examples=300, deadline=None)
@given(ADVERSARIAL)
def test_every_output_check_prints_the_same_bytes_with_either_scan(text: str) -> None:
    _either_way(_checks, text)


@settings(max_examples=150, deadline=None)
@given(ANY_TEXT)
def test_every_output_check_prints_the_same_bytes_with_either_scan_on_any_text(text: str) -> None:
    _either_way(_checks, text)


ROW = st.lists(st.sampled_from(PIECES), max_size=8).map("".join)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    rows=st.lists(ROW, min_size=1, max_size=30),
    planted=st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from(CREDENTIALS)), max_size=4),
    split=st.booleans(),
)
def test_a_listing_past_the_deep_search_limit_prints_the_same_bytes_with_either_scan(
    rows: list[str], planted: list[tuple[int, str]], split: bool
) -> None:
    filler = "memory_key_0001\tproject\tr1\t2026-03-24T14:55:00Z\tA name — a description of the memory"
    lines = [filler] * (DEEP_SEARCH_LIMIT // len(filler) + 1)
    for n, row in enumerate(rows):  # random rows spread over the listing
        lines[n * 37 % len(lines)] += "\t" + row
    for at, credential in planted:
        n = at % (len(lines) - 1)
        if split:  # a credential cut in two over a row's end and the next row's start
            lines[n] += credential[:9]
            lines[n + 1] = credential[9:] + lines[n + 1]
        else:
            lines[n] += " " + credential
    text = "\n".join(lines)
    assert len(text) > DEEP_SEARCH_LIMIT
    _either_way(_checks, text)


@pytest.mark.parametrize("credential", CREDENTIALS)
def test_a_credential_in_one_row_of_a_large_listing_is_withheld(credential: str) -> None:
    filler = "memory_key_0001\tproject\tr1\t2026-03-24T14:55:00Z\tA name — a description of the memory"
    lines = [filler] * (DEEP_SEARCH_LIMIT // len(filler) + 1)
    lines[len(lines) // 2] += " " + credential
    shown = redact("\n".join(lines))
    secret = credential.splitlines()[1] if "\n" in credential else credential.split("@")[0][-12:]
    assert secret not in shown and WITHHELD in shown
    assert shown.count("\n") <= len(lines) - 1 and shown.startswith(filler)


def test_a_huge_row_with_controls_is_escaped_the_same_with_either_scan() -> None:
    text = ("a" * 100_000 + "\x1b[2J" + "\U0001f600" + "\u202e" + "b\r" + "\x85") * 3
    _either_way(_checks, text)
    assert "\x1b" not in printable(text) and "\\x1b[2J" in printable(text)


def test_every_secret_trigger_is_one_the_scan_looks_for() -> None:
    # A rule with a trigger the scan does not know still runs (on every text): correct, but slow on a listing.
    assert all(group.bit is not None for group in _rule_plan() if group.trigger)


def _utf8_either_way(data: bytes) -> None:
    """marks_utf8 of ``data``, compiled and in Python, is marks() and len() of its text; None when not UTF-8."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        expected = None
    else:
        expected = (*marks_in_python(text), len(text))
    _forget_last()
    assert marks_utf8(data) == expected
    with _python_scan():
        assert marks_utf8(data) == expected


@settings(max_examples=300, deadline=None)
@given(ADVERSARIAL)
def test_the_marks_of_utf8_bytes_are_those_of_their_text(text: str) -> None:
    _utf8_either_way(text.encode("utf-8", "surrogatepass"))  # a lone surrogate's bytes are not UTF-8: None


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=40))
def test_the_marks_of_any_bytes_are_those_of_their_text_or_none(data: bytes) -> None:
    _utf8_either_way(data)


@pytest.mark.parametrize(
    "data",
    [b"\x80", b"\xc0\xaf", b"\xc1\xbf", b"\xe0\x80\xaf", b"\xed\xa0\x80", b"\xed\xbf\xbf", b"\xf0\x8f\xbf\xbf",
     b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80", b"\xe2\x82", b"\xe2\x82a", b"a\xff", b"\xf0\x9f\x98",
     b"\xef\xbf\xbf", b"\xf4\x8f\xbf\xbf", b"\xe2\x80\xa8", b'"\xe3\x80\x80:', b'"\xc2\x85:'],
)
def test_the_marks_of_utf8_edge_sequences_are_those_of_their_text(data: bytes) -> None:
    for around in (b"", b"ab ", b"k"):  # alone, after ASCII, after a mark's leader
        _utf8_either_way(around + data)
        _utf8_either_way(data + around)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(rows=st.lists(ROW, max_size=6))
def test_bytes_shown_as_they_are_are_bytes_no_output_check_changes(rows: list[str]) -> None:
    filler = "memory_key_0001\tproject\tr1\t2026-03-24T14:55:00Z\tA name — a description of the memory"
    lines = [filler] * (DEEP_SEARCH_LIMIT // len(filler) + 1)
    for n, row in enumerate(rows):
        lines[n * 37 % len(lines)] += "\t" + row
    text = "\n".join(lines)
    data = text.encode("utf-8", "surrogatepass")
    _forget_last()
    if shown_as_is(data):
        assert redact(text) == text and printable(text) == text and find_secrets(text) == []
        assert "\x1b" not in text and "\u2028" not in text and "\u2029" not in text
    else:  # then the text path changes the text or its scan found a mark: asked of the same text, it agrees
        assert marks_utf8(data) is None or marks_utf8(data)[0] != 0  # type: ignore[index]


def test_a_short_text_is_never_shown_as_its_bytes() -> None:
    text = "memory_key_0001\tproject\tr1\t2026-03-24T14:55:00Z\tA plain line"
    assert not shown_as_is(text.encode()) and not shown_as_is(((text + "\n") * 10).encode())
    assert shown_as_is(((text + "\n") * (DEEP_SEARCH_LIMIT // len(text) + 1)).encode())


class _Lying(str):
    """A ``str`` whose own searches find nothing."""

    def __contains__(self, key: object) -> bool:
        return False

    def count(self, *args: object) -> int:
        return 0


def test_a_str_subclass_is_scanned_as_the_str_it_holds_either_way() -> None:
    text = _Lying('@ = ": % \\ [withheld]\\ \x1b\n AKIAQ7ABCDEFGHIJKLMZ')
    _forget_last()
    assert marks(text) == marks_in_python(text) == marks_in_python(str.__str__(text))



def _changed_buffer_scanned_again() -> None:
    line = "memory_key_0001\tproject\tr1\t2026-03-24T14:55:00Z\tA plain line\n"
    count = DEEP_SEARCH_LIMIT // len(line) + 1
    buffer = bytearray((line * count).encode())
    assert marks_utf8(buffer) == (0, count, len(buffer)) and shown_as_is(buffer)  # type: ignore[arg-type]
    buffer[5:9] = b"\x1b[2J"  # the same object, now holding a terminal escape
    found = marks_utf8(buffer)  # type: ignore[arg-type]
    assert found is not None and found[0] & marks_module.ESC and not shown_as_is(buffer)  # type: ignore[arg-type]
    view = memoryview(buffer)
    assert marks_utf8(view) == found  # type: ignore[arg-type]
    buffer[5:9] = b"abcd"
    assert marks_utf8(view) == (0, count, len(buffer))  # type: ignore[arg-type]
    buffer[5:7] = b"\xc3\x28"  # no longer UTF-8
    assert marks_utf8(view) is None and marks_utf8(buffer) is None  # type: ignore[arg-type]


def test_a_mutable_buffer_changed_after_its_marks_were_asked_is_scanned_again() -> None:
    _forget_last()
    _changed_buffer_scanned_again()
    with _python_scan():
        _changed_buffer_scanned_again()


class _LyingBytes(bytes):
    """``bytes`` whose own ``decode`` answers a text it does not hold."""

    def decode(self, encoding: str = "utf-8", errors: str = "strict") -> str:
        return "a clean text"


def test_a_bytes_subclass_is_scanned_as_the_bytes_it_holds_either_way() -> None:
    line = "memory_key_0001\tproject\tr1\t2026-03-24T14:55:00Z\tA plain line \x1b[2J\n"
    lying = _LyingBytes((line * (DEEP_SEARCH_LIMIT // len(line) + 1)).encode())
    expected = (*marks_in_python(str(lying, "utf-8")), len(str(lying, "utf-8")))
    assert expected[0] & marks_module.ESC
    _forget_last()
    assert marks_utf8(lying) == expected and not shown_as_is(lying)
    with _python_scan():
        assert marks_utf8(lying) == expected and not shown_as_is(lying)


def test_the_marks_of_every_code_point_as_utf8_are_those_of_its_text() -> None:
    # Each code point alone and as the whitespace of a JSON key's end ('"', it, ':'), against the compiled
    # scan of the text (itself compared with Python's searches above): every UTF-8 length and lead byte.
    # Every code point of the Basic Multilingual Plane (every control, bidi mark, space and separator is in it),
    # and every 31st above it (four-byte sequences, each plane's first and last included): the whole range took
    # ~4 s a run.
    _forget_last()
    above = {*range(0x10000, 0x110000, 31), *(plane + low for plane in range(0x10000, 0x110000, 0x10000)
                                               for low in (0, 0xFFFF))}
    for code in [*range(0x10000), *sorted(above)]:
        if 0xD800 <= code <= 0xDFFF:
            assert marks_utf8(chr(code).encode("utf-8", "surrogatepass")) is None
            continue
        for text in (chr(code), f'"{chr(code)}:'):
            assert marks_utf8(text.encode("utf-8")) == (*marks(text), len(text)), hex(code)


def test_the_marks_of_bytes_asked_from_many_threads_are_each_their_own() -> None:
    # The compiled scan lets other threads run while it reads; the remembered answer is one (bytes, answer)
    # tuple: a thread never gets another text's answer, whichever of them was remembered last.
    line = "memory_key_0001\tproject\tr1\t2026-03-24T14:55:00Z\tA plain line\n"
    count = DEEP_SEARCH_LIMIT // len(line) + 1
    clean = (line * count).encode()
    dirty = clean[:-1] + b"\x1b"
    expected = {clean: (0, count, len(clean)), dirty: (marks_module.CONTROL | marks_module.ESC, count - 1, len(dirty))}
    wrong: list[bytes] = []

    def ask(order: tuple[bytes, ...]) -> None:
        for _ in range(150):
            for data in order:
                fresh = bytes(bytearray(data))  # another object of the same bytes: not the remembered one
                for asked in (data, fresh):
                    if marks_utf8(asked) != expected[data] or shown_as_is(asked) != (data is clean):
                        wrong.append(asked)

    _forget_last()
    threads = [threading.Thread(target=ask, args=((clean, dirty) if n % 2 else (dirty, clean),)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert wrong == []


@pytest.mark.parametrize(
    "hidden",
    ["c2stYW50LWFwaTAzLVF6N2FCM2NENGVGNWdINmlKN2tMOG1OOXg5S2Fi",  # base64 of an Anthropic key: no mark at all
     "sk\u200b-ant-api03-Qz7aB3cD4eF5gH6iJ7kL8mN9x9K"],  # one split by a zero-width space: no mark either
)
def test_bytes_are_shown_as_is_exactly_where_the_deep_searches_stop_counted_in_characters(hidden: str) -> None:
    # The deep searches (base64 runs, invisible characters) look at a text of at most DEEP_SEARCH_LIMIT
    # characters; its UTF-8 is longer ("é" is two bytes): the bytes path must count characters as they do.
    head = f"memory_key_0001\tproject\tr1\t2026-03-24T14:55:00Z\tA line {hidden} then "
    text = head + "é" * (DEEP_SEARCH_LIMIT - len(head))
    assert len(text) == DEEP_SEARCH_LIMIT and len(text.encode()) > DEEP_SEARCH_LIMIT and marks(text)[0] == 0
    _forget_last()
    assert not shown_as_is(text.encode()) and hidden not in redact(text)  # searched deep: withheld
    longer = text + "é"
    assert shown_as_is(longer.encode()) and redact(longer) == longer  # past the limit: neither path searches


def test_the_marks_of_every_short_byte_sequence_are_those_of_its_text_or_none() -> None:
    # Every pair of bytes; every lead byte 0xC0 and up, and 0xE0 and up, before two and three bytes at the edges of
    # the ranges UTF-8 allows after it (overlongs, surrogates, past U+10FFFF, cut, ASCII '"' and ':' inside).
    edges = [0x00, 0x22, 0x3A, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC2, 0xE0, 0xED, 0xF0, 0xF4, 0xF5, 0xFF]
    sequences = [bytes((a, b)) for a in range(256) for b in range(256)]
    sequences += [bytes((a, b, c)) for a in range(0xC0, 0x100) for b in edges for c in edges]
    sequences += [bytes((a, b, c, d)) for a in range(0xE0, 0x100) for b in edges for c in edges for d in edges]
    _forget_last()
    for data in sequences:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            assert marks_utf8(data) is None, data
        else:
            assert marks_utf8(data) == (*marks(text), len(text)), data
