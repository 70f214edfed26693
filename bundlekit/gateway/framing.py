"""A request on a keep-alive connection: its header lines checked, its body framed and discarded within a bound.

The gateway and the browsing interface use no request body: every
method they accept (GET, HEAD, OPTIONS) means nothing with one, and every other
method is refused. But a client may send one anyway, and on a persistent
connection its bytes come before the next request: left unread they would be
parsed as that request (a desynchronised or smuggled request), and closing the
connection without saying so breaks a client that reuses it. So every request,
answered or refused, goes through one rule (RFC 9112 section 6.3, "Message Body
Length"), decided here before any answer is made:

* no ``Content-Length`` and no ``Transfer-Encoding``: no body, the connection stays open;
* ``Content-Length: N`` (digits; repeated equal values allowed) with N at most
  :data:`MAX_DISCARDED_BODY`: the N bytes are read and dropped, the connection stays open;
* ``Transfer-Encoding: chunked`` (the last coding): the chunks are read and dropped
  within the same bound (sizes, extensions and trailers counted);
* a larger body, or one the client waits to send (``Expect: 100-continue``: no
  ``100 Continue`` is ever sent, the answer is final), is not read: the answer
  says ``Connection: close`` and the connection closes after it;
* a ``Content-Length`` that is not a number, or differing values, or a
  ``Transfer-Encoding`` whose last coding is not ``chunked``: the framing is
  invalid, ``400`` with ``Connection: close``; both headers at once are read
  as chunked and the connection closes after the answer (RFC 9112 6.3, items 3-5).

Every header line is checked as it is read (``header_line_problem``): a bare CR, a NUL, a
field name followed by whitespace before its colon, a line folded onto the previous one
(obs-fold) or a line with no colon is a ``400`` that closes the connection (RFC 9112 2.2,
5.1, 5.2: a recipient may otherwise read one header where a proxy in front reads another,
and so frame the body differently), and header lines over :data:`MAX_HEAD_BYTES` in all
are a ``431``. An HTTP/1.0 request with ``Transfer-Encoding`` is answered without its body
being read, and the connection closes (RFC 9112 6.1: its framing is faulty). A
``Connection`` header listing ``close`` among other options closes the connection too.

Two mounted apps read a body: the Delegated Routing API's ``PUT /routing/v1/ipns/{name}``
(``server.BodyApp``) and the team hub's push API's ``POST /api/v0/...`` (``server.SpooledBodyApp``).
Their body is framed by the same rule and read within the app's bound (``read_body`` into memory,
``spool_body`` into a temp file) instead of dropped; one past the bound is not read, and the
connection closes.

Reads happen under the connection's own bounds (the head deadline and the idle
timeout of ``server.py``), so a client trickling a body is cut off like one
trickling headers.
"""

from __future__ import annotations

from dataclasses import dataclass
from email.message import Message
from typing import BinaryIO, Protocol

__all__ = ["MAX_DISCARDED_BODY", "MAX_HEAD_BYTES", "BodyFraming", "discard_body", "header_line_problem",
           "read_body", "request_framing", "spool_body"]

#: Bytes of a request body read and dropped to keep a connection open; a larger body closes it.
MAX_DISCARDED_BODY = 64 * 1024
#: Bytes of header lines (after the request line) one request may send; more is a 431.
MAX_HEAD_BYTES = 64 * 1024
#: Longest chunk-size line (size, extensions, CRLF) or trailer line read while discarding.
_MAX_LINE = 4096


class Readable(Protocol):
    """What a body is read from: a buffered binary stream (the connection's ``rfile``)."""

    def read(self, size: int = -1, /) -> bytes: ...

    def readline(self, size: int = -1, /) -> bytes: ...


@dataclass(frozen=True)
class BodyFraming:
    """How a request's body is delimited: ``kind`` is ``none``, ``length``, ``chunked`` or ``invalid``.

    (``faulty``: a body that is never read, RFC 9112 6.1.) ``length`` holds a ``length`` body's size; ``problem`` says why the framing is invalid;
    ``close`` is set when the connection must close after the answer whatever is read
    (RFC 9112 6.3: a request with both ``Transfer-Encoding`` and ``Content-Length``).
    """

    kind: str
    length: int = 0
    problem: str = ""
    close: bool = False


def header_line_problem(line: bytes) -> str | None:
    """Why one raw header line (as read, with its line ending) is refused, or None when it is well formed."""
    if line in (b"\r\n", b"\n", b""):
        return None  # the end of the head (or of the stream)
    text = line[:-2] if line.endswith(b"\r\n") else line.rstrip(b"\n")
    if b"\r" in text:
        return "a header line holds a bare CR"
    if b"\x00" in text:
        return "a header line holds a NUL"
    if text[:1] in (b" ", b"\t"):
        return "a header line is folded onto the previous one (obs-fold)"
    name, colon, _value = text.partition(b":")
    if not colon or not name:
        return "a header line has no field name and colon"
    if name[-1:] in (b" ", b"\t"):
        return "whitespace between a header field name and its colon"
    return None


def request_framing(headers: Message, *, http10: bool = False) -> BodyFraming:
    """The framing of a request body from its headers (every ``Content-Length`` and ``Transfer-Encoding`` line);
    ``http10`` for an HTTP/1.0 request, whose ``Transfer-Encoding`` is never trusted."""
    codings = [c.strip().lower() for line in headers.get_all("Transfer-Encoding") or [] for c in line.split(",")]
    lengths = [v.strip() for line in headers.get_all("Content-Length") or [] for v in line.split(",")]
    if codings and http10:
        return BodyFraming("faulty", close=True)
    if codings:
        if codings[-1] != "chunked":
            return BodyFraming("invalid", problem="Transfer-Encoding must end with chunked")
        return BodyFraming("chunked", close=bool(lengths))
    if not lengths:
        return BodyFraming("none")
    if any(not (v.isascii() and v.isdigit()) for v in lengths) or len(set(map(int, lengths))) != 1:
        return BodyFraming("invalid", problem="Content-Length is not one non-negative integer")
    length = int(lengths[0])
    return BodyFraming("length", length=length) if length else BodyFraming("none")


def discard_body(stream: Readable, framing: BodyFraming, limit: int = MAX_DISCARDED_BODY) -> bool:
    """Read and drop the body ``framing`` describes, up to ``limit`` bytes; whether it was read whole.

    ``False`` means the connection cannot carry another request: the body is
    larger than ``limit`` (nothing more is read), malformed, or the client
    stopped sending (end of stream; a timeout propagates as ``OSError``).
    """
    return _take(stream, framing, limit, None)


def read_body(stream: Readable, framing: BodyFraming, limit: int = MAX_DISCARDED_BODY) -> bytes | None:
    """The body ``framing`` describes, read under the same rule and bound as ``discard_body`` (for an app
    that reads one: the routing API's ``PUT``); None when it cannot be read whole within ``limit``
    (the connection then cannot carry another request)."""
    parts: list[bytes] = []
    return b"".join(parts) if _take(stream, framing, limit, parts) else None


class _Pieces(Protocol):
    """Where ``_take`` puts the pieces of a body it keeps: a list, or a file (``_Spool``)."""

    def append(self, data: bytes, /) -> object: ...


class _Spool:
    """``_take``'s ``into`` over a file: each piece read is written to it."""

    def __init__(self, out: BinaryIO) -> None:
        self._out = out

    def append(self, data: bytes, /) -> object:
        return self._out.write(data)


def spool_body(stream: Readable, framing: BodyFraming, out: BinaryIO, limit: int) -> bool:
    """The body ``framing`` describes written to ``out`` as it is read, under the same rule and bound as
    ``read_body`` (``server.SpooledBodyApp``: a pushed CAR, never held in memory); whether it was read whole."""
    return _take(stream, framing, limit, _Spool(out))


def _take(stream: Readable, framing: BodyFraming, limit: int, into: _Pieces | None) -> bool:
    """Read the body within ``limit``, keeping its bytes in ``into`` unless it is None; whether it was read whole."""
    if framing.kind == "none":
        return True
    if framing.kind == "length":
        return framing.length <= limit and _skip(stream, framing.length, into)
    if framing.kind == "chunked":
        return _skip_chunked(stream, limit, into)
    return False


def _skip(stream: Readable, count: int, into: _Pieces | None = None) -> bool:
    while count > 0:
        data = stream.read(min(count, 16 * 1024))
        if not data:
            return False
        if into is not None:
            into.append(data)
        count -= len(data)
    return True


def _skip_chunked(stream: Readable, limit: int, into: _Pieces | None = None) -> bool:
    """Chunks (RFC 9112 7.1): ``size[;ext] CRLF data CRLF`` ... ``0 CRLF`` trailers ``CRLF``, within ``limit``."""
    budget = limit
    while True:
        line = stream.readline(_MAX_LINE + 1)
        budget -= len(line)
        if not line.endswith(b"\n") or budget < 0:
            return False
        size_text, semicolon, _extensions = line.rstrip(b"\r\n").partition(b";")
        if semicolon:
            size_text = size_text.rstrip(b" \t")  # BWS is allowed only before an extension
        if not size_text or any(c not in b"0123456789abcdefABCDEF" for c in size_text):
            return False
        size = int(size_text, 16)
        if size == 0:
            break
        budget -= size + 2
        if budget < 0 or not _skip(stream, size, into) or stream.read(2) != b"\r\n":
            return False
    while True:  # trailer fields, then the empty line
        line = stream.readline(_MAX_LINE + 1)
        budget -= len(line)
        if not line.endswith(b"\n") or budget < 0:
            return False
        if line in (b"\r\n", b"\n"):
            return True
