"""``check_urls``: the click callback every command that reads from a URI or ``--gateway`` gives those values.

Its own module (issue 37): ``load``, ``merge``, ``diff`` and ``sync`` share it, and ``sync``, importing it from
``cli.load``, loaded the loader's commands and flows with it (``flows.load``, ``flows.fork``, ``bundle.layers``,
``bundle.fork``: ~4 ms of CPU of every writer's round).
"""

from __future__ import annotations

from typing import Any

import click

from bundlekit.net.http import check_http_url

__all__ = ["check_urls"]


def check_urls(_ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """Click callback: a malformed http(s) URI or ``--gateway`` is a usage error (exit 2), not a traceback."""
    for text in (value,) if isinstance(value, str) else value or ():
        check_http_url(text, what=param.opts[-1] if param.opts[-1].startswith("--") else "URI")
    return value
