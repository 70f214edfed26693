"""The team hub's push API: the calls of kubo's RPC API the ``kubo`` pinner makes, served by ``bundlekit serve``.

A team syncs through one ``bundlekit serve``: writers push their bundles into its store with
the same calls a kubo node answers, so ``--pinner kubo`` with ``BUNDLEKIT_KUBO_URL`` naming the
hub works against the hub and against a kubo node (or IPFS Cluster's kubo proxy) alike. Mounted
at ``/api/v0/`` only when the hub has a token (``$BUNDLEKIT_SERVE_TOKEN``); without one the
paths are absent (the gateway's own answer: ``404`` for ``GET``, ``405`` for ``POST``).

What kubo answers (ipfs/kubo at commit 867cdc5d, ``core/commands/dag/dag.go`` and ``import.go``,
``core/commands/pin/pin.go``, ``core/commands/id.go``, ``core/commands/cmdutils/utils.go``,
``core/corehttp/commands.go``, ``config/api.go``; ipfs/go-ipfs-cmds at commit fce340ca,
``http/handler.go``, ``http/responseemitter.go``, ``error.go``), and so what this answers:

* **Authorization** (kubo's ``API.Authorizations``, ``withAuthSecrets``, checked before anything
  else): the request's ``Authorization`` must be ``Bearer <token>``, else ``403`` with a
  ``text/plain`` reason (kubo: ``Kubo RPC Access Denied: ...``). Compared in constant time.
* **Methods** (go-ipfs-cmds ``ServeHTTP``): ``POST`` only; anything else ``405``
  ``405 - Method Not Allowed`` with ``Allow: POST`` (``OPTIONS`` keeps the gateway's CORS preflight
  answer, which allows no ``POST``: a page elsewhere cannot push); a request naming an ``Origin`` or a
  ``Referer`` is ``403`` ``403 - Forbidden`` (go-ipfs-cmds ``allowOrigin``/``allowReferer``, commit 4d42df5f).
  An unknown command is ``404`` ``404 page not found``.
* **A command's refusal** (go-ipfs-cmds ``sendErr``): ``500`` with
  ``{"Message": ..., "Code": 0, "Type": "error"}`` (``application/json``), which the ``kubo`` pinner
  takes as a refusal, never retried.
* ``dag/import`` (``multipart/form-data``, every part a CAR; ``pin-roots`` default true, ``stats``):
  each block verified against its CID before it is kept (``BlockStore.import_pinning_roots``);
  then one NDJSON line per root, ``{"Root": {"Cid": {"/": "<cid>"}, "PinErrorMsg": ""}}``, a root
  whose DAG is incomplete pinned not and its reason in ``PinErrorMsg``; with ``stats``, a last line
  ``{"Stats": {"BlockCount": N, "BlockBytesCount": M}}``. Bounds: the body (``max_body`` bytes,
  read into a temp file: ``413`` past it), blocks per import (``max_blocks``), the store's size
  (``max_store_bytes``: the body is refused when the store's blocks plus the bodies being imported
  could pass it). A malformed CAR or a block that does not verify is a command refusal.
* ``pin/add?arg=<cid>&name=<name>``: pins a DAG already complete here (a hub never fetches from
  the network; kubo offline fails the same way), ``{"Pins": ["<cid>"]}``; a name over 255 bytes
  is refused (kubo ``ValidatePinName``).
* ``pin/rm?arg=<cid>``: the pin removed (``{"Pins": ["<cid>"]}``; its blocks go at the next
  ``gc``), one not pinned refused ``not pinned or pinned indirectly`` (boxo ``pin.ErrNotPinned``):
  ``bundlekit unpin`` retires a team's old releases at the hub.
* ``pin/ls[?arg=<cid>][&type=recursive|all|direct|indirect][&names=true]``: ``{"Keys": {"<cid>":
  {"Type": "recursive", "Name": "<name>"}}}``; every pin here is recursive (``indirect``/``direct``
  list none); an ``arg`` not pinned is the refusal ``path '<arg>' is not pinned``.
* ``routing/put?arg=/ipns/<name>`` (``core/commands/routing.go`` ``putValueRoutingCmd``, the ``kubo``
  pinner's router; mounted with a record keeper): the file kept as the routing API keeps a ``PUT``
  (verified, compare-and-swap); ``{"Extra": "", "ID": <name>, "Responses": null, "Type": 5}``; a
  refused record is a command refusal quoting the reason.
* ``id``: ``{"ID", "PublicKey", "Addresses", "AgentVersion", "Protocols"}``: a hub has no libp2p
  identity and listens on no multiaddr, so ``ID`` and ``PublicKey`` are empty and ``Addresses``
  is ``[]`` (the ``kubo`` pinner then offers no origins to a Pinning Service API).
* ``version``: ``{"Version": ..., "Commit": "", "Repo": "", "System": "", "Golang": ""}``.

Nothing here raises to the server; every message passes the one redaction.
"""

from __future__ import annotations

import contextlib
import hmac
import io
import itertools
import json
import logging
import threading
from importlib.metadata import PackageNotFoundError, version
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, BinaryIO, Final
from urllib.parse import parse_qs, urlsplit

from bundlekit._redact import redact
from bundlekit.blockstore import BlockStore
from bundlekit.errors import (
    BundlekitError,
    CARError,
    CodecError,
    ImportLimitError,
    ImportStopped,
    MissingBlock,
    UsageError,
    VerificationError,
)
from bundlekit.gateway.respond import Response
from bundlekit.gateway.bodies import SpooledBodyApp
from bundlekit.ipld.cid import as_cidv1, cid_from_text, cid_to_str

__all__ = ["MAX_BLOCKS", "MAX_PUSH_BODY", "MAX_STORE_BYTES", "MOUNT", "KuboAPI", "PushLimits"]

logger = logging.getLogger("bundlekit.hub")

MOUNT: Final = "/api/v0/"
#: Bytes of one pushed body (a bundle's CAR in its multipart form), read into a temp file.
MAX_PUSH_BODY: Final = 1024 * 1024 * 1024
#: Blocks one import takes.
MAX_BLOCKS: Final = 1_000_000
#: Bytes of blocks the hub's store may hold before a push is refused.
MAX_STORE_BYTES: Final = 20 * 1024 * 1024 * 1024
#: kubo ``cmdutils.MaxPinNameBytes``.
MAX_PIN_NAME_BYTES: Final = 255
_MAX_PARTS: Final = 64
_MAX_RECORD_READ: Final = 64 * 1024
_MAX_PART_HEAD: Final = 16 * 1024
_SCAN: Final = 1024 * 1024
_DISK_BLOCK: Final = 4096  # a file system block (ext4's and xfs's default): the least a non-empty file takes
_DENIED: Final = ("Access denied: this hub's push API needs its token as 'Authorization: Bearer <token>' "
                  "($BUNDLEKIT_KUBO_TOKEN for the kubo pinner; the hub's $BUNDLEKIT_SERVE_TOKEN)")
_JSON: Final = ("Content-Type", "application/json")


@dataclass(frozen=True)
class PushLimits:
    """The bounds of a push: one body's bytes, one import's blocks, the store's block bytes."""

    max_body: int = MAX_PUSH_BODY
    max_blocks: int = MAX_BLOCKS
    max_store_bytes: int = MAX_STORE_BYTES


class _Refused(Exception):
    """A command's refusal: answered 500 with go-ipfs-cmds' error body (``status`` for our own bounds)."""

    def __init__(self, message: str, status: int = 500) -> None:
        super().__init__(message)
        self.status = status


# Keeps an IPNS record as the routing API's PUT does: (name, record, request headers) -> its answer
# (``routing.RoutingAPI.put``; given by ``serve``, which mounts both apps).
RecordPut = Callable[[str, bytes, Mapping[str, str]], Response]


class KuboAPI:
    """Request -> ``Response`` for ``/api/v0/`` over ``store``, for the holders of ``token``; with ``records``,
    kubo's ``routing/put`` of IPNS records too (the ``kubo`` pinner's router)."""

    def __init__(self, store: BlockStore, token: str, limits: PushLimits | None = None, *,
                 records: RecordPut | None = None) -> None:
        if not token:
            raise UsageError("the push API needs a token; without one it is not mounted")
        self.store = store
        self.records = records
        self._expected = f"Bearer {token}".encode()
        self.limits = limits or PushLimits()
        self._reserved = 0  # bytes of the bodies being imported now (the store-size bound counts them)
        self._charged = 0  # disk bytes of the blocks every import charged since the server started
        self._in_flight = 0  # of those, the ones charged by the imports under way
        self._lock = threading.Lock()
        self._stopping = threading.Event()

    def stop(self) -> None:
        """The server is stopping: each import under way ends before its next block (its batch's temp files
        removed), so it is over within the server's grace and none is cut in half at exit."""
        self._stopping.set()

    def app(self) -> SpooledBodyApp:
        """The app to mount at ``MOUNT``: its ``POST`` bodies are read into temp files."""
        return SpooledBodyApp(self.respond, self.limits.max_body, frozenset({"POST"}), admit=self.admit)

    def admit(self, method: str, target: str, headers: Mapping[str, str]) -> Response | None:
        """The answer to a request refused before its body is read (no token: 403), else None: a client
        without the token cannot make the hub spool a byte."""
        return None if self.authorized(headers) else _text(403, _DENIED)

    def respond(self, method: str, target: str, headers: Mapping[str, str], body: BinaryIO | None) -> Response:
        """Answer one request (``headers`` keys lower-case); never raises."""
        try:
            return self._respond(method, target, headers, body)
        except _Refused as exc:
            return _cmds_error(str(exc), exc.status)
        except Exception:  # a bug must not kill the server thread; the client gets kubo's error shape
            logger.exception("internal error while answering a push API request")
            return _cmds_error("internal error of the hub's push API; see the server's log")

    def authorized(self, headers: Mapping[str, str]) -> bool:
        """Whether ``Authorization`` is ``Bearer <token>`` (the scheme in any case), compared in constant time."""
        given = headers.get("authorization", "").strip()
        scheme, _, value = given.partition(" ")
        return hmac.compare_digest(f"{scheme.capitalize()} {value.strip()}".encode(), self._expected)

    def _respond(self, method: str, target: str, headers: Mapping[str, str], body: BinaryIO | None) -> Response:
        if not self.authorized(headers):
            return _text(403, _DENIED)
        if method != "POST":
            return _text(405, "405 - Method Not Allowed", [("Allow", "POST")])
        if headers.get("origin", "").strip() or headers.get("referer", "").strip():
            # go-ipfs-cmds allowOrigin/allowReferer: a request a browser page made (it names the page) is
            # refused; the hub lists no origin it trusts, so a page anywhere, even one holding the token, cannot push.
            return _text(403, "403 - Forbidden")
        parts = urlsplit(target)
        command = parts.path[len(MOUNT):].strip("/")
        query = parse_qs(parts.query, keep_blank_values=True)
        if command == "dag/import":
            return self._dag_import(headers, body, query)
        if command == "pin/add":
            return _json(self._pin_add(query))
        if command == "pin/ls":
            return _json(self._pin_ls(query))
        if command == "pin/rm":
            return _json(self._pin_rm(query))
        if command == "routing/put" and self.records is not None:
            return self._routing_put(headers, body, query)
        if command == "id":
            return _json({"ID": "", "PublicKey": "", "Addresses": [], "AgentVersion": _agent(), "Protocols": []})
        if command == "version":
            return _json({"Version": _agent().partition("/")[2], "Commit": "", "Repo": "", "System": "",
                          "Golang": ""})
        return _text(404, "404 page not found")

    # -- dag/import ------------------------------------------------------------------------------

    def _dag_import(self, headers: Mapping[str, str], body: BinaryIO | None,
                    query: Mapping[str, list[str]]) -> Response:
        if body is None:
            raise _Refused(f"the pushed body is over this hub's limit of {self.limits.max_body} bytes "
                           "(serve --max-push-bytes), or did not arrive whole", 413)
        boundary = _boundary(headers.get("content-type", ""))
        pin_roots = _flag(query, "pin-roots", default=True)
        lines: list[dict[str, Any]] = []
        blocks = size = 0
        with self._reserve(_size(body)) as admit:
            for start, end in _parts(body, boundary):
                try:
                    pushed = self.store.import_reporting(_window(body, start, end), pin_roots=pin_roots,
                                                         max_blocks=self.limits.max_blocks - blocks, admit=admit)
                except ImportStopped as exc:
                    raise _Refused(f"import stopped: {exc}; push again once the hub is back", 503) from exc
                except (CARError, VerificationError, ImportLimitError) as exc:
                    raise _Refused(f"import failed: {exc}") from exc
                blocks, size = blocks + pushed.blocks, size + pushed.bytes
                lines.extend({"Root": {"Cid": {"/": cid_to_str(r.root)}, "PinErrorMsg": r.error or ""}}
                             for r in pushed.roots)
        if _flag(query, "stats", default=False):
            lines.append({"Stats": {"BlockCount": blocks, "BlockBytesCount": size}})
        logger.info("push: kept %d blocks (%d bytes), roots %s", blocks, size,
                    ", ".join(str(line["Root"]["Cid"]["/"]) for line in lines if "Root" in line) or "none")
        payload = "".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines).encode()
        return Response(200, [_JSON, ("X-Chunked-Output", "1"), ("Cache-Control", "no-store")], [payload],
                        len(payload))

    def _routing_put(self, headers: Mapping[str, str], body: BinaryIO | None,
                     query: Mapping[str, list[str]]) -> Response:
        """kubo ``routing/put?arg=/ipns/<name>`` with the record as the file: kept as the routing API keeps a
        ``PUT`` (verified, compare-and-swap); kubo's answer, a ``Value`` query event (``Type`` 5)."""
        assert self.records is not None
        key = _one(query, "arg")
        if not key.startswith("/ipns/"):
            raise _Refused(f"the key {key[:100]!r} is not /ipns/<name>: this hub keeps IPNS records only")
        if body is None:
            raise _Refused("the record did not arrive whole", 413)
        start, end = _parts(body, _boundary(headers.get("content-type", "")))[0]
        body.seek(start)
        answer = self.records(key[len("/ipns/"):], body.read(min(end - start, _MAX_RECORD_READ)), headers)
        if answer.status != 200:
            raise _Refused(b"".join(answer.body).decode("utf-8", "replace").strip())
        return _json({"Extra": "", "ID": key[len("/ipns/"):], "Responses": None, "Type": 5})

    @contextlib.contextmanager
    def _reserve(self, size: int) -> Iterator[Callable[[int], None]]:
        """Hold ``size`` bytes of the store-size bound while a body is imported; refuse when they do not fit.

        Yields the import's ``admit``, called before each block is written: it charges the disk the block
        will take (``_disk_cost``) and refuses the block (``ImportLimitError``) once the store's bytes at the
        start plus every block any import charged since would pass the bound (a body's size says little of
        the disk its blocks take: a million 4-byte blocks fill 4 GB), and ends the import (``ImportStopped``)
        once the server is stopping."""
        with self._lock:
            used = self.store.stored_bytes()
            if used + self._reserved + size > self.limits.max_store_bytes:
                raise _Refused(f"this hub's store holds {used} bytes of blocks; {size} more would pass its limit "
                               f"of {self.limits.max_store_bytes} (serve --max-store-bytes); collect garbage "
                               "(`bundlekit store gc`) or raise the limit")
            self._reserved += size
            # The blocks other imports under way charged may not be on the disk yet (a batch is renamed
            # into place at its end): counted too, even the ones stored_bytes has just seen.
            since, base, mine = self._charged, used + self._in_flight, [0]

        def admit(block: int) -> None:
            if self._stopping.is_set():
                raise ImportStopped("the import stopped before its end: the hub is stopping")
            cost = _disk_cost(block)
            with self._lock:
                if base + self._charged - since + cost > self.limits.max_store_bytes:
                    raise ImportLimitError(f"the store's blocks would pass this hub's limit of "
                                           f"{self.limits.max_store_bytes} bytes on the disk (serve "
                                           "--max-store-bytes); collect garbage (`bundlekit store gc`) or raise "
                                           "the limit")
                self._charged += cost
                self._in_flight += cost
                mine[0] += cost

        try:
            yield admit
        finally:
            with self._lock:
                self._reserved -= size
                self._in_flight -= mine[0]

    # -- pins ------------------------------------------------------------------------------------

    def _pin_add(self, query: Mapping[str, list[str]]) -> dict[str, Any]:
        name = _one(query, "name")
        if len(name.encode()) > MAX_PIN_NAME_BYTES:
            raise _Refused(f"pin name is {len(name.encode())} bytes (max {MAX_PIN_NAME_BYTES} bytes)")
        added = []
        for arg in query.get("arg", []):
            cid = _cid_arg(arg)
            try:
                self.store.pin(cid, name or None)
            except MissingBlock as exc:
                raise _Refused(f"cannot pin {cid_to_str(cid)}: {exc}; this hub fetches nothing, push the "
                               "CAR first (dag/import)") from exc
            except (VerificationError, CodecError) as exc:  # past the walk's limits, or not valid dag-pb
                raise _Refused(f"cannot pin {cid_to_str(cid)}: {exc}") from exc
            added.append(cid_to_str(cid))
        if not added:
            raise _Refused("argument \"ipfs-path\" is required")
        return {"Pins": added}

    def _pin_rm(self, query: Mapping[str, list[str]]) -> dict[str, Any]:
        """kubo ``pin rm``: each ``arg`` unpinned (its blocks go at the next ``gc``); one not pinned is kubo's
        refusal ``not pinned or pinned indirectly`` (boxo ``pin.ErrNotPinned``), which the pinner accepts."""
        removed = []
        for arg in query.get("arg", []):
            cid = _cid_arg(arg)
            try:
                self.store.unpin(cid)
            except UsageError as exc:
                raise _Refused("not pinned or pinned indirectly") from exc
            removed.append(cid_to_str(cid))
        if not removed:
            raise _Refused("argument \"ipfs-path\" is required")
        return {"Pins": removed}

    def _pin_ls(self, query: Mapping[str, list[str]]) -> dict[str, Any]:
        kind = _one(query, "type") or "all"
        if kind not in ("direct", "indirect", "recursive", "all"):
            raise _Refused(f"invalid type '{kind}', must be one of {{direct, indirect, recursive, all}}")
        pins = {cid_to_str(cid): info for cid, info in self.store.pins().items()}
        if kind in ("direct", "indirect"):
            pins = {}
        names = _flag(query, "names", default=False) or bool(_one(query, "name"))
        args = query.get("arg", [])
        if args:
            chosen = {}
            for arg in args:
                key = cid_to_str(as_cidv1(_cid_arg(arg)))
                if key not in pins:
                    raise _Refused(f"path '{arg}' is not pinned")
                chosen[cid_to_str(_cid_arg(arg))] = pins[key]
            pins = chosen
        wanted = _one(query, "name")
        return {"Keys": {cid: {"Type": "recursive", "Name": str(info.get("name") or "") if names else ""}
                         for cid, info in pins.items() if wanted in str(info.get("name") or "")}}


# -- request pieces -------------------------------------------------------------------------------


def _one(query: Mapping[str, list[str]], key: str) -> str:
    """The first value of ``key`` in the query, or ""."""
    values = query.get(key) or [""]
    return values[0]


def _flag(query: Mapping[str, list[str]], key: str, *, default: bool) -> bool:
    """A go-ipfs-cmds boolean option: absent is ``default``; "" (``?stats``), "true", "1" are true."""
    if key not in query:
        return default
    value = _one(query, key).strip().lower()
    if value in ("", "true", "1"):
        return True
    if value in ("false", "0"):
        return False
    raise _Refused(f"invalid value for option {key!r}: {value[:40]!r} is not a boolean", 400)


def _cid_arg(arg: str) -> bytes:
    """A CID argument: a bare CID or ``/ipfs/<cid>`` (kubo ``PathOrCidPath``; no path inside a DAG here)."""
    text = arg.strip().removeprefix("/ipfs/").removeprefix("ipfs://").rstrip("/")
    try:
        return cid_from_text(text)
    except BundlekitError as exc:
        raise _Refused(f"invalid path {arg[:120]!r}: {exc}") from exc


def _boundary(content_type: str) -> bytes:
    """The boundary of a ``multipart/form-data`` body (RFC 7578); a refusal for any other content type."""
    kind, _, params = content_type.partition(";")
    if kind.strip().lower() != "multipart/form-data":
        raise _Refused("the body must be multipart/form-data with the CAR as a file part", 400)
    for param in params.split(";"):
        key, _, value = param.strip().partition("=")
        if key.strip().lower() == "boundary":
            value = value.strip().strip('"')
            if 0 < len(value) <= 70 and value.isascii() and value.isprintable():
                return value.encode()
    raise _Refused("the multipart body has no valid boundary (RFC 2046: 1 to 70 characters)", 400)


def _disk_cost(size: int) -> int:
    """The disk a block file of ``size`` bytes takes: whole file system blocks (``stored_bytes`` counts them)."""
    return -(-size // _DISK_BLOCK) * _DISK_BLOCK


def _size(body: BinaryIO) -> int:
    """Bytes in the spooled body."""
    size = body.seek(0, io.SEEK_END)
    body.seek(0)
    return size


def _parts(body: BinaryIO, boundary: bytes) -> list[tuple[int, int]]:
    """``(start, end)`` offsets of the content of each part of a multipart body in the file ``body``.

    Delimiters are found by scanning the file (``\\r\\n--boundary``, the first one also at the very
    start); each part's head (its header lines) must end within ``_MAX_PART_HEAD`` bytes; the body must
    end with the close delimiter. At most ``_MAX_PARTS`` parts.
    """
    # At most one delimiter past the parts allowed is looked for: a body of nothing but delimiters
    # (5 bytes each with a 1-byte boundary) must not become a list of millions of offsets.
    marks = list(itertools.islice(_delimiters(body, b"\r\n--" + boundary), _MAX_PARTS + 2))
    if len(marks) > _MAX_PARTS + 1:
        raise _Refused(f"the multipart body holds more than {_MAX_PARTS} parts", 400)
    if len(marks) < 2:
        raise _Refused("the multipart body is malformed: it lacks its delimiters", 400)
    found: list[tuple[int, int]] = []
    delimiter_length = len(boundary) + 4
    for begin, end in zip(marks, marks[1:], strict=False):
        body.seek(begin + delimiter_length)
        head = body.read(min(_MAX_PART_HEAD, end - begin - delimiter_length))
        if head.startswith(b"--"):
            raise _Refused("the multipart body is malformed: a part follows its close delimiter", 400)
        stop = head.find(b"\r\n\r\n")
        if stop < 0:
            raise _Refused("the multipart body is malformed: a part's header lines do not end", 400)
        found.append((begin + delimiter_length + stop + 4, end))
        if len(found) > _MAX_PARTS:
            raise _Refused(f"the multipart body holds more than {_MAX_PARTS} parts", 400)
    body.seek(marks[-1] + delimiter_length)
    if body.read(2) != b"--":
        raise _Refused("the multipart body is malformed: it does not end with its close delimiter", 400)
    return found


def _delimiters(body: BinaryIO, delimiter: bytes) -> Iterator[int]:
    """Offsets of each ``delimiter`` in ``body`` read as if it began with CRLF (the first may open the body)."""
    body.seek(0)
    carry, base = b"\r\n", -2  # base: the file offset of carry's first byte
    while True:
        chunk = body.read(_SCAN)
        window = carry + chunk
        at = window.find(delimiter)
        while at >= 0:
            yield base + at
            at = window.find(delimiter, at + 1)
        if not chunk:
            return
        keep = len(delimiter) - 1
        carry = window[-keep:]
        base += len(window) - len(carry)


def _window(body: BinaryIO, start: int, end: int) -> BinaryIO:
    """The bytes ``start`` to ``end`` of the file ``body`` as a stream of their own (a part's CAR)."""
    return io.BufferedReader(_Range(body, start, end), buffer_size=256 * 1024)  # type: ignore[return-value]


class _Range(io.RawIOBase):
    """A read-only window on a file: the bytes from ``start`` to ``end``."""

    def __init__(self, body: BinaryIO, start: int, end: int) -> None:
        self._body = body
        self._at = start
        self._end = end

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview | bytearray) -> int:  # type: ignore[override]
        want = min(len(buffer), self._end - self._at)
        if want <= 0:
            return 0
        self._body.seek(self._at)
        data = self._body.read(want)
        buffer[: len(data)] = data
        self._at += len(data)
        return len(data)


# -- answers ---------------------------------------------------------------------------------------


def _agent() -> str:
    """``bundlekit/<version>`` as installed (kubo's ``AgentVersion`` is ``kubo/<version>/``)."""
    try:
        return f"bundlekit/{version('bundlekit')}"
    except PackageNotFoundError:
        return "bundlekit/unknown"


def _json(value: Mapping[str, Any]) -> Response:
    payload = (json.dumps(value, separators=(",", ":")) + "\n").encode()
    return Response(200, [_JSON, ("Cache-Control", "no-store")], [payload], len(payload))


def _cmds_error(message: str, status: int = 500) -> Response:
    """go-ipfs-cmds' error answer: ``{"Message", "Code": 0, "Type": "error"}`` (redacted)."""
    payload = (json.dumps({"Message": redact(message), "Code": 0, "Type": "error"}) + "\n").encode()
    return Response(status, [_JSON, ("Cache-Control", "no-store")], [payload], len(payload))


def _text(status: int, message: str, extra: list[tuple[str, str]] | None = None) -> Response:
    """Go's ``http.Error``: ``text/plain``, ``nosniff``, the message and a line break."""
    payload = (redact(message) + "\n").encode()
    return Response(status, [("Content-Type", "text/plain; charset=utf-8"), ("X-Content-Type-Options", "nosniff"),
                             *(extra or [])], [payload], len(payload))
