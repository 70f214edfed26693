"""Redaction of a secret's encoded forms (issue 12, item 6): a service may echo a credential
back base64-encoded (kubo's Basic auth header), percent-encoded or JSON-escaped."""

from __future__ import annotations

import base64
import json
import re
from urllib.parse import quote, quote_plus

import pytest

from bundlekit.net.http import redact

SECRET = "s3cr3t/T0ken+v@lue é\"x"
USER = "admin"


@pytest.mark.parametrize(
    "echoed",
    [
        base64.b64encode(SECRET.encode()).decode(),
        base64.urlsafe_b64encode(SECRET.encode()).decode().rstrip("="),
        "Basic " + base64.b64encode(f"{USER}:{SECRET}".encode()).decode(),
        base64.b64encode(b"x" + SECRET.encode() + b"yz").decode(),  # another alignment
    ],
)
def test_a_base64_spelling_is_redacted(echoed: str) -> None:
    assert redact(f"header was {echoed}; rejected", [SECRET]).startswith("header was ")
    assert echoed.split()[-1] not in redact(f"header was {echoed}; rejected", [SECRET])


@pytest.mark.parametrize(
    "echoed",
    [
        quote(SECRET, safe=""),
        quote(SECRET),
        quote_plus(SECRET),
        re.sub("%[0-9A-F]{2}", lambda m: m.group(0).lower(), quote(SECRET, safe="")),  # lowercase hex
    ],
)
def test_a_percent_encoded_spelling_is_redacted(echoed: str) -> None:
    assert redact(f"GET /pins?token={echoed} failed", [SECRET]) == "GET /pins?token=*** failed"


@pytest.mark.parametrize(
    "echoed",
    [
        json.dumps(SECRET)[1:-1],
        json.dumps(SECRET, ensure_ascii=False)[1:-1],
        json.dumps(SECRET)[1:-1].replace("/", "\\/"),
    ],
)
def test_a_json_escaped_spelling_is_redacted(echoed: str) -> None:
    assert redact(f'{{"error": "bad token {echoed}"}}', [SECRET]) == '{"error": "bad token ***"}'


def test_base64_text_that_hides_no_secret_is_left_alone() -> None:
    text = "cid bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy at /ipfs/abcDEF123456"
    assert redact(text, [SECRET]) == text
