"""The local gateway's request -> response logic: the trustless and path gateway rules, no sockets.

``GatewayResponder.respond(method, target, headers)`` turns one request into a
``Response`` (status, headers, a lazily produced body); ``bundlekit.gateway``
puts it on the wire. Keeping the rules here, apart from the server, lets them
be read against ``specs/gateway.md`` in one place and tested without HTTP.
"""

from __future__ import annotations

import functools
import hashlib
import html
import itertools
import logging
import mimetypes
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import BinaryIO, TypeVar, cast
from urllib.parse import SplitResult, parse_qsl, quote, unquote, urlencode, urlsplit

from bundlekit._redact import redact
from bundlekit.blockstore import IPNS_RECORD_MEDIA_TYPE, BlockStore
from bundlekit.car.format import CAR_CONTENT_TYPE, CAR_MEDIA_TYPE
from bundlekit.car.writer import CarWriter
from bundlekit.errors import (
    BlockMismatch,
    BundlekitError,
    CIDError,
    CodecError,
    DAGLimitExceeded,
    MissingBlock,
    UnsafePathError,
    UsageError,
)
from bundlekit.gateway.dag import (
    DAG_SCOPES,
    DirCache,
    Resolved,
    parse_entity_bytes,
    range_blocks,
    resolve_path,
    resolve_range,
    scope_blocks,
)
from bundlekit.gateway.record_cache import record_cache_headers
from bundlekit.gateway.sources import ServedBlocks, ChainSource
from bundlekit.ipld.block import RAW_MEDIA_TYPE
from bundlekit.ipld.cid import cid_from_text, cid_to_str, parse_cid_bytes
from bundlekit.ipld.walk import WalkBudget, WalkCancelled, WalkLimits
from bundlekit.unixfs.reader import UnixFSReader

__all__ = ["GatewayResponder", "Response", "error_response"]

logger = logging.getLogger("bundlekit.gateway")

IMMUTABLE = "public, max-age=29030400, immutable"
# Content read from a DAG is untrusted: a browser renders it (HTML, SVG) in a sandbox, an opaque
# origin with scripts off, so nothing served can read this origin's other pages (the /ui/ interface).
_SANDBOX = ("Content-Security-Policy", "sandbox")
STREAM_CHUNK = 64 * 1024
IDENTITY_HASH = 0x00
DIR_INDEX_VERSION = "bundlekit-1"
# Results remembered (``_remembered``): at most this many, each for an argument of at most this length.
_REMEMBERED = 4096
_REMEMBERED_LENGTH = 256

_Key = TypeVar("_Key", str, bytes)
_Value = TypeVar("_Value")


def _remembered(function: Callable[[_Key], _Value]) -> Callable[[_Key], _Value]:
    """``function`` with its last :data:`_REMEMBERED` results kept, for arguments of at most
    :data:`_REMEMBERED_LENGTH` characters or bytes; a longer one is computed each time and never kept.

    The arguments are request input: an identity CID inlines its block (kubo's are 128 bytes at most, yet
    a request may name one of thousands), so an unbounded key would let a client hold a cache of 4,096
    entries of up to 70 KiB each, three such caches, over a gigabyte. A CID in common use (sha2-256: 36
    bytes, 59 characters in base32) and the paths under it fit."""
    kept = functools.lru_cache(maxsize=_REMEMBERED)(function)

    def call(argument: _Key) -> _Value:
        return kept(argument) if len(argument) <= _REMEMBERED_LENGTH else function(argument)

    return call


# A CID's name, remembered: every content answer names its root two or three times (X-Ipfs-Path,
# X-Ipfs-Roots, Etag), and the stdlib's base32 is Python, a quarter of a raw block's answer.
_name = _remembered(cid_to_str)
_quoted = _remembered(quote)  # a content path as X-Ipfs-Path gives it, likewise
#: The status of a request whose client went away before the answer (nginx's convention); never sent.
CLIENT_GONE = 499


@dataclass
class Response:
    """A status, headers and a body; ``length=None`` means streamed with chunked encoding."""

    status: int
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: Iterable[bytes] = ()
    length: int | None = 0

    def header(self, name: str) -> str | None:
        lname = name.lower()
        return next((v for k, v in self.headers if k.lower() == lname), None)


class _HTTPError(Exception):
    def __init__(self, status: int, message: str, headers: Sequence[tuple[str, str]] = ()) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = list(headers)


class _Drain:
    """A write-only file that hands back what was written since the last ``take``."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []
        self.size = 0

    def write(self, data: bytes) -> int:
        self._parts.append(bytes(data))
        self.size += len(data)
        return len(data)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass

    def take(self) -> bytes:
        out = b"".join(self._parts)
        self._parts.clear()
        self.size = 0
        return out


class GatewayResponder:
    """Request -> ``Response`` logic over a block source; holds no per-request state.

    Each request walks under its own ``WalkBudget`` with ``limits`` (default
    ``WalkLimits()``, specs/gateway.md "Limits").
    """

    def __init__(
        self,
        source: ServedBlocks,
        *,
        dir_cache_bytes: int = 64 * 1024 * 1024,
        limits: WalkLimits | None = None,
        clock: Callable[[], int] = time.time_ns,
    ) -> None:
        self.source = source
        self.clock = clock  # Unix time in ns: an IPNS record's max-age or Last-Modified
        self.dirs = DirCache(dir_cache_bytes)
        # IPNS records come from the block store the gateway serves, if it serves one.
        parts = source.sources if isinstance(source, ChainSource) else (source,)
        self.records = next((p for p in parts if isinstance(p, BlockStore)), None)
        self.limits = limits if limits is not None else WalkLimits()

    # -- entry point ---------------------------------------------------------

    def respond(
        self,
        method: str,
        target: str,
        headers: Mapping[str, str],
        *,
        cancelled: Callable[[], bool] | None = None,
    ) -> Response:
        """Answer one request. ``headers`` keys are lower-case. Never raises.

        ``cancelled`` (the server's "has the client gone?") is polled while
        the DAG is walked; when it says yes the work stops and the response
        has status ``CLIENT_GONE``, which is not sent. A body still being
        streamed raises ``WalkCancelled`` or ``DAGLimitExceeded`` from its
        iterator: the server cuts the connection.
        """
        budget = WalkBudget(self.limits, what=target, cancelled=cancelled)
        try:
            if method not in ("GET", "HEAD"):
                raise _HTTPError(
                    405, f"method {method} is not allowed: use GET or HEAD", [("Allow", "GET, HEAD, OPTIONS")]
                )
            return self._respond(method, target, headers, budget)
        except _HTTPError as exc:
            return _error(exc.status, exc.message, exc.headers)
        except WalkCancelled:
            return Response(CLIENT_GONE, [], (), 0)
        except DAGLimitExceeded as exc:
            return _error(500, f"the DAG is past this gateway's limits: {exc}")
        except CodecError as exc:
            return _error(500, f"the DAG is malformed: {exc}")
        except BlockMismatch as exc:
            logger.error("damaged block while answering %s: %s", redact(target), exc)
            return _error(500, f"the gateway's copy of a block is damaged: {exc}")
        except Exception:  # a bug must not kill the server thread; the client gets a 500
            logger.exception("internal error while answering %s", redact(target))
            return _error(500, "internal gateway error; see the gateway's log")

    def _block(self, cid: bytes) -> bytes:
        info = parse_cid_bytes(cid)
        if info.hash_code == IDENTITY_HASH:
            return info.digest  # identity CIDs carry their block (the spec's bafkqaaa probe)
        return self.source.get(cid)

    def _respond(self, method: str, target: str, headers: Mapping[str, str], budget: WalkBudget) -> Response:
        url = urlsplit(target)
        query = dict(parse_qsl(url.query, keep_blank_values=True))
        if url.path.startswith("/ipns/") and _wants_record(query, headers):
            return self._ipns_record(url.path)
        root, segments = _content_path(url.path, headers.get("host", ""))
        fmt = _negotiate(query, headers.get("accept"))
        if fmt == "raw" and segments:
            raise _HTTPError(
                400,
                "a raw block is served only at /ipfs/{cid}, without a path (trustless gateway specification); "
                "ask /ipfs/{cid}/{path}?format=car&dag-scope=block for the block at a path",
            )
        scope, entity_bytes = _car_selection(query) if fmt == "car" else ("all", None)
        if "only-if-cached" in headers.get("cache-control", "") and not self._has(root):
            raise _HTTPError(412, f"{cid_to_str(root)} is not in this gateway's store")

        resolved = self._resolve(root, segments, budget)
        display_path = "/ipfs/" + _name(root) + "".join("/" + s for s in segments)
        common = _common_headers(display_path, resolved.cids)
        if fmt == "raw":
            response = self._raw(resolved, common)
        elif fmt == "car":
            response = self._car(
                method, resolved, scope, entity_bytes, query.get("entity-bytes", ""), display_path, common, budget
            )
        else:
            response = self._deserialized(method, url, resolved, segments, common, budget)
        if fmt is not None and response.status == 200:
            location = _content_location(url, fmt, query, headers.get("accept"))
            if location is not None:
                response.headers.append(("Content-Location", location))
        etag = response.header("Etag") if headers.get("if-none-match") else None
        if etag is not None and response.status == 200 and _etag_matches(headers.get("if-none-match"), etag):
            kept = [h for h in response.headers if h[0] not in ("Content-Type", "Content-Disposition")]
            return Response(304, kept, (), None)
        return response

    def _ipns_record(self, path: str) -> Response:
        """``/ipns/{name}`` as ``application/vnd.ipfs.ipns-record``: the record kept in the store, as stored.

        The trustless gateway specification serves records unverified: the client verifies. How long a
        cache may keep it comes from its TTL and validity, as in boxo (``record_cache``); a record whose
        fields cannot be read is a damaged copy: 500.
        """
        name, _, rest = unquote(path[len("/ipns/") :]).partition("/")
        if rest:
            raise _HTTPError(400, "an IPNS record is requested as /ipns/{name}, without a path")
        try:
            record = self.records.get_record(name) if self.records is not None else None
        except UsageError as exc:
            raise _HTTPError(400, str(exc)) from None
        if record is None:
            raise _HTTPError(404, f"no IPNS record for {name[:80]} in this gateway's store")
        try:
            cache = record_cache_headers(record, self.clock())
        except CodecError as exc:
            logger.error("damaged IPNS record of %s: %s", redact(name), exc)
            raise _HTTPError(500, f"the gateway's copy of the IPNS record of {name} is damaged: {exc}") from None
        headers = [
            ("Content-Type", IPNS_RECORD_MEDIA_TYPE),
            ("X-Ipfs-Path", f"/ipns/{name}"),
            *cache,
            ("Vary", "Accept"),
            ("Access-Control-Allow-Origin", "*"),
        ]
        return Response(200, headers, [record], len(record))

    def _has(self, cid: bytes) -> bool:
        return parse_cid_bytes(cid).hash_code == IDENTITY_HASH or self.source.has(cid)

    def _resolve(self, root: bytes, segments: list[str], budget: WalkBudget) -> Resolved:
        try:
            return resolve_path(self._block, root, segments, self.dirs, budget)
        except (BlockMismatch, DAGLimitExceeded, CodecError):
            raise
        except MissingBlock:
            if not self._has(root):
                raise _HTTPError(404, f"{cid_to_str(root)} is not in this gateway's store") from None
            raise _HTTPError(
                404, f"/{'/'.join(segments)} cannot be resolved under {cid_to_str(root)}: a block is missing"
            ) from None
        except UnsafePathError as exc:
            raise _HTTPError(400, str(exc)) from None
        except BundlekitError as exc:
            # A name that is not in its directory, or a path through a file: nothing there.
            raise _HTTPError(
                404, f"/{'/'.join(segments)} does not exist under {cid_to_str(root)}: {exc}"
            ) from None

    # -- response kinds -----------------------------------------------------------

    def _raw(self, resolved: Resolved, common: list[tuple[str, str]]) -> Response:
        cid = resolved.terminal  # the root: a raw block is never asked at a path (_respond)
        data = resolved.path_blocks[0][1]
        name = _name(cid)
        headers = common + [
            ("Content-Type", RAW_MEDIA_TYPE),
            ("Content-Disposition", f'attachment; filename="{name}.bin"'),
            ("Etag", f'"{name}.raw"'),
            ("Cache-Control", IMMUTABLE),
        ]
        return Response(200, headers, [data], len(data))

    def _fetch(self, cid: bytes) -> bytes:
        try:
            return self._block(cid)
        except MissingBlock:
            raise _HTTPError(404, f"block {cid_to_str(cid)} is not in this gateway's store") from None

    def _car(
        self,
        method: str,
        resolved: Resolved,
        scope: str,
        entity_bytes: tuple[int, int | None] | None,
        entity_bytes_text: str,
        display_path: str,
        common: list[tuple[str, str]],
        budget: WalkBudget,
    ) -> Response:
        root = resolved.cids[0]
        tag = hashlib.sha256(f"{display_path}\0{scope}\0{entity_bytes_text}".encode()).hexdigest()[:16]
        headers = common + [
            ("Content-Type", CAR_CONTENT_TYPE),
            ("Content-Disposition", f'attachment; filename="{cid_to_str(root)}.car"'),
            ("Etag", f'"{cid_to_str(resolved.terminal)}.car.{scope}.{tag}"'),
            ("Cache-Control", IMMUTABLE),
        ]
        # The terminal block is fetched now so that an absent one is a 404, not a cut stream.
        self._fetch(resolved.terminal)
        byte_range: tuple[int, int] | None = None
        if entity_bytes is not None:
            scope, byte_range = self._range_plan(resolved.terminal, entity_bytes)
        if method == "HEAD":
            return Response(200, headers, (), None)
        if byte_range is not None:
            blocks = range_blocks(self._block, resolved.terminal, *byte_range, budget=budget)
        else:
            blocks = scope_blocks(self._block, resolved.terminal, scope, self.dirs, budget)
        return Response(200, headers, self._car_body(root, resolved, blocks), None)

    def _range_plan(
        self, cid: bytes, entity_bytes: tuple[int, int | None]
    ) -> tuple[str, tuple[int, int] | None]:
        """What ``entity-bytes`` selects at ``cid``: ``("range", (first, last))`` for a file,
        ``("block", None)`` for an empty range (the spec: the root block lets the client
        see why), ``("entity", None)`` for anything that is not a byte array.
        Raises a 400 when the range starts after the end of the file.
        """
        try:
            stat = UnixFSReader(self._block, verify=False).stat(cid)
        except BlockMismatch:
            raise
        except BundlekitError:
            return "entity", None  # not UnixFS: the parameter does not apply
        if stat.kind not in ("file", "raw"):
            return "entity", None
        try:
            byte_range = resolve_range(entity_bytes[0], entity_bytes[1], stat.size)
        except ValueError as exc:
            raise _HTTPError(400, f"entity-bytes: {exc}") from None
        return ("range", byte_range) if byte_range is not None else ("block", None)

    def _car_body(
        self, root: bytes, resolved: Resolved, blocks: Iterable[tuple[bytes, bytes]]
    ) -> Iterator[bytes]:
        drain = _Drain()
        writer = CarWriter(cast(BinaryIO, drain), [root])
        for cid, data in itertools.chain(resolved.path_blocks, blocks):
            if parse_cid_bytes(cid).hash_code == IDENTITY_HASH:
                continue  # its bytes are in its CID: the trustless specification leaves it out of a CAR
            writer.put(cid, data)
            if drain.size >= STREAM_CHUNK:
                yield drain.take()
        writer.close()
        tail = drain.take()
        if tail:
            yield tail

    def _deserialized(
        self,
        method: str,
        url: SplitResult,
        resolved: Resolved,
        segments: list[str],
        common: list[tuple[str, str]],
        budget: WalkBudget,
    ) -> Response:
        reader = UnixFSReader(self._block, verify=False, budget=budget)
        cid = resolved.terminal
        try:
            stat = reader.stat(cid)
        except MissingBlock:
            raise _HTTPError(404, f"block {cid_to_str(cid)} is not in this gateway's store") from None
        except (BlockMismatch, DAGLimitExceeded):
            raise
        except BundlekitError as exc:  # a codec or UnixFS node kind we do not render
            raise _HTTPError(
                501,
                f"{cid_to_str(cid)} is not UnixFS data this gateway can render ({exc}); ask for ?format=car",
            ) from None
        if stat.kind == "directory":
            if not url.path.endswith("/"):
                location = url.path + "/" + (f"?{url.query}" if url.query else "")
                return Response(301, common + [("Location", location)], [], 0)
            entries = self.dirs.listing(self._block, cid, budget).order
            index = dict(entries).get("index.html")
            if index is not None:
                return self._file(method, reader, index, "index.html", common)
            body = _listing_html(url.path, entries).encode("utf-8")
            headers = common + [
                ("Content-Type", "text/html; charset=utf-8"),
                _SANDBOX,
                ("Etag", f'"DirIndex-{DIR_INDEX_VERSION}_CID-{cid_to_str(cid)}"'),
                ("Cache-Control", IMMUTABLE),
            ]
            return Response(200, headers, [body] if method == "GET" else [], len(body))
        if stat.kind in ("file", "raw"):
            name = segments[-1] if segments else ""
            return self._file(method, reader, cid, name, common, size=stat.size)
        raise _HTTPError(
            501, f"{cid_to_str(cid)} is a UnixFS {stat.kind}, which this gateway does not render"
        )

    def _file(
        self,
        method: str,
        reader: UnixFSReader,
        cid: bytes,
        name: str,
        common: list[tuple[str, str]],
        size: int | None = None,
    ) -> Response:
        if size is None:
            size = reader.stat(cid).size
        content_type, _ = mimetypes.guess_type(name, strict=False)
        if name.endswith(".md"):
            content_type = "text/markdown; charset=utf-8"
        elif name.endswith((".jsonl", ".ndjson")):
            content_type = "application/x-ndjson"
        headers = common + [
            ("Content-Type", content_type or "application/octet-stream"),
            _SANDBOX,
            ("Etag", f'"{cid_to_str(cid)}"'),
            ("Cache-Control", IMMUTABLE),
        ]
        if method == "GET":
            reader.budget.check_bytes(size)  # before the status line: a reused subtree can claim a petabyte
        body: Iterable[bytes] = reader.iter_file(cid) if method == "GET" else ()
        return Response(200, headers, body, size)


# ipld.cid.cid_from_text's base32 fast path (multiformats takes milliseconds per CID and a
# loader asks for every block of a bundle), memoized here with a smaller bound: the keys
# are request input.
_parse_cid_text = _remembered(cid_from_text.__wrapped__)


def _content_path(path: str, host: str) -> tuple[bytes, list[str]]:
    """The root CID and the path segments a request names; ``_HTTPError`` for anything else.

    The subdomain form ``http://<cidv1>.ipfs.<host>/<path>`` names the same
    content as ``/ipfs/<cid>/<path>``; ``/ipns/`` is served only as a record (``_ipns_record``).
    """
    labels = host.split(":")[0].split(".")
    if len(labels) >= 3 and labels[1] == "ipfs" and not path.startswith("/ipfs/"):
        path = f"/ipfs/{labels[0]}{path}"
    if path.startswith("/ipns/"):
        raise _HTTPError(501, "this gateway serves immutable /ipfs/ paths and IPNS records only; "
                         "ask /ipns/{name} with Accept: application/vnd.ipfs.ipns-record")
    if not path.startswith("/ipfs/"):
        raise _HTTPError(404, "not found: request /ipfs/{cid}[/{path}]")
    cid_text, _, subpath = path[len("/ipfs/") :].partition("/")
    segments = [unquote(s) for s in subpath.split("/") if s]
    for segment in segments:
        if segment in (".", "..") or "\x00" in segment or "/" in segment:
            raise _HTTPError(400, f"path segment {segment!r} is not allowed in an immutable path")
    try:
        root = _parse_cid_text(unquote(cid_text))
    except CIDError:
        raise _HTTPError(400, f"{unquote(cid_text)[:80]!r} is not a valid CID") from None
    return root, segments


def _wants_record(query: Mapping[str, str], headers: Mapping[str, str]) -> bool:
    """A request for an IPNS record: ``?format=ipns-record`` or ``Accept: application/vnd.ipfs.ipns-record``."""
    return query.get("format") == "ipns-record" or IPNS_RECORD_MEDIA_TYPE in headers.get("accept", "").lower()


def _car_selection(query: Mapping[str, str]) -> tuple[str, tuple[int, int | None] | None]:
    """A CAR request's ``dag-scope`` and ``entity-bytes`` range (which implies ``entity``)."""
    scope = query.get("dag-scope", "all")
    if scope not in DAG_SCOPES:
        raise _HTTPError(400, f"dag-scope must be one of {', '.join(DAG_SCOPES)}, not {scope!r}")
    if query.get("car-version", "1") != "1":
        raise _HTTPError(400, "only CAR version 1 is served (car-version=1)")
    order = query.get("car-order")
    if order is not None and order not in _CAR_SERVED["order"]:
        raise _HTTPError(400, f"car-order={order[:40]!r} is not served: this gateway's CARs are depth first "
                              "(car-order=dfs; unk accepts them too)")
    dups = query.get("car-dups")
    if dups is not None and dups not in _CAR_SERVED["dups"]:
        raise _HTTPError(400, f"car-dups={dups[:40]!r} is not served: this gateway's CARs carry each block "
                              "once (car-dups=n)")
    if "entity-bytes" not in query:
        return scope, None
    try:
        return "entity", parse_entity_bytes(query["entity-bytes"])
    except ValueError:
        raise _HTTPError(
            400, f"entity-bytes={query['entity-bytes']!r} is not from:to (integers, to may be *)"
        ) from None


def _common_headers(display_path: str, roots: Sequence[bytes]) -> list[tuple[str, str]]:
    """The headers every content response carries (path, roots, caching and CORS rules)."""
    return [
        ("X-Content-Type-Options", "nosniff"),
        ("X-Ipfs-Path", _quoted(display_path)),
        ("X-Ipfs-Roots", ",".join(_name(c) for c in roots)),
        ("Vary", "Accept"),
        ("Access-Control-Allow-Origin", "*"),
        ("Access-Control-Expose-Headers", "Content-Length, Etag, X-Ipfs-Path, X-Ipfs-Roots"),
    ]


# A CAR parameter of the Accept header and the query parameter that overrides it (trustless gateway
# specification, "car-version", "car-order", "car-dups": the URL's value takes precedence).
_CAR_QUERY = {"version": "car-version", "order": "car-order", "dups": "car-dups"}
# The values this gateway's CARs satisfy (specs/gateway.md 3.4): CARv1, depth first, each block once.
# `order=unk` asks for no particular order, so a depth-first CAR answers it (its Content-Type says dfs).
_CAR_SERVED = {"version": ("1",), "order": ("dfs", "unk"), "dups": ("n",)}


def _negotiate(query: Mapping[str, str], accept: str | None) -> str | None:
    """``"raw"``, ``"car"`` or ``None`` (deserialized); the ``format`` parameter wins over ``Accept``.

    Among the ``Accept`` entries for a raw block or a CAR with a ``q`` above 0, the highest ``q``
    wins (ties to the first listed); a CAR entry counts only when its ``version``, ``order`` and
    ``dups`` (each overridden by the URL's ``car-*`` parameter when given) are values served here.
    When every CAR entry asked for something else and nothing else matched: 406.
    """
    fmt = query.get("format")
    if fmt is not None:
        if fmt in ("raw", "car"):
            return fmt
        raise _HTTPError(
            400,
            f"format={fmt[:40]!r} is not served here: use format=raw or format=car, or no format for file bytes",
        )
    if not accept:
        return None
    best: str | None = None
    best_q = 0.0
    refused_car = False
    for media, q, params in _accept_entries(accept):
        if q <= 0:
            continue
        if media == RAW_MEDIA_TYPE:
            candidate = "raw"
        elif media == CAR_MEDIA_TYPE:
            wanted = {key: query.get(name, params.get(key)) for key, name in _CAR_QUERY.items()}
            if any(value is not None and value not in _CAR_SERVED[key] for key, value in wanted.items()):
                refused_car = True
                continue
            candidate = "car"
        else:
            continue
        if q > best_q:
            best, best_q = candidate, q
    if best is None and refused_car:
        raise _HTTPError(
            406, "only application/vnd.ipld.car; version=1; order=dfs; dups=n is served (order=unk is answered "
                 "depth first)"
        )
    return best


def _accept_entries(accept: str) -> Iterator[tuple[str, float, dict[str, str]]]:
    """Each entry of an ``Accept`` header: its media type (lower case), ``q`` (1 by default, 0 when
    unreadable) and its other parameters (names lower case, values unquoted)."""
    for part in accept.split(","):
        media, *raw_params = (p.strip() for p in part.split(";"))
        q = 1.0
        params: dict[str, str] = {}
        for param in raw_params:
            key, _, value = param.partition("=")
            key, value = key.strip().lower(), value.strip().strip('"')
            if key == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
            else:
                params[key] = value
        yield media.lower(), q, params


def _content_location(url: SplitResult, fmt: str, query: Mapping[str, str], accept: str | None) -> str | None:
    """Where this response lives when the URL alone does not name it (path gateway specification,
    "Content-Location"; trustless gateway specification, "car-version", "car-order", "car-dups"):
    the request's path and query with ``format`` and, for a CAR, the CAR parameters served, set.

    Returned when the format came from ``Accept`` (no ``format`` in the URL), or for a CAR when the
    URL's ``car-*`` parameters and ``Accept``'s CAR parameters were both given; else ``None``.
    """
    if "format" in query:
        if fmt != "car" or not query.keys() & set(_CAR_QUERY.values()):
            return None
        if not any(media == CAR_MEDIA_TYPE and params.keys() & _CAR_QUERY.keys()
                   for media, _q, params in _accept_entries(accept or "")):
            return None
    served = {"format": fmt}
    if fmt == "car":
        served.update({"car-version": "1", "car-order": "dfs", "car-dups": "n"})
    pairs = [(k, v) for k, v in parse_qsl(url.query, keep_blank_values=True) if k not in served]
    return url.path + "?" + urlencode([*pairs, *served.items()], quote_via=quote)


def _etag_matches(if_none_match: str | None, etag: str) -> bool:
    if not if_none_match:
        return False
    if if_none_match.strip() == "*":
        return True
    tags = [t.strip().removeprefix("W/") for t in if_none_match.split(",")]
    return etag in tags


def error_response(status: int, message: str, extra: Sequence[tuple[str, str]] = ()) -> Response:
    """A plain-text error answer; its message passes the one output redaction (``bundlekit._redact``), so a
    credential in a requested path, name or query is never sent back. (The routing API answers with it too.)"""
    body = (redact(message) + "\n").encode("utf-8")
    headers = [
        ("Content-Type", "text/plain; charset=utf-8"),
        ("X-Content-Type-Options", "nosniff"),
        ("Cache-Control", "no-store"),
        ("Access-Control-Allow-Origin", "*"),
        *extra,
    ]
    return Response(status, headers, [body], len(body))


_error = error_response


def _listing_html(url_path: str, entries: Sequence[tuple[str, bytes]]) -> str:
    title = html.escape(unquote(url_path))
    rows = "".join(
        f'<li><a href="{quote(name)}">{html.escape(name)}</a> <code>{cid_to_str(cid)}</code></li>\n'
        for name, cid in entries
    )
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        f"<title>{title}</title></head>\n<body><h1>Index of {title}</h1>\n<ul>\n{rows}</ul>\n</body></html>\n"
    )
