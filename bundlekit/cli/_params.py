"""Click parameter types for values the user types that the library would otherwise reject later.

A malformed value given on the command line is a usage error (exit 2), named
by its option or argument, like any other bad option: the conversion happens
here, at the boundary, so the library's ``CIDError`` (exit 1, a CID that
cannot be parsed wherever it came from) never stands for a typo (a memory key:
``MEMORY_KEY`` in ``cli.memory``). ``PROFILE`` is the one choice of UnixFS profile every
command offers, so an unknown one is the same usage error everywhere.

One name per concept (README, "One name for one thing"; tests/journeys/test_option_names.py walks every
command): the memory tree is ``-d/--dir`` (``TREE_OPTION``: ``$BUNDLEKIT_MEMORY_DIR``, else ``./memory``)
wherever a command reads or updates one. A spelling that was renamed stays accepted for one release as a
hidden alias (``AliasOption``: parsed, never shown in ``--help`` or an error hint; ``LegacyArgument``:
an old positional, left out of the usage line).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click

from bundlekit._bounds import MAX_COUNT, Bound, parse_seconds
from bundlekit.errors import CIDError, UsageError
from bundlekit.ipld.cid import parse_cid
from bundlekit.unixfs.profiles import PROFILES

__all__ = [
    "CID", "CID_OR_IPFS_URI", "DEFAULT_TREE", "MEMORY_DIR_ENV", "PROFILE", "TREE_DEFAULT_TEXT", "AliasOption",
    "CidParam", "Count", "LegacyArgument", "Seconds", "legacy_tree_argument", "same_path", "strict_option",
    "tree_option",
]

_F = TypeVar("_F", bound=Callable[..., Any])

MEMORY_DIR_ENV = "BUNDLEKIT_MEMORY_DIR"
DEFAULT_TREE = Path("memory")
TREE_DEFAULT_TEXT = f"${MEMORY_DIR_ENV}, else ./memory"


class CidParam(click.ParamType[bytes]):
    """A CID string, converted to binary form; with ``uri=True``, ``ipfs://CID[/path]`` is accepted too."""

    name = "cid"

    def __init__(self, *, uri: bool = False) -> None:
        self.uri = uri

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> bytes:
        if isinstance(value, bytes):
            return value
        text = str(value)
        if self.uri:
            text = text.removeprefix("ipfs://").split("/")[0]
        try:
            return parse_cid(text)
        except CIDError as exc:
            self.fail(str(exc), param, ctx)


CID = CidParam()
CID_OR_IPFS_URI = CidParam(uri=True)


class Count(click.ParamType[int]):
    """A whole number in ``low..high`` (``_bounds.Bound``: the digits checked before ``int()``, the range before
    use); every integer option takes one, so no number reaches the library unbounded (exit 2 otherwise)."""

    name = "integer"

    def __init__(self, low: int = 0, high: int = MAX_COUNT) -> None:
        self.bound = Bound(low, high)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        what = "the number"  # click names the option before the message
        try:
            if isinstance(value, int):
                return self.bound.check(value, what)
            return self.bound.parse(str(value), what)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


class Seconds(click.ParamType[float]):
    """A duration in seconds: above 0, finite, bounded (``_bounds.parse_seconds``); ``nan`` and ``inf`` refused."""

    name = "seconds"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        try:
            return parse_seconds(str(value), "the number")
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


PROFILE = click.Choice(sorted(PROFILES))


class AliasOption(click.Option):
    """An option with renamed spellings kept as hidden aliases (``hidden_aliases``): they parse as the
    option does, but ``--help`` and error hints name only the current spelling."""

    def __init__(self, *args: Any, hidden_aliases: Sequence[str] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.hidden_aliases = tuple(hidden_aliases)
        unknown = set(self.hidden_aliases) - set(self.opts)
        if unknown:
            raise TypeError(f"hidden aliases {sorted(unknown)} are not spellings of {self.name!r}")

    def shown_opts(self) -> list[str]:
        """The spellings ``--help`` shows."""
        return [opt for opt in self.opts if opt not in self.hidden_aliases]

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        every = self.opts
        self.opts = self.shown_opts()
        try:
            return super().get_help_record(ctx)
        finally:
            self.opts = every

    def get_error_hint(self, ctx: click.Context | None) -> str:
        return " / ".join(f"'{opt}'" for opt in self.shown_opts())

    @property
    def _alias_dest(self) -> str:
        return f"{self.name} (old spelling)"

    def add_to_parser(self, parser: Any, ctx: click.Context) -> None:
        """The hidden spellings parse into a slot of their own, so both spellings given can be told apart
        (click keeps the last of one option's values, silently)."""
        every, name = self.opts, self.name
        try:
            self.opts = self.shown_opts()
            super().add_to_parser(parser, ctx)
            if self.hidden_aliases:
                self.opts, self.name = list(self.hidden_aliases), self._alias_dest
                super().add_to_parser(parser, ctx)
        finally:
            self.opts, self.name = every, name

    def handle_parse_result(self, ctx: click.Context, opts: Mapping[str, Any], args: list[str]) -> tuple[Any, list[str]]:
        """An old spelling's value as the option's; both spellings with different values is a usage error
        (``name publish --name-key A --key-file B`` published under B's key)."""
        if self._alias_dest in opts:
            old = opts[self._alias_dest]
            if self.name in opts and opts[self.name] != old and not (
                    isinstance(self.type, click.Path) and same_path(Path(opts[self.name]), Path(old))):
                raise UsageError(f"{self.shown_opts()[-1]} given twice, once as its old spelling "
                                 f"{'/'.join(self.hidden_aliases)}, with different values; give it once")
            opts = {**opts, str(self.name): old}
        return super().handle_parse_result(ctx, opts, args)


class LegacyArgument(click.Argument):
    """An optional positional kept for one release where an option took its place (``build MEMDIR`` is now
    ``build -d DIR``): still parsed, left out of the usage line."""

    def get_usage_pieces(self, ctx: click.Context) -> list[str]:
        return []


def tree_option(help_text: str, *, hidden_aliases: Sequence[str] = (), from_env: bool = True) -> Callable[[_F], _F]:
    """``-d/--dir DIR``: the memory tree a command reads or updates, the one spelling of every command.

    ``from_env``: the value defaults to ``$BUNDLEKIT_MEMORY_DIR``, else ``./memory`` (a command whose tree is
    optional, ``mcp``, passes False and applies the variable itself). The parameter is named ``tree``.
    """
    extra: dict[str, Any] = {}
    if from_env:
        extra = {"envvar": MEMORY_DIR_ENV, "default": DEFAULT_TREE, "show_default": TREE_DEFAULT_TEXT}
    return click.option("-d", "--dir", *hidden_aliases, "tree", cls=AliasOption, hidden_aliases=hidden_aliases,
                        metavar="DIR", type=click.Path(file_okay=False, path_type=Path), help=help_text, **extra)


def strict_option(what: str) -> Callable[[_F], _F]:
    """``--strict``, its one meaning on every command: what cannot be carried is an error before
    anything is written. ``what`` says what this command cannot carry; it is appended to the help."""
    return click.option("--strict", is_flag=True,
                        help=f"Fail (exit 1, nothing written) when anything would be changed or left out: {what}.")


def same_path(one: Path, other: Path) -> bool:
    """Whether two spellings of one path option (``-d`` and an older spelling of the tree, ``--name-key`` and
    ``--key-file``) name one file or directory: equal as paths (``./m``, ``m/``), or once resolved (a symlink
    to ``m``, ``x/../m``; the part that does not exist yet is taken as written). Naming the same directory
    twice is not naming two trees."""
    if Path(one) == Path(other):
        return True
    try:
        return one.resolve() == other.resolve()
    except (OSError, RuntimeError):  # a symlink loop: the spellings cannot be told to be one
        return False


def legacy_tree_argument(name: str, metavar: str | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The old positional tree argument ``name`` (``build MEMDIR``, ``sync TREE``, ``fork DEST``), folded
    into ``-d/--dir``: the command receives one ``tree``. Both given, and different, is a usage error."""

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        @click.argument(name, cls=LegacyArgument, required=False, metavar=metavar,
                        type=click.Path(file_okay=False, path_type=Path))
        @functools.wraps(command)
        def with_tree(*args: Any, tree: Path, **kwargs: Any) -> Any:
            positional: Path | None = kwargs.pop(name)
            if positional is not None:
                source = click.get_current_context().get_parameter_source("tree")
                if source is click.core.ParameterSource.COMMANDLINE and not same_path(positional, tree):
                    raise UsageError(f"two memory trees named ({str(positional)[:80]!r} and -d {str(tree)[:80]!r}); "
                                     "name the tree once, with -d DIR")
                tree = positional
            return command(*args, tree=tree, **kwargs)

        return with_tree

    return decorate
