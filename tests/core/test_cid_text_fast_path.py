"""``cid_from_text``'s base32 fast path agrees with the stdlib's base32 decoder and with ``parse_cid``.

The fast path maps bytes with one ``bytes.translate`` and lets ``int`` refuse
anything outside the RFC 4648 lower-case alphabet; what it cannot take goes to
``parse_cid`` (multiformats). The reference here decodes with
``base64.b32decode`` instead: canonical lower-case unpadded text of a
structurally valid CIDv1 is that CID, anything else is ``parse_cid``'s answer.
(Like the fast path, the reference accepts a well-formed CIDv1 whose codec
multiformats does not know; ``parse_cid`` alone would refuse it.)
"""

from __future__ import annotations

import base64
import binascii

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bundlekit.errors import CIDError
from bundlekit.ipld.cid import DAG_PB, MAX_CID_TEXT, RAW, cid_from_text, cid_to_str, make_cid, parse_cid, parse_cid_bytes


def _outcome(parse: object, text: str) -> bytes | str:
    try:
        return parse(text)  # type: ignore[operator, no-any-return]
    except CIDError:
        return "CIDError"


def _reference(text: str) -> bytes:
    body = text[1:]
    if text[:1] == "b" and body and set(body) <= set("abcdefghijklmnopqrstuvwxyz234567"):
        try:
            raw = base64.b32decode(body.upper() + "=" * (-len(body) % 8))
        except binascii.Error:
            return parse_cid(text)
        if raw[:1] == b"\x01" and cid_to_str(raw) == text:
            parse_cid_bytes(raw)
            return raw
    return parse_cid(text)


def _agree(text: str) -> None:
    cid_from_text.cache_clear()
    assert _outcome(cid_from_text, text) == _outcome(_reference, text)


@settings(max_examples=300)
@given(st.sampled_from([RAW, DAG_PB]), st.binary(max_size=16), st.data())
def test_fast_path_agrees_with_the_reference_on_edited_cids(codec: int, content: bytes, draw: st.DataObject) -> None:
    text = cid_to_str(make_cid(1, codec, content))
    _agree(text)
    at = draw.draw(st.integers(1, len(text)))
    odd = draw.draw(st.sampled_from(["_", " ", "A", "1", "8", "=", "é", "0", "+", "-", "\n", "a", "7"]))
    _agree(text[:at] + odd + text[at:])
    _agree(text[:at] + odd + text[at + 1 :])
    _agree(text[:at])


@settings(max_examples=300)
@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz234567_ AZ1=é", min_size=1, max_size=70))
def test_fast_path_agrees_with_the_reference_on_arbitrary_base32_text(body: str) -> None:
    _agree("b" + body)


def test_a_base32_text_past_the_bound_is_refused_unread_as_in_every_other_base() -> None:
    """The fast path took a base32 text of any length (an identity CID of 40,000 bytes: 64,011 characters),
    where ``parse_cid`` refuses one over ``MAX_CID_TEXT`` for every other base."""
    digest = bytes(MAX_CID_TEXT)
    text = cid_to_str(bytes([0x01, RAW, 0x00, 0x80 | (len(digest) & 0x7F), len(digest) >> 7]) + digest)
    assert len(text) > MAX_CID_TEXT
    with pytest.raises(CIDError, match="a CID has at most"):
        cid_from_text.__wrapped__(text)
