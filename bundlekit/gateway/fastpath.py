"""The hot request answered without h11 or ASGI: one plain ``GET /ipfs/{cid}?format=raw`` (specs/gateway.md 3, "The hot request").

A loader, a pinner and a mirror ask a gateway for raw blocks one by one, so that request is the one a
gateway answers most. Through uvicorn it costs h11's parse and validation of the head, an ASGI cycle
and a task, and h11's validation and framing of the answer: about three quarters of its time in a
cProfile of a child ``serve`` under ``bench/gateway.py``; the answer itself (the request rules and a
verified block read) is the rest. So a connection with nothing pending whose received bytes are
exactly one such request, written in a strict subset of HTTP/1.1 (``simple_get``), is answered here
by the same request rules (``GatewayServer.answer_at_once``), its answer framed as h11 frames it
(``frame_response``). Anything else, or anything this module is not sure of, takes the whole way
through h11: another method, path or query, a pipelined request, a partial head, a ``Connection``
header other than ``keep-alive``, an ``Upgrade``, ``TE``, ``Expect`` or body framing header, a repeated header, bytes outside visible ASCII.

Both halves are checked against h11 (``tests/gateway/test_fast_path.py``): every head taken here h11
parses to the same target and headers, and every answer framed here is byte for byte what uvicorn and
h11 write for it.
"""

from __future__ import annotations

import http
import re
from collections.abc import Sequence

from bundlekit.gateway.respond import Response

__all__ = ["MAX_SIMPLE_HEAD", "SimpleGet", "frame_response", "simple_get"]

#: The longest head taken here; a longer one takes the whole way (and its head checks).
MAX_SIMPLE_HEAD = 8192

# The request line: a raw block at /ipfs/{cid}, nothing after the CID, the query exactly format=raw.
# The CID is visible ASCII without '/', '?' or '#' (percent-encoding is decoded by the request rules): a
# '#' would start a fragment where the request rules read the target (urlsplit), so "/ipfs/{cid}#?format=raw"
# has no query there, and its answer is the file's bytes, streamed, not a raw block.
_REQUEST_LINE = re.compile(rb"GET (/ipfs/[\x21\x22\x24-\x2e\x30-\x3e\x40-\x7e]+\?format=raw) HTTP/1\.1")
# A header line as RFC 9110 5.5 and h11 read it, narrowed to visible ASCII values (no obs-text).
_HEADER_LINE = re.compile(rb"([-!#$%&'*+.^_`|~0-9a-zA-Z]+):[ \t]*((?:[\x21-\x7e]+(?:[ \t]+[\x21-\x7e]+)*)?)[ \t]*")
# Headers that bear on framing, the connection or an upgrade: their requests take the whole way.
_WHOLE_WAY = frozenset({b"content-length", b"transfer-encoding", b"expect", b"connection", b"upgrade", b"te"})
# An answer's header lines as h11 accepts them (h11._abnf field_name and field_value), so what h11 would
# refuse to write is refused here.
_HEADER_LINES = re.compile(r"(?:[-!#$%&'*+.^_`|~0-9a-zA-Z]+: (?:[^\x00\s]+(?:[ \t]+[^\x00\s]+)*)?\r\n)*", re.ASCII)


class SimpleGet:
    """A plain raw-block GET: its target (``/ipfs/{cid}?format=raw``) and headers (lower-case names)."""

    __slots__ = ("headers", "target")

    def __init__(self, target: str, headers: dict[str, str]) -> None:
        self.target = target
        self.headers = headers


def simple_get(data: bytes) -> SimpleGet | None:
    """The request ``data`` holds when it is exactly one plain raw-block GET (see the module doc), else None."""
    if len(data) > MAX_SIMPLE_HEAD or not data.endswith(b"\r\n\r\n") or data.find(b"\r\n\r\n") != len(data) - 4:
        return None
    lines = data[:-4].split(b"\r\n")
    request = _REQUEST_LINE.fullmatch(lines[0])
    if request is None:
        return None
    headers: dict[str, str] = {}
    for line in lines[1:]:
        field = _HEADER_LINE.fullmatch(line)
        if field is None:
            return None
        name = field.group(1).lower()
        key = name.decode("ascii")
        if (name in _WHOLE_WAY and not _keep_alive(name, field.group(2))) or key in headers:
            return None
        headers[key] = field.group(2).decode("ascii")
    if "host" not in headers:
        return None  # h11 refuses an HTTP/1.1 request without Host: its 400 is the whole way's
    return SimpleGet(request.group(1).decode("ascii"), headers)


_FIELD_NAME = re.compile(r"[-!#$%&'*+.^_`|~0-9a-zA-Z]+")
_NAMES: set[str] = set()  # the header names seen valid (a gateway's answers use a dozen)


def _name_ok(name: str) -> bool:
    """Whether ``name`` is a token (RFC 9110 5.1, h11's field_name); a valid one is remembered."""
    if _FIELD_NAME.fullmatch(name) is None:
        return False
    if len(_NAMES) < 256:
        _NAMES.add(name)
    return True


def _keep_alive(name: bytes, value: bytes) -> bool:
    """``Connection: keep-alive`` (what httpx, and so bundlekit's loader, sends): on HTTP/1.1 it changes nothing."""
    return name == b"connection" and value.lower() == b"keep-alive"


def _reason(status: int) -> bytes:
    """The reason phrase uvicorn gives h11 for ``status`` (``STATUS_PHRASES``): the standard one, or none."""
    try:
        return http.HTTPStatus(status).phrase.encode()
    except ValueError:
        return b""


_REASONS = {status: _reason(status) for status in range(100, 600)}


def frame_response(response: Response, default_headers: Sequence[tuple[bytes, bytes]]) -> bytes | None:
    """``response`` to a GET on a keep-alive HTTP/1.1 connection as uvicorn and h11 write it: the status
    line, uvicorn's default headers (``date``), the answer's headers, its ``Content-Length``, its body.

    None when h11 would not write it so: a body without a length (streamed, chunked), or a header h11
    refuses (then the whole way would have failed the connection: its caller does the same).
    """
    no_body = response.status in (204, 304)
    body = response.body
    if not isinstance(body, list | tuple) or (not no_body and response.length != sum(len(b) for b in body)):
        return None  # streamed, or a length h11 would refuse to frame
    lines = "".join([f"{name}: {value}\r\n" for name, value in response.headers])
    # One line a header (no CR or LF in a value), each name a token, each line a name and a value h11 takes.
    if lines.count("\r\n") != len(response.headers) or not _HEADER_LINES.fullmatch(lines):
        return None
    if not all(name in _NAMES or _name_ok(name) for name, _value in response.headers):
        return None
    try:
        encoded = lines.encode("latin-1")
    except UnicodeEncodeError:
        return None
    parts = [b"HTTP/1.1 %d %s\r\n" % (response.status, _REASONS.get(response.status, b""))]
    parts.extend(b"%s: %s\r\n" % (name, value) for name, value in default_headers)
    parts.append(encoded)
    if response.length is not None:
        parts.append(b"Content-Length: %d\r\n" % response.length)
    parts.append(b"\r\n")
    if not no_body:
        parts.extend(body)
    return b"".join(parts)
