"""``bundlekit build``: a memory tree in, a bundle CAR out.

The root CID goes to stdout (or, with ``--json``, one line of JSON); where the
CAR was written (path, root, file count, and whether it replaced a file) goes
to stderr, with a progress bar on a terminal.

``--sign`` adds ``signature.json`` (``specs/provenance.md``); the key option
names the signer: ``--private-key-env`` (EIP-191; with ``--encrypt`` the same key
also encrypts), ``--key-file`` holding an Ed25519 PEM key (did:key), or
``--signature-file`` with ``--signer ADDRESS`` for a signature made elsewhere of
the text ``bundlekit key message --manifest CID`` prints. ``--recipient`` (``--recipients-file``)
encrypts for age recipients, and any of those signers can sign beside it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from bundlekit.bundle.build import COMPAT_FORMS, BuildOptions, build_bundle
from bundlekit.bundle.keyoptions import KeyOptions
from bundlekit.bundle.manifest import parse_created
from bundlekit.bundle.signature import build_keys
from bundlekit.cli import output
from bundlekit.cli._embedopts import embedder_options, embedder_settings
from bundlekit.cli._params import PROFILE, legacy_tree_argument, strict_option, tree_option
from bundlekit.cli._keyopts import key_options, passphrase_check_option, recipient_options, sign_options, signing
from bundlekit.cli._shareopts import share_options, shared
from bundlekit.ipld.cid import cid_to_str
from bundlekit.memory import Memory

__all__ = ["build"]


@click.command("build")
@legacy_tree_argument("memdir")
@tree_option("The memory tree to build.")
@click.option("-o", "--output", "output_path", type=click.Path(dir_okay=False, path_type=Path),
              default=Path("bundle.car"), show_default=True, help="Where to write the bundle CAR (atomically).")
@click.option("--namespace", help="Bundle namespace (default: the tree's namespace, else the directory name).")
@click.option("--profile", type=PROFILE, help="UnixFS profile (default: unixfs-v1-2025).")
@click.option("--created", metavar="TIME",
              help="Creation time, ISO 8601 or Unix seconds (default: $SOURCE_DATE_EPOCH, else the newest time in the tree).")
@click.option("--json", "as_json", is_flag=True, help="Print {root, manifest_uri, files, bytes, manifest_cid, signer} as JSON.")
@click.option("--encrypt", is_flag=True,
              help="Encrypt memory and timeline files (needs a key option; implied by --recipient).")
@click.option("--redact-index", is_flag=True, help="Leave descriptions out of an encrypted bundle's index.")
@click.option("--compat", type=click.Choice(COMPAT_FORMS),
              help="With --encrypt: encrypt in another runtime's form (three.ws: wallet key, agent id = namespace).")
@click.option("--embeddings", is_flag=True,
              help="Add the memories' vectors (recall by meaning at once after load; encrypted with --encrypt).")
@share_options
@embedder_options
@sign_options
@key_options
@recipient_options
@passphrase_check_option
@strict_option("a memory file that does not parse")
def build(tree: Path, output_path: Path, namespace: str | None, profile: str | None, created: str | None,
          as_json: bool, encrypt: bool, redact_index: bool, compat: str | None, embeddings: bool,
          embedder: str | None, embed_url: str | None, embed_model: str | None, sign: bool,
          signer_address: str | None, strict: bool, share_types: tuple[str, ...], share_timeline: bool,
          **params: Any) -> None:
    """Build a bundle of the memory tree (-d) and print its root CID (stdout); the tree is validated first.

    A memory file that does not parse is left out with a warning naming it; --strict refuses the build
    instead (exit 1, nothing written). --share TYPES builds a shared bundle of only those memory types
    (an unknown type, an empty list or a malformed [share] config: exit 2, nothing written)."""

    share = shared(share_types, share_timeline, tree)
    sign = signing(params, sign)
    encrypt = encrypt or bool(params.get("recipient") or params.get("recipients_file"))  # recipients encrypt
    keys = build_keys(KeyOptions.from_params(params), sign=sign, encrypt=encrypt, signer_address=signer_address,
                      compat=compat, warn=output.warn)
    signer, key = keys.signer, keys.key
    when = parse_created(created) if created is not None else None
    replacing = output_path.exists()
    source: Path | Memory = tree
    if embeddings:
        source = Memory(tree, on_warning=output.warn, embedder=embedder_settings(embedder, embed_url, embed_model))
    with output.Progress("building", unit="files") as progress:
        options = BuildOptions(namespace=namespace, profile=profile, created=when, redact_index=redact_index,
                               compat=compat, progress=progress.callback, embeddings=embeddings,
                               strict=strict, warn=output.warn, share=share)
        result = build_bundle(source, output_path, key=key, sign=signer, options=options)
    verb = "replaced" if replacing else "wrote"
    output.status(f"{verb} {output_path}: root {result.root_cid}, {result.files} "
                  f"{'file' if result.files == 1 else 'files'}, {result.bytes} bytes")
    if result.signer is not None:
        output.status(f"signed by {result.signer}")
    if as_json:
        output.data_json({"root": result.root_cid, "manifest_uri": result.manifest_uri,
                          "files": result.files, "bytes": result.bytes,
                          "manifest_cid": cid_to_str(result.manifest_cid), "signer": result.signer})
    else:
        output.data(result.root_cid)

