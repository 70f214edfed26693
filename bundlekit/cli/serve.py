"""``bundlekit serve``: the local trustless gateway in the foreground."""

from __future__ import annotations

import click

from bundlekit.cli import output
from bundlekit.gateway.server import (
    STOP_POLL_INTERVAL,
    close_source,
    create_server,
    make_source,
    served_roots,
    stop_on_signals,
)

__all__ = ["serve"]


@click.command()
@click.option(
    "--host", default="127.0.0.1", show_default=True, help="Address to bind (loopback unless told otherwise)."
)
@click.option(
    "--port",
    default=8080,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="Port (0 picks a free one).",
)
@click.option(
    "--store",
    "store_dir",
    type=click.Path(file_okay=False),
    help="Serve this block store (default: the local store, unless CAR files are given).",
)
@click.option("--json", "as_json", is_flag=True, help='Print {"url", "roots": [{cid, source, name}]} as one line.')
@click.argument("cars", nargs=-1, type=click.Path(exists=True, dir_okay=False))
def serve(host: str, port: int, store_dir: str | None, as_json: bool, cars: tuple[str, ...]) -> None:
    """Serve blocks over a local trustless HTTP gateway until Ctrl-C or SIGTERM.

    CAR files given as arguments are indexed on disk and served first; the
    block store is served when --store is given or no CAR is. On stdout: the
    URL (e.g. http://127.0.0.1:8080), then one line per root served,
    CID<TAB>SOURCE<TAB>NAME (SOURCE is the CAR file or "store"; NAME is the
    pin's name, or "-"). On stderr: "serving on URL", and "stopped" at the
    end. Requests go to URL/ipfs/CID[/PATH]. Ctrl-C and SIGTERM stop it at
    once, with exit 0.
    """
    source = make_source(store_dir, cars)
    try:
        server = create_server(source, host, port)
    except BaseException:
        close_source(source)
        raise
    try:
        roots = served_roots(source)
        # Announce inside the handlers' block: a signal sent as soon as the URL is seen stops cleanly.
        with stop_on_signals(server):
            if as_json:
                output.data_json({"url": server.url, "roots": [r.to_dict() for r in roots]})
            else:
                output.data(server.url)
                for root in roots:
                    output.data(f"{root.cid}\t{root.source}\t{root.name or '-'}")
            output.status(f"serving on {server.url}")
            server.serve_forever(poll_interval=STOP_POLL_INTERVAL)
        output.status("stopped")
    finally:
        server.server_close()
        close_source(source)
