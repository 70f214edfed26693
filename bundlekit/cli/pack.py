"""``bundlekit pack`` and ``bundlekit cid``: import a file or directory as UnixFS.

Both print the root CID alone on stdout (base58btc for CIDv0, base32 for
CIDv1), or with ``--json`` one line ``{"root", "profile", "blocks", "bytes"}``;
warnings (skipped symlinks) go to stderr. ``pack -o OUT.car`` also
writes the blocks to a CAR, atomically, and says so on stderr (``wrote OUT.car:
root ..., N blocks, M bytes``); ``cid`` never writes anything. On a terminal
outside CI both draw a progress bar on stderr over the bytes of the input.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from bundlekit.car.writer import CarFileWriter
from bundlekit.cli import output
from bundlekit.cli._params import PROFILE, Count
from bundlekit.errors import UsageError
from bundlekit.ipld.cid import cid_to_str
from bundlekit.unixfs.importer import ImportResult, NullSink, import_path
from bundlekit.unixfs.layout import BlockSink
from bundlekit.unixfs.profiles import DEFAULT_PROFILE, Profile, get_profile

__all__ = ["cid", "pack"]

F = TypeVar("F", bound=Callable[..., Any])


def _profile_options(func: F) -> F:
    """--profile plus the four overrides, shared by ``pack`` and ``cid``."""
    options = [
        click.option(
            "--profile",
            "profile_name",
            type=PROFILE,
            default=DEFAULT_PROFILE,
            show_default=True,
            help="UnixFS profile: which reference tool's CIDs to reproduce.",
        ),
        click.option("--chunk-size", type=Count(1), default=None, help="Override the chunk size in bytes."),
        click.option("--max-links", type=Count(2), default=None, help="Override the links per file node."),
        click.option("--cid-version", type=click.Choice(["0", "1"]), default=None, help="Override the CID version."),
        click.option(
            "--raw-leaves/--no-raw-leaves", default=None, help="Override whether file leaves are raw blocks."
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _profile(
    profile_name: str, chunk_size: int | None, max_links: int | None, cid_version: str | None, raw_leaves: bool | None
) -> Profile:
    return get_profile(
        profile_name,
        chunk_size=chunk_size,
        max_links=max_links,
        cid_version=None if cid_version is None else int(cid_version),
        raw_leaves=raw_leaves,
    )


def _refuse_overwriting_input(path: Path, output: Path, hidden: bool) -> None:
    """-o must not replace PATH itself or an existing file inside it (the CAR would destroy its own input),
    nor lie inside PATH with --hidden (the CAR's dot-named temp file would be packed into itself)."""
    src = Path(os.path.realpath(path))
    out = Path(os.path.realpath(output))
    inside = src in out.parents
    if output.exists() and (out == src or inside):
        raise UsageError(f"-o {output} would overwrite the input {path}; write the CAR outside it")
    if hidden and inside:
        raise UsageError(
            f"-o {output} is inside the input {path}, and --hidden would pack the CAR's own temporary "
            "file into it; write the CAR outside it"
        )


def _import(path: Path, sink: BlockSink, profile: Profile, hidden: bool, label: str) -> ImportResult:
    """``import_path``, with a progress bar over the input's bytes on a terminal outside CI."""
    with output.Progress(label, unit="bytes") as bar:
        return import_path(path, sink, profile, hidden=hidden, progress=bar.callback)


def _report(result: ImportResult, profile: Profile, as_json: bool) -> None:
    """Warnings on stderr; the root CID (or the JSON summary) on stdout."""
    output.warn_all(result.warnings)
    root = cid_to_str(result.root)
    if as_json:
        output.data_json({"root": root, "profile": profile.name, "blocks": result.blocks, "bytes": result.bytes})
    else:
        output.data(root)


_json_option = click.option(
    "--json", "as_json", is_flag=True, help='Print {"root", "profile", "blocks", "bytes"} instead.'
)


@click.command("pack")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option(
    "-o", "--output", "output_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
    help="Write the CAR here (atomically). Without it, nothing is written.",
)
@_profile_options
@click.option("--hidden", is_flag=True, help="Include names starting with '.'.")
@_json_option
def pack(
    path: Path,
    output_path: Path | None,
    profile_name: str,
    chunk_size: int | None,
    max_links: int | None,
    cid_version: str | None,
    raw_leaves: bool | None,
    hidden: bool,
    as_json: bool,
) -> None:
    """Pack PATH (a directory or a file) into UnixFS; print the root CID.

    The root is PATH itself, never a wrapping directory. Dot-files are skipped
    unless --hidden; symbolic links are skipped with a warning.
    """
    profile = _profile(profile_name, chunk_size, max_links, cid_version, raw_leaves)
    if output_path is None:
        result = _import(path, NullSink(), profile, hidden, "packing")
    else:
        _refuse_overwriting_input(path, output_path, hidden)
        replacing = output_path.exists()
        with CarFileWriter(output_path) as car:
            result = _import(path, car, profile, hidden, "packing")
            car.finish(result.root)
        output.status(f"{'replaced' if replacing else 'wrote'} {output_path}: root {cid_to_str(result.root)}, "
                      f"{result.blocks} blocks, {result.bytes} bytes")
    _report(result, profile, as_json)


@click.command("cid")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@_profile_options
@click.option("--hidden", is_flag=True, help="Include names starting with '.'.")
@_json_option
def cid(
    path: Path,
    profile_name: str,
    chunk_size: int | None,
    max_links: int | None,
    cid_version: str | None,
    raw_leaves: bool | None,
    hidden: bool,
    as_json: bool,
) -> None:
    """Print the CID of PATH (a file or a directory); write nothing."""
    profile = _profile(profile_name, chunk_size, max_links, cid_version, raw_leaves)
    result = _import(path, NullSink(), profile, hidden, "hashing")
    _report(result, profile, as_json)
