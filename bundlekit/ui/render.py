"""Turning untrusted bundle content into safe HTML: Jinja2 with autoescape, Markdown with raw HTML off.

* Templates (``templates/*.html``) autoescape every value; the only value
  marked safe is :func:`markdown_html`'s output.
* Markdown is rendered by markdown-it-py's CommonMark preset with ``html``
  off (raw HTML in a body is shown as text), images off (nothing is ever
  fetched, not even from the server), and links kept only for the schemes in
  :data:`SAFE_LINK_SCHEMES`, fragments and ``<key>.md`` (rewritten to that
  memory's page); a kept link gets ``rel="nofollow noopener noreferrer"``.
* Frontmatter values and timeline entries are shown through :func:`value_text`,
  which never fails and stays small: a hostile file can hold YAML binary
  or set values, anchors that repeat one list into billions of items, or
  nesting deeper than a JSON encoder can recurse.
* Every page passes :func:`shown` whole, once, as it leaves the renderer
  (:func:`render_page`): ``bundlekit._redact.redact``, the one redaction the
  CLI and the MCP server print through, so a page withholds exactly what they
  withhold (``[withheld]`` for what looks like a credential in a body, a
  description, a timeline entry, a key, a query echoed by an error); then
  control characters and the Unicode bidi controls (U+200E/F, U+202A-202E,
  U+2066-2069, U+061C) are shown as visible escapes (``\\u202e``), as on a
  terminal (``_terminal.printable``), so a name cannot reorder what a page
  shows. Neither step adds a character HTML gives a meaning to, and HTML's
  escapes (``&amp;``) leave the credentials' characters as they are. A
  Markdown body is redacted before it is rendered too: emphasis or a link could
  otherwise split a credential across tags.
* The timeline chart is inline SVG built from numbers (:func:`day_chart`):
  readable without JavaScript, and the pages carry none.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import jinja2
import markupsafe
from markdown_it import MarkdownIt

from bundlekit._redact import redact
from bundlekit._terminal import printable

__all__ = [
    "MAX_VALUE_DEPTH",
    "MAX_VALUE_ITEMS",
    "SAFE_LINK_SCHEMES",
    "ChartBar",
    "day_chart",
    "environment",
    "markdown_html",
    "render_page",
    "shown",
    "value_text",
]

SAFE_LINK_SCHEMES = ("http", "https", "mailto", "ipfs", "ipns")
_SCHEME_RE = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*):")
_MEMORY_LINK_RE = re.compile(r"([A-Za-z0-9_.-]+)\.md")
CHART_HEIGHT = 120
BAR_WIDTH = 14
BAR_GAP = 4
MAX_VALUE_ITEMS = 2000  # scalars and containers shown per value; the rest is "…"
MAX_VALUE_DEPTH = 32  # containers nested deeper show as "…"
_ELLIPSIS = "…"


def _safe_link(url: str) -> bool:
    """Keep a link with a safe scheme, a fragment (``#...``) or a ``<key>.md`` (a memory's page).

    Any other relative target is refused: on this origin ``/ipfs/...`` is the gateway,
    which serves a bundle's ``.html`` file as ``text/html`` without this interface's CSP,
    so a link there would run the bundle's script on the interface's origin.
    """
    url = url.strip()
    match = _SCHEME_RE.match(url)
    if match is None:
        return url.startswith("#") or _MEMORY_LINK_RE.fullmatch(url) is not None
    return match.group(1).lower() in SAFE_LINK_SCHEMES


def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.disable("image")
    md.validateLink = _safe_link  # type: ignore[method-assign]

    def link_open(renderer: Any, tokens: Sequence[Any], idx: int, options: Any, env: Any) -> str:
        token = tokens[idx]
        base = env.get("memory_base") if isinstance(env, dict) else None
        target = _MEMORY_LINK_RE.fullmatch(str(token.attrGet("href") or ""))
        if base and target:  # `[name](key.md)` (in the index or a body) opens that memory's page
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


def value_text(value: Any) -> str:
    """``value`` (from a bundle's frontmatter or timeline) as JSON-like text, bounded; never raises.

    A top-level string is shown as it is. Containers are written as JSON, at most
    :data:`MAX_VALUE_ITEMS` items and :data:`MAX_VALUE_DEPTH` levels (beyond them: "…"),
    so a YAML alias bomb or absurd nesting cannot hold a page; values JSON has no
    form for (YAML ``!!binary``, ``!!set``) are written as their Python ``repr``.
    """
    if isinstance(value, str):
        return value
    out: list[str] = []
    budget = [MAX_VALUE_ITEMS]
    _write_value(value, out, budget, 0)
    return "".join(out)


def _write_value(value: Any, out: list[str], budget: list[int], depth: int) -> None:
    if budget[0] <= 0:
        out.append(_ELLIPSIS)
        return
    budget[0] -= 1
    if value is None or isinstance(value, (bool, int, float, str)):
        out.append(json.dumps(value, ensure_ascii=False))
        return
    if isinstance(value, Mapping):
        pairs: Iterable[tuple[str | None, Any]] = ((str(k), v) for k, v in value.items())
        opening, closing = "{", "}"
    elif isinstance(value, (list, tuple)):
        pairs = ((None, v) for v in value)
        opening, closing = "[", "]"
    else:  # bytes, set...: no JSON form; repr is text, bounded like the rest
        out.append(repr(value)[: MAX_VALUE_ITEMS * 8])
        return
    if depth >= MAX_VALUE_DEPTH:
        out.append(_ELLIPSIS)
        return
    out.append(opening)
    for i, (name, item) in enumerate(pairs):
        if i:
            out.append(", ")
        if budget[0] <= 0:
            out.append(_ELLIPSIS)
            break
        if name is not None:
            out.append(json.dumps(name, ensure_ascii=False) + ": ")
        _write_value(item, out, budget, depth + 1)
    out.append(closing)


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


def shown(html: str) -> str:
    """A rendered page as it may leave (the module docstring): redacted, controls escaped visibly."""
    return printable(redact(html))


def render_page(env: jinja2.Environment, template: str, **context: Any) -> str:
    """``template`` rendered with ``context``, passed through :func:`shown`: the one way a page is made."""
    return shown(env.get_template(template).render(**context))


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
        markdown_html(redact(str(text)), memory_base=memory_base)
    )
    env.filters["value_text"] = value_text
    env.globals["bar_width"] = BAR_WIDTH
    return env
