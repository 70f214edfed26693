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
(``server.BodyApp``, into memory) and the team hub's push API's ``POST /api/v0/...``
(``server.SpooledBodyApp``, into an unnamed temp file, once its ``admit`` check passed). Their
body is framed by the same rule and read within the app's bound instead of dropped; one past
the bound is not read, and the connection closes.

The rules are decided here; the bytes are read by the server (h11 under uvicorn, ``server.py``
and ``transport.py``: ``transport.head_problem`` runs ``header_line_problem`` and
``request_framing`` on each raw head), under the connection's own bounds (the request's
deadline from its first byte), so a client trickling a body is cut off like one trickling headers.
"""

from __future__ import annotations

from dataclasses import dataclass
from email.message import Message

__all__ = ["MAX_DISCARDED_BODY", "MAX_HEAD_BYTES", "BodyFraming", "header_line_problem", "request_framing"]

#: Bytes of a request body read and dropped to keep a connection open; a larger body closes it.
MAX_DISCARDED_BODY = 64 * 1024
#: Bytes of header lines (after the request line) one request may send; more is a 431.
MAX_HEAD_BYTES = 64 * 1024


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
