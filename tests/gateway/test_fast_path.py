"""The raw-block GET answered without h11 (``gateway.fastpath``), checked against h11 and the whole way.

h11 (github.com/python-hyper/h11 0.16, ``h11/_readers.py`` and ``h11/_writers.py``) is the library the
fast path stands in for: every head it takes, h11 parses to the same request; every answer it frames
is what uvicorn's ``RequestResponseCycle.send`` has h11 write; and over a running server each answer
is byte for byte the one the whole way gives to the same request (its ``date`` aside).
"""

from __future__ import annotations

import socket
import string

import h11
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from uvicorn.protocols.http.h11_impl import STATUS_PHRASES

import bundlekit.gateway.transport as transport
from bundlekit.errors import BlockMismatch
from bundlekit.gateway.fastpath import frame_response, simple_get
from bundlekit.gateway.respond import Response, error_response
from bundlekit.gateway.server import serve_in_thread
from bundlekit.gateway.sources import MemorySource
from bundlekit.gateway.transport import ClientRates
from bundlekit.ipld.cid import RAW, cid_to_str, make_cid

DATA = b"one block of bytes"
CID = make_cid(1, RAW, DATA)
NAME = cid_to_str(CID)
DATE = [(b"date", b"Fri, 04 Dec 2026 23:59:59 GMT")]


def _h11_request(data: bytes) -> tuple[bytes, list[tuple[bytes, bytes]]]:
    conn = h11.Connection(h11.SERVER)
    conn.receive_data(data)
    event = conn.next_event()
    assert isinstance(event, h11.Request)
    assert isinstance(conn.next_event(), h11.EndOfMessage)  # no body
    assert conn.trailing_data == (b"", False)  # one request, nothing after it
    return event.target, [(k, v) for k, v in event.headers]


_TOKEN = st.text(alphabet=string.ascii_letters + string.digits + "-_.!#$%&'*+^`|~", min_size=1, max_size=12)
_VALUE = st.text(alphabet="".join(chr(c) for c in range(0x21, 0x7F)) + " \t", max_size=20)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_TOKEN, _VALUE), max_size=6), st.sampled_from(["", " ", "\t", "  "]))
def test_every_head_taken_h11_parses_to_the_same_request(fields: list[tuple[str, str]], space: str) -> None:
    lines = ["Host: 127.0.0.1:8080"] + [f"{name}:{space}{value}" for name, value in fields]
    data = f"GET /ipfs/{NAME}?format=raw HTTP/1.1\r\n{chr(13).join(line + chr(10) for line in lines)}\r\n".encode()
    taken = simple_get(data)
    if taken is None:
        return
    target, headers = _h11_request(data)
    assert taken.target.encode() == target
    assert {k.decode(): v.decode() for k, v in headers} == taken.headers
    assert len(headers) == len(taken.headers)  # no header repeated, none dropped


@pytest.mark.parametrize("head", [
    b"GET /ipfs/%s?format=raw HTTP/1.1\r\nHost: a\r\n\r\n",
    b"GET /ipfs/%s?format=raw HTTP/1.1\r\nhost:a\r\nConnection: Keep-Alive\r\nAccept: */*\r\n\r\n",
    b"GET /ipfs/%s?format=raw HTTP/1.1\r\nHost: a\r\nIf-None-Match: \"x\"\r\nUser-Agent: wrk 4\r\n\r\n",
])
def test_plain_raw_block_gets_are_taken(head: bytes) -> None:
    data = head % NAME.encode()
    taken = simple_get(data)
    assert taken is not None and taken.target.encode() == _h11_request(data)[0]


@pytest.mark.parametrize("head", [
    b"GET /ipfs/%s?format=raw HTTP/1.1\r\n\r\n",  # no Host: h11's 400
    b"GET /ipfs/%s?format=raw HTTP/1.0\r\nHost: a\r\n\r\n",
    b"HEAD /ipfs/%s?format=raw HTTP/1.1\r\nHost: a\r\n\r\n",
    b"get /ipfs/%s?format=raw HTTP/1.1\r\nHost: a\r\n\r\n",
    b"GET /ipfs/%s?format=car HTTP/1.1\r\nHost: a\r\n\r\n",
    b"GET /ipfs/%s/?format=raw HTTP/1.1\r\nHost: a\r\n\r\n",
    b"GET /ipfs/%s/a?format=raw HTTP/1.1\r\nHost: a\r\n\r\n",
    b"GET /ipfs/%s?format=raw&x=1 HTTP/1.1\r\nHost: a\r\n\r\n",
    b"GET /ipns/%s?format=raw HTTP/1.1\r\nHost: a\r\n\r\n",
    b"GET /ipfs/%s?format=raw HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
    b"GET /ipfs/%s?format=raw HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
    b"GET /ipfs/%s?format=raw HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n",
    b"GET /ipfs/%s?format=raw HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n",
    b"GET /ipfs/%s?format=raw HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\n\r\n",
    b"GET /ipfs/%s?format=raw HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n\r\n",
    b"GET /ipfs/%s?format=raw HTTP/1.1\r\nHost : a\r\n\r\n",
    b"GET /ipfs/%s?format=raw HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n",
    b"GET /ipfs/%s?format=raw HTTP/1.1\r\nHost: a\nX: b\r\n\r\n",
    b"GET /ipfs/%s?format=raw HTTP/1.1\r\nHost: a\r\nX: \xe9\r\n\r\n",
    b"GET /ipfs/%s?format=raw HTTP/1.1\r\nHost: a\r\nX: \x00\r\n\r\n",
    b"GET /ipfs/%s?format=raw HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n",  # pipelined
    b"GET /ipfs/%s?format=raw HTTP/1.1\r\nHost: a\r\n",  # not complete
])
def test_anything_else_takes_the_whole_way(head: bytes) -> None:
    assert simple_get(head % NAME.encode()) is None


def test_a_head_past_the_bound_takes_the_whole_way() -> None:
    data = f"GET /ipfs/{NAME}?format=raw HTTP/1.1\r\nHost: a\r\nX: {'y' * 9000}\r\n\r\n".encode()
    assert simple_get(data) is None


def _h11_answer(response: Response) -> bytes:
    """What uvicorn's cycle has h11 write for ``response`` to a keep-alive GET (server.GatewayServer._send)."""
    conn = h11.Connection(h11.SERVER)
    conn.receive_data(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n")
    conn.next_event()
    conn.next_event()
    headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in response.headers]
    no_body = response.status in (204, 304)
    if response.length is not None:
        headers.append((b"Content-Length", str(response.length).encode()))
    out = conn.send(h11.Response(status_code=response.status, headers=DATE + headers,
                                 reason=STATUS_PHRASES[response.status]))
    for chunk in [] if no_body else response.body:
        out += conn.send(h11.Data(data=chunk))
    return out + conn.send(h11.EndOfMessage())


@pytest.mark.parametrize("response", [
    Response(200, [("Content-Type", "application/vnd.ipld.raw"), ("Etag", f'"{NAME}.raw"')], [DATA], len(DATA)),
    Response(200, [("X-Empty", "")], [b""], 0),
    Response(304, [("Etag", '"x"'), ("Cache-Control", "public, max-age=29030400, immutable")], (), None),
    error_response(404, "block bafy... is not in this gateway's store"),
    error_response(400, "not a CID"),
    error_response(429, "slow down", [("Retry-After", "1")]),
    Response(599, [("X-A", "b")], [b"xy"], 2),
    Response(200, [("X-Latin", "caf\xe9 \xa0x")], [b"x"], 1),
])
def test_every_answer_framed_is_what_h11_writes(response: Response) -> None:
    assert frame_response(response, DATE) == _h11_answer(response)


@pytest.mark.parametrize("response", [
    Response(200, [("X-Bad", "a\r\nInjected: yes")], [b"x"], 1),
    Response(200, [("X Bad", "a")], [b"x"], 1),
    Response(200, [("X: a", "b")], [b"x"], 1),
    Response(200, [("X", "a\nY: b")], [b"x"], 1),
    Response(200, [("X-Bad", " padded")], [b"x"], 1),
    Response(200, [("X-Bad", "snow \u2603")], [b"x"], 1),
    Response(200, [("X-Bad", "a\x0bb")], [b"x"], 1),
    Response(200, [], [b"xy"], 1),  # a body longer than its length
    Response(200, [], iter([b"x"]), 1),  # streamed
    Response(200, [], [b"x"], None),  # chunked
])
def test_an_answer_h11_would_refuse_is_not_framed(response: Response) -> None:
    assert frame_response(response, DATE) is None


def _exchange(url: str, request: bytes) -> bytes:
    """Send ``request`` on a fresh connection and read its one answer (headers, then Content-Length bytes)."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(request)
        data = b""
        while b"\r\n\r\n" not in data:
            data += sock.recv(65536)
        head, _, body = data.partition(b"\r\n\r\n")
        length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")), 0)
        if not head.startswith(b"HTTP/1.1 304"):
            while len(body) < length:
                body += sock.recv(65536)
    lines = [line for line in head.split(b"\r\n") if not line.startswith(b"date: ")]
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


@pytest.mark.parametrize("target,extra", [
    (f"/ipfs/{NAME}?format=raw", ""),
    (f"/ipfs/{NAME}?format=raw", f'If-None-Match: "{NAME}.raw"\r\n'),
    (f"/ipfs/{NAME}?format=raw", "Accept: application/vnd.ipld.car\r\nCache-Control: only-if-cached\r\n"),
    (f"/ipfs/{cid_to_str(make_cid(1, RAW, b'absent'))}?format=raw", ""),
    ("/ipfs/not-a-cid?format=raw", ""),
    ("/ipfs/bafkqaaa?format=raw", ""),
    (f"/ipfs/{NAME}%3Fx?format=raw", ""),
])
def test_each_answer_is_the_whole_ways_byte_for_byte(target: str, extra: str, monkeypatch: pytest.MonkeyPatch) -> None:
    request = f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n{extra}\r\n".encode()
    assert simple_get(request) is not None
    with serve_in_thread(MemorySource({CID: DATA}, [CID], "test")) as server:
        fast = _exchange(server.url, request)
        monkeypatch.setattr(transport, "simple_get", lambda data: None)
        whole = _exchange(server.url, request)
    assert fast == whole
    assert fast.startswith(b"HTTP/1.1 ")


def test_a_damaged_block_is_refused_on_the_fast_path_too() -> None:
    """A source verifies every block it hands out (specs/gateway.md 3.1): a CAR damaged after it was indexed."""
    with serve_in_thread(MemorySource({CID: DATA}, [CID], "test")) as server:
        server.gateway.source = _Damaged()
        answer = _exchange(server.url, f"GET /ipfs/{NAME}?format=raw HTTP/1.1\r\nHost: a\r\n\r\n".encode())
    assert answer.startswith(b"HTTP/1.1 500 ") and b"damaged" in answer and DATA not in answer


class _Damaged:
    def get(self, cid: bytes) -> bytes:
        raise BlockMismatch("digest differs")

    def has(self, cid: bytes) -> bool:
        return True


def test_the_rate_bound_holds_on_the_fast_path() -> None:
    with serve_in_thread(MemorySource({CID: DATA}, [CID], "test")) as server:
        server.rates = ClientRates(2, loopback=True)
        request = f"GET /ipfs/{NAME}?format=raw HTTP/1.1\r\nHost: a\r\n\r\n".encode()
        statuses = [_exchange(server.url, request)[9:12] for _ in range(6)]
    assert statuses[:4] == [b"200"] * 4 and statuses[4:] == [b"429"] * 2
