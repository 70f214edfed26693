"""The read-only browsing interface mounted at ``/ui/`` of ``bundlekit serve --ui`` (specs/gateway.md).

Pages (GET/HEAD only; nothing writes):

    /ui/                                 the bundles the server holds
    /ui/bundle/<cid>[?q=text]            one bundle: manifest facts, index, memories by type, search
    /ui/bundle/<cid>/memory/<key>        one memory: frontmatter table, body rendered from Markdown
    /ui/bundle/<cid>/timeline[?day=D]    entries per day as an SVG chart; one day's entries
    /ui/diff?old=<cid>&new=<cid>         memories added, removed, changed; body line diffs
    /ui/static/style.css, favicon.svg    the stylesheet and the icon

Every answer carries a strict Content-Security-Policy (no script at all, styles
and images only from this server, forms only to it), ``X-Content-Type-Options:
nosniff``, ``Referrer-Policy: no-referrer`` and ``X-Frame-Options: DENY``.
Bundles are immutable, so a read bundle is kept (a few, least recently used first out).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from importlib import resources
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import jinja2

from bundlekit._redact import redact
from bundlekit.errors import BundlekitError
from bundlekit.gateway.respond import Response
from bundlekit.gateway.server import ServedRoot
from bundlekit.ipld.cid import cid_from_text
from bundlekit.ui.model import BundleView, DiffCache, MemoryItem, read_bundle, read_manifest
from bundlekit.ui.render import day_chart, environment, render_page

__all__ = ["CONTENT_SECURITY_POLICY", "MOUNT", "UIApp"]

logger = logging.getLogger("bundlekit.ui")

MOUNT = "/ui/"
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'none'; style-src 'self'; img-src 'self'; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
_SECURITY_HEADERS = [
    ("Content-Security-Policy", CONTENT_SECURITY_POLICY),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "no-referrer"),
    ("X-Frame-Options", "DENY"),
    ("Cache-Control", "no-cache"),
]
_CACHE_SIZE = 8
_STATIC = {"style.css": "text/css; charset=utf-8", "favicon.svg": "image/svg+xml"}


class _NotFound(Exception):
    pass


class _BadRequest(Exception):
    pass


class UIApp:
    """Answers ``/ui/`` requests from ``get`` (verified blocks) and ``roots`` (what the server holds)."""

    def __init__(self, get: Callable[[bytes], bytes], roots: Callable[[], list[ServedRoot]]) -> None:
        self._get = get
        self._roots = roots
        self._env: jinja2.Environment = environment()
        self._cache: OrderedDict[str, BundleView] = OrderedDict()
        self._diffs = DiffCache()  # a diff page is made once per pair of roots
        self._lock = threading.Lock()
        static = resources.files("bundlekit.ui").joinpath("static")
        self._static = {name: (static.joinpath(name).read_bytes(), kind) for name, kind in _STATIC.items()}

    def __call__(self, method: str, target: str, headers: Mapping[str, str]) -> Response:
        """Answer one request; never raises (an unexpected fault is a 500 page, logged)."""
        try:
            if method not in ("GET", "HEAD"):
                return self._page(405, "error.html", message="this interface is read-only: use GET",
                                  extra=[("Allow", "GET, HEAD, OPTIONS")])
            return self._route(target)
        except _NotFound as exc:
            return self._page(404, "error.html", message=str(exc))
        except (_BadRequest, BundlekitError) as exc:
            return self._page(400, "error.html", message=str(exc))
        except Exception:
            logger.exception("internal error in the interface while answering %s", redact(target))
            return self._page(500, "error.html", message="internal error; see the server's log")

    # -- routing ------------------------------------------------------------------

    def _route(self, target: str) -> Response:
        url = urlsplit(target)
        query = dict(parse_qsl(url.query, keep_blank_values=True))
        parts = [unquote(p) for p in url.path[len(MOUNT) :].split("/") if p] if url.path.startswith(MOUNT) else []
        match parts:
            case []:
                return self._home()
            case ["static", name] if name in self._static:
                return _respond(200, *self._static[name])
            case ["bundle", cid]:
                return self._bundle(cid, query.get("q", ""))
            case ["bundle", cid, "memory", key]:
                return self._memory(cid, key)
            case ["bundle", cid, "timeline"]:
                return self._timeline(cid, query.get("day"))
            case ["diff"]:
                return self._diff(query.get("old", ""), query.get("new", ""))
        raise _NotFound(f"no page at {url.path}")

    # -- pages --------------------------------------------------------------------

    def _home(self) -> Response:
        rows = []
        for root in self._roots():
            row: dict[str, Any] = {"cid": root.cid, "name": root.name, "source": root.source, "manifest": None}
            try:
                row["manifest"] = read_manifest(self._get, cid_from_text(root.cid))
            except BundlekitError as exc:
                row["problem"] = str(exc)
            rows.append(row)
        return self._page(200, "home.html", rows=rows)

    def _bundle(self, cid: str, q: str) -> Response:
        view = self._view(cid)
        needle = q.strip().casefold()
        groups = [
            (kind, [item for item in items if not needle or _matches(item, needle)])
            for kind, items in view.by_type()
        ]
        groups = [(kind, items) for kind, items in groups if items]
        others = [root for root in self._roots() if root.cid != view.root]
        shown = sum(len(items) for _kind, items in groups)
        return self._page(200, "bundle.html", view=view, q=q, groups=groups, shown=shown, others=others)

    def _memory(self, cid: str, key: str) -> Response:
        view = self._view(cid)
        item = view.memory(key)
        if item is None:
            raise _NotFound(f"no memory {key!r} in {view.root}")
        return self._page(200, "memory.html", view=view, item=item)

    def _timeline(self, cid: str, day: str | None) -> Response:
        view = self._view(cid)
        if day is not None and day not in view.timeline:
            raise _NotFound(f"no timeline day {day!r} in {view.root}")
        bars, width, height = day_chart({d: len(entries) for d, entries in view.timeline.items()})
        return self._page(200, "timeline.html", view=view, bars=bars, width=width, height=height, day=day,
                          entries=view.timeline.get(day, []) if day else [])

    def _diff(self, old: str, new: str) -> Response:
        if not old or not new:
            raise _BadRequest("give two bundles: /ui/diff?old=CID&new=CID")
        old_view, new_view = self._view(old), self._view(new)
        result, bodies = self._diffs.diff(old_view, new_view)
        return self._page(200, "diff.html", old=old_view, new=new_view, result=result, bodies=bodies)

    # -- helpers ------------------------------------------------------------------

    def _view(self, cid_text: str) -> BundleView:
        try:
            root = cid_from_text(cid_text)
        except BundlekitError as exc:
            raise _BadRequest(f"{cid_text!r} is not a CID: {exc}") from exc
        with self._lock:
            cached = self._cache.get(cid_text)
            if cached is not None:
                self._cache.move_to_end(cid_text)
                return cached
        try:
            view = read_bundle(self._get, root)
        except BundlekitError as exc:
            raise _NotFound(f"{cid_text} is not a bundle this server can show: {exc}") from exc
        with self._lock:
            self._cache[cid_text] = view
            while len(self._cache) > _CACHE_SIZE:
                self._cache.popitem(last=False)
        return view

    def _page(self, status: int, template: str, *, extra: list[tuple[str, str]] | None = None,
              **context: Any) -> Response:
        html = render_page(self._env, template, mount=MOUNT, **context).encode("utf-8")
        response = _respond(status, html, "text/html; charset=utf-8")
        response.headers.extend(extra or [])
        return response


def _matches(item: MemoryItem, needle: str) -> bool:
    """Case-insensitive substring match on the key, name and description (bodies are not searched)."""
    if needle in item.key.casefold():
        return True
    record = item.record
    return record is not None and (needle in record.name.casefold() or needle in record.description.casefold())


def _respond(status: int, body: bytes, content_type: str) -> Response:
    return Response(status, [("Content-Type", content_type), *_SECURITY_HEADERS], [body], len(body))
