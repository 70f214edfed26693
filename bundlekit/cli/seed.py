"""``bundlekit memory seed`` and ``memory unseed``: fill a new agent's memory from an account, and take it back.

Thin: the options become a :class:`~bundlekit.seed.protocol.SeedRequest`, ``bundlekit.seed`` reads the
account and plans; this module shows the plan (a table, or ``--json``), asks for consent and prints what
was done. Nothing is written without consent: ``--yes``, or a "yes" typed at the terminal; with neither a
terminal nor ``--yes`` the plan is shown and the command exits 2, nothing written (``--dry-run``: shown,
exit 0). Loaded only when one of the two runs (``cli/memory``'s lazy table): the HTTP layer is not every
memory command's cost.
"""

from __future__ import annotations

import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from bundlekit._redact import MIN_PROCESS_SECRET_LEN, register_secret
from bundlekit.cli import output
from bundlekit.cli._params import Count, strict_option
from bundlekit.cli.memory import _dir_option, _mem
from bundlekit.errors import BundlekitError, SeedError, UsageError
from bundlekit.seed.apply import preview_seed, read_account, unseed, write_seed
from bundlekit.seed.ownership import ownership_message
from bundlekit.seed.plan import SeedPlan
from bundlekit.seed.protocol import DEFAULT_MAX_MEMORIES, MAX_MEMORIES, SeedRequest
from bundlekit.seed.registry import seeder_declared, seeder_listing
from bundlekit.seed.service import seed_http

__all__ = ["seed_cmd", "seeders", "unseed_cmd"]

MAX_PROOF_FILE = 64 * 1024  # a message or a signature: a few hundred bytes


def _read_text(path: Path | None, what: str) -> str | None:
    """The UTF-8 text of a small file (at most ``MAX_PROOF_FILE`` bytes read: ``/dev/zero`` is refused)."""
    if path is None:
        return None
    try:
        with path.open("rb") as stream:
            data = stream.read(MAX_PROOF_FILE + 1)
        if len(data) > MAX_PROOF_FILE:
            raise UsageError(f"{what} {path} is over {MAX_PROOF_FILE} bytes; it holds a message or a signature")
        return data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{what} {path} cannot be read as UTF-8 text ({type(exc).__name__})") from exc


def _lane_options(params: dict[str, Any]) -> dict[str, str]:
    """The lane options the command line gave, as text (only those given)."""
    options: dict[str, str] = {}
    for pair in params["sets"]:
        field, sep, value = pair.partition("=")
        if not sep or not field:
            raise UsageError(f"--set takes KEY=VALUE, got {pair[:40]!r}")
        options[field] = value
    for name in ("fid", "posts"):
        if params[name] is not None:
            options[name] = str(params[name])
    message = _read_text(params["message_file"], "--message-file")
    if message is not None:
        options["message"] = message
    signature = _read_text(params["signature_file"], "--signature-file")
    if params["signature_env"]:
        signature = os.environ.get(params["signature_env"])
        if not signature:
            raise UsageError(f"--signature-env {params['signature_env']}: that variable is not set")
    if signature is not None:
        options["signature"] = signature.strip()
    if params["private_key_env"]:
        options["private_key_env"] = params["private_key_env"]
    return options


def _secrets(lane: str, options: dict[str, str]) -> list[str]:
    """The credentials this run holds (the lane's variables, a private key): registered with the one
    redaction point so no output shows them, and refused in any memory."""
    names = seeder_declared(lane)[2]
    if "private_key_env" in options:
        names.append(options["private_key_env"])
    values = [os.environ[n].strip() for n in names if os.environ.get(n, "").strip()]
    for value in values:
        if len(value) >= MIN_PROCESS_SECRET_LEN:
            register_secret(value)
    return values


def _show(plan: SeedPlan, as_json: bool, written: bool) -> None:
    output.warn_all(output.printable(line) for line in plan.warnings())
    if as_json:
        output.data_json({**plan.to_dict(), "written": written})
        return
    for p in plan.writes:
        output.data(output.printable("\t".join((p.action, p.record.key, p.record.type, p.record.name,
                                                p.proposal.origin))))


def _consent(plan: SeedPlan, yes: bool, dry_run: bool) -> bool:
    """True to write. ``--dry-run``: False. Without ``--yes`` and a terminal: UsageError (exit 2)."""
    if dry_run or not plan.writes:
        return False
    if yes:
        return True
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        raise UsageError(f"nothing written: {len(plan.writes)} memories from {plan.account.seed} need your "
                         "consent; add --yes (there is no terminal to ask on)")
    if not click.confirm(f"write these {len(plan.writes)} memories from {plan.account.seed}?", err=True):
        raise SeedError("nothing written (declined at the confirmation)")
    return True


@click.command("seed", short_help="Fill the tree from an account you own (shown first; written with consent).")
@_dir_option
@click.argument("lane", metavar="LANE")
@click.option("--fid", type=Count(1, 2**53), help="farcaster: the fid to seed from.")
@click.option("--posts", type=Count(1, 100), help="x: also your N most recent posts (one memory).")
@click.option("--message-file", type=click.Path(dir_okay=False, path_type=Path),
              help="farcaster: the ownership message you signed (--print-message prints it).")
@click.option("--signature-file", type=click.Path(dir_okay=False, path_type=Path),
              help="farcaster: your wallet's EIP-191 signature of the message (hex).")
@click.option("--signature-env", metavar="VAR", help="farcaster: the signature, from this variable.")
@click.option("--private-key-env", metavar="VAR", help="farcaster: sign the message now with this wallet key.")
@click.option("--print-message", is_flag=True, help="farcaster: print the message to sign, write nothing.")
@click.option("--namespace", help="The agent namespace the message names [default: the tree's].")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="An option of a third-party seeder.")
@click.option("--max", "max_memories", type=Count(1, MAX_MEMORIES), default=DEFAULT_MAX_MEMORIES,
              show_default=True, help="At most this many memories from one seeding.")
@click.option("--yes", "-y", is_flag=True, help="Write without asking (consent given).")
@click.option("--dry-run", is_flag=True, help="Show what would be written; write nothing.")
@strict_option("a memory from the account that the guard, the tree or the cap refuses")
@click.option("--json", "as_json", is_flag=True, help="Print the plan (and whether it was written) as JSON.")
@click.pass_context
def seed_cmd(ctx: click.Context, /, **params: Any) -> None:
    """Seed memories from LANE (github, farcaster, x, or an installed seeder): show them, then write with consent.

    Every memory written records its seed (`seed: github:LOGIN`) and a digest that `memory unseed` checks;
    the secret guard refuses credential-looking text from the account; at most --max per seeding."""
    memory = _mem(ctx, existing=True)
    lane = params["lane"]
    namespace = params["namespace"] or memory.namespace
    now = datetime.now(UTC)
    if params["print_message"]:
        if params["fid"] is None:
            raise UsageError("--print-message needs --fid")
        output.data(ownership_message(params["fid"], namespace, now), newline=False)
        return
    options = _lane_options(params)
    secrets = _secrets(lane, options)
    request = SeedRequest(env=dict(os.environ), options=options, namespace=namespace, limit=params["max_memories"],
                          http=seed_http(os.environ))
    account, proposals = read_account(lane, request)
    plan = preview_seed(memory, account, proposals, now=now, max_memories=params["max_memories"],
                        secrets=secrets, strict=params["strict"])
    if not params["as_json"]:
        _show(plan, False, False)
    try:
        write = _consent(plan, params["yes"], params["dry_run"])
    except BundlekitError:
        if params["as_json"]:
            _show(plan, True, False)
        raise
    if write:
        plan = write_seed(memory, plan, now=now, max_memories=params["max_memories"], secrets=secrets,
                          strict=params["strict"])
    if params["as_json"]:
        _show(plan, True, bool(write))
    verb = "wrote" if write else "would write"
    unchanged = f"; {len(plan.unchanged)} already seeded, unchanged" if plan.unchanged else ""
    output.status(f"{verb} {len(plan.writes)} memories from {account.seed} (proved by {account.proof}){unchanged}")


@click.command("unseed", short_help="Delete the memories a seed wrote that nobody edited since.")
@_dir_option
@click.argument("lane", metavar="LANE")
@click.option("--account", help="Only the memories seeded from this account (a login, fid or username).")
@click.option("--force", is_flag=True, help="Delete edited ones too.")
@click.option("--dry-run", is_flag=True, help="Show what would be deleted; delete nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print what was removed and kept as JSON.")
@click.pass_context
def unseed_cmd(ctx: click.Context, lane: str, account: str | None, force: bool, dry_run: bool,
               as_json: bool) -> None:
    """Delete the memories LANE seeded that nobody edited since (an edited one is kept and named; --force
    deletes it too), with a timeline entry."""
    plan = unseed(_mem(ctx, existing=True), lane, now=datetime.now(UTC), account=account, force=force,
                  dry_run=dry_run)
    output.warn_all(output.printable(line) for line in plan.warnings())
    if as_json:
        output.data_json({**plan.to_dict(), "dry_run": dry_run})
    verb = "would delete" if dry_run else "deleted"
    output.status(f"{verb} {len(plan.remove)} memories seeded from {lane}; kept {len(plan.kept)}")


@click.command("seeders")
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON.")
def seeders(as_json: bool) -> None:
    """List the registered seeders (the lanes of `memory seed`) and whether each is configured.

    Reads no account and shows no secret: the environment variables each lane reads are named, never
    their values. A registration that cannot be loaded is listed with its error.
    """
    rows = seeder_listing()
    if as_json:
        output.data_json(rows)
        return
    for row in rows:  # a third party's text: one field of one row, never a terminal escape
        state = "configured" if row["configured"] else "not configured"
        extras = f"[env: {', '.join(row['env']) or '-'}; options: {', '.join(row['options']) or '-'}]"
        name, description = output.printable_field(row["name"]), output.printable_field(row["description"])
        output.data(f"{name:<14} {state:<16} {description}  {extras}")
        if row.get("error"):
            output.data(f"{'':<14} {output.printable_field(row['error'])}")
