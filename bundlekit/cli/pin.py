"""``bundlekit pin`` and ``bundlekit pinners``: thin commands over ``flows.publish`` and ``bundlekit.pinning``.

``pin`` prints the root CID alone on stdout (or the ``--json`` report, one
line) so a pipeline can capture it; the summary table and the progress bars
(building, then uploading) go to stderr. The progress bars appear only when
stderr is a terminal and ``CI`` is unset (``cli.output``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from bundlekit.bundle.keyoptions import KeyOptions
from bundlekit.bundle.signature import publish_keys
from bundlekit.cli import output
from bundlekit.cli._keyopts import key_options, passphrase_check_option, recipient_options, sign_options, signing
from bundlekit.cli._params import PROFILE, strict_option, tree_option
from bundlekit.cli._shareopts import share_options, shared
from bundlekit.cli.names import published_line
from bundlekit.bundle.build import BuildOptions
from bundlekit.crypto.signing import Ed25519Signer
from bundlekit.errors import PinError, UsageError
from bundlekit.flows.names import routers_from_env, routing_endpoints
from bundlekit.flows.publish import NameTarget, PublishOptions, publish, require_not_met
from bundlekit.names import Published
from bundlekit.pinning.orchestrate import PinReport
from bundlekit.pinning.protocol import REQUIRE_MODES
from bundlekit.pinning.registry import pinner_listing

__all__ = ["pin", "pinners"]


def _table(report: PinReport) -> str:
    rows = [("PINNER", "STATUS", "CID", "DETAIL")]
    for p in report.pins:
        rows.append((p.pinner, p.status, p.cid, p.error or p.url or ""))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    return "\n".join(
        "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(r[:3])) + "  " + r[3] for r in rows
    )


@click.command("pin")
@click.argument("src", required=False, type=click.Path(exists=True, path_type=Path))
@tree_option("The memory tree to build and publish when no SRC is given.")
@click.option("--pinner", "pinner_names", multiple=True, metavar="NAME",
              help="Publish with this pinner (repeatable; default: local). See `bundlekit pinners`.")
@click.option("--require", type=click.Choice(REQUIRE_MODES), default="all", show_default=True,
              help="Succeed when every pinner, or at least one, holds a durable pin.")
@click.option("--name", help="A label for the pin on the services.")
@click.option("--psa-origin", "psa_origins", multiple=True, metavar="MULTIADDR",
              help="A libp2p node holding the blocks, for --pinner psa (repeatable; ends /p2p/<peer ID>).")
@click.option("--group", help="Pinata group id to file the upload under (pinata only).")
@click.option("--meta", "meta", multiple=True, metavar="K=V",
              help="A key-value stored with the upload (pinata only; repeatable).")
@click.option("--json", "as_json", is_flag=True, help='Print {"root", "pins": [...]} on stdout.')
@click.option("--profile", type=PROFILE, help="UnixFS profile for building or packing SRC.")
@click.option("--namespace", help="Bundle namespace (memory directories only).")
@click.option("--name-key", type=click.Path(dir_okay=False, path_type=Path), metavar="FILE",
              help="After the pins hold, publish the root under this Ed25519 key's IPNS name.")
@share_options
@sign_options
@key_options
@recipient_options
@passphrase_check_option
@strict_option("a memory file that does not parse")
def pin(
    src: Path | None,
    tree: Path,
    pinner_names: tuple[str, ...],
    require: str,
    name: str | None,
    psa_origins: tuple[str, ...],
    group: str | None,
    meta: tuple[str, ...],
    as_json: bool,
    profile: str | None,
    namespace: str | None,
    name_key: Path | None,
    sign: bool,
    signer_address: str | None,
    strict: bool,
    share_types: tuple[str, ...],
    share_timeline: bool,
    **key_params: Any,
) -> None:
    """Build or pack SRC, then publish it to one or more pinners.

    SRC is a memory directory (built into a bundle, encrypted with a key
    option), a CAR file (published as is) or any directory (packed); without
    it, the memory tree (-d, $BUNDLEKIT_MEMORY_DIR, else ./memory). Exit 0
    when --require holds, 4 otherwise; Ctrl-C cancels the uploads, leaves no
    local pin of this run, and exits 130. With --sign the key option signs the
    manifest instead of encrypting, as `build --sign` (a bundle both signed and
    encrypted: `build --encrypt --sign --private-key-env VAR`, then pin the CAR).
    """
    src = _source(src, tree)
    share = shared(share_types, share_timeline, src)
    sign = signing(key_params, sign)
    keys = publish_keys(KeyOptions.from_params(key_params), sign=sign, signer_address=signer_address,
                        warn=output.warn)
    target = None
    if name_key is not None:
        target = NameTarget(Ed25519Signer.from_file(name_key),  # fail before any upload
                            routers=routers_from_env(),  # so is kubo's configuration
                            routing=routing_endpoints())  # and $BUNDLEKIT_ROUTING
    keyvalues = _keyvalues(meta)
    report = publish(PublishOptions(
        src, pinners=pinner_names or ("local",), psa_origins=psa_origins, require=require, label=name,
        group=group, keyvalues=keyvalues, key=keys.key, sign=keys.signer, name=target, progress=_Bars(),
        build=BuildOptions(profile=profile, namespace=namespace, strict=strict, warn=output.warn, share=share)))
    _print_report(report.pins, report.source.signer, report.published, as_json)
    if report.name_error is not None:
        raise report.name_error
    if not report.pins.ok:
        # LazyGroup.invoke prints it as "error: ..." and exits with PinError's code, 4.
        raise require_not_met(report.pins, require,
                              then="; the IPNS name was not published" if name_key is not None else "")


class _Bars:
    """The publish's progress bars on stderr: building (or packing), then uploading."""

    @contextmanager
    def building(self, packing: bool) -> Iterator[Callable[[int, int], None] | None]:
        label, unit = ("packing", "bytes") if packing else ("building", "files")
        with output.Progress(label, unit=unit) as bar:
            yield bar.callback

    @contextmanager
    def uploading(self, total: int) -> Iterator[Callable[[str, int], None] | None]:
        with output.Progress("uploading", total=total, unit="bytes") as bar:
            yield (lambda _pinner, n: bar.advance(n)) if bar.enabled else None


def _source(src: Path | None, tree: Path) -> Path:
    """What ``pin`` publishes: SRC, else the memory tree, which must then be there (exit 2 naming it)."""
    if src is not None:
        return src
    if not tree.is_dir():
        raise UsageError(f"no memory tree at {tree}: give SRC (a tree, a CAR or a directory), -d DIR, "
                         "or set $BUNDLEKIT_MEMORY_DIR")
    return tree


def _keyvalues(meta: tuple[str, ...]) -> dict[str, str]:
    """``--meta k=v`` options as a dict; UsageError for one without ``=`` or with an empty key."""
    pairs: dict[str, str] = {}
    for item in meta:
        k, sep, v = item.partition("=")
        if not sep or not k.strip():
            raise UsageError(f"--meta takes KEY=VALUE, not {item!r}")
        pairs[k.strip()] = v
    return pairs


@click.command("pinners")
@click.option("--check", is_flag=True, help="Make a cheap authenticated call to each configured pinner.")
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON.")
def pinners(check: bool, as_json: bool) -> None:
    """List the registered pinners and whether each is configured (never showing a secret).

    With --check, exit 4 when any configured pinner's check fails.
    """

    rows = pinner_listing(check=check)
    failed = [row["name"] for row in rows if row.get("check") == "failed"]
    if as_json:
        output.data_json(rows)
    else:
        _print_rows(rows, check)
    if failed:
        raise PinError(f"pinner check failed for {', '.join(failed)}; its error is in the listing on stdout")


def _print_rows(rows: list[dict[str, Any]], check: bool) -> None:
    for row in rows:
        state = "configured" if row["configured"] else "not configured"
        if check:
            state += f", check {row.get('check', 'skipped')}"
        env_names = ", ".join(row.get("env") or []) or "-"  # a third party's text: one field, never an escape
        name, description = output.printable_field(row["name"]), output.printable_field(row.get("description", ""))
        output.data(f"{name:<14} {state:<32} {description}  [env: {env_names}]")
        if row.get("error"):
            output.data(f"{'':<14} {output.printable_field(row['error'])}")


def _print_report(report: PinReport, signer: str | None, published: Published | None, as_json: bool) -> None:
    """The pins (a table on stderr, the root on stdout; or one JSON line), the signer and the moved name."""
    doc = report.to_json()
    if signer is not None:
        doc["signer"] = signer
    if as_json:
        if published is not None:
            doc["name"] = published.to_dict()
        output.data_json(doc)
        return
    output.status(_table(report))
    if signer is not None:
        output.status(f"signed by {signer}")
    if published is not None:
        output.status(published_line(published))
    output.data(report.root)
