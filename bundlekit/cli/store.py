"""``bundlekit store``: list and remove pins, collect garbage, import and export CARs, verify the local block store.

Results (the pin listing, imported or exported root CIDs, ``--json``) go to
stdout; what was done ("removed 3 blocks", "unpinned ...", "wrote out.car")
goes to stderr.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import click

from bundlekit._fs import atomic_write
from bundlekit.blockstore import BlockStore
from bundlekit.cli import output
from bundlekit.cli._params import CID
from bundlekit.cli._suggest import SuggestingGroup
from bundlekit.errors import CARFileError, VerificationError
from bundlekit.ipld.cid import cid_to_str
from bundlekit.names.record import parse_name, verify_signed

__all__ = ["store"]


def _open(store_dir: str | None) -> BlockStore:
    return BlockStore(store_dir)


@click.group(cls=SuggestingGroup)
@click.option(
    "--store",
    "store_dir",
    type=click.Path(file_okay=False),
    help="Block store directory (default: $BUNDLEKIT_HOME, else $XDG_DATA_HOME/bundlekit).",
)
@click.pass_context
def store(ctx: click.Context, store_dir: str | None) -> None:
    """Inspect and clean the local block store."""
    ctx.obj = store_dir


@store.command("ls")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array instead of a table.")
@click.pass_obj
def ls(store_dir: str | None, as_json: bool) -> None:
    """List pinned roots: CID, name, date pinned and DAG size in bytes."""
    pins = _open(store_dir).pins()
    rows = sorted(
        (
            {
                "cid": cid_to_str(cid),
                "name": meta.get("name"),
                "created": meta.get("created"),
                "size": meta.get("size"),
            }
            for cid, meta in pins.items()
        ),
        key=lambda r: (str(r["created"]), str(r["cid"])),
    )
    if as_json:
        output.data_json(rows)
        return
    for row in rows:
        # A pin's name may come from a team hub's pusher (pin/add name=): one field, no terminal control.
        output.data(f"{row['cid']}\t{output.printable_field(str(row['name'] or '-'))}\t{row['created']}\t{row['size']}")


_json_option = click.option("--json", "as_json", is_flag=True, help="Print the result as one line of JSON.")


@store.command("unpin")
@click.argument("cid", type=CID)
@_json_option
@click.pass_obj
def unpin(store_dir: str | None, cid: bytes, as_json: bool) -> None:
    """Remove the pin on CID; its blocks go at the next `store gc`."""
    _open(store_dir).unpin(cid)
    root = cid_to_str(cid)
    if as_json:
        output.data_json({"unpinned": root})
    else:
        output.status(f"unpinned {root}; its blocks go at the next `bundlekit store gc`")


@store.command("gc")
@_json_option
@click.pass_obj
def gc(store_dir: str | None, as_json: bool) -> None:
    """Delete every block not reachable from a pin; print how many were removed (stderr)."""
    removed = _open(store_dir).gc()
    if as_json:
        output.data_json({"removed": removed})
    else:
        output.status(f"removed {removed} block{'s' if removed != 1 else ''}")


@store.command("import")
@click.argument("car", type=click.Path(exists=True, dir_okay=False))
@click.option("--pin/--no-pin", default=True, show_default=True, help="Pin the CAR's roots.")
@click.option("--name", help="Name recorded with the pin.")
@click.option(
    "--allow-incomplete", is_flag=True, help="Accept a CAR whose DAG is not complete (implies --no-pin)."
)
@_json_option
@click.pass_obj
def import_(store_dir: str | None, car: str, pin: bool, name: str | None, allow_incomplete: bool,
            as_json: bool) -> None:
    """Import a CAR (every block verified) into the store; print its root CIDs."""
    with open(car, "rb") as fh:
        roots = _open(store_dir).import_car(
            fh, allow_incomplete=allow_incomplete, pin=pin and not allow_incomplete, name=name
        )
    texts = [cid_to_str(root) for root in roots]
    pinned = pin and not allow_incomplete
    output.status(f"imported {car} into the store: {len(texts)} root{'' if len(texts) == 1 else 's'}"
                  + (", pinned" if pinned else ", not pinned"))
    if as_json:
        output.data_json({"roots": texts, "pinned": pinned})
        return
    for text in texts:
        output.data(text)


@store.command("export")
@click.argument("cid", type=CID)
@click.option(
    "-o", "--output", "output_path", required=True, type=click.Path(dir_okay=False), help="CAR file to write."
)
@_json_option
@click.pass_obj
def export(store_dir: str | None, cid: bytes, output_path: str, as_json: bool) -> None:
    """Write the DAG under CID from the store to a CAR file (atomically); print the root CID."""
    dest = Path(output_path)
    with atomic_write(dest, error=CARFileError, hint="choose another -o") as fh:
        _open(store_dir).export_car(cid, fh)
    output.status(f"wrote {dest}")
    if as_json:
        output.data_json({"root": cid_to_str(cid), "path": str(dest)})
    else:
        output.data(cid_to_str(cid))


def _record_expired(name: str, record: bytes) -> bool:
    """Verify a kept IPNS record for its name, whenever it expires (``SignatureError`` when it does not);
    whether it has expired."""
    return verify_signed(parse_name(name), record).validity <= datetime.now(UTC)


@store.command("verify")
@_json_option
@click.pass_obj
def verify(store_dir: str | None, as_json: bool) -> None:
    """Check the whole store: every block re-hashed against its CID, every pin's DAG complete, every IPNS
    record verified. Exits 3 naming each bad block (with the pins that need it and what to do) and record.

    A damaged block is removed (as any read of it does), so re-importing a CAR that holds it repairs the store.
    Each problem is a line on stdout: kind, CID or name, pins, advice (tab-separated); --json prints one object.
    """
    report = BlockStore.existing(store_dir).verify(check_record=_record_expired)
    if as_json:
        output.data_json(report.to_dict())
    else:
        for problem in report.problems:
            pins = ", ".join(cid_to_str(root) + (f" ({output.printable_field(name)})" if name else "")
                             for root, name in problem.pins) or "-"
            output.data(f"{problem.problem}\t{cid_to_str(problem.cid)}\tpins: {pins}\t{problem.advice()}")
        for bad in report.bad_records:
            output.data(f"bad-record\t{bad.name}\t{output.printable_field(bad.reason)}\t"
                        f"{output.printable_field(bad.advice())}")
        for pack in report.bad_packs:
            output.data(f"bad-pack\t{output.printable_field(str(pack.index))}\t{output.printable_field(pack.reason)}\t"
                        f"{pack.advice()}")
    if not report.ok:
        listed = "in the JSON on stdout" if as_json else "each listed on stdout"
        raise VerificationError(f"the store does not verify: {output.printable_field(report.summary())} ({listed} with "
                                "what to do)")
    expired = f"; {len(report.expired)} expired IPNS records (still the names' newest)" if report.expired else ""
    output.status(f"ok: {output.printable_field(report.summary())}{expired}")
