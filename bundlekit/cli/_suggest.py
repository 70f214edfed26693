"""A click group that answers a mistyped command with the closest real one.

``bundlekit buld`` fails as a usage error (exit 2) with
``no such command 'buld'; did you mean 'build'?``. The candidates come from
``list_commands``, so the lazily loaded top-level group suggests commands it
has not imported.
"""

from __future__ import annotations

import difflib

import click

__all__ = ["SuggestingGroup", "no_such_command"]


def no_such_command(name: str, candidates: list[str]) -> str:
    """The usage-error message for an unknown command ``name``, naming the closest candidate if any."""
    close = difflib.get_close_matches(name, candidates, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else f"; the commands are {', '.join(candidates)}"
    return f"no such command {name!r}{hint}"


class SuggestingGroup(click.Group):
    """A ``click.Group`` whose unknown-command error suggests the closest command."""

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except click.exceptions.NoSuchCommand as exc:
            message = no_such_command(exc.command_name, self.list_commands(ctx))
            raise click.exceptions.NoSuchCommand(exc.command_name, message, ctx=ctx) from None
