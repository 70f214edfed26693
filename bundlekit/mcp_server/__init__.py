"""``bundlekit mcp``: memory tools for any Model Context Protocol client (specs/mcp.md).

``source`` opens what is served (a tree, a verified bundle, a layered view),
``tools`` holds the operations and their rules, ``server`` exposes them through
the official ``mcp`` SDK (the optional extra ``bundlekit[mcp]``; only that
module and ``http_server``, which serves its HTTP app with uvicorn within
bounds, import it); ``address`` says where ``--http`` listens and which Host
headers it answers.
"""

from __future__ import annotations

from bundlekit.mcp_server.source import ServedMemory, open_served_memory
from bundlekit.mcp_server.tools import MemoryTools, PublishSettings

__all__ = ["MemoryTools", "PublishSettings", "ServedMemory", "open_served_memory"]
