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

from bundlekit.errors import CIDError
from bundlekit.ipld.cid import parse_cid
from bundlekit.unixfs.profiles import PROFILES

__all__ = ["CID", "CID_OR_IPFS_URI", "PROFILE", "CidParam"]


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
PROFILE = click.Choice(sorted(PROFILES))
