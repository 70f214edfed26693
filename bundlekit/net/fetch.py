"""Trustless retrieval: bundle URIs, gateways, and a verifying block getter.

Nothing a gateway sends is trusted. Blocks are hashed against the CID they
were asked for (``check_block``); a CAR response is drained into a spooled
buffer, then read block by block and each block is verified the same way;
blocks nobody asked for are ignored.

Retrieval order for a CID (see ``specs/bundle.md``, "Retrieval"); the loader
first reads the root and the manifest block by block, then asks for the
``memory/`` directory as one CAR:

1. the local block store, when the caller enables it and it holds the CID;
2. ``prefetch_car``: one ``GET /ipfs/{cid}?format=car&dag-scope=all`` request
   (``Accept: application/vnd.ipld.car``) per gateway, in order, until one CAR
   streams to its end; a truncated or malformed CAR counts as a failure of that
   gateway, but the blocks verified before the failure are kept;
3. ``get``: for every block still missing, ``GET /ipfs/{cid}?format=raw``
   (``Accept: application/vnd.ipld.raw``) on each gateway in order.

Every request goes through the one retry loop of ``bundlekit.net.http`` with
the caller's ``HttpOptions``: timeouts, retries of 408, 429, 5xx and
connection errors, ``Retry-After``. Any other status means "this gateway does
not have it" and the next gateway is tried. A gateway that kept failing
(every attempt retryable and failed) is tried last for the rest of the load,
so a dead gateway costs its retries once, not once per block.
"""

from __future__ import annotations

import os
import re
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Literal, cast

import httpx

from bundlekit._closing import Closing
from bundlekit.car.format import CAR_MEDIA_TYPE
from bundlekit.car.reader import read_car
from bundlekit.errors import BlockMismatch, CARError, CIDError, MissingBlock, UnsupportedBlock, UsageError
from bundlekit.ipld.block import MAX_BLOCK_SIZE, RAW_MEDIA_TYPE, check_block
from bundlekit.ipld.cid import as_cidv1, cid_to_str, parse_cid
from bundlekit.net.http import Failure, HttpOptions, open_client, read_capped, send_with_retries

if TYPE_CHECKING:
    from bundlekit.blockstore import BlockStore

__all__ = [
    "GATEWAYS_ENV",
    "BundleURI",
    "GatewayFetcher",
    "RemoteGateway",
    "check_block",
    "default_gateways",
    "http_get",
    "parse_gateway",
    "parse_uri",
]

GATEWAYS_ENV = "BUNDLEKIT_GATEWAYS"
SPOOL_BYTES = 64 * 1024 * 1024  # a CAR response past this spills to a temporary file
_CAR_QUERY = {"format": "car", "dag-scope": "all"}
_RAW_QUERY = {"format": "raw"}

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
        return parse_cid(text)
    except CIDError as exc:
        raise UsageError(f"{uri[:200]!r} does not hold a valid CID ({text[:80]!r}); check the URI") from exc


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
        url = httpx.URL(text)
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
    the parent host and the gateway is addressed by path. Raises ``UsageError``.
    """
    text = text.strip().rstrip("/")
    if not text.startswith(("http://", "https://")):
        raise UsageError(f"gateway {text[:200]!r} must be an http:// or https:// URL")
    text = text.removesuffix("/ipfs")
    return RemoteGateway(text)


def default_gateways(env: dict[str, str] | None = None) -> list[RemoteGateway]:
    """Gateways from ``$BUNDLEKIT_GATEWAYS`` (comma- or space-separated URLs), in order."""
    source = os.environ if env is None else env
    value = source.get(GATEWAYS_ENV, "")
    return [parse_gateway(item) for item in re.split(r"[,\s]+", value) if item]


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
    return send_with_retries(
        client, "GET", url, options=http, params=params, headers=headers,
        read=lambda response: read_capped(response, max_bytes),
    )


class GatewayFetcher(Closing):
    """A verifying block getter over a local store and a list of gateways.

    Use ``prefetch_car(cid)`` for a whole DAG, and ``get`` as the
    ``Callable[[bytes], bytes]`` block getter for ``UnixFSReader``. ``get``
    raises ``MissingBlock`` when no source has the block and ``BlockMismatch``
    when every source that answered sent wrong bytes. Thread-safe: files are
    read concurrently. ``notes`` records, for the result, which sources failed
    and why. ``http`` carries the client, timeouts, retry policy and limits.
    """

    def __init__(
        self,
        gateways: Sequence[RemoteGateway],
        *,
        store: BlockStore | None = None,
        http: HttpOptions | None = None,
    ) -> None:
        self.gateways = list(gateways)
        self.store = store
        self.http = http or HttpOptions()
        self.client, self._own_client = open_client(self.http)
        self.cache: dict[bytes, bytes] = {}
        self.notes: list[str] = []
        self._lock = threading.Lock()
        self._failing: set[RemoteGateway] = set()
        self.car_complete = False
        self.root_in_store = False

    def close(self) -> None:
        """Close the HTTP client if this fetcher created it."""
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
        for gw in self._ordered():
            if self._car_from(gw, root):
                self.car_complete = True
                return True
        return False

    def _car_from(self, gw: RemoteGateway, root: bytes) -> bool:
        """One gateway's CAR of ``root``, its verified blocks cached; False if it failed."""
        try:
            outcome = send_with_retries(
                self.client, "GET", gw.url(root), options=self.http, params=_CAR_QUERY,
                headers={"Accept": CAR_MEDIA_TYPE}, read=lambda response: self._read_car(response, gw),
            )
        except (CARError, CIDError, UnsupportedBlock) as exc:
            # Truncated or malformed: a failure, but keep what verified so far.
            self._note(f"{gw.base}: CAR for {cid_to_str(root)} is truncated or malformed ({exc})")
            return False
        if isinstance(outcome, Failure):
            self._gave_up(gw, f"CAR request for {cid_to_str(root)}", outcome)
            return False
        return True

    def _read_car(self, response: httpx.Response, gw: RemoteGateway) -> bool:
        """Drain a CAR answer into a spooled buffer, then verify and cache its blocks.

        Draining first (memory, then disk past SPOOL_BYTES) lets the gateway
        finish at wire speed instead of waiting on our hashing through TCP
        back-pressure, and frees the connection sooner. Raises ``CARError``
        past ``max_car_bytes`` and for a malformed CAR.
        """
        limit = self.http.max_car_bytes
        with tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES) as spool:
            seen = 0
            for chunk in response.iter_bytes():
                seen += len(chunk)
                if seen > limit:
                    raise CARError(f"CAR response is over the {limit}-byte limit")
                spool.write(chunk)
            spool.seek(0)
            _roots, blocks = read_car(cast(BinaryIO, spool), verify=False)
            for cid, data in blocks:
                self._accept(cid, data, gw)
        return True

    def _accept(self, cid: bytes, data: bytes, gw: RemoteGateway) -> None:
        """Keep a CAR block only if it verifies; other blocks are ignored, bad ones noted."""
        try:
            check_block(cid, data)
        except UnsupportedBlock:
            return
        except BlockMismatch:
            self._note(f"{gw.base}: sent block {cid_to_str(cid)} with wrong content")
            return
        self.cache[cid] = data

    def _from_store(self, cid: bytes) -> bytes | None:
        """The block from the local store, if it is there (already hashed by ``BlockStore.get``)."""
        if self.store is None:
            return None
        try:
            data = self.store.get(cid)
        except MissingBlock:
            return None
        # Only the trustless block-size limit is left, and check_block raises the same
        # UnsupportedBlock for it.
        if len(data) > MAX_BLOCK_SIZE:
            check_block(cid, data)
        return data

    def get(self, cid: bytes) -> bytes:
        """The verified bytes of block ``cid``. Raises ``MissingBlock`` or ``BlockMismatch``."""
        data = self.cache.get(cid)
        if data is None:
            data = self._from_store(cid)
        if data is None:
            data = self._from_gateways(cid)
        self.cache[cid] = data
        return data

    def _from_gateways(self, cid: bytes) -> bytes:
        """The block from the first gateway that sends bytes matching ``cid``."""
        mismatched: list[str] = []
        for gw in self._ordered():
            got = http_get(self.client, gw.url(cid), http=self.http, params=_RAW_QUERY,
                           headers={"Accept": RAW_MEDIA_TYPE})
            if isinstance(got, Failure):
                self._gave_up(gw, f"block {cid_to_str(cid)}", got)
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
        raise MissingBlock(f"block {cid_to_str(cid)} is not available from any source")
