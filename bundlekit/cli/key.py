"""``bundlekit key``: helpers for wallet-derived keys, and age identities for recipients bundles.

``bundlekit key new -o agent.key`` writes a new age identity (mode 0600, never over an
existing file) and prints its recipient (``age1...``) for ``build --recipient``;
``bundlekit key recipient agent.key`` prints the recipient of each identity in a file.
Keys never travel on the command line: only the file's name does.

``bundlekit key message --namespace NS`` prints the exact message to sign with
any wallet tool (EIP-191 personal_sign); the signature then goes to
``--signature-env`` or ``--signature-file``. ``--manifest CID`` prints the
message that signs a manifest instead (``build --sign --signature-file``). The message is printed with a
final newline, which is not part of the message: a signer reading stdout must
drop it (``--hex`` and ``--json`` give the exact bytes unambiguously).
"""

from __future__ import annotations

from pathlib import Path

import click

from bundlekit.bundle.signature import manifest_message
from bundlekit.cli import output
from bundlekit.cli._suggest import SuggestingGroup
from bundlekit.crypto._keys import signature_message
from bundlekit.crypto.recipients import read_identity_file, recipient_of, write_new_identity
from bundlekit.crypto.threews import threews_message
from bundlekit.errors import UsageError

__all__ = ["key"]


@click.group(cls=SuggestingGroup)
def key() -> None:
    """Key helpers: the message a wallet signs; age identities for recipients."""


@key.command()
@click.option("--namespace", help="The bundle's namespace (bundlekit keys).")
@click.option(
    "--compat",
    type=click.Choice(["three.ws"]),
    help="Print the message another runtime signs instead (needs --agent-id).",
)
@click.option("--agent-id", help="The three.ws agent id (with --compat three.ws).")
@click.option("--manifest", "manifest_cid", metavar="CID",
              help="Print the message that signs the manifest CID (see `build --json`) instead.")
@click.option("--hex", "as_hex", is_flag=True, help="Print the message's UTF-8 bytes as 0x-hex.")
@click.option("--json", "as_json", is_flag=True, help='Print {"message", "hex"} as one line of JSON.')
def message(namespace: str | None, compat: str | None, agent_id: str | None, manifest_cid: str | None,
            as_hex: bool, as_json: bool) -> None:
    """Print the exact message a wallet signs to key bundles of NAMESPACE (or to sign a manifest)."""
    if manifest_cid is not None:
        if namespace is not None or compat is not None or agent_id is not None:
            raise UsageError("--manifest takes no --namespace, --compat or --agent-id; give only the manifest CID")
        text = manifest_message(manifest_cid.strip())
    elif compat == "three.ws":
        if namespace is not None:
            raise UsageError("--compat three.ws takes --agent-id, not --namespace; drop --namespace")
        if agent_id is None:
            raise UsageError(
                "--compat three.ws needs --agent-id ID (the three.ws agent whose key you derive)"
            )
        text = threews_message(agent_id)
    else:
        if agent_id is not None:
            raise UsageError(
                "--agent-id goes with --compat three.ws; for a bundlekit key give --namespace NS"
            )
        if namespace is None:
            raise UsageError("give --namespace NS: the namespace of the bundles this key opens")
        text = signature_message(namespace)
    hex_text = "0x" + text.encode("utf-8").hex()
    if as_json:
        output.data_json({"message": text, "hex": hex_text})
    else:
        output.data(hex_text if as_hex else text)


@key.command("new")
@click.option("-o", "--output", "output_path", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Where to write the new identity (mode 0600; an existing file is never replaced).")
def new(output_path: Path) -> None:
    """Make a new age identity in FILE and print its recipient (age1...), for build --recipient."""
    recipient = write_new_identity(output_path)
    output.status(f"wrote {output_path} (keep it secret; give others the recipient below)")
    output.data(recipient)


@key.command("recipient")
@click.argument("identity_file", metavar="FILE", type=click.Path(dir_okay=False, path_type=Path))
def recipient(identity_file: Path) -> None:
    """Print the recipient (age1...) of each age identity in FILE, one per line."""
    for identity in read_identity_file(identity_file, warn=output.warn):
        output.data(recipient_of(identity))
