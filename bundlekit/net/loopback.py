"""The one loopback rule of the servers bundlekit runs, and the Host headers a loopback server answers.

A server bound to loopback is reachable only from this machine, but a web page the
user opens can still reach it through DNS rebinding: a name the page's site controls
is re-pointed at 127.0.0.1, and the browser then sends the server requests carrying
that name as ``Host`` and reads the answers as same-origin. A loopback server that
answers only loopback ``Host`` names closes that door. :func:`is_loopback` decides
whether a bind address is loopback (``bundlekit mcp --http`` also uses it to require
``--host`` for anything else); :func:`allowed_hosts` lists the ``Host`` headers such a
server answers: the usual loopback names *and* the address actually bound
(``127.0.0.2``, ``[::1]``...), since a client that connects to the address it was told
sends that as its Host. Used by ``bundlekit mcp --http`` (the SDK's DNS-rebinding
protection compares them as exact strings: ``TransportSecurityMiddleware`` in
``mcp/server/transport_security.py`` of modelcontextprotocol/python-sdk, release 2.3.0)
and by the apps mounted beside the gateway (``bundlekit serve --ui``, ``bundlekit open``).
"""

from __future__ import annotations

import ipaddress
import re
import socket

__all__ = ["LOOPBACK_NAMES", "allowed_hosts", "host_header", "is_loopback"]

# The names a local client may use for a loopback server, whatever loopback address it is bound to.
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
_PART = r"(?:0[xX][0-9a-fA-F]+|[0-9]+)"
_NUMERIC_HOST = re.compile(rf"{_PART}(?:\.{_PART}){{0,3}}")


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name, an IPv4 address, an IPv6 address with or without brackets) is loopback:
    ``localhost`` or any address in 127.0.0.0/8 or ``::1``, also as the C resolver reads a numeric host
    (``getaddrinfo`` takes ``inet_aton``'s forms: ``127.1``, ``2130706433``, ``0x7f000001``) and as an
    IPv4-mapped IPv6 address (``::ffff:127.0.0.1``): each connects to this machine. ``localhost.`` (a
    fully qualified name, asked of DNS) and any other name are not: what they resolve to can change."""
    if host == "localhost":
        return True
    bare = host.strip("[]")
    try:
        address = ipaddress.ip_address(bare)
    except ValueError:
        return _legacy_ipv4_loopback(bare)
    mapped = address.ipv4_mapped if isinstance(address, ipaddress.IPv6Address) else None
    return address.is_loopback or (mapped is not None and mapped.is_loopback)


def _legacy_ipv4_loopback(host: str) -> bool:
    """Whether ``host`` is an IPv4 address in one of ``inet_aton``'s shorter or non-decimal forms, in
    127.0.0.0/8 (glibc's ``inet_aton`` also takes trailing text after a space: the pattern keeps it out)."""
    if not _NUMERIC_HOST.fullmatch(host):
        return False
    try:
        return socket.inet_aton(host)[0] == 127
    except OSError:
        return False


def host_header(host: str, port: int) -> str:
    """``host:port`` as an HTTP Host header carries it (an IPv6 address in brackets)."""
    bare = host.strip("[]")
    return f"[{bare}]:{port}" if ":" in bare else f"{bare}:{port}"


def allowed_hosts(host: str, port: int) -> list[str]:
    """The Host headers a loopback server bound to ``host:port`` answers: the loopback names and ``host`` itself."""
    names = [host_header(name, port) for name in LOOPBACK_NAMES]
    bound = host_header(host, port)
    return names if bound in names else [*names, bound]
