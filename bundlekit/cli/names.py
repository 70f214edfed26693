"""``bundlekit name``: IPNS names for "the latest memory" (create, publish, resolve).

``name create --name-key K`` prints the name (``k51...``) of the Ed25519 key in
K, generating the key when K does not exist. ``name publish --name-key K CID``
signs a V2 record (sequence one above the last one known to the local store,
the routing endpoints and the gateways), puts it to each routing endpoint
(``--routing URL``, else ``$BUNDLEKIT_ROUTING``: ``PUT /routing/v1/ipns/<name>``),
keeps it in the local store (``bundlekit serve`` serves it at ``/ipns/<name>``
and ``/routing/v1/ipns/<name>``) and, when ``$BUNDLEKIT_KUBO_URL`` is set, puts
it to kubo (``routing/put``). ``name resolve NAME`` prints the CID the best
valid record of the store, the routing endpoints and the gateways points at.
Data on stdout, status on stderr. ``--name-key`` is the one name of the name's key file in every command
(``pin``, ``sync``, ``mcp``); ``--key-file``, its old spelling here, stays a hidden alias for one release.
"""

from __future__ import annotations

from pathlib import Path

import click

from bundlekit.blockstore import BlockStore
from bundlekit.cli import output
from bundlekit.cli._params import CID_OR_IPFS_URI, AliasOption
from bundlekit.cli._suggest import SuggestingGroup
from bundlekit.flows.names import publish_name, routing_endpoints
from bundlekit.ipld.cid import cid_to_str
from bundlekit.names import Published, create_name, resolve
from bundlekit.names.record import format_validity
from bundlekit.net.fetch import default_gateways, parse_gateway

__all__ = ["ROUTING_OPTION", "name", "published_line"]

ROUTING_OPTION = click.option(
    "--routing", "routing", multiple=True, metavar="URL",
    help="Delegated Routing V1 HTTP API endpoint (a `bundlekit serve`, kubo) for the name's records; "
         "repeatable (default: $BUNDLEKIT_ROUTING).")
_NAME_KEY = click.option("--name-key", "--key-file", "name_key", cls=AliasOption, hidden_aliases=("--key-file",),
                         required=True, metavar="FILE", type=click.Path(dir_okay=False, path_type=Path),
                         help="The Ed25519 key file (PEM) the name belongs to.")


@click.group(cls=SuggestingGroup)
def name() -> None:
    """IPNS names: create one, publish a CID under it, resolve it."""


@name.command("create")
@_NAME_KEY
@click.option("--json", "as_json", is_flag=True, help="Print {name, key_file, generated} as JSON.")
def create(name_key: Path, as_json: bool) -> None:
    """Print the IPNS name of the Ed25519 key in --name-key FILE (a new key is written, mode 0600, when the file is missing)."""
    text, generated = create_name(name_key)
    if generated:
        output.status(f"generated a new Ed25519 key in {name_key} (keep it secret: it controls the name)")
    if as_json:
        output.data_json({"name": text, "key_file": str(name_key), "generated": generated})
    else:
        output.data(text)


def published_line(published: Published) -> str:
    """The status line for a published record."""
    return (f"published {published.name} -> {published.value} (sequence {published.sequence}, "
            f"valid until {format_validity(published.validity)}) to {', '.join(published.routers)}")


@name.command("publish")
@_NAME_KEY
@click.argument("cid", type=CID_OR_IPFS_URI)
@click.option("--lifetime", default="720h", show_default=True, help="How long the record stays valid (Go duration).")
@click.option("--ttl", default="5m", show_default=True, help="How long resolvers may cache it (Go duration).")
@click.option("--gateway", "gateways", multiple=True, metavar="URL",
              help="Ask this gateway for the name's latest record first (default: $BUNDLEKIT_GATEWAYS).")
@ROUTING_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print {name, value, sequence, validity, routers} as JSON.")
def publish_cmd(name_key: Path, cid: bytes, lifetime: str, ttl: str, gateways: tuple[str, ...],
                routing: tuple[str, ...], as_json: bool) -> None:
    """Point the name of the --name-key FILE at CID (a bundle root): a signed V2 IPNS record, sequence one above the last known.

    With routing endpoints (--routing, $BUNDLEKIT_ROUTING) the record is PUT to each first; one that keeps
    a record as new (another writer published meanwhile) refuses it (exit 4) and nothing is kept here.
    """
    published = publish_name(name_key, cid,
                             lifetime=lifetime, ttl=ttl, gateways=gateways, routing=routing)
    output.status(published_line(published))
    if as_json:
        output.data_json(published.to_dict())
    else:
        output.data(published.name)


@name.command("resolve")
@click.argument("name_text", metavar="NAME")
@click.option("--gateway", "gateways", multiple=True, metavar="URL", help="Trustless gateway, asked for records.")
@ROUTING_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print {name, cid, sequence, validity, sources} as JSON.")
def resolve_cmd(name_text: str, gateways: tuple[str, ...], routing: tuple[str, ...], as_json: bool) -> None:
    """Print the CID NAME points at: the newest valid record of the local store, the routing endpoints and the gateways.

    The newest record seen is kept in the local store, and an older one is never followed (no rollback).
    """
    gws = [parse_gateway(g) for g in gateways] or default_gateways()
    found = resolve(name_text.removeprefix("ipns://").split("/")[0], gateways=gws, store=BlockStore(),
                    routing=routing_endpoints(routing))
    output.warn_all(found.notes)
    cid = cid_to_str(found.cid)
    if as_json:
        output.data_json({"name": found.record.name, "cid": cid, "sequence": found.record.sequence,
                          "validity": format_validity(found.record.validity), "sources": found.sources})
    else:
        output.data(cid)
