"""Turning untrusted bundle content into safe HTML: Jinja2 with autoescape, Markdown with raw HTML off.

* Templates (``templates/*.html``) autoescape every value; the only value
  marked safe is :func:`markdown_html`'s output.
* Markdown is rendered by markdown-it-py's CommonMark preset with ``html``
  off (raw HTML in a body is shown as text), images off (nothing is ever
  fetched, not even from the server), and links kept only for the schemes in
  :data:`SAFE_LINK_SCHEMES` or relative targets; a kept link gets
  ``rel="nofollow noopener noreferrer"``.
* The timeline chart is inline SVG built from numbers (:func:`day_chart`):
  readable without JavaScript, and the pages carry none.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import jinja2
import markupsafe
from markdown_it import MarkdownIt

__all__ = ["SAFE_LINK_SCHEMES", "ChartBar", "day_chart", "environment", "markdown_html"]

SAFE_LINK_SCHEMES = ("http", "https", "mailto", "ipfs", "ipns")
_SCHEME_RE = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*):")
_MEMORY_LINK_RE = re.compile(r"([A-Za-z0-9_.-]+)\.md")
CHART_HEIGHT = 120
BAR_WIDTH = 14
BAR_GAP = 4


def _safe_link(url: str) -> bool:
    match = _SCHEME_RE.match(url.strip())
    if match is None:
        return not url.strip().startswith("//")  # relative; a scheme-relative URL would leave the server
    return match.group(1).lower() in SAFE_LINK_SCHEMES


def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.disable("image")
    md.validateLink = _safe_link  # type: ignore[method-assign]

    def link_open(renderer: Any, tokens: Sequence[Any], idx: int, options: Any, env: Any) -> str:
        token = tokens[idx]
        base = env.get("memory_base") if isinstance(env, dict) else None
        target = _MEMORY_LINK_RE.fullmatch(str(token.attrGet("href") or ""))
        if base and target:  # the index's `- [name](key.md)` links open the memory's page
            token.attrSet("href", base + quote(target.group(1)))
        token.attrSet("rel", "nofollow noopener noreferrer")
        return str(renderer.renderToken(tokens, idx, options, env))

    md.add_render_rule("link_open", link_open)
    return md


_MD = _markdown()


def markdown_html(text: str, *, memory_base: str | None = None) -> str:
    """``text`` (Markdown from a bundle) as HTML with no raw HTML, no images and only safe links.

    With ``memory_base``, a relative link to ``<key>.md`` (the index's links) points at
    ``memory_base + key`` instead: the interface's page for that memory.
    """
    html: str = _MD.render(text, {"memory_base": memory_base} if memory_base else {})
    return html


@dataclass(frozen=True)
class ChartBar:
    """One day's bar of the timeline chart, in SVG user units."""

    day: str
    count: int
    x: int
    y: int
    height: int


def day_chart(counts: Mapping[str, int]) -> tuple[list[ChartBar], int, int]:
    """Bars for ``counts`` (day -> entries), oldest first; returns (bars, width, height)."""
    days = sorted(counts)
    top = max(counts.values(), default=0) or 1
    bars = []
    for i, day in enumerate(days):
        height = max(2, round(counts[day] / top * (CHART_HEIGHT - 20)))
        bars.append(ChartBar(day, counts[day], i * (BAR_WIDTH + BAR_GAP), CHART_HEIGHT - height, height))
    width = max(len(days) * (BAR_WIDTH + BAR_GAP), BAR_WIDTH)
    return bars, width, CHART_HEIGHT


def environment() -> jinja2.Environment:
    """The template environment: package templates, autoescape on, undefined names an error."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("bundlekit.ui", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["markdown"] = lambda text, memory_base=None: markupsafe.Markup(
        markdown_html(str(text), memory_base=memory_base)
    )
    env.globals["bar_width"] = BAR_WIDTH
    return env
