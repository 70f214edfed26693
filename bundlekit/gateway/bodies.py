"""The apps mounted beside the gateway, and the request bodies the ones that write are given.

``bundlekit serve`` answers its gateway paths itself and hands every other path to an app mounted
at its prefix (``server.GatewayServer``): an :data:`App` reads no body (the browsing interface), a
:class:`BodyApp` gets its body in memory within a small bound (the Delegated Routing API's ``PUT``),
a :class:`SpooledBodyApp` gets it in an unnamed temp file within a large one, once its ``admit``
check let the request in (the team hub's push API, ``hub.kubo``).

Bodies are read on the event loop as h11 delivers them (``transport.GatewayProtocol``), never on a
thread: a client trickling a body costs a socket and a timer, however many do. :func:`read_body`
keeps the pieces in memory; :func:`spool_body` writes each piece to the temp file as it arrives
(page-cache writes of at most a receive buffer each), so a pushed CAR is never held in memory.
Either gives None when the body is past its bound, malformed or cut short; a spooled file is
closed (and, being unnamed, gone) on every path but the one that hands it to its app.

The headers an app is given carry the client's address under :data:`PEER_HEADER`: a name no
HTTP header can have (a field name is a token, RFC 9110 5.1: never ``:``), so a client cannot
forge it; the routing API counts new names per client with it.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, BinaryIO, Protocol, cast

from bundlekit._fs import scratch_file
from bundlekit.gateway.respond import Response

__all__ = ["PEER_HEADER", "App", "BodyApp", "BodyConnection", "SpooledBodyApp", "read_body", "spool_body"]

# An extra application mounted beside the gateway paths: (method, target, lower-case headers) -> Response.
# It must never raise (like GatewayResponder.respond). The browsing interface (bundlekit.ui) is one, at /ui/.
App = Callable[[str, str, Mapping[str, str]], Response]

#: The client's address in a mounted app's headers (see the module doc).
PEER_HEADER = ":peer"

# ASGI's receive: the next message of the request (its body's pieces, or a disconnect).
Receive = Callable[[], Awaitable[Mapping[str, Any]]]


@dataclass(frozen=True)
class BodyApp:
    """A mounted app that reads the body of its ``methods``' requests: the Delegated Routing API's ``PUT``.

    ``respond(method, target, headers, body)`` gets the body read within ``max_body`` bytes
    (chunked or not), ``b""`` for none, or None when it could not be read whole within the bound
    (nothing past it is read; the connection closes after the answer). Like ``App``, it must never raise.
    """

    respond: Callable[[str, str, Mapping[str, str], bytes | None], Response]
    max_body: int
    methods: frozenset[str] = frozenset({"PUT"})


@dataclass(frozen=True)
class SpooledBodyApp:
    """A ``BodyApp`` whose body goes to an unnamed temp file instead of memory: the team hub's pushed CARs.

    ``respond(method, target, headers, body)`` gets the body read within ``max_body`` bytes into an
    unnamed temp file (``_fs.scratch_file``; positioned at its start, closed and so gone after the
    answer; an empty one for no body), or None when it could not be read whole within the bound.
    Like ``App``, it must never raise.
    """

    respond: Callable[[str, str, Mapping[str, str], BinaryIO | None], Response]
    max_body: int
    methods: frozenset[str] = frozenset({"POST"})
    # Judged before the body is read: (method, target, headers) -> a refusal, or None to read the body.
    # A refused body is never read (dropped within the usual bound, else the connection closes), so a
    # client without the app's credentials cannot make it spool anything. An admitted body is read
    # under the idle timeout alone (a large push may take longer than the head's deadline). It runs on
    # the event loop: a cheap check (a token compared), never a disk read.
    admit: Callable[[str, str, Mapping[str, str]], Response | None] | None = None


class BodyConnection(Protocol):
    """What reading a body needs of its connection (``transport.GatewayProtocol``)."""

    broken: bool


async def read_body(receive: Receive, conn: BodyConnection, limit: int) -> bytes | None:
    """The request body, read within ``limit`` bytes; None when it is larger, malformed or cut short."""
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request" or conn.broken:
            return None
        size += len(message["body"])
        if size > limit:
            return None
        parts.append(message["body"])
        if not message.get("more_body", False):
            return b"".join(parts)


async def spool_body(receive: Receive, conn: BodyConnection, limit: int) -> BinaryIO | None:
    """The request body written to a new unnamed temp file as it arrives, within ``limit`` bytes: the file
    at its start, or None (the file closed) when the body is larger, malformed or cut short. Raises
    ``OSError`` when the file cannot be made or written (the file closed)."""
    spool = cast(BinaryIO, os.fdopen(scratch_file(), "w+b"))
    try:
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request" or conn.broken:
                spool.close()
                return None
            data: bytes = message["body"]
            size += len(data)
            if size > limit:
                spool.close()
                return None
            spool.write(data)  # buffered: written whole (a page-cache write of at most a receive buffer)
            if not message.get("more_body", False):
                spool.seek(0)
                return spool
    except BaseException:  # a write error, or the request's task cancelled by a stop
        spool.close()
        raise
