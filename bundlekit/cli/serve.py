"""``bundlekit serve`` (the local trustless gateway, optionally with the browsing interface) and ``bundlekit open``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import click

from bundlekit._signals import Interrupted
from bundlekit.blockstore import BlockStore
from bundlekit.cli import output
from bundlekit.cli._extras import import_extra
from bundlekit.cli._loglines import route_library_logs
from bundlekit.cli._params import Count
from bundlekit.errors import UsageError
from bundlekit.gateway.server import (
    MAX_CLIENT_CONNECTIONS,
    MAX_CLIENT_RATE,
    MAX_CONNECTIONS,
    STOP_POLL_INTERVAL,
    App,
    BodyApp,
    GatewayServer,
    SpooledBodyApp,
    close_source,
    create_server,
    make_source,
    served_roots,
    stop_on_signals,
)
from bundlekit.gateway.sources import ChainSource, ServedBlocks
from bundlekit.hub.kubo import MAX_PUSH_BODY, MAX_STORE_BYTES
from bundlekit.hub.kubo import MOUNT as PUSH_MOUNT
from bundlekit.hub.kubo import KuboAPI, PushLimits
from bundlekit.hub.routing import MOUNT, RoutingAPI
from bundlekit.ipld.cid import cid_to_str
from bundlekit.names.routing import SERVE_TOKEN_ENV, token_from_env

__all__ = ["open_cmd", "serve"]


def _ui_module(name: str) -> Any:
    """``bundlekit.ui.<name>``, imported only when the interface is asked for (Jinja2, markdown-it-py)."""
    return import_extra(f"bundlekit.ui.{name}", extra="ui", needs="the interface",
                        packages={"jinja2", "markdown_it", "markupsafe"})


Apps = dict[str, App | BodyApp | SpooledBodyApp]


def _ui_apps(source: ServedBlocks) -> Apps:
    app_module = _ui_module("app")
    app: App = app_module.UIApp(source.get, lambda: served_roots(source))
    return {app_module.MOUNT: app}


def _store_apps(source: ServedBlocks, token: str | None, limits: PushLimits) -> tuple[Apps, Callable[[], None]]:
    """Over the store ``source`` serves (none without a store): the Delegated Routing API's IPNS paths, and
    with a token the team hub's push API (kubo's RPC calls the ``kubo`` pinner makes); and what to call
    when the server stops (the push API's imports under way end before their next block)."""
    parts = source.sources if isinstance(source, ChainSource) else (source,)
    store = next((p for p in parts if isinstance(p, BlockStore)), None)
    if store is None:
        return {}, lambda: None
    routing = RoutingAPI(store, token=token)
    apps: Apps = {MOUNT: routing.app()}
    if token is None:
        return apps, lambda: None
    push = KuboAPI(store, token, limits, records=routing.put)
    apps[PUSH_MOUNT] = push.app()
    return apps, push.stop


@dataclass(frozen=True)
class _Bounds:
    """``serve``'s bounds on its clients (``create_server``'s): connections, in all and per address, and
    requests a second per address (None: the default, loopback clients unbounded)."""

    max_connections: int = MAX_CONNECTIONS
    max_client_connections: int = MAX_CLIENT_CONNECTIONS
    max_client_rate: int | None = None


def _serve(
    source: ServedBlocks,
    host: str,
    port: int,
    announce: Callable[[GatewayServer], None],
    *,
    ui: bool = False,
    bounds: _Bounds | None = None,
    store_apps: Apps | None = None,
    on_stop: Callable[[], None] = lambda: None,
) -> None:
    """Serve ``source`` (closed at the end, whatever happens) until a signal.

    Each stop is reported as the CLI contract says for every command (``_signals``): SIGTERM exit 143,
    Ctrl-C 130, SIGHUP 129, ``interrupted`` on stderr; the server has stopped cleanly by then.
    """
    # The gateway's and uvicorn's records (a peer can make them log at will: every malformed request) as
    # one-line, rate-limited warnings and errors, never a traceback or a raw peer byte (``_loglines``).
    route_library_logs()
    try:
        apps = {**(store_apps or {}), **(_ui_apps(source) if ui else {})}
        bounds = bounds or _Bounds()
        server = create_server(source, host, port, apps=apps, max_connections=bounds.max_connections,
                               max_client_connections=bounds.max_client_connections,
                               max_client_rate=bounds.max_client_rate)
    except BaseException:
        close_source(source)
        raise
    try:
        # Announce inside the handlers' block: a signal sent as soon as the URL is seen stops cleanly.
        with stop_on_signals(server) as received:
            announce(server)
            server.serve_forever(poll_interval=STOP_POLL_INTERVAL)
    finally:
        on_stop()  # before the grace server_close gives the writes under way
        server.server_close()
        close_source(source)
    if received:
        raise Interrupted(received[0])  # the CLI prints "interrupted" and exits 128 + the signal
    output.status("stopped")


@click.command()
@click.option(
    "--host", default="127.0.0.1", show_default=True, help="Address to bind (loopback unless told otherwise)."
)
@click.option(
    "--port",
    default=8080,
    show_default=True,
    type=Count(0, 65535),
    help="Port (0 picks a free one).",
)
@click.option(
    "--store",
    "store_dir",
    type=click.Path(file_okay=False),
    help="Serve this block store (default: the local store), after the CAR files given.",
)
@click.option(
    "--no-store",
    is_flag=True,
    help="Serve only the CAR files given: no block store, no IPNS records.",
)
@click.option("--ui", is_flag=True, help="Also serve the read-only browsing interface at URL/ui/ (needs bundlekit[ui]).")
@click.option("--max-connections", default=MAX_CONNECTIONS, show_default=True, type=Count(1),
              help="Connections open at once; one more is answered 503 (Retry-After: 1) and closed.")
@click.option("--max-client-connections", default=MAX_CLIENT_CONNECTIONS, show_default=True, type=Count(1),
              help="Connections open at once from one client address; one more is answered 503 and closed.")
@click.option("--max-client-rate", default=None, type=Count(0), metavar="N",
              help=f"Requests a second from one client address, loopback ones too; one more is answered 429 "
                   f"(0: no bound). Default: {MAX_CLIENT_RATE} from other addresses, loopback ones unbounded.")
@click.option("--max-push-bytes", default=MAX_PUSH_BODY, show_default=True, type=Count(1),
              help="With $BUNDLEKIT_SERVE_TOKEN: the largest pushed body (a bundle's CAR) taken.")
@click.option("--max-store-bytes", default=MAX_STORE_BYTES, show_default=True, type=Count(1),
              help="With $BUNDLEKIT_SERVE_TOKEN: refuse a push once the store's blocks would pass this size.")
@click.option("--json", "as_json", is_flag=True, help='Print {"url", "roots": [{cid, source, name}]} as one line.')
@click.argument("cars", nargs=-1, type=click.Path(exists=True, dir_okay=False))
def serve(host: str, port: int, store_dir: str | None, no_store: bool, ui: bool, max_connections: int,
          max_client_connections: int, max_client_rate: int | None, max_push_bytes: int, max_store_bytes: int,
          as_json: bool, cars: tuple[str, ...]) -> None:
    """Serve blocks over a local trustless HTTP gateway until Ctrl-C or SIGTERM.

    CAR files given as arguments are indexed on disk and served first, then
    the block store (--store DIR, else the local one): its pinned blocks and
    the IPNS records `name publish` and `pin --name-key` keep in it, so
    `load ipns://NAME/...` works against it; --no-store serves the CARs
    alone. On stdout: the
    URL (e.g. http://127.0.0.1:8080), then one line per root served,
    CID<TAB>SOURCE<TAB>NAME (SOURCE is the CAR file or "store"; NAME is the
    pin's name, or "-"). On stderr: "serving on URL", and "stopped" at the
    end. Requests go to URL/ipfs/CID[/PATH]; with --ui, pages at URL/ui/.
    With the store served, the Delegated Routing V1 HTTP API's IPNS paths
    too: GET and PUT URL/routing/v1/ipns/NAME (`name publish --routing URL`);
    a PUT is kept only when its record verifies for NAME and its sequence is
    above the one kept (409 otherwise).
    A team hub: with $BUNDLEKIT_SERVE_TOKEN set, writers holding the token push
    bundles with `--pinner kubo` (BUNDLEKIT_KUBO_URL=URL, BUNDLEKIT_KUBO_TOKEN)
    through URL/api/v0/ (kubo's dag/import, pin/add, pin/ls, id), and a record
    of a name the hub does not hold yet needs the token ($BUNDLEKIT_ROUTING_TOKEN
    on the writers); without it, each client may bring 100 new names.
    SIGTERM stops it at once with exit 143; Ctrl-C and SIGHUP too, with exit 130 and 129.
    """
    if no_store and (store_dir is not None or not cars):
        raise UsageError("--no-store serves the CAR files given alone: give CAR files, and no --store")
    token = token_from_env(SERVE_TOKEN_ENV)
    if token is not None and no_store:
        raise UsageError(f"${SERVE_TOKEN_ENV} opens the push API into the store; --no-store serves none")
    source = make_source(store_dir, cars, use_store=not no_store)
    limits = PushLimits(max_body=max_push_bytes, max_store_bytes=max_store_bytes)

    def announce(server: GatewayServer) -> None:
        roots = served_roots(source)
        if as_json:
            output.data_json({"url": server.url, "roots": [r.to_dict() for r in roots]})
        else:
            output.data(server.url)
            for root in roots:
                # A pin's name may come from a pusher (pin/add name=): one field, no terminal control.
                output.data(f"{root.cid}\t{output.printable_field(root.source)}\t{output.printable_field(root.name or '-')}")
        output.status(f"serving on {server.url}" + (f" (interface at {server.url}/ui/)" if ui else ""))
        if token is not None:
            output.status(f"taking pushes from token holders at {server.url}{PUSH_MOUNT}")

    bounds = _Bounds(max_connections, max_client_connections, max_client_rate)
    store_apps, on_stop = _store_apps(source, token, limits)
    _serve(source, host, port, announce, ui=ui, bounds=bounds, store_apps=store_apps, on_stop=on_stop)


@click.command("open")
@click.argument("uri")
@click.option("--gateway", "gateways", multiple=True, metavar="URL", help="Trustless gateway, tried in order.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind (loopback unless told otherwise).")
@click.option("--port", default=0, show_default=True, type=Count(0, 65535), help="Port (0 picks a free one).")
@click.option("--json", "as_json", is_flag=True, help='Print {"url", "root"} as one line instead of the URL.')
# The default is ui.open.FETCHED_MAX_BYTES, not imported here: the interface's modules load only when open runs.
@click.option("--max-bytes", type=click.IntRange(min=0), default=512 * 1024 * 1024, show_default=True,
              help="Refuse a fetched bundle whose files claim more bytes than this, together: it is held in "
                   "memory, so the bound is lower than load's.")
def open_cmd(uri: str, gateways: tuple[str, ...], host: str, port: int, as_json: bool, max_bytes: int) -> None:
    """Show one bundle (ipfs://CID, gateway URL or CAR) in the browsing interface; print its URL.

    Every block is checked against its CID before anything is shown. The page
    URL goes to stdout; the server runs until SIGTERM (exit 143), Ctrl-C (exit 130) or SIGHUP (129).
    The manifest is read first: a DAG that is no bundle is refused before the rest is fetched. A fetched
    bundle is held in memory, never written to disk. Encrypted bundles show their plaintext index and
    names; no key is asked for.
    """
    open_module = _ui_module("open")  # before any download: a missing extra fails fast
    # The manifest first; a fetched bundle is held in memory, nothing of it is written to disk.
    # The load's values come through the interface's module: loading (httpx) is imported only when open runs.
    source, root = open_module.open_bundle(uri, source=open_module.gateway_source(gateways),
                                           options=open_module.LoadOptions(max_bytes=max_bytes))

    def announce(server: GatewayServer) -> None:
        page = f"{server.url}/ui/bundle/{cid_to_str(root)}"
        if as_json:
            output.data_json({"url": page, "root": cid_to_str(root)})
        else:
            output.data(page)
        output.status(f"showing {uri} at {page} (Ctrl-C to stop)")

    _serve(source, host, port, announce, ui=True)
