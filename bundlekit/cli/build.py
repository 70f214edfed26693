"""``bundlekit build``: a memory tree in, a bundle CAR out.

The root CID goes to stdout (or, with ``--json``, one line of JSON); where the
CAR was written (path, root, file count, and whether it replaced a file) goes
to stderr, with a progress bar on a terminal.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from bundlekit.bundle.build import build_bundle
from bundlekit.bundle.manifest import parse_created
from bundlekit.cli import output
from bundlekit.cli._keyopts import key_options, resolve_key_spec, strict_option
from bundlekit.errors import UsageError

__all__ = ["build"]


@click.command("build")
@click.argument("memdir", type=click.Path(file_okay=False, path_type=Path))
@click.option("-o", "--output", "output_path", type=click.Path(dir_okay=False, path_type=Path),
              default=Path("bundle.car"), show_default=True, help="Where to write the bundle CAR (atomically).")
@click.option("--namespace", help="Bundle namespace (default: the tree's namespace, else the directory name).")
@click.option("--profile", help="UnixFS profile (default: unixfs-v1-2025).")
@click.option("--created", metavar="TIME",
              help="Creation time, ISO 8601 or Unix seconds (default: $SOURCE_DATE_EPOCH, else the newest time in the tree).")
@click.option("--json", "as_json", is_flag=True, help="Print {root, manifest_uri, files, bytes} as JSON.")
@click.option("--encrypt", is_flag=True, help="Encrypt memory and timeline files (needs a key option).")
@click.option("--redact-index", is_flag=True, help="Leave descriptions out of an encrypted bundle's index.")
@key_options
@strict_option
def build(memdir: Path, output_path: Path, namespace: str | None, profile: str | None, created: str | None,
          as_json: bool, encrypt: bool, redact_index: bool, **params: Any) -> None:
    """Build a bundle of MEMDIR and print its root CID (stdout); the tree is validated first."""

    key = resolve_key_spec(new_key=True, **params)
    if encrypt and key is None:
        raise UsageError("--encrypt needs a key option (--signature-env, --passphrase-env, --key-file, ...)")
    if key is not None and not encrypt:
        raise UsageError("a key option was given without --encrypt; add --encrypt to build an encrypted bundle")
    when = parse_created(created) if created is not None else None
    replacing = output_path.exists()
    with output.Progress("building", unit="files") as progress:
        result = build_bundle(memdir, output_path, namespace=namespace, profile=profile, created=when,
                              key=key, redact_index=redact_index, progress=progress.callback)
    verb = "replaced" if replacing else "wrote"
    output.status(f"{verb} {output_path}: root {result.root_cid}, {result.files} "
                  f"{'file' if result.files == 1 else 'files'}, {result.bytes} bytes")
    if as_json:
        output.data_json({"root": result.root_cid, "manifest_uri": result.manifest_uri,
                          "files": result.files, "bytes": result.bytes})
    else:
        output.data(result.root_cid)
