"""``bundlekit sync [-d DIR] --name-key KEY`` (writer) / ``--name NAME`` (follower): a memory tree kept in step with a name.

Each round prints the root the name points at afterwards on stdout (or one line of JSON with
``--json``); the merge report's rows, the pins and the summary go to stderr. ``--interval``
repeats until Ctrl-C, SIGTERM or SIGHUP (exit 130, 143, 129, the round's cleanups run); a
round that fails then is a warning and the next round comes all the same.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from bundlekit.cli import output
from bundlekit.bundle.keyoptions import KeyOptions
from bundlekit.bundle.loadoptions import LoadOptions
from bundlekit.bundle.merge import MergeOptions
from bundlekit.bundle.sources import Gateways
from bundlekit.bundle.signature import manifest_signer
from bundlekit.cli._keyopts import key_options, resolve_key_spec, sign_options, signing
from bundlekit.cli._params import Count, Seconds, legacy_tree_argument, tree_option
from bundlekit.cli._urls import check_urls
from bundlekit.cli.merge import ON_CONFLICT, report_rows, summary_line
from bundlekit.cli.names import ROUTING_OPTION, published_line
from bundlekit.flows.names import routers_from_env, routing_endpoints
from bundlekit.errors import BundlekitError
from bundlekit.pinning.origins import open_pinners
from bundlekit.pinning.protocol import REQUIRE_MODES
from bundlekit.crypto import KeySpec
from bundlekit.crypto.signing import Ed25519Signer
from bundlekit.flows.sync import DEFAULT_ATTEMPTS, BackgroundSync, SyncOptions, SyncReport, sync, sync_forever

__all__ = ["background_sync", "sync_cmd"]


def _show(report: SyncReport, as_json: bool) -> None:
    """One round's output: stdout the root (or the JSON line), stderr the rest."""
    if report.loaded is not None:
        for warning in report.loaded.warnings:
            output.warn(warning)
        output.status(f"loaded {report.loaded.memories} memory files and {report.loaded.days} day files of "
                      f"{report.loaded.root} into the empty tree (a first follow: nothing to merge)")
    for warning in report.warnings:
        output.warn(warning)
    if report.merge is not None:
        for row in report_rows(report.merge):
            output.status(row)
        output.status(summary_line(report.merge, dry_run=False))
    if report.pins is not None:
        for pin in report.pins.pins:
            output.status(f"pinned {pin.cid} with {pin.pinner}: {pin.status}" + (f" ({pin.error})" if pin.error else ""))
    if report.published is not None:
        output.status(published_line(report.published))
    elif report.up_to_date:
        output.status(f"{report.name} already holds this tree ({report.root})")
    if report.attempts > 1:
        output.status(f"took {report.attempts} rounds: the name moved under this writer")
    if as_json:
        output.data_json(report.to_dict())
    elif report.root is not None or report.remote is not None:
        output.data(report.root or report.remote or "")


@click.command("sync")
@legacy_tree_argument("tree_arg", metavar="TREE")
@tree_option("The memory tree to keep in step.")
@click.option("--name-key", type=click.Path(dir_okay=False, path_type=Path), metavar="FILE",
              help="Write: the Ed25519 key file of the name; merge, build, pin, publish.")
@click.option("--name", "name_text", metavar="NAME", help="Follow: the name (k51...) to merge from; nothing published.")
@click.option("--pinner", "pinner_names", multiple=True, metavar="NAME",
              help="Pin with this pinner (repeatable; default: local). See `bundlekit pinners`.")
@click.option("--require", type=click.Choice(REQUIRE_MODES), default="all", show_default=True,
              help="The pins that must hold before the name moves.")
@ON_CONFLICT
@click.option("--gateway", "gateways", multiple=True, metavar="URL", callback=check_urls,
              help="Trustless gateway for records and blocks, tried in order.")
@ROUTING_OPTION
@click.option("--publisher", "publishers", multiple=True, metavar="ID",
              help="Require the name's bundles signed by ID (repeatable): refuse others, exit 3.")
@click.option("--interval", type=Seconds(), default=None, metavar="SECONDS",
              help="Sync again every SECONDS until stopped.")
@click.option("--max-attempts", type=Count(1), default=DEFAULT_ATTEMPTS, show_default=True,
              help="Rounds a writer tries when other writers keep moving the name.")
@click.option("--json", "as_json", is_flag=True, help="Print each round's report as one line of JSON.")
@sign_options
@key_options
def sync_cmd(tree: Path, name_key: Path | None, name_text: str | None, pinner_names: tuple[str, ...], require: str,
             on_conflict: str, gateways: tuple[str, ...], routing: tuple[str, ...], publishers: tuple[str, ...],
             interval: float | None,
             max_attempts: int, as_json: bool, sign: bool, signer_address: str | None, **key_params: Any) -> None:
    """Keep the memory tree (-d) in step with an IPNS name.

    A writer (--name-key) resolves the name, merges its bundle, builds the tree (signed with --sign),
    pins it and publishes it one sequence above the record it merged; when another writer moved the
    name meanwhile it starts again from the new record. A follower (--name) only merges.
    With routing endpoints (--routing, $BUNDLEKIT_ROUTING: a team's `bundlekit serve`) the name's
    records are read and written there too, so writers on different machines meet.
    """
    sign = signing(key_params, sign)
    signer = manifest_signer(KeyOptions.from_params(key_params), sign=sign, signer_address=signer_address)
    key = None if sign else resolve_key_spec(new_key=name_key is not None, **key_params)
    routers = routers_from_env() if name_key is not None else []
    endpoints = routing_endpoints(routing)
    pinners = open_pinners(pinner_names or ("local",)) if name_key is not None else []
    options = SyncOptions(require=require, max_attempts=max_attempts, routers=tuple(routers), routing=tuple(endpoints),
                          merge=MergeOptions(on_conflict=on_conflict), load=LoadOptions(publishers=publishers))
    try:
        def once() -> SyncReport:
            return sync(tree, name_key=name_key, name=name_text, pinners=pinners, key=key, sign=signer,
                        source=Gateways(gateways), options=options)

        if interval is None:
            _show(once(), as_json)
            return

        def failed(exc: BundlekitError) -> None:
            output.warn(f"this round failed ({exc}); trying again in {interval:g} s")

        sync_forever(once, interval, on_report=lambda r: _show(r, as_json), on_error=failed)
    finally:
        for pinner in pinners:
            pinner.close()


def background_sync(tree: str | Path, name_key: Path, pinner_names: tuple[str, ...], key: KeySpec | None,
                    interval: float) -> BackgroundSync:
    """``bundlekit mcp --sync-name-key``: the writer's rounds on a thread beside the server, each round's
    summary and every failure one line on stderr (stdout may be the MCP transport). The key file, the
    routers, the routing endpoints of ``$BUNDLEKIT_ROUTING`` and the pinners are checked now, before
    the server starts."""
    signer = Ed25519Signer.from_file(name_key)
    routers = routers_from_env()
    endpoints = routing_endpoints()
    for pinner in open_pinners(pinner_names or ("local",)):
        pinner.close()

    def once() -> SyncReport:
        pinners = open_pinners(pinner_names or ("local",))
        try:
            return sync(tree, name_key=signer, pinners=pinners, key=key,
                        options=SyncOptions(routers=tuple(routers), routing=tuple(endpoints)))
        finally:
            for pinner in pinners:
                pinner.close()

    def report(done: SyncReport) -> None:
        merged = done.merge.report.counts() if done.merge is not None else {}
        state = ("up to date" if done.up_to_date else
                 f"published {done.root} (sequence {done.published.sequence})" if done.published else "merged")
        output.status(f"sync {done.name}: {state}" + (f"; merged {merged}" if merged else ""))

    return BackgroundSync(once, interval, on_report=report,
                          on_error=lambda exc: output.warn(f"sync round failed ({exc}); trying again in {interval:g} s"))
