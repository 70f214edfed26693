"""``bundlekit verify``, ``unpack`` and ``ls``: thin commands over bundlekit.car and bundlekit.unixfs.

The listing (and every ``--json`` result) goes to stdout; the one-line
summaries of ``verify`` and ``unpack`` go to stderr; errors go to stderr as
``error: ...`` with the error's exit code (handled once in ``cli/__init__``):
3 for a truncated, malformed or non-verifying CAR.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import click

from bundlekit.car.extract import unpack_car
from bundlekit.car.index import CarIndex
from bundlekit.car.verify import verify_car
from bundlekit.cli import output
from bundlekit.cli._params import CID, AliasOption, Count
from bundlekit.errors import UsageError
from bundlekit.ipld.block import MAX_BLOCK_SIZE
from bundlekit.ipld.cid import cid_to_str
from bundlekit.ipld.walk import (
    MAX_BYTES,
    MAX_DEPTH,
    MAX_ENTRIES,
    MAX_LINKS,
    MAX_VISITS,
    WalkBudget,
    WalkLimits,
)
from bundlekit.unixfs.reader import UnixFSReader
from bundlekit.unixfs.unpack import UnpackOptions

__all__ = ["ls", "unpack", "verify"]

_car_arg = click.argument("car", type=click.Path(exists=True, dir_okay=False, path_type=Path))
_block_opt = click.option(
    "--max-block-size",
    type=Count(1),
    default=MAX_BLOCK_SIZE,
    show_default=True,
    help="Reject blocks larger than this many bytes.",
)

_entries_opt = click.option(
    "--max-entries", type=Count(1), default=MAX_ENTRIES, show_default=True,
    help="Refuse DAGs with more entries (paths) than this, a reused directory counted at every path.",
)
_visits_opt = click.option(
    "--max-visits", type=Count(1), default=MAX_VISITS, show_default=True,
    help="Refuse DAGs that need more block reads than this, a reused block counted at every read.",
)


def _plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n} {word if n == 1 else (many or word + 's')}"


@click.command("verify")
@_car_arg
@_block_opt
@click.option("--max-depth", type=Count(1), default=MAX_DEPTH, show_default=True,
              help="Reject DAGs nested deeper than this.")
@click.option("--max-links", type=Count(1), default=MAX_LINKS, show_default=True,
              help="Reject DAGs with more links than this.")
@click.option("--check-expansion", "--strict", "strict", cls=AliasOption, hidden_aliases=("--strict",), is_flag=True,
              help="Also measure what each root claims to expand to (blocks reused) and refuse one past "
                   "--max-visits, --max-entries or --max-bytes.")
@_visits_opt
@_entries_opt
@click.option("--max-bytes", type=Count(0), default=MAX_BYTES, show_default=True,
              help="With --check-expansion: refuse a root whose files claim more bytes than this, together.")
@click.option("--json", "as_json", is_flag=True,
              help='Print {"ok", "roots", "blocks", "bytes"} on success (with --check-expansion, "expansion" too).')
def verify(car: Path, max_block_size: int, max_depth: int, max_links: int, strict: bool, max_visits: int,
           max_entries: int, max_bytes: int, as_json: bool) -> None:
    """Check that every block of CAR matches its CID and each root's DAG is complete.

    Exits 0 with a one-line summary (stderr), or 3 naming the first bad or missing block.
    With --check-expansion, a line per root that reuses blocks says what it claims to expand to.
    """
    limits = WalkLimits(max_depth=max_depth, max_visits=max_visits, max_entries=max_entries, max_bytes=max_bytes)
    with output.Progress("verifying", unit="bytes") as bar:
        report = verify_car(car, max_depth=max_depth, max_links=max_links, max_block_size=max_block_size,
                            strict=strict, limits=limits, progress=bar.callback)
    if report.problem is not None:
        raise report.problem
    roots = [cid_to_str(r) for r in report.roots]
    if as_json:
        result: dict[str, object] = {"ok": True, "roots": roots, "blocks": report.blocks, "bytes": report.bytes}
        if strict:
            result["expansion"] = [
                {"root": cid_to_str(e.root), "blocks": e.blocks, "visits": e.visits, "reuses": e.reuses,
                 "entries": e.entries, "bytes": e.bytes}
                for e in report.expansions
            ]
        output.data_json(result)
        return
    output.status(
        f"ok {' '.join(roots)}: {_plural(report.blocks, 'block')}, {_plural(report.bytes, 'byte')}, "
        f"{_plural(report.reachable, 'block')} reachable from {_plural(len(roots), 'root')}"
    )
    for e in report.expansions:
        if e.reuses:
            claims = f", {_plural(e.entries, 'entry', 'entries')}, {_plural(e.bytes, 'byte')}" if (
                e.entries is not None and e.bytes is not None) else ""
            output.status(
                f"{cid_to_str(e.root)} reuses blocks: {_plural(e.blocks, 'distinct block')} expand to "
                f"{_plural(e.visits, 'block visit')}{claims}"
            )


@click.command("unpack")
@_car_arg
@click.option("-o", "--output", "output_path", required=True, type=click.Path(path_type=Path),
              help="Directory to create (or file, for a file root). Must be absent or empty unless --force.")
@click.option("--root", "root", type=CID, help="Which root to extract when the CAR lists several.")
@click.option("--force", is_flag=True, help="Replace OUTPUT if it exists and is not empty.")
@click.option("--max-bytes", type=Count(0), default=MAX_BYTES, show_default=True,
              help="Refuse a root whose files claim more bytes than this, together, before anything is "
                   "written (any data: see README, \"One name for one thing\").")
@_entries_opt
@_visits_opt
@_block_opt
@click.option("--json", "as_json", is_flag=True,
              help='Print {"root", "path", "files", "directories", "bytes"} on stdout.')
def unpack(car: Path, output_path: Path, root: bytes | None, force: bool, max_bytes: int,
           max_entries: int, max_visits: int, max_block_size: int, as_json: bool) -> None:
    """Extract the verified UnixFS DAG in CAR into OUTPUT, atomically; the summary goes to stderr.

    Refused before anything is written when the DAG claims more than the limits or than the free space.
    """
    with output.Progress("unpacking", unit="bytes") as bar:
        limits = WalkLimits(max_visits=max_visits, max_entries=max_entries, max_bytes=max_bytes)
        result = unpack_car(car, output_path, root=root, options=UnpackOptions(force=force, limits=limits),
                            max_block_size=max_block_size, progress=bar.callback)
    output.status(  # what was written, on stderr with --json too
        f"unpacked {cid_to_str(result.root)} into {result.path}: {_plural(result.files, 'file')}, "
        f"{_plural(result.directories, 'directory', 'directories')}, "
        f"{_plural(result.bytes, 'byte')}"
    )
    if as_json:
        output.data_json({"root": cid_to_str(result.root), "path": str(result.path), "files": result.files,
                          "directories": result.directories, "bytes": result.bytes})


@click.command("ls")
@_car_arg
@click.option("--root", "wanted", type=CID, help="List only this root (a CID).")
@click.option("--json", "as_json", is_flag=True,
              help='Print a JSON array of {"root", "path", "cid", "kind", "size"}.')
@_block_opt
@_entries_opt
@_visits_opt
def ls(car: Path, wanted: bytes | None, as_json: bool, max_block_size: int, max_entries: int,
       max_visits: int) -> None:
    """List every entry under the CAR's roots: path, CID and size, tab-separated.

    The root itself is listed as "." (path "" in --json); with several roots,
    paths start with the root's CID. A directory's size is the sum of the
    file sizes beneath it.
    """
    with CarIndex(car, verify=False, max_block_size=max_block_size) as index:
        roots = index.roots
        if wanted is not None:
            if wanted not in roots:
                raise UsageError(f"{cid_to_str(wanted)} is not a root of {car}")
            roots = [wanted]
        # get verifies at --max-block-size; one budget bounds the whole listing
        budget = WalkBudget(WalkLimits(max_visits=max_visits, max_entries=max_entries), what=f"CAR {car}")
        reader = UnixFSReader(index.get, verify=False, budget=budget)

        def entries() -> Iterator[tuple[str, str, str, str, int]]:
            for root in roots:
                root_str = cid_to_str(root)
                for path, cid, kind, size in reader.listing(root):
                    yield root_str, path, cid_to_str(cid), kind, size

        if as_json:  # streamed: a huge CAR's listing is never held in memory
            output.data_json_array(
                {"root": root_str, "path": path, "cid": cid, "kind": kind, "size": size}
                for root_str, path, cid, kind, size in entries()
            )
            return
        for root_str, path, cid, _kind, size in entries():
            shown = path or "."
            if len(roots) > 1:
                shown = f"{root_str}/{path}" if path else root_str
            output.data(f"{output.printable_field(shown)}\t{cid}\t{size}")
