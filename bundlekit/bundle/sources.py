"""Where a loaded bundle's verified blocks come from: one implementation per source.

A :class:`BlockSource` is what a caller passes down (``load_bundle``, ``fork``,
``diff``, ``layers``, ``log``, ``open``, ``mcp --from``): a CAR file
(:class:`CarFile`), the local block store (:class:`LocalStore`) or remote
trustless gateways (:class:`Gateways`, the store asked first when it is given,
as boxo's blockservice asks its blockstore before the exchange). It is a plain
value, reusable for any number of loads. Each load opens it for one DAG
(``open``, boxo's ``NewSession``) and reads that DAG through the
:class:`BlockSession` it returns, a block getter (``ipld.getter.BlockGetter``,
boxo's: one block, ``get``; many, ``get_many``) that names its source. A
session over gateways also has a ``fetcher``, to which the loader attaches its
fetch-ahead strategy (``bundle.ahead``: the whole DAG as one CAR streamed while
the load asks for its blocks, or level by level prefetch).

With no source given, the URI chooses (``source_for``, specs/bundle.md,
"Retrieval"): a CAR path is read from its file; ``ipfs://CID`` from the local
store, then ``$BUNDLEKIT_GATEWAYS``; a gateway URL from that gateway. A
gateway URL's own gateway is always asked first. Every block a session returns
has been hashed against its CID.

The gateway's ``ServedBlocks`` (``gateway.sources``), the same getter protocol,
answer requests for blocks a process already holds; these fetch them for a load.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from bundlekit._closing import Closing
from bundlekit.blockstore import BlockStore, PackWriter
from bundlekit.car.index import CarIndex
from bundlekit.errors import BundlekitError, DAGLimitExceeded, LoadError
from bundlekit.ipld.cid import cid_to_str
from bundlekit.ipld.getter import BlockGetter
from bundlekit.net.fetch import BundleURI, GatewayFetcher, RemoteGateway, gateway_order, parse_gateway
from bundlekit.net.http import HttpOptions

__all__ = ["BlockSession", "BlockSource", "CarFile", "Gateways", "LocalStore", "gateway_source", "source_for"]

_GATEWAY_ADVICE = "check the CID or try another --gateway"
#: Blocks a keeping session holds in memory before it writes them, or fewer when they reach the byte bound (8 MiB).
#: A load that keeps fewer writes them as block files when it ends (``BlockStore.put_many``: one ``syncfs``); one
#: that fills a batch (a first follow: a block per memory) writes every block into one pack of the store
#: (``BlockStore.pack``: one file, one index, synced and made visible when the load ends), not a file each.
_KEEP_BATCH = 2048
_KEEP_BATCH_BYTES = 8 * 1024 * 1024


class BlockSession(BlockGetter, Protocol):
    """One load's verified blocks of one DAG, from one source; closed when the load ends.

    A block getter (``get``: ``MissingBlock`` when no source has the block,
    ``BlockMismatch`` when every source that answered sent other bytes; a block
    is taken from an open CAR stream when there is one; ``get_many``), from
    several threads at once. ``root`` is the DAG's root; ``where`` and
    ``advice`` name the source and what to try in error messages; ``notes``
    say which of its sources failed along the way (diagnostics for the
    result, not errors); ``fetcher`` is the ``GatewayFetcher`` the blocks come
    through, what the loader's fetch-ahead strategy drives (``bundle.ahead``),
    or None when they are all local (a CAR file).
    """

    root: bytes
    where: str
    advice: str

    @property
    def notes(self) -> list[str]: ...

    @property
    def fetcher(self) -> GatewayFetcher | None: ...

    def close(self) -> None: ...


class BlockSource(Protocol):
    """Where a load's blocks come from: a value a caller passes, opened once per load."""

    def open(self, target: BundleURI, http: HttpOptions) -> BlockSession:
        """A session over the DAG ``target`` names, fetching (if at all) with ``http``.

        Raises ``UsageError`` when the source has nothing to ask (no gateway
        at all), ``LoadError``/``CARError`` for a CAR that is not one bundle.
        """
        ...


@dataclass(frozen=True)
class CarFile:
    """A local CAR file: indexed once, read block by block (never held in memory), each block verified.

    For a ``.car`` URI the CAR is the bundle, with exactly one root; given as
    the source of ``ipfs://CID`` it supplies that root's blocks.
    """

    path: Path
    #: When given, the CID of every block a load reads from the CAR is added to it: what ``fork`` and ``merge``
    #: keep in the local store (``bundle.merge.keep_car_blocks``), never a block of the CAR the bundle does not use.
    read: set[bytes] | None = field(default=None, compare=False)

    def open(self, target: BundleURI, http: HttpOptions) -> BlockSession:
        return _CarSession(self.path, target.root, self.read)


@dataclass(frozen=True)
class LocalStore:
    """The local block store (``$BUNDLEKIT_HOME``'s when ``store`` is None), alone; a gateway URL's
    own gateway is asked after it."""

    store: BlockStore | None = None

    def open(self, target: BundleURI, http: HttpOptions) -> BlockSession:
        gws = [target.gateway] if target.gateway is not None else []
        return _GatewaySession(target, gws, self.store or BlockStore(), http)


@dataclass(frozen=True)
class Gateways:
    """Remote trustless gateways, tried in order (``http(s)://host[:port][/prefix]`` or ``RemoteGateway``).

    With no gateway given, ``ipfs://`` asks ``$BUNDLEKIT_GATEWAYS``. With
    ``store``, the local store is asked first for every block, and a DAG whose
    root it holds is not streamed. The URLs are parsed when a load starts
    (``gateways``: ``UsageError`` for one that is not a gateway URL), so a
    value that no load uses (every side of a diff a directory) never trips
    over one. The value holds no connection: any number of loads may use it.

    With ``keep`` (and a store), every block a gateway sends is verified and
    kept in the store, unpinned (a cache ``store gc`` may drop), whether it came
    alone or in a streamed CAR. ``max_blocks`` then bounds how many one load may
    keep: past it the load fails with ``DAGLimitExceeded`` (exit 3). The loader
    bounds bytes, and each file's block visits by its bytes, but a DAG of many
    files of tiny blocks passes both while it fills the store with a file per
    block (issue 35: a hostile name points a sync at one). Loaded with ``LoadOptions(prefer_car=False)``
    the DAG is then never streamed whole: each block is asked of the store
    first and of the gateways only when it is missing (level by level,
    ``concurrency`` at a time), so a bundle that differs from one loaded
    before in k memories costs about k blocks per level of its DAG (issue 28,
    "transfers proportional to the change"; ``bundlekit sync`` loads so once
    its store holds a root the tree descends from).
    """

    urls: tuple[str | RemoteGateway, ...] = field(default=())
    store: BlockStore | None = None
    keep: bool = False
    max_blocks: int | None = None

    def __init__(
        self, urls: Iterable[str | RemoteGateway] = (), *, store: BlockStore | None = None, keep: bool = False,
        max_blocks: int | None = None,
    ) -> None:
        object.__setattr__(self, "urls", tuple(urls))
        object.__setattr__(self, "store", store)
        object.__setattr__(self, "keep", keep and store is not None)
        object.__setattr__(self, "max_blocks", max_blocks)

    @property
    def gateways(self) -> list[RemoteGateway]:
        """The gateways, parsed; ``UsageError`` for a value that is not a gateway URL."""
        return [g if isinstance(g, RemoteGateway) else parse_gateway(g) for g in self.urls]

    def open(self, target: BundleURI, http: HttpOptions) -> BlockSession:
        gws, use_store = gateway_order(target, self.gateways, self.store is not None)
        return _GatewaySession(target, gws, self.store if use_store else None, http, keep=self.keep,
                               max_blocks=self.max_blocks)


def source_for(target: BundleURI, given: BlockSource | None) -> BlockSource:
    """The source of ``target``'s blocks: a CAR path's own file; else ``given``; else the spec's order
    (``ipfs://``: the local store, then ``$BUNDLEKIT_GATEWAYS``; a gateway URL: that gateway)."""
    if target.kind == "car":
        assert target.car is not None
        return given if isinstance(given, CarFile) and given.path == target.car else CarFile(target.car)
    if given is not None:
        return given
    return Gateways(store=BlockStore()) if target.kind == "ipfs" else Gateways()


class _CarSession(Closing):
    """A CAR file's blocks (``CarIndex.get`` hashes each); everything is local, nothing to fetch ahead."""

    advice = "the CAR is damaged or incomplete; rebuild or re-download it"

    def __init__(self, path: Path, root: bytes | None, read: set[bytes] | None = None) -> None:
        self._index = CarIndex(path, verify=False)
        self._read = read
        self.where = f"CAR {str(path)!r}"
        if root is None and len(self._index.roots) != 1:
            self._index.close()
            raise LoadError(f"CAR {str(path)!r} has {len(self._index.roots)} roots; a bundle CAR has exactly one")
        self.root: bytes = root if root is not None else self._index.roots[0]

    @property
    def notes(self) -> list[str]:
        return []

    def get(self, cid: bytes) -> bytes:
        data = self._index.get(cid)
        if self._read is not None:
            self._read.add(cid)
        return data

    @property
    def fetcher(self) -> None:
        """None: a CAR file is read where its blocks lie, in any order; nothing to fetch ahead."""
        return None

    def get_many(self, cids: Sequence[bytes], concurrency: int) -> dict[bytes, bytes]:
        return {cid: self.get(cid) for cid in cids if cid in self._index}

    def close(self) -> None:
        self._index.close()


class _GatewaySession(Closing):
    """The store and the gateways through one ``GatewayFetcher`` (``get`` verifies every block)."""

    advice = _GATEWAY_ADVICE

    def __init__(
        self, target: BundleURI, gateways: Sequence[RemoteGateway], store: BlockStore | None, http: HttpOptions,
        *, keep: bool = False, max_blocks: int | None = None,
    ) -> None:
        assert target.root is not None
        self.root: bytes = target.root
        self.where = ", ".join(g.base for g in gateways) or "the local store"
        self._kept = _KeptBlocks(store, target.root, max_blocks) if keep and store is not None else None
        self._fetcher = GatewayFetcher(gateways, store=store, http=http,
                                       keep=self._kept.put if self._kept is not None else None)
        self.get = self._fetcher.get

    @property
    def notes(self) -> list[str]:
        return list(self._fetcher.notes)

    @property
    def fetcher(self) -> GatewayFetcher:
        """The store and the gateways, for the loader's fetch-ahead strategy (``bundle.ahead``)."""
        return self._fetcher

    def get_many(self, cids: Sequence[bytes], concurrency: int) -> dict[bytes, bytes]:
        self._fetcher.get_many(cids, concurrency)
        cache = self._fetcher.cache
        return {cid: cache[cid] for cid in cids if cid in cache}

    def close(self) -> None:
        """Close the fetcher, then write the blocks still waiting to be kept (a failed load's verified blocks
        are as good a cache as a finished one's)."""
        try:
            self._fetcher.close()
        finally:
            if self._kept is not None:
                self._kept.flush()


class _KeptBlocks:
    """The store as a block sink for what a gateway sent, from any thread: held until the load ends and then
    written as block files (``BlockStore.put_many``: one wait on the disk), or, once a batch fills, appended to
    one pack committed when the load ends (``flush``). A store that cannot take them (a full disk) costs the
    cache, never the load. Past ``max_blocks`` blocks (of the DAG under ``root``) it
    refuses the next with ``DAGLimitExceeded``, which ends the load: the block is neither kept nor used."""

    def __init__(self, store: BlockStore, root: bytes, max_blocks: int | None = None) -> None:
        self._store = store
        self._root = root
        self._max = max_blocks
        self._count = 0
        self._lock = threading.Lock()
        self._pending: list[tuple[bytes, bytes]] = []
        self._bytes = 0
        self._pack: PackWriter | None = None
        self._failed = False

    def put(self, cid: bytes, data: bytes) -> None:
        with self._lock:
            if self._max is not None and self._count >= self._max:
                raise DAGLimitExceeded(
                    f"the DAG of {cid_to_str(self._root)} made this load fetch more than {self._max} blocks, the "
                    "bound of a sync (a bundle of that many memories has far fewer); refusing it: a name pointing "
                    "at a DAG of countless tiny blocks is hostile or broken"
                )
            self._count += 1
            self._pending.append((cid, data))
            self._bytes += len(data)
            if len(self._pending) < _KEEP_BATCH and self._bytes < _KEEP_BATCH_BYTES:
                return
            batch, self._pending, self._bytes = self._pending, [], 0
            self._into_pack(batch)

    def _into_pack(self, batch: list[tuple[bytes, bytes]]) -> None:
        """Append ``batch`` to the pack (opened at the first; the caller holds the lock)."""
        if self._failed:
            return
        try:
            if self._pack is None:
                self._pack = self._store.pack(self._root)
            for cid, data in batch:
                self._pack.put(cid, data)
        except BundlekitError:
            self._failed = True
            if self._pack is not None:
                self._pack.discard()

    def flush(self) -> None:
        """The load ended: the blocks held written (into the pack when there is one, which is then committed)."""
        with self._lock:
            batch, self._pending, self._bytes = self._pending, [], 0
            if self._pack is not None:
                self._into_pack(batch)
                batch = []
            pack, self._pack, failed = self._pack, None, self._failed
        with suppress(BundlekitError):
            if pack is not None:
                if not failed:
                    pack.commit()
            elif batch and not failed:
                self._store.put_many(batch)


def gateway_source(gateways: Iterable[str | RemoteGateway]) -> Gateways | None:
    """The ``--gateway`` values a user gave as a source: ``Gateways`` of them, or None (the URI decides)
    when there are none."""
    given = tuple(gateways)
    return Gateways(given) if given else None
