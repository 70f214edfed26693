"""Redirects: followed within the origin only, to others only when asked, never from https to http (issue 12, item 4).

The rule lives in the response hook ``open_client`` installs
(``net.http._redirect_guard``); httpx's own redirect handling
(httpx 0.28, ``httpx/_client.py``, ``_send_handling_redirects``) calls
response hooks for every hop before it follows one.
"""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler

import httpx
import pytest
import respx

from bundlekit.errors import MissingBlock
from bundlekit.ipld.cid import RAW, cid_to_str, make_cid
from bundlekit.net.fetch import GatewayFetcher, RemoteGateway, http_get
from bundlekit.net.http import Failure, HttpOptions, open_client

from .loopback import redirect_to, send, serve

BLOCK = b"a block behind a redirect"
CID = make_cid(1, RAW, BLOCK)


def _holder(handler: BaseHTTPRequestHandler) -> None:
    send(handler, 200, BLOCK, {"Content-Type": "application/vnd.ipld.raw"})


def _fetch(gateway: str, *, follow_redirects: bool = False) -> tuple[bytes | None, list[str]]:
    """The block through ``gateway`` (None if refused) and the fetcher's notes."""
    with GatewayFetcher([RemoteGateway(gateway)], http=HttpOptions(follow_redirects=follow_redirects)) as fetcher:
        try:
            return fetcher.get(CID), fetcher.notes
        except MissingBlock:
            return None, fetcher.notes


def test_a_redirect_to_another_origin_is_refused_by_default() -> None:
    with serve(_holder) as other, serve(redirect_to(lambda path: other + path)) as gateway:
        got, notes = _fetch(gateway)
    assert got is None
    assert any("another origin" in note and "--follow-redirects" in note for note in notes)


def test_a_redirect_to_another_origin_is_followed_when_allowed() -> None:
    with serve(_holder) as other, serve(redirect_to(lambda path: other + path)) as gateway:
        assert _fetch(gateway, follow_redirects=True)[0] == BLOCK


def test_a_redirect_within_the_origin_is_followed() -> None:
    def answer(handler: BaseHTTPRequestHandler) -> None:
        if handler.path.startswith("/moved/"):
            _holder(handler)
        else:
            send(handler, 302, headers={"Location": "/moved" + handler.path})

    with serve(answer) as gateway:
        assert _fetch(gateway)[0] == BLOCK


@respx.mock
@pytest.mark.parametrize("follow", [False, True])
def test_a_redirect_from_https_to_http_is_never_followed(follow: bool) -> None:
    url = f"https://gw.test/ipfs/{cid_to_str(CID)}"
    respx.get(url).mock(return_value=httpx.Response(302, headers={"Location": url.replace("https:", "http:")}))
    plain = respx.get(url.replace("https:", "http:")).mock(return_value=httpx.Response(200, content=BLOCK))
    options = HttpOptions(follow_redirects=follow)
    client, _owned = open_client(options)
    with client:
        got = http_get(client, url, http=options)
    assert isinstance(got, Failure) and not got.retryable
    assert "from https to http" in got.reason
    assert not plain.called
