"""Where ``bundlekit mcp --http`` listens, and which Host headers it then answers (SDK-free).

One loopback rule for the whole command, and for every server bundlekit runs
(``bundlekit.net.loopback``): :func:`is_loopback` decides both whether
``--http HOST:PORT`` needs ``--host`` (anything beyond loopback is an explicit
choice) and whether the server turns on the SDK's DNS-rebinding protection,
which answers only the Host headers (and Origins) :func:`allowed_hosts` lists.
"""

from __future__ import annotations

from bundlekit.net.loopback import LOOPBACK_NAMES, allowed_hosts, host_header, is_loopback

__all__ = ["LOOPBACK_NAMES", "allowed_hosts", "host_header", "is_loopback"]
