"""Manifest URI -> verified blocks -> decrypted files -> memory tree.

``load_bundle`` is the trustless loader behind ``Memory.load`` and
``bundlekit load``. It classifies the URI (``fetch.parse_uri``) and opens its
block source (``_open_source``: a local CAR, or the local store and gateways
through ``GatewayFetcher``, in spec order), then follows ``specs/bundle.md``,
"Loading", with the spec's numbers:

1. The manifest first (``_root_entries``, ``_read_manifest``): list the root
   directory, read ``manifest.json`` from verified blocks and validate it. A
   DAG without one fails here (``ManifestError``), before any memory file is
   asked for. Plain ``https://.../manifest.json`` (``_load_https``): fetch it;
   it is *unverified* (``manifest_verified=False``) and every file is fetched
   next to it and checked by recomputing its CID with the manifest's profile.
2. Encrypted bundle: open the bundle key (``_open_key``; ``WrongKeyError``
   before any file is fetched or decrypted).
3. The files: ask for the ``memory/`` directory as one CAR (per-block
   fallback), list it (``_bundle_paths``), then the index first (``_fetch_all``).
4. The other files concurrently (bounded threads). For each file
   (``_dag_fetcher``) the CID in the DAG must equal the manifest's; its bytes
   come from verified blocks. A file no source can supply is skipped and named
   in ``warnings``; a file whose bytes do not match its CID (or whose
   ciphertext fails authentication, ``_decrypt``) raises ``IntegrityError``
   naming the file.
5. Bundle paths become tree paths (``tree_path``).
6. With ``out_dir`` (``write_tree``), the tree is written to a temporary
   directory beside it and renamed into place: nothing half-written reaches
   the destination.
"""
from __future__ import annotations

import io
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from bundlekit._fs import atomic_directory
from bundlekit.blockstore import BlockStore
from bundlekit.bundle.build import file_cid
from bundlekit.bundle.lineage import record_parent
from bundlekit.bundle.manifest import (
    ENC_SUFFIX,
    INDEX_PATH,
    MANIFEST_NAME,
    MAX_MANIFEST_BYTES,
    MEMORY_DIR,
    cid_from_text,
    parse_manifest,
)
from bundlekit.bundle.signature import SIGNATURE_NAME, check_signature, parse_publishers
from bundlekit.car.index import CarIndex
from bundlekit.crypto import BundleKey, decrypt_stream
from bundlekit.errors import (
    BlockMismatch,
    BundlekitError,
    DecryptionError,
    IntegrityError,
    KeySourceError,
    LoadError,
    ManifestError,
    MissingBlock,
    UsageError,
    VerificationError,
)
from bundlekit.ipld.cid import RAW, cid_to_str
from bundlekit.memory import Memory
from bundlekit.names.resolve import resolve_uri
from bundlekit.net.fetch import (
    BundleURI,
    GatewayFetcher,
    RemoteGateway,
    default_gateways,
    http_get,
    parse_gateway,
    parse_uri,
)
from bundlekit.net.http import Failure, HttpOptions, open_client
from bundlekit.unixfs.profiles import Profile, get_profile
from bundlekit.unixfs.reader import UnixFSReader

if TYPE_CHECKING:
    from bundlekit.crypto._keys import KeySpec

__all__ = ["LoadResult", "load_bundle", "tree_path", "write_tree"]

DEFAULT_CONCURRENCY = 8
_RAW_V1_PREFIX = bytes([0x01, RAW])


@dataclass
class LoadResult:
    """What a load produced.

    ``files`` maps memory-tree paths (``MEMORY.md``, ``<key>.md``,
    ``timeline/YYYY-MM-DD.jsonl``) to plaintext bytes. ``root`` is the bundle's
    root CID (None for a plain HTTPS manifest). ``manifest_verified`` is False
    only for that plain HTTPS form. ``warnings`` names every skipped file.
    ``out_dir`` is the directory written, if any; ``root_cid`` is the root as text. ``notes`` says which sources
    failed along the way (diagnostics, not errors). ``publisher`` is the verified signer of the manifest
    (None when unsigned); ``parents`` the roots the manifest names as its lineage.
    """

    root: bytes | None
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
    def parents(self) -> list[str]:
        """The root CIDs this bundle's tree was loaded or forked from (the manifest's ``parents``)."""
        return list(self.manifest.get("parents", []))

    @property
    def source(self) -> str:
        """What imported memories record as their ``source``: ``ipfs://<root>`` (or the manifest URL)."""
        return f"ipfs://{cid_to_str(self.root)}" if self.root is not None else (self.url or "")

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
    gateways: Iterable[str | RemoteGateway] = (),
    key: KeySpec | None = None,
    out_dir: str | os.PathLike[str] | None = None,
    use_store: bool | None = None,
    store: BlockStore | None = None,
    http: HttpOptions | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    prefer_car: bool = True,
    progress: Callable[[int, int], None] | None = None,
    publishers: Iterable[str] = (),
) -> LoadResult:
    """Load and verify the bundle at ``uri``; optionally write it as a memory tree at ``out_dir``.

    ``gateways`` are tried in order (strings like ``http://127.0.0.1:8080``).
    For ``ipfs://`` with no gateway given, the local block store is tried
    first (``use_store`` defaults to that case), then ``$BUNDLEKIT_GATEWAYS``.
    A gateway URL's own host is tried before the others. ``http`` carries the
    HTTP client, timeouts, retry policy and limits (``HttpOptions()`` when
    None). ``prefer_car=False`` skips the CAR request for the files (per-block
    only; used by the benchmark). ``progress(done, total)`` is called as each
    file listed in the manifest has been fetched and verified (possibly from
    worker threads). ``ipns://NAME/manifest.json`` is resolved first
    (``names.resolve_uri``: the store and the gateways, verified records, highest
    sequence). With ``publishers`` (addresses or ``did:key``s) the bundle must be
    signed by one of them; any ``signature.json`` must verify (``bundle.signature``),
    checked right after the manifest and before any memory file is fetched.
    A tree written to ``out_dir`` remembers the root as its parent (``bundle.lineage``).

    Raises ``SignatureError`` (invalid signature, unsigned or another signer
    with ``publishers``, an IPNS record that does not verify), ``UsageError`` (bad URI, ``out_dir`` not empty), ``LoadError``
    (manifest or index unavailable from every source), ``ManifestError`` (no
    valid ``manifest.json``: raised before any memory file is fetched),
    ``KeySourceError`` (encrypted bundle, no key), ``WrongKeyError``,
    ``IntegrityError`` (a file does not match its CID or fails decryption).
    """
    if concurrency < 1:
        raise UsageError("concurrency must be at least 1")
    wanted = parse_publishers(publishers)
    gws = [g if isinstance(g, RemoteGateway) else parse_gateway(g) for g in gateways]
    options = http or HttpOptions()
    resolved_notes: list[str] = []
    if uri.strip().startswith("ipns://"):
        uri, resolution = _resolve_name(uri, gws, use_store, store, options)
        resolved_notes = resolution.notes
    target = parse_uri(uri)
    dest = Path(out_dir) if out_dir is not None else None
    if dest is not None:
        _check_destination(dest)
    if target.kind == "https":
        result = _load_https(target, key, options, concurrency, progress, wanted)
    else:
        source = _open_source(target, gws, use_store, store, options)
        try:
            result = _load_dag(source, key, concurrency, prefer_car, progress, wanted)
        finally:
            source.close()
    result.notes[:0] = resolved_notes
    if dest is not None:
        write_tree(
            result.files,
            dest,
            regenerate_index=result.encrypted or bool(result.warnings),
            private=result.encrypted,
        )
        if result.root is not None:
            record_parent(dest, result.root)
        result.out_dir = dest
    return result


def _resolve_name(
    uri: str, gws: list[RemoteGateway], use_store: bool | None, store: BlockStore | None, http: HttpOptions
) -> tuple[str, Any]:
    """``ipns://`` -> ``ipfs://<cid>/manifest.json`` through the records of the store (as for ``ipfs://``) and gateways."""
    if use_store is None:
        use_store = not gws
    if not gws:
        gws = default_gateways()
    return resolve_uri(uri, gateways=gws, store=(store or BlockStore()) if use_store else None, http=http)


def _check_destination(dest: Path) -> None:
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise UsageError(
            f"{str(dest)!r} exists and is not an empty directory; choose a new one, "
            "or use `bundlekit fork URI DEST` to merge into an existing tree"
        )


# -- the content-addressed forms: ipfs://, gateway URLs, a local CAR ---------------------------


@dataclass
class _DagSource:
    """Where a content-addressed bundle's verified blocks come from: a local CAR, or the store and gateways.

    ``get`` returns only blocks it has already hashed against their CIDs
    (``GatewayFetcher.get``, ``CarIndex.get``). ``where`` and ``advice`` name
    the source in error messages.
    """

    root: bytes
    get: Callable[[bytes], bytes]
    where: str
    advice: str
    fetcher: GatewayFetcher | None = None
    car_index: CarIndex | None = None

    def prefetch(self, cid: bytes) -> None:
        """Ask the gateways for the DAG under ``cid`` as one CAR (nothing to do for a local CAR)."""
        if self.fetcher is not None:
            self.fetcher.prefetch_car(cid)

    @property
    def local(self) -> bool:
        """True when every block is already here: a local CAR, a complete CAR read, the local store."""
        return self.fetcher is None or self.fetcher.car_complete or self.fetcher.root_in_store

    @property
    def notes(self) -> list[str]:
        """Which sources failed along the way."""
        return list(self.fetcher.notes) if self.fetcher is not None else []

    def close(self) -> None:
        if self.fetcher is not None:
            self.fetcher.close()
        if self.car_index is not None:
            self.car_index.close()


def _open_source(
    target: BundleURI, gws: list[RemoteGateway], use_store: bool | None, store: BlockStore | None, http: HttpOptions
) -> _DagSource:
    """The block source for ``target`` (a local CAR, or the store and gateways in spec order)."""
    if target.kind == "car":
        assert target.car is not None
        return _car_source(target.car)
    assert target.root is not None
    if target.gateway is not None:
        gws = [target.gateway, *[g for g in gws if g != target.gateway]]
    if use_store is None:
        use_store = target.kind == "ipfs" and not gws
    if target.kind == "ipfs" and not gws:
        gws = default_gateways()
    if use_store and store is None:
        store = BlockStore()
    if not gws and not use_store:
        raise UsageError("no gateway to load from: pass --gateway URL or set $BUNDLEKIT_GATEWAYS")
    fetcher = GatewayFetcher(gws, store=store if use_store else None, http=http)
    where = ", ".join(g.base for g in gws) or "the local store"
    return _DagSource(target.root, fetcher.get, where, "check the CID or try another --gateway", fetcher=fetcher)


def _car_source(path: Path) -> _DagSource:
    """A local CAR with exactly one root, indexed once and read block by block (never held in memory)."""
    car_index = CarIndex(path, verify=False)
    if len(car_index.roots) != 1:
        car_index.close()
        raise LoadError(f"CAR {str(path)!r} has {len(car_index.roots)} roots; a bundle CAR has exactly one")
    return _DagSource(car_index.roots[0], car_index.get, f"CAR {str(path)!r}",
                      "the CAR is damaged or incomplete; rebuild or re-download it", car_index=car_index)


def _load_dag(
    source: _DagSource,
    key: KeySpec | None,
    concurrency: int,
    prefer_car: bool,
    progress: Callable[[int, int], None] | None = None,
    publishers: Iterable[str] = (),
) -> LoadResult:
    """The loading steps of ``specs/bundle.md`` over verified blocks: manifest first, then the files."""
    root = source.root
    reader = UnixFSReader(source.get, verify=False)  # the getter has hashed every block already
    top = _root_entries(reader, source)
    manifest = _read_manifest(reader, source, top)
    with _reading_manifest(source):  # step 1c: the signature (specs/provenance.md), before any memory file
        publisher = check_signature(top, lambda cid: _read_file(reader, source.get, cid), top[MANIFEST_NAME],
                                    publishers, cid_to_str(root))
    bundle_key = _open_key(manifest, key)
    memory_cid = top.get(MEMORY_DIR)
    if memory_cid is None:
        raise ManifestError(f"{cid_to_str(root)} has a manifest but no {MEMORY_DIR}/ directory")
    if prefer_car:
        source.prefetch(memory_cid)
    dag_paths = _bundle_paths(reader, root, memory_cid)
    fetch = _dag_fetcher(reader, source, dag_paths)
    # Threads only pay when blocks still have to come over the network.
    files, warnings = _fetch_all(manifest, fetch, bundle_key, 1 if source.local else concurrency, "a gateway",
                                 progress)
    return LoadResult(root=root, manifest=manifest, manifest_verified=True, files=files, warnings=warnings,
                      notes=source.notes, encrypted=bundle_key is not None, publisher=publisher)


@contextmanager
def _reading_manifest(source: _DagSource) -> Iterator[None]:
    """Map failures while reaching ``manifest.json``: unavailable -> ``LoadError``, altered ->
    ``IntegrityError``, other verification errors as they are, anything else -> not a bundle."""
    root = cid_to_str(source.root)
    try:
        yield
    except (MissingBlock, BlockMismatch) as exc:
        message = f"cannot read {MANIFEST_NAME} of {root} from {source.where} ({exc}); {source.advice}"
        if isinstance(exc, BlockMismatch):
            raise IntegrityError(message) from exc  # bytes that do not match their CID: exit 3
        raise LoadError(message) from exc
    except VerificationError:
        raise
    except (BundlekitError, LookupError) as exc:
        raise ManifestError(f"{root} is not a bundle: no readable {MANIFEST_NAME} ({exc})") from exc


def _root_entries(reader: UnixFSReader, source: _DagSource) -> dict[str, bytes]:
    """Step 1a: the bundle root directory's entries (name -> CID), one block for a bundle root."""
    with _reading_manifest(source):
        return dict(reader.list_dir(source.root))


def _read_manifest(reader: UnixFSReader, source: _DagSource, top: dict[str, bytes]) -> dict[str, Any]:
    """Step 1b: ``manifest.json`` under the root, read from verified blocks and validated.

    Runs before any memory file is asked for: a DAG that is not a bundle fails
    here, having cost the root block only.
    """
    manifest_cid = top.get(MANIFEST_NAME)
    if manifest_cid is None:
        raise ManifestError(
            f"{cid_to_str(source.root)} is not a bundle: no {MANIFEST_NAME} at its root "
            f"(it holds {', '.join(sorted(top)[:5]) or 'nothing'}); check the CID"
        )
    with _reading_manifest(source):
        return parse_manifest(b"".join(reader.iter_file(manifest_cid)))


def _dag_fetcher(
    reader: UnixFSReader, source: _DagSource, dag_paths: dict[str, bytes]
) -> Callable[[str, dict[str, Any]], bytes | None]:
    """Step 4 for one file of a DAG: CID at its path == the manifest's, verified bytes, right length."""
    root = cid_to_str(source.root)

    def fetch(path: str, entry: dict[str, Any]) -> bytes | None:
        listed = cid_from_text(entry["cid"])
        actual = dag_paths.get(path)
        if actual is None:
            raise IntegrityError(f"{path}: listed in the manifest but not in the bundle DAG {root}")
        if actual != listed:
            raise IntegrityError(f"{path}: the manifest lists {entry['cid']} but the bundle holds {cid_to_str(actual)}")
        try:
            data = _read_file(reader, source.get, actual)
        except MissingBlock:
            return None
        except BlockMismatch as exc:
            raise IntegrityError(f"{path}: content does not match its CID {entry['cid']} ({exc})") from exc
        if len(data) != entry["size"]:
            raise IntegrityError(f"{path}: {len(data)} bytes, the manifest says {entry['size']}")
        return data

    return fetch


def _read_file(reader: UnixFSReader, get: Callable[[bytes], bytes], cid: bytes) -> bytes:
    """The content of the file at ``cid``.

    A raw-codec CID addresses the file's bytes themselves (a single-block file
    with raw leaves), and the getter only returns verified blocks, so the block
    is the content; anything else is read through the UnixFS reader. This
    skips the reader's per-file overhead for the common small memory file.
    """
    if cid[:2] == _RAW_V1_PREFIX:
        return get(cid)
    return b"".join(reader.iter_file(cid))


def _bundle_paths(reader: UnixFSReader, root: bytes, memory_cid: bytes) -> dict[str, bytes]:
    """Bundle path -> CID for every file under ``memory/``, listing each directory once.

    (Resolving each path separately would decode the ``memory/`` directory
    once per file: quadratic in the number of memories.) Raises ``LoadError``
    when a directory block is unavailable and ``IntegrityError`` when one is altered.
    """
    paths: dict[str, bytes] = {}
    try:
        for name, cid in reader.list_dir(memory_cid):
            paths[f"{MEMORY_DIR}/{name}"] = cid
        timeline_cid = paths.pop(f"{MEMORY_DIR}/timeline", None)
        if timeline_cid is not None:
            for name, cid in reader.list_dir(timeline_cid):
                paths[f"{MEMORY_DIR}/timeline/{name}"] = cid
    except MissingBlock as exc:
        raise LoadError(
            f"the {MEMORY_DIR}/ directory of {cid_to_str(root)} is not available from any source ({exc}); "
            "try another gateway"
        ) from exc
    except BlockMismatch as exc:
        raise IntegrityError(f"{MEMORY_DIR}/: a directory block does not match its CID ({exc})") from exc
    return paths


# -- the plain https:// manifest (not content-addressed) ---------------------------------------


def _load_https(
    target: BundleURI,
    key: KeySpec | None,
    http: HttpOptions,
    concurrency: int,
    progress: Callable[[int, int], None] | None = None,
    publishers: Iterable[str] = (),
) -> LoadResult:
    """The manifest fetched as is and validated, then each file fetched beside it and its CID recomputed."""
    assert target.url is not None
    client, owned = open_client(http)
    base = target.url.rsplit("/", 1)[0] + "/"
    try:
        got = http_get(client, target.url, http=http, max_bytes=MAX_MANIFEST_BYTES)
        if isinstance(got, Failure):
            raise LoadError(f"cannot fetch manifest {target.url[:200]!r}: {got.reason}; check the URL")
        manifest = parse_manifest(got)
        profile = get_profile(manifest["profile"])
        signature = http_get(client, base + SIGNATURE_NAME, http=http, max_bytes=64 * 1024)
        # The signature names the manifest's CID, recomputed here from the bytes fetched.
        entries = {} if isinstance(signature, Failure) else {SIGNATURE_NAME: b""}
        publisher = check_signature(entries, lambda _cid: signature if isinstance(signature, bytes) else b"",
                                    file_cid(got, profile), publishers, target.url)
        bundle_key = _open_key(manifest, key)
        fetch = _https_fetcher(client, http, base, profile)
        files, warnings = _fetch_all(manifest, fetch, bundle_key, concurrency, target.url, progress)
    finally:
        if owned:
            client.close()
    return LoadResult(root=None, manifest=manifest, manifest_verified=False, files=files, warnings=warnings,
                      encrypted=bundle_key is not None, url=target.url, publisher=publisher)


def _https_fetcher(
    client: httpx.Client, http: HttpOptions, base: str, profile: Profile
) -> Callable[[str, dict[str, Any]], bytes | None]:
    """One file beside a plain manifest: at most ``size`` bytes, its CID recomputed with ``profile``."""

    def fetch(path: str, entry: dict[str, Any]) -> bytes | None:
        # The manifest says how long the file is: never buffer more than that.
        got = http_get(client, base + path, http=http, max_bytes=entry["size"])
        if isinstance(got, Failure):
            if got.too_large:
                raise IntegrityError(
                    f"{path}: {base + path} sent more than the {entry['size']} bytes the manifest lists; "
                    "the server altered it"
                )
            return None
        actual = file_cid(got, profile)
        if actual != cid_from_text(entry["cid"]):
            raise IntegrityError(
                f"{path}: content fetched from {base + path} has CID {cid_to_str(actual)}, "
                f"the manifest lists {entry['cid']}; the server altered it"
            )
        return got

    return fetch


def _open_key(manifest: dict[str, Any], key: KeySpec | None) -> BundleKey | None:
    """The bundle key for an encrypted manifest (WrongKeyError on a mismatch), else None."""
    params = manifest["encryption"]
    if params is None:
        return None
    if key is None:
        raise KeySourceError(
            "this bundle is encrypted; pass a key option (--signature-env, --signature-file, "
            "--passphrase-env, --key-file or --private-key-env)"
        )
    return key.open_bundle_key(params, manifest["namespace"])


def _fetch_all(
    manifest: dict[str, Any],
    fetch: Callable[[str, dict[str, Any]], bytes | None],
    bundle_key: BundleKey | None,
    concurrency: int,
    where: str,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[dict[str, bytes], list[str]]:
    """Index first, then the rest concurrently; decrypt; map to tree paths."""
    entries: dict[str, dict[str, Any]] = manifest["memory"]["files"]
    if progress is not None:
        fetch = _counting(fetch, len(entries), progress)
    index = fetch(INDEX_PATH, entries[INDEX_PATH])
    if index is None:
        raise LoadError(f"the index {INDEX_PATH} is not available from {where}; try another gateway")
    files: dict[str, bytes] = {"MEMORY.md": index}
    warnings: list[str] = []
    rest = sorted(p for p in entries if p != INDEX_PATH)
    if concurrency == 1:
        results = [fetch(p, entries[p]) for p in rest]
    else:
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            results = list(pool.map(lambda p: fetch(p, entries[p]), rest))
    for path, data in zip(rest, results):
        if data is None:
            warnings.append(f"{path}: skipped, its blocks are not available from any source")
            continue
        if bundle_key is not None:
            data = _decrypt(data, bundle_key, path)
        files[tree_path(path)] = data
    return files, warnings


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


def _decrypt(data: bytes, bundle_key: BundleKey, path: str) -> bytes:
    out = io.BytesIO()
    try:
        decrypt_stream(io.BytesIO(data), out, bundle_key, path)
    except DecryptionError as exc:
        raise IntegrityError(f"{path}: the encrypted file fails authentication (tampered, truncated or moved)") from exc
    return out.getvalue()


def write_tree(files: dict[str, bytes], dest: Path, *, regenerate_index: bool, private: bool = False) -> None:
    """Write ``files`` as a memory tree at ``dest`` (new or empty), all or nothing.

    The tree is written and fsynced in a temporary directory beside ``dest``,
    then renamed into place (``_fs.atomic_directory``). With ``regenerate_index``
    the index is rebuilt from the files actually written (an encrypted bundle's
    index links CIDs; a skipped file must not stay listed). ``private`` (a
    decrypted bundle) makes the tree's directory ``0o700``; otherwise modes
    follow ``_fs``'s rule. Raises ``UsageError`` when ``dest`` is not empty,
    ``LoadError`` on an OS failure.
    """
    _check_destination(dest)
    mode = 0o700 if private else None
    with atomic_directory(
        dest, error=LoadError, mode=mode, hint="choose another destination", parents=True
    ) as tmp:
        for rel, data in sorted(files.items()):
            target = tmp / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
        if regenerate_index:
            text = Memory(tmp).index_text()
            with open(tmp / "MEMORY.md", "wb") as fh:
                fh.write(text.encode("utf-8"))
                fh.flush()
                os.fsync(fh.fileno())
