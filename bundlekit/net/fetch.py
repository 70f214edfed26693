"""Trustless retrieval: bundle URIs, gateways, and a verifying block getter.

Nothing a gateway sends is trusted. Blocks are hashed against the CID they
were asked for (``check_block``); a CAR response is parsed as it arrives
(``net.stream.ChunkReader``) and each block is verified the same way before
anyone sees it.

Retrieval order for a CID (see ``specs/bundle.md``, "Retrieval"); the loader
first reads the root and the manifest block by block, then asks for the
``memory/`` directory as one CAR:

1. the local block store, when the caller enables it and it holds the CID;
2. one ``GET /ipfs/{cid}?format=car&dag-scope=all`` request
   (``Accept: application/vnd.ipld.car``) per gateway, in order, until one CAR
   streams to its end; a truncated or malformed CAR counts as a failure of that
   gateway, but the blocks verified before the failure are kept.
   ``prefetch_car`` reads it to the end and caches every block;
   ``stream_car`` opens it and leaves it open: ``get`` pulls blocks from it
   as the loader asks for them (``net.stream.CarPull``, bounded memory; the
   loader writes files while the response is still coming);
3. ``get``: for every block still missing, ``GET /ipfs/{cid}?format=raw``
   (``Accept: application/vnd.ipld.raw``) on each gateway in order;
   ``get_many`` fetches a batch of them with ``HttpOptions``-bounded threads.

Every request goes through the one retry loop of ``bundlekit.net.http`` with
the caller's ``HttpOptions``: timeouts, retries of 408, 429, 5xx and
connection errors, ``Retry-After``. Any other status means "this gateway does
not have it" and the next gateway is tried. A gateway that kept failing
(every attempt retryable and failed) is tried last for the rest of the load,
so a dead gateway costs its retries once, not once per block.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from hashlib import sha256
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Literal, cast

from bundlekit._closing import Closing
from bundlekit._lazy import lazy_module
from bundlekit.car.format import CAR_MEDIA_TYPE
from bundlekit.car.reader import read_car
from bundlekit.errors import BlockMismatch, CARError, CIDError, MissingBlock, UnsupportedBlock, UsageError
from bundlekit.ipld.block import MAX_BLOCK_SIZE, RAW_MEDIA_TYPE, check_block
from bundlekit.ipld.cid import DAG_PB, RAW, SHA2_256, as_cidv1, cid_from_text, cid_to_str, parse_cid
from bundlekit.net.http import (
    Failure,
    HttpOptions,
    HttpRequest,
    check_http_url,
    open_client,
    read_capped,
    send,
    stream,
)
from bundlekit.net.stream import DRAIN_BYTES, CarPull, ChunkReader

if TYPE_CHECKING:
    import httpx

    from bundlekit.blockstore import BlockStore
else:  # imported at the first request (DEVELOPERS.md, "Lazy imports")
    httpx = lazy_module("httpx")

__all__ = [
    "GATEWAYS_ENV",
    "BundleURI",
    "GatewayFetcher",
    "RemoteGateway",
    "check_block",
    "default_gateways",
    "gateway_order",
    "http_get",
    "parse_gateway",
    "parse_uri",
    "recordable_url",
]

GATEWAYS_ENV = "BUNDLEKIT_GATEWAYS"
# Blocks fetched at once by ``get_many`` (one connection each, from httpx's pool).
FETCH_CONCURRENCY = 8
_CAR_QUERY = {"format": "car", "dag-scope": "all"}
# The order the loader reads in (trustless gateway spec, "CAR order": a hint; any order still loads).
_STREAM_ACCEPT = f"{CAR_MEDIA_TYPE}; order=dfs"
# Written into the URL: httpx merging a params dict costs ~20 us a request, and the per-block path makes thousands.
_RAW_QUERY = "?format=raw"
# The CIDv1 prefixes of nearly every block: version 1, dag-pb or raw, sha2-256 of 32 bytes.
_USUAL_PREFIXES = frozenset(bytes((1, codec, SHA2_256, 32)) for codec in (DAG_PB, RAW))

_SUBDOMAIN = re.compile(r"^(?P<cid>[a-z0-9]+)\.ipfs\.(?P<host>.+)$", re.IGNORECASE)


@dataclass(frozen=True)
class RemoteGateway:
    """A trustless gateway: ``base`` is ``scheme://host[:port]`` (plus any path prefix).

    ``subdomain`` gateways address content as ``scheme://{cidv1}.ipfs.{host}/``;
    path gateways as ``{base}/ipfs/{cid}``.
    """

    base: str
    subdomain: bool = False

    def url(self, cid: bytes) -> str:
        """The URL of ``cid`` on this gateway."""
        if self.subdomain:
            scheme, host = self.base.split("://", 1)
            return f"{scheme}://{cid_to_str(as_cidv1(cid))}.ipfs.{host}/"
        return f"{self.base}/ipfs/{cid_to_str(cid)}"


@dataclass(frozen=True)
class BundleURI:
    """Where a bundle comes from.

    ``kind`` is ``"ipfs"`` (``ipfs://CID[/manifest.json]``), ``"gateway"`` (a
    path or subdomain gateway URL: ``gateway`` is set), ``"car"`` (a local CAR
    file: ``car`` is set) or ``"https"`` (a plain manifest URL that is not
    content-addressed: ``url`` is set, ``root`` is None).
    """

    kind: Literal["ipfs", "gateway", "car", "https"]
    root: bytes | None = None
    gateway: RemoteGateway | None = None
    car: Path | None = None
    url: str | None = None


def _root_path_ok(path: str, uri: str) -> None:
    path = path.strip("/")
    if path not in ("", "manifest.json"):
        raise UsageError(
            f"{uri[:200]!r} points inside a bundle ({path[:80]!r}); give the bundle root or its manifest.json"
        )


def _cid_or_usage(text: str, uri: str) -> bytes:
    try:
        return cid_from_text(text)
    except CIDError as exc:
        raise UsageError(f"{uri[:200]!r} does not hold a valid CID ({text[:80]!r}); check the URI") from exc


def _url_or_usage(text: str, what: str) -> httpx.URL:
    """``text`` as a URL with a host, or ``UsageError`` (a bad port, an unclosed ``[``: ``check_http_url``)."""
    url = httpx.URL(check_http_url(text, what=what).strip())
    if not url.host:
        raise UsageError(f"{what} {text[:200]!r} has no host; check it")
    return url


def recordable_url(url: str) -> str:
    """``url`` as it may be written into a file (a memory's ``source``, a conflict sibling's origin): without
    its user name and password, query and fragment, which may carry a credential (``?token=``) that a
    memory would keep and a bundle publish."""
    try:
        return str(httpx.URL(url).copy_with(userinfo=b"", query=None, fragment=None))
    except (httpx.InvalidURL, ValueError, TypeError):
        return url.split("://", 1)[0] + "://"


def parse_uri(uri: str) -> BundleURI:
    """Classify a bundle URI. Raises ``UsageError`` for anything unrecognised.

    Accepted: ``ipfs://CID``, ``ipfs://CID/manifest.json``, ``/ipfs/CID[/manifest.json]``,
    ``http(s)://host/ipfs/CID[/manifest.json]``, ``https://CID.ipfs.host[/manifest.json]``,
    a path to an existing local ``.car`` file, a bare CID, and any other
    ``http(s)://.../manifest.json`` (the unverified form).
    """
    text = uri.strip()
    if text.startswith("ipfs://"):
        rest = text[len("ipfs://"):]
        cid_text, _, path = rest.partition("/")
        _root_path_ok(path, text)
        return BundleURI("ipfs", root=_cid_or_usage(cid_text, text))
    if text.startswith("/ipfs/"):
        cid_text, _, path = text[len("/ipfs/"):].partition("/")
        _root_path_ok(path, text)
        return BundleURI("ipfs", root=_cid_or_usage(cid_text, text))
    if text.startswith(("http://", "https://")):
        url = _url_or_usage(text, "URI")
        host = url.host
        port = f":{url.port}" if url.port else ""
        m = _SUBDOMAIN.match(host)
        if m:
            _root_path_ok(url.path, text)
            root = _cid_or_usage(m["cid"], text)
            return BundleURI("gateway", root=root, gateway=RemoteGateway(f"{url.scheme}://{m['host']}{port}", True))
        path = url.path
        if "/ipfs/" in path:
            prefix, _, rest = path.partition("/ipfs/")
            cid_text, _, inner = rest.partition("/")
            _root_path_ok(inner, text)
            root = _cid_or_usage(cid_text, text)
            return BundleURI("gateway", root=root, gateway=RemoteGateway(f"{url.scheme}://{host}{port}{prefix}"))
        if not path.endswith(".json"):
            raise UsageError(
                f"{text[:200]!r} is neither a gateway URL (/ipfs/CID) nor a manifest .json URL; check the URI"
            )
        return BundleURI("https", url=text)
    if text.lower().endswith(".car") or os.path.isfile(text):
        path_obj = Path(text)
        if not path_obj.is_file():
            raise UsageError(f"CAR file {text!r} does not exist; check the path")
        return BundleURI("car", car=path_obj)
    try:
        return BundleURI("ipfs", root=parse_cid(text))
    except CIDError as exc:
        raise UsageError(
            f"cannot tell what {text[:200]!r} is: expected ipfs://CID, a gateway URL, a .car file or a manifest URL"
        ) from exc


def parse_gateway(text: str) -> RemoteGateway:
    """A ``--gateway`` value: ``http(s)://host[:port][/prefix]`` (a path gateway).

    A value containing ``{cid}.ipfs.`` style hosts is not accepted here: give
    the parent host and the gateway is addressed by path. Raises ``UsageError``
    (also for a value httpx cannot parse, e.g. ``http://[::1``).
    """
    text = text.strip().rstrip("/")
    if not text.startswith(("http://", "https://")):
        raise UsageError(f"gateway {text[:200]!r} must be an http:// or https:// URL")
    text = text.removesuffix("/ipfs")
    _url_or_usage(text, "gateway")
    return RemoteGateway(text)


def default_gateways(env: dict[str, str] | None = None) -> list[RemoteGateway]:
    """Gateways from ``$BUNDLEKIT_GATEWAYS`` (comma- or space-separated URLs), in order."""
    source = os.environ if env is None else env
    value = source.get(GATEWAYS_ENV, "")
    return [parse_gateway(item) for item in re.split(r"[,\s]+", value) if item]


def gateway_order(
    target: BundleURI, gateways: Sequence[RemoteGateway], use_store: bool | None = None
) -> tuple[list[RemoteGateway], bool]:
    """Where the blocks of a content-addressed ``target`` are asked for: ``(gateways in order, use the store)``.

    The URI's own gateway comes first, then ``gateways``. For ``ipfs://`` with no
    gateway given, the local store is asked first (unless ``use_store`` says
    otherwise), then ``$BUNDLEKIT_GATEWAYS``. Raises ``UsageError`` when that
    leaves nothing to ask.
    """
    gws = list(gateways)
    if target.gateway is not None:
        gws = [target.gateway, *[g for g in gws if g != target.gateway]]
    if use_store is None:
        use_store = target.kind == "ipfs" and not gws
    if target.kind == "ipfs" and not gws:
        gws = default_gateways()
    if not gws and not use_store:
        raise UsageError("no gateway to load from: pass --gateway URL or set $BUNDLEKIT_GATEWAYS")
    return gws, use_store


def http_get(
    client: httpx.Client,
    url: str,
    *,
    http: HttpOptions,
    params: dict[str, str] | None = None,
    headers: dict[str, str] | None = None,
    max_bytes: int = MAX_BLOCK_SIZE,
) -> bytes | Failure:
    """GET ``url`` through the one retry loop; the body, or the ``Failure`` that ended it.

    A ``Failure`` means the server does not have it (any final status), kept
    failing, or sent more than ``max_bytes`` (``too_large``: the body is
    streamed and cut there, so a hostile server cannot make the loader buffer
    more than it expects). Never raises for HTTP trouble: the caller decides
    what "not here" means.
    """
    return send(client, HttpRequest("GET", url, params=params, headers=headers), http,
                read=lambda response: read_capped(response, max_bytes))


class GatewayFetcher(Closing):
    """A verifying block getter over a local store and a list of gateways.

    Use ``prefetch_car(cid)`` for a whole DAG, and ``get`` as the
    ``Callable[[bytes], bytes]`` block getter for ``UnixFSReader``. ``get``
    raises ``MissingBlock`` when no source has the block and ``BlockMismatch``
    when every source that answered sent wrong bytes. Thread-safe: files are
    read concurrently. ``notes`` records, for the result, which sources failed
    and why. ``http`` carries the client, timeouts, retry policy and limits.
    ``keep`` (a block sink's ``put``) is handed every verified block a gateway
    sends, one by one or taken from a streaming CAR (never one from the store).
    """

    def __init__(
        self,
        gateways: Sequence[RemoteGateway],
        *,
        store: BlockStore | None = None,
        http: HttpOptions | None = None,
        keep: Callable[[bytes, bytes], None] | None = None,
    ) -> None:
        self.gateways = list(gateways)
        self.store = store
        self.keep = keep
        self.http = http or HttpOptions()
        self.client, self._own_client = open_client(self.http)
        self.cache: dict[bytes, bytes] = {}
        self.notes: list[str] = []
        self._lock = threading.Lock()
        self._failing: set[RemoteGateway] = set()
        self.car_complete = False
        self.root_in_store = False
        self._pull: CarPull | None = None

    def finish_stream(self) -> None:
        """After a load that went well: read a CAR still open to its end if that is near, and close it.

        The connection then goes back to httpx's pool for the next load.
        """
        if self._pull is not None:
            self._pull.close(drain=DRAIN_BYTES)

    def close(self) -> None:
        """Close a CAR still open, then the HTTP client if this fetcher created it."""
        if self._pull is not None:
            self._pull.close()
        if self._own_client:
            self.client.close()

    def _note(self, text: str) -> None:
        with self._lock:
            self.notes.append(text)

    def _gave_up(self, gw: RemoteGateway, what: str, failure: Failure) -> None:
        """Note a failed request; a gateway that failed retryably to the end is tried last from now on."""
        with self._lock:
            self.notes.append(f"{gw.base}: {what}: {failure.reason}")
            if failure.retryable:
                self._failing.add(gw)

    def _ordered(self) -> list[RemoteGateway]:
        """The gateways in order, those that kept failing moved to the end."""
        with self._lock:
            failing = set(self._failing)
        return [g for g in self.gateways if g not in failing] + [g for g in self.gateways if g in failing]

    def prefetch_car(self, root: bytes) -> bool:
        """Fetch the whole DAG under ``root`` as one CAR from the first gateway that streams it fully.

        Returns True when a CAR was read to its end (blocks may still be
        missing if the gateway sent an incomplete DAG: ``get`` fills them in).
        Skipped when the local store already holds ``root``.
        """
        if self.store is not None and self.store.has(root):
            self.root_in_store = True
            return False
        return self._car_from_gateways(root, self._cache_block)

    def stream_car(self, root: bytes, *, window: int | None = None) -> bool:
        """Open the CAR of ``root`` on the first gateway that answers; ``get`` then pulls blocks from it.

        At most ``window`` bytes (``net.stream.WINDOW_BYTES``) of verified
        blocks that arrived before they were asked for are kept; a block the
        stream cannot bring is fetched on its own. ``close`` closes the
        response. Returns True when a CAR is open. Skipped when the local
        store holds ``root``.
        """
        if self.store is not None and self.store.has(root):
            self.root_in_store = True
            return False
        for gw in self._ordered():
            request = HttpRequest("GET", gw.url(root), params=_CAR_QUERY, headers={"Accept": _STREAM_ACCEPT})
            with contextlib.ExitStack() as stack:
                opened = stack.enter_context(stream(self.client, request, self.http))
                if isinstance(opened, Failure):
                    self._gave_up(gw, f"CAR request for {cid_to_str(root)}", opened)
                    continue
                try:
                    _roots, blocks = read_car(
                        cast(BinaryIO, ChunkReader(opened.iter_bytes(), self.http.max_car_bytes)), verify=False
                    )
                except (CARError, CIDError, UnsupportedBlock) as exc:
                    self._note(f"{gw.base}: CAR for {cid_to_str(root)} is truncated or malformed ({exc})")
                    continue
                # The CAR stays open past this block: the pull closes it (and the answer) when done.
                self._pull = self._pulling(gw, root, blocks, stack.pop_all().close, window)
                return True
        return False

    def _pulling(
        self, gw: RemoteGateway, root: bytes, blocks: Iterator[tuple[bytes, bytes]], close: Callable[[], None],
        window: int | None,
    ) -> CarPull:
        """A ``CarPull`` over ``gw``'s open CAR of ``root`` (``close`` closes it): blocks verified, the end noted."""

        def ended(error: Exception | None) -> None:
            if error is None:
                self.car_complete = True
            else:
                self._note(f"{gw.base}: CAR for {cid_to_str(root)} is truncated or malformed ({error})")

        verified = self._verified

        def accept(cid: bytes, data: bytes) -> bool:
            # The usual block (sha2-256 CIDv1, dag-pb or raw, within the limit): the one hash
            # check_block makes for it, inline; anything else, or a mismatch, goes to _verified.
            if len(cid) == 36 and cid[:4] in _USUAL_PREFIXES and len(data) <= MAX_BLOCK_SIZE \
                    and sha256(data).digest() == cid[4:]:
                return True
            return verified(cid, data, gw=gw)

        if window is None:
            return CarPull(blocks, accept, close, ended)
        return CarPull(blocks, accept, close, ended, window)

    @property
    def streaming(self) -> bool:
        """True when a CAR opened by ``stream_car`` may still bring blocks, or brought them all."""
        return self._pull is not None

    def _car_from_gateways(self, root: bytes, sink: Callable[[bytes, bytes], None]) -> bool:
        for gw in self._ordered():
            if self._car_from(gw, root, sink):
                self.car_complete = True
                return True
        return False

    def _car_from(self, gw: RemoteGateway, root: bytes, sink: Callable[[bytes, bytes], None]) -> bool:
        """One gateway's CAR of ``root``, each verified block given to ``sink``; False if it failed."""
        try:
            request = HttpRequest("GET", gw.url(root), params=_CAR_QUERY, headers={"Accept": CAR_MEDIA_TYPE})
            outcome = send(self.client, request, self.http, read=lambda response: self._read_car(response, gw, sink))
        except (CARError, CIDError, UnsupportedBlock) as exc:
            # Truncated or malformed: a failure, but keep what verified so far.
            self._note(f"{gw.base}: CAR for {cid_to_str(root)} is truncated or malformed ({exc})")
            return False
        if isinstance(outcome, Failure):
            self._gave_up(gw, f"CAR request for {cid_to_str(root)}", outcome)
            return False
        return True

    def _read_car(self, response: httpx.Response, gw: RemoteGateway, sink: Callable[[bytes, bytes], None]) -> bool:
        """Parse a CAR answer as it arrives; each block is verified, then given to ``sink``.

        Raises ``CARError`` past ``max_car_bytes`` and for a malformed CAR.
        """
        body = ChunkReader(response.iter_bytes(), self.http.max_car_bytes)
        _roots, blocks = read_car(cast(BinaryIO, body), verify=False)
        for cid, data in blocks:
            if self._verified(cid, data, gw=gw):
                sink(cid, data)
        return True

    def _verified(self, cid: bytes, data: bytes, *, gw: RemoteGateway) -> bool:
        """True for a CAR block that matches its CID; other blocks are ignored, bad ones noted."""
        try:
            check_block(cid, data)
        except UnsupportedBlock:
            return False
        except BlockMismatch:
            self._note(f"{gw.base}: sent block {cid_to_str(cid)} with wrong content")
            return False
        return True

    def _cache_block(self, cid: bytes, data: bytes) -> None:
        self.cache[cid] = data

    def _from_store(self, cid: bytes) -> bytes | None:
        """The block from the local store, if it is there (already hashed by ``BlockStore.get``). A copy that does
        not hash to its CID (a damaged disk, a forged pack index) is removed by the store and counts as absent: the
        gateways' copy is fetched and verified instead of the load failing on what the next one would repair."""
        if self.store is None:
            return None
        try:
            data = self.store.get(cid)
        except MissingBlock:
            return None
        except BlockMismatch:
            self._note(f"the local store's copy of block {cid_to_str(cid)} was damaged and has been removed; "
                       "fetched from the gateways")
            return None
        # Only the trustless block-size limit is left, and check_block raises the same
        # UnsupportedBlock for it.
        if len(data) > MAX_BLOCK_SIZE:
            check_block(cid, data)
        return data

    def get(self, cid: bytes) -> bytes:
        """The verified bytes of block ``cid``. Raises ``MissingBlock`` or ``BlockMismatch``.

        A block taken from a streaming CAR is handed over, not cached (the
        window's bound is the point); every other block is cached.
        """
        data = self.cache.get(cid)
        if data is not None:
            return data
        if self._pull is not None:
            data = self._pull.take(cid)
            if data is not None:
                if self.keep is not None:
                    self.keep(cid, data)
                return data
        return self.get_alone(cid)

    def get_alone(self, cid: bytes) -> bytes:
        """Like ``get``, without reading on through an open CAR: the cache, the store, then one request.

        For a small block the loader needs before the CAR would bring it (a
        bundle's ``signature.json`` sorts after ``memory/``).
        """
        data = self.cache.get(cid)
        if data is not None:
            return data
        data = self._from_store(cid)
        if data is None:
            data = self._from_gateways(cid)
            if self.keep is not None:
                self.keep(cid, data)
        self.cache[cid] = data
        return data

    def get_many(self, cids: Iterable[bytes], concurrency: int = FETCH_CONCURRENCY) -> dict[bytes, Exception]:
        """Fetch the blocks not yet cached, ``concurrency`` at a time; what each missing or bad one raised.

        The blocks land in the cache (``get`` then returns them at once);
        ``MissingBlock`` / ``BlockMismatch`` are returned per CID, not raised.
        """
        wanted = list(dict.fromkeys(c for c in cids if c not in self.cache))
        failed: dict[bytes, Exception] = {}

        def one(cid: bytes) -> None:
            try:
                self.get(cid)
            except (MissingBlock, BlockMismatch) as exc:
                failed[cid] = exc

        if len(wanted) <= 1 or concurrency <= 1:
            for cid in wanted:
                one(cid)
        else:
            with ThreadPoolExecutor(max_workers=min(concurrency, len(wanted))) as pool:
                list(pool.map(one, wanted))
        return failed

    def _from_gateways(self, cid: bytes) -> bytes:
        """The block from the first gateway that sends bytes matching ``cid``."""
        mismatched: list[str] = []
        failures: list[str] = []
        for gw in self._ordered():
            got = http_get(self.client, gw.url(cid) + _RAW_QUERY, http=self.http,
                           headers={"Accept": RAW_MEDIA_TYPE})
            if isinstance(got, Failure):
                self._gave_up(gw, f"block {cid_to_str(cid)}", got)
                failures.append(f"{gw.base}: {got.reason}")
                continue
            try:
                check_block(cid, got)
            except BlockMismatch:
                mismatched.append(gw.base)
                self._note(f"{gw.base}: sent block {cid_to_str(cid)} with wrong content")
                continue
            return got
        if mismatched:
            raise BlockMismatch(
                f"block {cid_to_str(cid)} does not match its CID on {', '.join(mismatched)}; "
                "the gateway altered it: try another gateway"
            )
        why = f" ({'; '.join(failures)})" if failures else ""
        raise MissingBlock(f"block {cid_to_str(cid)} is not available from any source{why}")
