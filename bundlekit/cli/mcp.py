"""``bundlekit mcp``: serve a memory tree or a verified bundle to MCP clients (thin: parse, open, run).

The SDK lives in the optional extra ``bundlekit[mcp]``; it is imported only
here, when the command runs, so ``bundlekit --help`` and every other command
stay as fast as without it. Its import (~1 s of CPU, mostly ``mcp.types``'
pydantic models) comes last: the options and the source are checked first,
so a usage error costs what ``--help`` costs; a missing extra is still named
before any work (``require_extra`` looks for it without importing it). The
source is opened (and a bundle verified) before the server starts: a
tampered bundle is refused with exit 3 and no server ever answers from it.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from types import ModuleType
from typing import Any

import click

from bundlekit._bounds import Bound
from bundlekit.bundle.layers import parse_layer_option
from bundlekit.bundle.sources import gateway_source
from bundlekit.bundle.workspace import parse_workspace_option
from bundlekit.cli import output
from bundlekit.cli._loglines import route_library_logs
from bundlekit.cli._extras import import_extra, require_extra
from bundlekit.cli._keyopts import key_options, resolve_key_spec
from bundlekit.cli._params import DEFAULT_TREE, MEMORY_DIR_ENV, AliasOption, Seconds, tree_option
from bundlekit.cli.sync import background_sync
from bundlekit.errors import UsageError
from bundlekit.mcp_server import MemoryTools, PublishSettings, open_served_memory
from bundlekit.mcp_server.address import host_header, is_loopback
from bundlekit.pinning.origins import open_pinners

__all__ = ["mcp"]


_SDK_PACKAGES = frozenset({"mcp", "pydantic", "uvicorn", "starlette"})


def _require_sdk() -> None:
    require_extra(extra="mcp", needs="the MCP server", packages=_SDK_PACKAGES)


def _sdk_server() -> ModuleType:
    return import_extra("bundlekit.mcp_server.server", extra="mcp", needs="the MCP server", packages=_SDK_PACKAGES)


_PORT = Bound(1, 65535)


def _http_address(value: str, host: str | None) -> tuple[str, int]:
    addr_host, sep, port_text = value.rpartition(":")
    if not sep:
        addr_host, port_text = "127.0.0.1", value
    try:
        port = _PORT.parse(port_text, "the port")
    except ValueError:
        raise UsageError(f"--http {value[:40]!r}: give PORT or 127.0.0.1:PORT (a port from 1 to 65535)") from None
    if host is not None:
        return host, port
    if not is_loopback(addr_host):
        raise UsageError(
            f"--http {value[:80]!r} listens beyond loopback; add --host {addr_host[:60]} to say that is intended"
        )
    return addr_host.strip("[]"), port


def _listen_address(command: Callable[..., None]) -> Callable[..., None]:
    """``--http`` and ``--host``, given to ``command`` as one ``address`` (``(host, port)``, None for stdio)."""

    @click.option("--http", "http_addr", metavar="[HOST:]PORT",
                  help="Serve the streamable HTTP transport at http://HOST:PORT/mcp instead of stdio (loopback).")
    @click.option("--host", help="Listen on this interface with --http (beyond loopback: an explicit choice).")
    @functools.wraps(command)
    def with_address(*args: Any, http_addr: str | None, host: str | None, **kwargs: Any) -> None:
        if host is not None and http_addr is None:
            raise UsageError("--host applies to --http only")
        command(*args, address=_http_address(http_addr, host) if http_addr is not None else None, **kwargs)

    return with_address


@click.command("mcp")
@tree_option("The memory tree (read-write; default $BUNDLEKIT_MEMORY_DIR, else ./memory if it is there, when "
             "nothing else is named); with --from or --layer, where the loaded tree goes and writes land.",
             hidden_aliases=("--memory",), from_env=False)
@click.option("--from", "from_uri", metavar="URI",
              help="Serve the bundle at URI (ipfs://, gateway URL, .car, manifest URL), loaded and verified.")
@click.option("--layer", "layers", multiple=True, metavar="NAME=URI", help="Serve the layered view (repeatable).")
@click.option("--workspace", "workspace", multiple=True, metavar="[LABEL=]URI",
              help="A teammate's shared bundle (.car, ipfs://, ipns://, URL, IPNS name) served read-only beside "
                   "the tree, labelled with its publisher (repeatable).")
@click.option("--gateway", "gateways", multiple=True, metavar="URL", help="Trustless gateway, tried in order.")
@click.option("--allow-publish", is_flag=True, help="Offer the bundle_publish tool (build and pin the tree).")
@click.option("--pinner", "pinner_names", multiple=True, metavar="NAME",
              help="Default pinners of bundle_publish (repeatable; default: local).")
@_listen_address
@click.option("--name-key", "--sync-name-key", "sync_name_key", cls=AliasOption, hidden_aliases=("--sync-name-key",),
              type=click.Path(dir_okay=False, path_type=Path), metavar="FILE",
              help="Meanwhile, sync the tree with this key's IPNS name (as `bundlekit sync --name-key`).")
@click.option("--interval", "--sync-interval", "sync_interval", cls=AliasOption, hidden_aliases=("--sync-interval",),
              type=Seconds(), default=60.0, show_default=True, metavar="SECONDS",
              help="Seconds between the background sync rounds (with --name-key).")
@key_options
def mcp(tree: Path | None, from_uri: str | None, layers: tuple[str, ...], workspace: tuple[str, ...],
        gateways: tuple[str, ...],
        allow_publish: bool, pinner_names: tuple[str, ...], address: tuple[str, int] | None,
        sync_name_key: Path | None, sync_interval: float, **key_params: Any) -> None:
    """Serve memory to MCP clients (stdio by default): recall, context, show, list, write, forget, note.

    A bundle (--from) or layered view (--layer) is read-only unless -d DIR says where writes go;
    read-only, it is held in memory and nothing of it is written to disk. SIGTERM stops the server
    (exit 0); Ctrl-C and SIGHUP interrupt it (exit 130, 129).
    """
    memory_dir = tree
    if memory_dir is None and from_uri is None and not layers:  # the tree every `memory` command reads
        named = os.environ.get(MEMORY_DIR_ENV)
        memory_dir = Path(named) if named else DEFAULT_TREE if DEFAULT_TREE.is_dir() else None
    _require_sdk()  # before any load: a missing extra fails fast
    key = resolve_key_spec(**key_params)
    default_pinners = pinner_names or ("local",)
    if allow_publish:  # an unknown or unconfigured pinner is a usage error now, not at the first publish
        for pinner in open_pinners(default_pinners):
            pinner.close()
    served = open_served_memory(
        memory_dir=memory_dir, from_uri=from_uri, layers=parse_layer_option(layers), source=gateway_source(gateways),
        key=key, workspace=parse_workspace_option(workspace),
    )
    for layer in served.workspace:
        for warning in layer.warnings:
            output.warn(warning)
        output.status(f"workspace layer {layer.publisher} ({layer.root or layer.uri}) read-only")
    route_library_logs()  # the SDK's and uvicorn's records as one-line warnings and errors, never tracebacks
    with served:
        publish = PublishSettings(key=key, default_pinners=default_pinners) if allow_publish else None
        tools = MemoryTools(served, publish=publish)
        if allow_publish and not tools.can_publish:
            raise UsageError("--allow-publish needs a tree on disk: add -d DIR")
        tree_dir = None if served.read_only else served.tree_dir
        if sync_name_key is not None and tree_dir is None:
            raise UsageError("--name-key needs a tree on disk to sync: add -d DIR")
        server = _sdk_server()  # last: every usage error above is refused without the SDK's import
        syncing = (background_sync(tree_dir, sync_name_key, default_pinners, key, sync_interval)
                   if sync_name_key is not None and tree_dir is not None else nullcontext())
        mode = "read-only" if served.read_only else "read-write"
        where = f" ({served.root})" if served.root else ""
        with syncing:
            if address is None:
                server.run_stdio(tools, lambda: output.status(f"serving {served.origin}{where} {mode} over stdio"))
            else:
                url = f"http://{host_header(*address)}/mcp"
                server.run_http(tools, *address,
                                lambda: output.status(f"serving {served.origin}{where} {mode} at {url}"))
                output.status("stopped")  # SIGTERM: a server's normal end (other signals raise)
