"""Manifest URI -> verified blocks -> decrypted files -> memory tree.

``load_bundle`` is the trustless loader behind ``load_memory`` and
``bundlekit load``. It classifies the URI (``fetch.parse_uri``) and opens a
session on its block source (``bundle.sources``: a local CAR, the local store,
gateways; the caller's ``source``, else the URI's in spec order), then follows
``specs/bundle.md``, "Loading", with the spec's numbers. How it runs and what
bounds it is one value, :class:`LoadOptions`:

0. One request: for a gateway, ``GET /ipfs/<root>?format=car&dag-scope=all``
   is opened (``FetchAhead.stream``: the strategy ``bundle.ahead`` attaches to a
   session over gateways) and its blocks are verified and taken as the steps
   below ask for them (``net.stream.CarPull``): the files
   are checked and written while the response is still arriving, and memory
   holds at most one window of blocks that came before they were asked for.
   A block the CAR does not bring is fetched alone (per-block fallback; with
   ``prefer_car=False`` every block, level by level, ``concurrency`` at a time:
   ``FetchAhead.prefetch``). A CAR file is read where its blocks lie.
1. The manifest first (``_root_entries``, ``_read_manifest``): list the root
   directory, read ``manifest.json`` from verified blocks (refused as soon as
   it claims or streams more than ``MAX_MANIFEST_BYTES``) and validate it. A
   DAG without one fails here (``ManifestError``), before any memory file is
   read (the CAR is closed unread). Plain ``https://.../manifest.json``
   (``_load_https``): fetch it; it is *unverified* (``manifest_verified=False``)
   and every file is fetched next to it and checked by recomputing its CID
   with the manifest's profile.
   Then the signature (``bundle.signature.check_signature``, specs/provenance.md):
   ``signature.json`` is read on its own (it sorts after ``memory/``, so the
   CAR would bring it last), capped at ``MAX_SIGNATURE_BYTES``, and any
   signature must verify (``publishers``: must be one of them) before any
   memory file is read.
2. Encrypted bundle: open the bundle key (``_open_key``; ``WrongKeyError``
   before any file is fetched or decrypted).
3. The plan (``_Plan``, made at once): list ``memory/``, ``timeline/`` when
   the load reaches it (when a streamed CAR brings it); every file the manifest
   lists must be in the DAG under the manifest's CID (``IntegrityError``), and
   all of them together may claim at most ``max_bytes``.
4. The files, index first, then in DAG order (the CAR's order). Each file's
   bytes come from verified blocks (``_dag_fetcher``, ``_bounded.read_bounded``):
   more bytes than the manifest's size, or more block visits than its budget,
   stop the read at once. A file no source can supply is skipped and named in
   ``warnings``; a file whose bytes do not match its CID (or whose ciphertext
   fails authentication, ``_decrypt``) raises ``IntegrityError`` naming the file.
5. Bundle paths become tree paths (``tree_path``).
6. With ``out_dir`` each file is written into a temporary directory beside it
   as soon as it is verified (``_tree``); at the end the tree is made durable in
   one flush (``_fs.sync_tree``, not an fsync per file) and renamed into place:
   nothing half-written reaches the destination.

``LoadOptions.deadline`` bounds the whole load and each response in it
(``HttpOptions.until``/``deadline``, folded in once: ``bounded_options``); when
it passes, the load fails with ``LoadError`` instead of skipping files.
"""
from __future__ import annotations

import io
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing, contextmanager
from dataclasses import dataclass, field, replace
from functools import partial
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any


from bundlekit._fs import TreeFiles, atomic_directory
from bundlekit.blockstore import BlockStore
from bundlekit.bundle._bounded import RAW_V1_PREFIX, read_bounded
from bundlekit.bundle.ahead import FetchAhead, fetch_ahead
from bundlekit.bundle.build import file_cid
from bundlekit.bundle.embeddings import EMBEDDINGS_FILE, restore_embeddings
from bundlekit.bundle.lineage import record_parent
from bundlekit.bundle.loadoptions import DEFAULT_CONCURRENCY, DEFAULT_DEADLINE, DEFAULT_MAX_BYTES, LoadOptions
from bundlekit.bundle.manifest import (
    ENC_SUFFIX,
    INDEX_PATH,
    MANIFEST_NAME,
    MAX_MANIFEST_BYTES,
    MEMORY_DIR,
    check_walked_path,
    cid_from_text,
    claimed_bytes,
    file_count,
    is_listed,
    parse_manifest,
)
from bundlekit.bundle.signature import MAX_SIGNATURE_BYTES, SIGNATURE_NAME, check_signature, parse_publishers
from bundlekit.bundle.sources import BlockSession, BlockSource, Gateways, LocalStore, source_for
from bundlekit.crypto import BundleKey, decrypt_stream
from bundlekit.crypto.threews import THREEWS_SCHEME, ThreewsKey, threews_decrypt, threews_key_from_spec
from bundlekit.errors import (
    BlockMismatch,
    BundlekitError,
    DecryptionError,
    IntegrityError,
    KeySourceError,
    LoadError,
    ManifestError,
    MissingBlock,
    PathNotFound,
    SignatureError,
    UsageError,
    VerificationError,
)
from bundlekit.ipld.cid import cid_to_str
from bundlekit.memory import Memory
from bundlekit.memory.files import read_tree_files
from bundlekit.names.resolve import resolve_uri
from bundlekit.net.fetch import BundleURI, default_gateways, http_get, parse_uri, recordable_url
from bundlekit.net.http import Failure, HttpOptions, open_client
from bundlekit.unixfs.profiles import Profile, get_profile
from bundlekit.unixfs.reader import UnixFSReader

if TYPE_CHECKING:
    import httpx

    from bundlekit.crypto._keys import KeySpec

__all__ = [
    "DEFAULT_CONCURRENCY",
    "DEFAULT_DEADLINE",
    "DEFAULT_MAX_BYTES",
    "BundleBlocks",
    "LoadOptions",
    "LoadResult",
    "bounded_options",
    "bundle_blocks",
    "load_bundle",
    "load_memory",
    "tree_path",
    "write_tree",
]

@dataclass
class LoadResult:
    """What a load produced.

    ``files`` maps memory-tree paths (``MEMORY.md``, ``<key>.md``,
    ``timeline/YYYY-MM-DD.jsonl``) to plaintext bytes. ``root_bytes`` is the bundle's
    root CID as bytes (None for a plain HTTPS manifest; ``root`` is its old name). ``manifest_verified`` is False
    only for that plain HTTPS form. ``warnings`` names every skipped file.
    ``out_dir`` is the directory written, if any; ``root_cid`` is the root as text. ``notes`` says which sources
    failed along the way (diagnostics, not errors). ``publisher`` is the verified signer of the manifest
    (None when unsigned); ``parents`` the roots the manifest names as its lineage.
    """

    root_bytes: bytes | None
    manifest: dict[str, Any]
    manifest_verified: bool
    files: dict[str, bytes]
    warnings: list[str] = field(default_factory=list)
    out_dir: Path | None = None
    notes: list[str] = field(default_factory=list)
    encrypted: bool = False
    url: str | None = None
    publisher: str | None = None

    @property
    def root(self) -> bytes | None:
        """The old name of ``root_bytes`` (the binary CID), kept for existing callers."""
        return self.root_bytes

    @property
    def parents(self) -> list[str]:
        """The root CIDs this bundle's tree was loaded or forked from (the manifest's ``parents``)."""
        return list(self.manifest.get("parents", []))

    @property
    def source(self) -> str:
        """What imported memories record as their ``source``: ``ipfs://<root>`` (or the manifest URL, without
        what may carry a credential: ``recordable_url``)."""
        return f"ipfs://{cid_to_str(self.root)}" if self.root is not None else recordable_url(self.url or "")

    @property
    def root_cid(self) -> str | None:
        """The root CID as text (``bafy...``); None for a plain HTTPS manifest."""
        return cid_to_str(self.root) if self.root is not None else None

    def summary(self) -> dict[str, Any]:
        """A JSON-ready summary (no file contents)."""
        return {
            "root": self.root_cid,
            "manifest_verified": self.manifest_verified,
            "namespace": self.manifest.get("namespace"),
            "created": self.manifest.get("created"),
            "encrypted": self.encrypted,
            "files": sorted(self.files),
            "warnings": list(self.warnings),
            "notes": list(self.notes),
            "publisher": self.publisher,
            "parents": self.parents,
            "out_dir": str(self.out_dir) if self.out_dir is not None else None,
        }


def tree_path(bundle_path: str) -> str:
    """``memory/<p>[.enc]`` -> ``<p>``: where a bundle file lands in a memory tree."""
    path = bundle_path[len(MEMORY_DIR) + 1 :]
    return path.removesuffix(ENC_SUFFIX)


def load_bundle(
    uri: str,
    *,
    source: BlockSource | None = None,
    key: KeySpec | None = None,
    out_dir: str | os.PathLike[str] | None = None,
    options: LoadOptions | None = None,
) -> LoadResult:
    """Load and verify the bundle at ``uri``; optionally write it as a memory tree at ``out_dir``.

    ``source`` says where blocks come from (``bundle.sources``: ``Gateways([...])``
    tried in order, ``LocalStore()``, ``CarFile(path)``); without one, ``ipfs://``
    asks the local block store first, then ``$BUNDLEKIT_GATEWAYS``. A ``.car``
    URI is read from its file, and a gateway URL's own host is tried before the
    source's gateways. ``options`` (``LoadOptions()`` when None) says how the load
    runs and what bounds it. ``ipns://NAME/manifest.json`` is resolved first
    (``names.resolve_uri``: the store and the source's gateways, verified records,
    highest sequence). Any ``signature.json`` must verify (``bundle.signature``),
    checked right after the manifest and before any memory file is read. A tree
    written to ``out_dir`` remembers the root as its parent (``bundle.lineage``).

    Raises ``SignatureError`` (invalid signature, unsigned or another signer
    with ``publishers``, an IPNS record that does not verify), ``UsageError``
    (bad URI, ``out_dir`` not empty), ``LoadError``
    (manifest or index unavailable from every source, the deadline passed), ``ManifestError`` (no
    valid ``manifest.json``: raised before any memory file is fetched),
    ``KeySourceError`` (encrypted bundle, no key), ``WrongKeyError``,
    ``IntegrityError`` (a file does not match its CID or fails decryption).
    """
    options = options or LoadOptions()
    options = replace(options, publishers=tuple(parse_publishers(options.publishers)))
    _check_gateways(source)
    bounds = _Bounds.start(options)
    resolved_notes: list[str] = []
    if uri.strip().startswith("ipns://"):
        uri, resolution = _resolve_name(uri, source, bounds.http)
        resolved_notes = resolution.notes
    target = parse_uri(uri)
    dest = Path(out_dir) if out_dir is not None else None
    if dest is not None:
        _check_destination(dest)
    if target.kind == "https":
        result = _load_https(target, key, options, bounds, dest)
    else:
        with closing(source_for(target, source).open(target, bounds.http)) as session:
            result = _load_dag(session, key, options, bounds, dest)
    result.notes[:0] = resolved_notes
    if dest is not None and result.root is not None:
        record_parent(dest, result.root)
    result.out_dir = dest
    return result


def load_memory(
    uri: str,
    *,
    source: BlockSource | None = None,
    key: KeySpec | None = None,
    out_dir: str | os.PathLike[str] | None = None,
    namespace: str | None = None,
    options: LoadOptions | None = None,
) -> Memory:
    """Load the bundle at ``uri`` (verified, as :func:`load_bundle` loads it) and return it as a memory tree.

    With ``out_dir`` the files land in that directory and the returned Memory
    reads it; without, the result is a ``Memory(None)`` holding the loaded files
    (nothing written). ``namespace`` names the returned Memory; by default the
    bundle's own, from its manifest. Raises what :func:`load_bundle` raises.
    """
    result = load_bundle(uri, source=source, key=key, out_dir=out_dir, options=options)
    if namespace is None:
        manifest = getattr(result, "manifest", None)
        loaded_ns = manifest.get("namespace") if isinstance(manifest, dict) else None
        namespace = loaded_ns if isinstance(loaded_ns, str) and loaded_ns else None
    if out_dir is not None:
        return Memory(out_dir, namespace=namespace)
    memory = Memory(None, namespace=namespace)
    memory.import_(read_tree_files(result.files, source=uri).export_blob(), "replace")
    return memory


@dataclass(frozen=True)
class BundleBlocks:
    """A content-addressed bundle whose manifest was read and validated: its root, manifest (and its size
    in bytes) and verified getter."""

    root: bytes
    manifest: dict[str, Any]
    manifest_size: int
    get: Callable[[bytes], bytes]
    publisher: str | None = None
    top: dict[str, bytes] = field(default_factory=dict)
    #: ``prefetch(cids, max_bytes)``: the DAGs under ``cids`` fetched ahead of their reads, ``concurrency`` at a
    #: time, no further past ``max_bytes`` (``FetchAhead.prefetch``); None when the blocks are local (a CAR file).
    prefetch: Callable[[Sequence[bytes], int], None] | None = None


@contextmanager
def bundle_blocks(
    uri: str, *, source: BlockSource | None = None, options: LoadOptions | None = None, signed: bool = False
) -> Iterator[BundleBlocks]:
    """The verified blocks of the bundle at ``uri`` (a CAR, ``ipfs://`` or a gateway URL), manifest first.

    Steps 0 and 1 of loading (the same sources in the same order, a gateway's
    CAR streamed and taken as asked for unless ``options.prefer_car`` is
    false) and the size check of step 3: a DAG that is not a bundle is refused (``ManifestError``) having cost its root
    block and at most ``MAX_MANIFEST_BYTES`` of manifest, and one whose files
    claim more than ``options.max_bytes`` together with ``LoadError``, before
    any other block is asked for. For readers that serve a bundle's blocks as
    they are (``bundlekit open``); nothing is decrypted or written. A plain
    ``https://`` manifest has no blocks: ``UsageError``. The sources are
    closed when the block ends. With ``signed`` a ``signature.json`` must verify (and be one of
    ``options.publishers``' when they are given) before the blocks are yielded, as a load checks it
    (``SignatureError``); the result names the publisher.
    """
    _check_gateways(source)
    options = options or LoadOptions()
    if signed:
        options = replace(options, publishers=tuple(parse_publishers(options.publishers)))
    bounds = _Bounds.start(options)
    target = parse_uri(uri)
    if target.kind == "https":
        raise UsageError(f"{uri[:200]!r} is a plain manifest URL, not content-addressed: it has no blocks")
    with closing(source_for(target, source).open(target, bounds.http)) as session:
        ahead = fetch_ahead(session)
        if options.prefer_car and ahead is not None:
            ahead.stream()
        top = _root_entries(UnixFSReader(session.get, verify=False), session, bounds)
        data = _manifest_bytes(session, top, bounds)
        manifest = parse_manifest(data)
        publisher = None
        if signed:
            with _reading_manifest(session, bounds):
                aside = session.get if ahead is None else ahead.get_aside
                publisher = check_signature(top, partial(_read_signature, aside), top[MANIFEST_NAME],
                                            options.publishers, cid_to_str(session.root))
        bounds.check_total(manifest)
        prefetch = None if ahead is None else partial(_prefetch, ahead, concurrency=options.concurrency)
        yield BundleBlocks(session.root, manifest, len(data), session.get, publisher, top, prefetch)


def _prefetch(ahead: FetchAhead, cids: Sequence[bytes], max_bytes: int, *, concurrency: int) -> None:
    ahead.prefetch(cids, max_bytes, concurrency)


def _check_gateways(source: BlockSource | None) -> None:
    """A gateway URL that is not one is a usage error before anything is done, whether or not the URI needs it."""
    if isinstance(source, Gateways):
        source.gateways  # noqa: B018 (parsed for its UsageError)


def _resolve_name(uri: str, source: BlockSource | None, http: HttpOptions) -> tuple[str, Any]:
    """``ipns://`` -> ``ipfs://<cid>/manifest.json`` through the records of the store and the gateways.

    The gateways are the source's (``$BUNDLEKIT_GATEWAYS`` when it names none). The store is always asked,
    whether or not the source asks it for blocks: it remembers the newest record seen for the name, below
    which resolution never goes back (``names.resolve``).
    """
    gws = list(source.gateways) if isinstance(source, Gateways) else []
    store = source.store if isinstance(source, (Gateways, LocalStore)) else None
    return resolve_uri(uri, gateways=gws or default_gateways(), store=store or BlockStore(), http=http)


def bounded_options(options: HttpOptions, deadline: float | None) -> HttpOptions:
    """``options`` bounded by one deadline for everything done with them (``until``) and for each response.

    For callers that run several loads under one deadline (``load --layer``).
    """
    until = None if deadline is None else options.monotonic() + deadline
    if options.until is not None:
        until = options.until if until is None else min(until, options.until)
    each = deadline if options.deadline is None or deadline is None else min(deadline, options.deadline)
    return replace(options, until=until, deadline=each if deadline is not None else options.deadline)


def _check_destination(dest: Path) -> None:
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise UsageError(
            f"{str(dest)!r} exists and is not an empty directory; choose a new one, "
            "or use `bundlekit fork URI DEST` to merge into an existing tree"
        )


@dataclass(frozen=True)
class _Bounds:
    """What bounds one load in progress: its deadline, its HTTP options bounded by it, the total size the files
    may claim."""

    deadline: float | None
    http: HttpOptions
    max_bytes: int

    @classmethod
    def start(cls, options: LoadOptions) -> _Bounds:
        """The bounds of a load starting now: ``options.deadline`` folded into its HTTP options once."""
        return cls(options.deadline, bounded_options(options.http, options.deadline), options.max_bytes)

    def check_time(self, what: str) -> None:
        """Raise ``LoadError`` when the load's deadline has passed (a failure is then the deadline's doing)."""
        until = self.http.until
        if until is not None and self.http.monotonic() >= until:
            limit = f"{self.deadline:g}-second " if self.deadline is not None else ""
            raise LoadError(f"the load did not finish within its {limit}deadline ({what}); "
                            "try a faster gateway or raise --deadline")

    @staticmethod
    def total_bytes(manifest: dict[str, Any]) -> int:
        """The bytes the manifest's files claim, all together."""
        return claimed_bytes(manifest)

    def check_total(self, manifest: dict[str, Any]) -> None:
        """Refuse (``LoadError``) a manifest whose files claim more than ``max_bytes`` together."""
        total = self.total_bytes(manifest)
        if total > self.max_bytes:
            raise LoadError(f"the bundle's files claim {total} bytes, over the {self.max_bytes}-byte load limit; "
                            "raise --max-bytes only for a bundle you trust")


# -- the content-addressed forms: ipfs://, gateway URLs, a local CAR ---------------------------


def _load_dag(
    session: BlockSession, key: KeySpec | None, options: LoadOptions, bounds: _Bounds, dest: Path | None
) -> LoadResult:
    """The loading steps of ``specs/bundle.md`` over verified blocks: manifest, plan, files, tree."""
    root = session.root
    reader = UnixFSReader(session.get, verify=False)  # the session has hashed every block already
    # Over gateways: one request for the whole bundle, read as the steps below need its blocks.
    ahead = fetch_ahead(session)
    streaming = ahead.stream() if options.prefer_car and ahead is not None else False
    # Step 1: the manifest, from verified blocks, capped while it streams in.
    top = _root_entries(reader, session, bounds)
    manifest = _read_manifest(session, top, bounds)
    # Step 1c: the signature (specs/provenance.md), before any memory file. Read on its own:
    # signature.json sorts after memory/, so the CAR brings it last.
    with _reading_manifest(session, bounds):
        aside = session.get if ahead is None else ahead.get_aside
        publisher = check_signature(top, partial(_read_signature, aside), top[MANIFEST_NAME],
                                    options.publishers, cid_to_str(root))
    # Step 2: the key.
    bundle_key = _open_key(manifest, key)
    memory_cid = top.get(MEMORY_DIR)
    if memory_cid is None:
        raise ManifestError(f"{cid_to_str(root)} has a manifest but no {MEMORY_DIR}/ directory")
    # Step 3: the plan: the files in the DAG's (the CAR's) order, timeline/ listed when the CAR reaches it.
    bounds.check_total(manifest)
    plan = _Plan(manifest, reader, memory_cid, root)
    order: Iterable[str] = plan.paths()
    if not streaming:  # per-block path, a CAR file, or a CAR that failed already: fetch blocks concurrently
        order = list(order)
        if ahead is not None:
            ahead.prefetch([plan.cids[path] for path in order], bounds.total_bytes(manifest), options.concurrency)
    # Steps 4-6: the files (each CID checked against the manifest's), written as they come.
    fetch = _dag_fetcher(session, bounds, plan)
    files, warnings = _fetch_all(manifest, fetch, bundle_key=bundle_key, dest=dest, where="a gateway",
                                 progress=options.progress, plan=(order, plan.entries, plan.check_bytes))
    if ahead is not None:
        ahead.finish()
    return LoadResult(root_bytes=root, manifest=manifest, manifest_verified=True, files=files, warnings=warnings,
                      notes=session.notes, encrypted=bundle_key is not None, publisher=publisher)


def _read_signature(get: Callable[[bytes], bytes], cid: bytes) -> bytes:
    """``signature.json``'s verified bytes, refused past ``MAX_SIGNATURE_BYTES`` while they stream."""

    def too_big(seen: int) -> BundlekitError:
        return SignatureError(f"{SIGNATURE_NAME} holds at least {seen} bytes, over the {MAX_SIGNATURE_BYTES}-byte limit")

    return read_bounded(get, cid, MAX_SIGNATURE_BYTES, too_big, SIGNATURE_NAME)


@contextmanager
def _reading_manifest(session: BlockSession, bounds: _Bounds) -> Iterator[None]:
    """Map failures while reaching ``manifest.json``: unavailable -> ``LoadError``, altered ->
    ``IntegrityError``, other verification errors as they are, anything else -> not a bundle."""
    root = cid_to_str(session.root)
    try:
        yield
    except (MissingBlock, BlockMismatch) as exc:
        bounds.check_time(f"reading {MANIFEST_NAME}")
        message = f"cannot read {MANIFEST_NAME} of {root} from {session.where} ({exc}); {session.advice}"
        if isinstance(exc, BlockMismatch):
            raise IntegrityError(message) from exc  # bytes that do not match their CID: exit 3
        raise LoadError(message) from exc
    except VerificationError:
        raise
    except (BundlekitError, LookupError) as exc:
        raise ManifestError(f"{root} is not a bundle: no readable {MANIFEST_NAME} ({exc})") from exc


def _root_entries(reader: UnixFSReader, session: BlockSession, bounds: _Bounds) -> dict[str, bytes]:
    """Step 1a: the bundle root directory's entries (name -> CID), one block for a bundle root."""
    with _reading_manifest(session, bounds):
        return dict(reader.list_dir(session.root))


def _read_manifest(session: BlockSession, top: dict[str, bytes], bounds: _Bounds) -> dict[str, Any]:
    """Step 1b: ``manifest.json`` under the root, read from verified blocks and validated.

    Runs before any memory file is asked for: a DAG that is not a bundle fails
    here, having cost the root block only. A manifest DAG claiming or
    streaming more than ``MAX_MANIFEST_BYTES`` is refused as soon as it does.
    """
    return parse_manifest(_manifest_bytes(session, top, bounds))


def _manifest_bytes(session: BlockSession, top: dict[str, bytes], bounds: _Bounds) -> bytes:
    """The bytes of ``manifest.json`` under the root (``_read_manifest``), not yet validated."""
    manifest_cid = top.get(MANIFEST_NAME)
    if manifest_cid is None:
        raise ManifestError(
            f"{cid_to_str(session.root)} is not a bundle: no {MANIFEST_NAME} at its root "
            f"(it holds {', '.join(sorted(top)[:5]) or 'nothing'}); check the CID"
        )

    def too_big(seen: int) -> BundlekitError:
        return ManifestError(
            f"{MANIFEST_NAME} of {cid_to_str(session.root)} holds at least {seen} bytes, over the "
            f"{MAX_MANIFEST_BYTES}-byte limit; this is not a bundle bundlekit loads"
        )

    with _reading_manifest(session, bounds):
        return read_bounded(session.get, manifest_cid, MAX_MANIFEST_BYTES, too_big, MANIFEST_NAME)




class _Plan:
    """Step 3: the DAG paths of the manifest's files (index aside) in DAG order, and the CID of each.

    Made at once from the ``memory/`` listing; only ``timeline/`` waits: it is
    listed when the load reaches it (``paths``), which is when a gateway's CAR
    (depth first, in link order) brings its block, so a streamed CAR is followed
    in its own order. The paths before and after it are lists chained together:
    following the plan costs no Python call per file. (Resolving each path
    separately would decode ``memory/`` once per file: quadratic.)
    """

    def __init__(self, manifest: dict[str, Any], reader: UnixFSReader, memory_cid: bytes, root: bytes) -> None:
        self.listed = is_listed(manifest)
        # bundlekit/1: the manifest's files. bundlekit/2: filled as the DAG is walked, each path checked first.
        self.entries: dict[str, dict[str, Any]] = manifest["memory"]["files"] if self.listed else {}
        self._manifest = manifest
        self._encrypted = manifest["encryption"] is not None
        self.claimed = claimed_bytes(manifest)
        #: bundlekit/2: the bytes the files not yet read may still hold (None for bundlekit/1: each file its size)
        self.left: list[int | None] = [None if self.listed else self.claimed]
        self.skipped = 0  # files no source had (a bundlekit/2 DAG's bytes are then not held to the total)
        self.root = root
        self._reader = reader
        self.cids: dict[str, bytes] = {}  # DAG path -> CID: memory/ now, timeline/ once listed
        self._before: list[str] = []  # the manifest's paths before timeline/ in memory/, then those after it
        self._after: list[str] = []
        self._timeline: bytes | None = None
        with _listing(root):
            memory_entries = reader.list_dir(memory_cid)
        run = self._before
        for name, cid in memory_entries:
            if name == "timeline":
                self._timeline, run = cid, self._after
                continue
            path = f"{MEMORY_DIR}/{name}"
            self._walked(path, cid)
            if path in self.entries and path != INDEX_PATH:
                run.append(path)
        if INDEX_PATH not in self.entries:
            raise _not_in_dag(INDEX_PATH, root)

    def _walked(self, path: str, cid: bytes) -> None:
        """One entry of the DAG: its CID noted; in a ``bundlekit/2`` bundle, the path checked (``ManifestError``)
        and made an entry of the plan (at most the manifest's ``count`` of them: ``IntegrityError`` past it)."""
        self.cids[path] = cid
        if self.listed:
            return
        check_walked_path(path, encrypted=self._encrypted)
        if len(self.entries) >= file_count(self._manifest):
            raise IntegrityError(f"{cid_to_str(self.root)} holds more files under {MEMORY_DIR}/ than the "
                                 f"{file_count(self._manifest)} its manifest counts (first past them: {path[:120]})")
        self.entries[path] = {"cid": None, "size": None}

    def paths(self) -> Iterator[str]:
        """The paths in DAG order; ends with ``IntegrityError`` when a file the manifest lists is not in the DAG."""
        return chain(self._before, self._timeline_paths(), self._after, self._all_in_dag())

    def _timeline_paths(self) -> Iterator[str]:
        """The manifest's paths under ``timeline/``, listed (once) when the load reaches the directory."""
        if self._timeline is None:
            return
        with _listing(self.root):
            days = self._reader.list_dir(self._timeline)
        for day, day_cid in days:
            path = f"{MEMORY_DIR}/timeline/{day}"
            self._walked(path, day_cid)
            if path in self.entries:
                yield path

    def _all_in_dag(self) -> Iterator[str]:
        """The plan's end (no paths of its own): every file the manifest lists was found in the DAG; a
        ``bundlekit/2`` DAG holds exactly the manifest's count of files (and its embeddings file)."""
        for path in self.entries:
            if path not in self.cids:
                raise _not_in_dag(path, self.root)
        count = file_count(self._manifest)
        if not self.listed and len(self.entries) != count:
            raise IntegrityError(f"{cid_to_str(self.root)} holds {len(self.entries)} files under {MEMORY_DIR}/, "
                                 f"its manifest counts {count}")
        embeddings = self._manifest.get("embeddings")
        if isinstance(embeddings, dict) and embeddings.get("path") not in self.cids:
            raise _not_in_dag(str(embeddings.get("path")), self.root)
        yield from ()

    def check_bytes(self) -> None:
        """Once every file was read (before the tree is renamed into place): a ``bundlekit/2`` DAG's files hold
        exactly the manifest's bytes, unless one was skipped (``IntegrityError``)."""
        left = self.left[0]
        if left and not self.skipped:
            raise IntegrityError(f"{cid_to_str(self.root)}: its files hold {self.claimed - left} bytes, its manifest "
                                 f"says {self.claimed}")


def _not_in_dag(path: str, root: bytes) -> IntegrityError:
    return IntegrityError(f"{path}: listed in the manifest but not in the bundle DAG {cid_to_str(root)}")


def _dag_fetcher(
    session: BlockSession, bounds: _Bounds, plan: _Plan
) -> Callable[[str, dict[str, Any]], bytes | None]:
    """Step 4 for one file of a DAG: its CID in the DAG == the manifest's; verified bytes, never
    more than the manifest's size, exactly that size."""

    get = session.get
    cids = plan.cids
    # bundlekit/2 lists no sizes: every file is read within what the manifest's bytes leave, and they add up.
    left = plan.left

    def fetch(path: str, entry: dict[str, Any]) -> bytes | None:
        size: int = entry["size"] if left[0] is None else left[0]
        cid = cids.get(path)
        if cid is None:
            raise _not_in_dag(path, plan.root)
        if entry["cid"] is not None and cid != cid_from_text(entry["cid"]):
            raise IntegrityError(f"{path}: the manifest lists {entry['cid']} but the bundle holds {cid_to_str(cid)}")

        try:
            if cid[:2] == RAW_V1_PREFIX:  # one raw block is the whole file: read_bounded's first case, inline
                data = get(cid)
            else:
                data = read_bounded(get, cid, size, partial(_file_too_big, path, size), path)
        except MissingBlock:
            bounds.check_time(path)
            plan.skipped += 1
            return None
        except BlockMismatch as exc:
            raise IntegrityError(f"{path}: content does not match its CID {cid_to_str(cid)} ({exc})") from exc
        except PathNotFound as exc:  # a directory (or a symlink) where the layout has a file
            raise ManifestError(f"{path}: {exc}; a bundle holds files under {MEMORY_DIR}/, and day files under "
                                f"{MEMORY_DIR}/timeline/") from exc
        if left[0] is not None:
            if len(data) > left[0]:
                raise IntegrityError(f"{path}: the files read so far hold more than the {plan.claimed} bytes the "
                                     "manifest says they hold together")
            left[0] -= len(data)
        elif len(data) != size:
            if len(data) > size:  # only a raw block can be (read_bounded stops at the size)
                raise _file_too_big(path, size, len(data))
            raise IntegrityError(f"{path}: {len(data)} bytes, the manifest says {size}")
        return data

    return fetch


def _file_too_big(path: str, size: int, seen: int) -> BundlekitError:
    return IntegrityError(f"{path}: the bundle holds at least {seen} bytes, the manifest says {size}")


@contextmanager
def _listing(root: bytes) -> Iterator[None]:
    """Map failures while listing ``memory/``: unavailable -> ``LoadError``, altered -> ``IntegrityError``, no
    directory -> ``ManifestError``."""
    try:
        yield
    except MissingBlock as exc:
        raise LoadError(
            f"the {MEMORY_DIR}/ directory of {cid_to_str(root)} is not available from any source ({exc}); "
            "try another gateway"
        ) from exc
    except BlockMismatch as exc:
        raise IntegrityError(f"{MEMORY_DIR}/: a directory block does not match its CID ({exc})") from exc
    except PathNotFound as exc:  # a file (or a symlink) where the layout has a directory: a layout error
        raise ManifestError(f"{exc}; a bundle holds files under {MEMORY_DIR}/ and day files under "
                            f"{MEMORY_DIR}/timeline/") from exc




# -- the plain https:// manifest (not content-addressed) ---------------------------------------


def _load_https(
    target: BundleURI, key: KeySpec | None, options: LoadOptions, bounds: _Bounds, dest: Path | None
) -> LoadResult:
    """The manifest fetched as is and validated, then each file fetched beside it and its CID recomputed."""
    assert target.url is not None
    http = bounds.http
    client, owned = open_client(http)
    base = target.url.rsplit("/", 1)[0] + "/"
    try:
        got = http_get(client, target.url, http=http, max_bytes=MAX_MANIFEST_BYTES)
        if isinstance(got, Failure):
            bounds.check_time(f"fetching {target.url[:200]!r}")
            raise LoadError(f"cannot fetch manifest {target.url[:200]!r}: {got.reason}; check the URL")
        manifest = parse_manifest(got)
        if not is_listed(manifest):
            raise ManifestError(f"{target.url[:200]!r} is a {manifest['format']} manifest, which lists no files: "
                                "only its bundle's CID can be loaded (ipfs://<root>, a gateway URL or a CAR)")
        profile = get_profile(manifest["profile"])
        # Fetched past the signature limit so that check_signature names an over-long one.
        signature = http_get(client, base + SIGNATURE_NAME, http=http, max_bytes=4 * MAX_SIGNATURE_BYTES)
        # The signature names the manifest's CID, recomputed here from the bytes fetched.
        entries = {} if isinstance(signature, Failure) else {SIGNATURE_NAME: b""}
        publisher = check_signature(entries, lambda _cid: signature if isinstance(signature, bytes) else b"",
                                    file_cid(got, profile), options.publishers, target.url)
        bundle_key = _open_key(manifest, key)
        bounds.check_total(manifest)
        fetch = _https_fetcher(client, bounds, base, profile)
        files, warnings = _fetch_all(manifest, fetch, bundle_key=bundle_key, dest=dest, where=target.url,
                                     progress=options.progress, workers=options.concurrency)
    finally:
        if owned:
            client.close()
    return LoadResult(root_bytes=None, manifest=manifest, manifest_verified=False, files=files, warnings=warnings,
                      encrypted=bundle_key is not None, url=target.url, publisher=publisher)


def _https_fetcher(
    client: httpx.Client, bounds: _Bounds, base: str, profile: Profile
) -> Callable[[str, dict[str, Any]], bytes | None]:
    """One file beside a plain manifest: at most ``size`` bytes, its CID recomputed with ``profile``."""

    def fetch(path: str, entry: dict[str, Any]) -> bytes | None:
        # The manifest says how long the file is: never buffer more than that.
        got = http_get(client, base + path, http=bounds.http, max_bytes=entry["size"])
        if isinstance(got, Failure):
            if got.too_large:
                raise IntegrityError(
                    f"{path}: {base + path} sent more than the {entry['size']} bytes the manifest lists; "
                    "the server altered it"
                )
            bounds.check_time(path)
            return None
        actual = file_cid(got, profile)
        if actual != cid_from_text(entry["cid"]):
            raise IntegrityError(
                f"{path}: content fetched from {base + path} has CID {cid_to_str(actual)}, "
                f"the manifest lists {entry['cid']}; the server altered it"
            )
        return got

    return fetch




def _open_key(manifest: dict[str, Any], key: KeySpec | None) -> BundleKey | ThreewsKey | None:
    """The bundle key for an encrypted manifest (WrongKeyError on a mismatch), else None.

    A ``--compat three.ws`` bundle has no key commitment: its key is derived
    from the wallet signature for the manifest's agent, and a wrong one shows
    up as the first file failing to decrypt.
    """
    params = manifest["encryption"]
    if params is None:
        return None
    if not isinstance(params.get("key_source"), str):
        raise ManifestError("manifest encryption.key_source must be signature, passphrase, key-file or recipients")
    if key is None:
        raise KeySourceError(
            "this bundle is encrypted; pass a key option (--signature-env, --signature-file, "
            "--passphrase-env, --key-file, --private-key-env, or --identity-file for a recipients bundle)"
        )
    if isinstance(params, dict) and params.get("scheme") == THREEWS_SCHEME:
        return threews_key_from_spec(key, str(params.get("agent_id") or manifest["namespace"]))
    return key.open_bundle_key(params, manifest["namespace"])


def _fetch_all(
    manifest: dict[str, Any],
    fetch: Callable[[str, dict[str, Any]], bytes | None],
    *,
    bundle_key: BundleKey | ThreewsKey | None,
    dest: Path | None,
    where: str,
    progress: Callable[[int, int], None] | None,
    workers: int = 1,
    plan: tuple[Iterable[str], dict[str, dict[str, Any]], Callable[[], None]] | None = None,
) -> tuple[dict[str, bytes], list[str]]:
    """Index first, then the rest (in ``order``, else sorted; ``workers`` at a time when more than one);
    decrypt; each file written to ``dest``'s temp tree as it comes; the tree committed at the end.
    ``where`` names the source when the index is unavailable."""
    order, entries, done = plan if plan is not None else (None, manifest["memory"]["files"], lambda: None)
    if progress is not None:
        fetch = _counting(fetch, file_count(manifest), progress)
    index = fetch(INDEX_PATH, entries[INDEX_PATH])
    if index is None:
        raise LoadError(f"the index {INDEX_PATH} is not available from {where}; try another gateway")
    warnings: list[str] = []
    rest = order if order is not None else sorted(entries)
    with _tree(dest, private=bundle_key is not None) as tree:
        tree.put("MEMORY.md", index)
        with _workers(workers) as pool:
            if pool is None:  # lazily: a streamed CAR is followed as the plan walks it
                fetched: Iterable[tuple[str, bytes | None]] = (
                    (p, fetch(p, entries[p])) for p in rest if p != INDEX_PATH
                )
            else:
                paths = [p for p in rest if p != INDEX_PATH]
                fetched = zip(paths, pool.map(lambda p: fetch(p, entries[p]), paths))
            for path, data in fetched:
                if data is None:
                    warnings.append(f"{path}: skipped, its blocks are not available from any source")
                    continue
                if bundle_key is not None:
                    data = _decrypt(data, bundle_key, path)
                tree.put(tree_path(path), data)
        done()
        if bundle_key is not None or warnings:
            tree.regenerate_index()
        if tree.vectors is not None:
            warnings += restore_embeddings(tree.tmp, manifest, tree.vectors)
    return tree.files, warnings


@contextmanager
def _workers(count: int) -> Iterator[ThreadPoolExecutor | None]:
    """A pool of ``count`` fetch threads (None for one). On an error or an interrupt (Ctrl-C,
    SIGTERM: ``_signals``) the fetches still queued are cancelled, not waited for, so the temp tree
    is removed at once."""
    if count <= 1:
        yield None
        return
    pool = ThreadPoolExecutor(max_workers=count)
    try:
        yield pool
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def _counting(
    fetch: Callable[[str, dict[str, Any]], bytes | None], total: int, progress: Callable[[int, int], None]
) -> Callable[[str, dict[str, Any]], bytes | None]:
    """``fetch`` that reports ``progress(done, total)`` after each file (thread-safe count)."""
    lock = threading.Lock()
    done = 0
    progress(0, total)

    def counted(path: str, entry: dict[str, Any]) -> bytes | None:
        nonlocal done
        data = fetch(path, entry)
        with lock:
            done += 1
            progress(done, total)
        return data

    return counted


def _decrypt(data: bytes, bundle_key: BundleKey | ThreewsKey, path: str) -> bytes:
    if isinstance(bundle_key, ThreewsKey):
        return threews_decrypt(data, bundle_key, name=path)  # DecryptionError: wrong wallet or tampered
    out = io.BytesIO()
    try:
        decrypt_stream(io.BytesIO(data), out, bundle_key, path)
    except DecryptionError as exc:
        raise IntegrityError(f"{path}: the encrypted file fails authentication (tampered, truncated or moved)") from exc
    return out.getvalue()


def write_tree(files: dict[str, bytes], dest: Path, *, regenerate_index: bool, private: bool = False) -> None:
    """Write ``files`` as a memory tree at ``dest`` (new or empty), all or nothing.

    The tree is written in a temporary directory beside ``dest``, synced in
    one flush, then renamed into place (``_fs.atomic_directory``). With ``regenerate_index``
    the index is rebuilt from the files actually written (an encrypted bundle's
    index links CIDs; a skipped file must not stay listed). ``private`` (a
    decrypted bundle) makes the tree's directory ``0o700``; otherwise modes
    follow ``_fs``'s rule. Raises ``UsageError`` when ``dest`` is not empty,
    ``LoadError`` on an OS failure.
    """
    with _tree(dest, private=private) as tree:
        for rel, data in sorted(files.items()):
            tree.put(rel, data)
        if regenerate_index:
            tree.regenerate_index()


class _TreeWriter:
    """Verified files as they come: kept for the result, and written into ``tmp`` when there is one."""

    def __init__(self, tmp: Path | None) -> None:
        self.tmp = tmp
        self.files: dict[str, bytes] = {}
        self.vectors: bytes | None = None  # a bundle's embeddings: into the tree's index, never a file of it
        self._out = TreeFiles(tmp) if tmp is not None else None  # each folder opened once, a file by its name

    def put(self, rel: str, data: bytes) -> None:
        if rel == EMBEDDINGS_FILE:
            self.vectors = data
            return
        self.files[rel] = data
        if self._out is not None:
            self._out.write(rel, data)

    def close(self) -> None:
        """Close the temp tree's opened folders (before it is synced and renamed)."""
        if self._out is not None:
            self._out.close()

    def regenerate_index(self) -> None:
        """Rebuild ``MEMORY.md`` on disk from the files written (the result keeps the bundle's own)."""
        if self.tmp is not None:
            tree = Memory(self.tmp)
            try:
                text = tree.index_text()
            finally:
                tree.close()  # the derived index's connection: left open, its -wal and -shm files stay behind
            assert self._out is not None  # made with the temp tree
            self._out.write("MEMORY.md", text.encode("utf-8"))


@contextmanager
def _tree(dest: Path | None, *, private: bool) -> Iterator[_TreeWriter]:
    """A ``_TreeWriter`` over a temp tree beside ``dest`` that becomes ``dest`` on a clean exit (none without ``dest``).

    The tree is made durable by one flush of its file system before the rename
    (``sync=True``: ``_fs.sync_tree``); an fsync per file cost more than writing it.
    """
    if dest is None:
        yield _TreeWriter(None)
        return
    _check_destination(dest)
    with atomic_directory(
        dest, error=LoadError, mode=0o700 if private else None, hint="choose another destination", parents=True,
        sync=True,
    ) as tmp:
        writer = _TreeWriter(tmp)
        try:
            yield writer
        finally:
            writer.close()

