"""``bundlekit serve``: the local trustless gateway in the foreground."""

from __future__ import annotations

import signal
from types import FrameType

import click

from bundlekit.gateway.server import create_server, make_source

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
@click.argument("cars", nargs=-1, type=click.Path(exists=True, dir_okay=False))
def serve(host: str, port: int, store_dir: str | None, cars: tuple[str, ...]) -> None:
    """Serve blocks over a local trustless HTTP gateway until Ctrl-C.

    CAR files given as arguments are indexed on disk and served first; the
    block store is served when --store is given or no CAR is. The listening
    URL (e.g. http://127.0.0.1:8080) goes to stderr; requests go to
    URL/ipfs/CID[/PATH].
    """
    source = make_source(store_dir, cars)
    server = create_server(source, host, port)
    try:
        # SIGTERM (service managers, `kill`) stops as cleanly as Ctrl-C; set inside
        # the try so a signal right after the URL is printed is still caught.
        signal.signal(signal.SIGTERM, _interrupt)
        click.echo(f"serving on {server.url}", err=True)
        server.serve_forever()
    except KeyboardInterrupt:
        click.echo("stopped", err=True)
    finally:
        server.server_close()


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt
