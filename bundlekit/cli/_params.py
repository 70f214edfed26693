"""Click parameter types for values the user types that the library would otherwise reject later.

A malformed value given on the command line is a usage error (exit 2), named
by its option or argument, like any other bad option: the conversion happens
here, at the boundary, so the library's ``CIDError`` (exit 1, a CID that
cannot be parsed wherever it came from) never stands for a typo (a memory key:
``MEMORY_KEY`` in ``cli.memory``). ``PROFILE`` is the one choice of UnixFS profile every
command offers, so an unknown one is the same usage error everywhere.
"""

from __future__ import annotations

from typing import Any

import click

from bundlekit._bounds import MAX_COUNT, Bound, parse_seconds
from bundlekit.errors import CIDError
from bundlekit.ipld.cid import parse_cid
from bundlekit.unixfs.profiles import PROFILES

__all__ = ["CID", "CID_OR_IPFS_URI", "PROFILE", "CidParam", "Count", "Seconds"]


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
