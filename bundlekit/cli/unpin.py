"""``bundlekit unpin``: retire old releases from pinners (a dry run unless ``--yes``).

Data on stdout, one line per pin: ``keep`` / ``unpin`` (dry run) or
``unpinned`` (with ``--yes``), then the pinner, CID, name and date; with
``--json``, one line ``[{"pinner", "keep": [...], "retire": [...], "acted"}]``.
"""

from __future__ import annotations

from dataclasses import asdict

import click

from bundlekit.cli import output
from bundlekit.cli._params import Count
from bundlekit.pinning.retention import RetirePlan, retire_everywhere

__all__ = ["unpin"]


def _lines(plan: RetirePlan) -> list[str]:
    verb = "unpinned" if plan.acted else "unpin"
    rows = [("keep", e) for e in plan.keep] + [(verb, e) for e in plan.retire]
    return [f"{action:<9} {plan.pinner:<10} {e.cid}  {e.name or '-'}  {e.created or '-'}" for action, e in rows]


@click.command("unpin")
@click.option("--pinner", "pinner_names", multiple=True, required=True, metavar="NAME",
              help="Retire from this pinner (repeatable): local, kubo, psa, pinata or cluster.")
@click.option("--name-prefix", required=True, help="Only pins whose name starts with this (e.g. memory-).")
@click.option("--keep", type=Count(0), required=True, help="How many of the newest matching pins to keep.")
@click.option("--yes", is_flag=True, help="Unpin for real; without it nothing is removed (dry run).")
@click.option("--json", "as_json", is_flag=True, help="Print the plans as JSON.")
def unpin(pinner_names: tuple[str, ...], name_prefix: str, keep: int, yes: bool, as_json: bool) -> None:
    """Keep the newest --keep pins named --name-prefix* on each pinner; unpin the rest with --yes."""
    plans = retire_everywhere(pinner_names, name_prefix, keep, act=yes)  # all plans made, then unpins
    if as_json:
        output.data_json([asdict(p) for p in plans])
    else:
        for plan in plans:
            for line in _lines(plan):
                output.data(line)
    retired = sum(len(p.retire) for p in plans)
    if yes:
        output.status(f"unpinned {retired} pin(s)")
    else:
        output.status(f"dry run: {retired} pin(s) would be unpinned; run again with --yes to unpin them")
