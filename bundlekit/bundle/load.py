"""Manifest URI -> verified blocks -> decrypted files -> memory tree.

``load_bundle`` is the trustless loader behind ``Memory.load`` and
``bundlekit load``. Steps (``specs/bundle.md``, "Loading"):

1. Classify the URI (``fetch.parse_uri``).
2. Content-addressed forms (``ipfs://``, gateway URLs, a local CAR): get a
   verifying block getter (local store, one CAR request per gateway, per-block
   fallback), resolve ``manifest.json`` under the root and validate it.
   Plain ``https://.../manifest.json``: fetch it; it is *unverified*
   (``manifest_verified=False``) and every file is fetched next to it and
   checked by recomputing its CID with the manifest's profile.
3. Encrypted bundle: open the bundle key (``WrongKeyError`` before any file is
   decrypted).
4. The index first, then the other files concurrently (bounded threads). For
   each file the CID in the DAG must equal the manifest's; its bytes come from
   verified blocks. A file no source can supply is skipped and named in
   ``warnings``; a file whose bytes do not match its CID (or whose ciphertext
   fails authentication) raises ``IntegrityError`` naming the file.
5. With ``out_dir``, the tree is written to a temporary directory beside it and
   renamed into place: nothing half-written reaches the destination.
"""

from __future__ import annotations

import io
import os
import random
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from bundlekit.blockstore import BlockStore
from bundlekit.bundle.build import file_cid
from bundlekit.bundle.manifest import (
    ENC_SUFFIX,
    INDEX_PATH,
    MANIFEST_NAME,
    MAX_MANIFEST_BYTES,
    MEMORY_DIR,
    cid_from_text,
    parse_manifest,
)
from bundlekit.car.index import CarIndex
from bundlekit.crypto import decrypt_stream
from bundlekit.errors import (
    BlockMismatch,
    BundlekitError,
    CryptoError,
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
from bundlekit.net.fetch import (
    DEFAULT_RETRY,
    DEFAULT_TIMEOUT,
    OVER_LIMIT,
    BundleURI,
    Gateway,
    GatewayFetcher,
    default_gateways,
    http_get,
    parse_gateway,
    parse_uri,
)
from bundlekit.net.http import RetryPolicy
from bundlekit.unixfs.profiles import get_profile
from bundlekit.unixfs.reader import UnixFSReader

if TYPE_CHECKING:
    from bundlekit.blockstore import BlockStore
    from bundlekit.crypto._keys import KeySpec
    from bundlekit.unixfs.reader import UnixFSReader

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
    failed along the way (diagnostics, not errors).
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
            "out_dir": str(self.out_dir) if self.out_dir is not None else None,
        }


def tree_path(bundle_path: str) -> str:
    """``memory/<p>[.enc]`` -> ``<p>``: where a bundle file lands in a memory tree."""
    path = bundle_path[len(MEMORY_DIR) + 1 :]
    return path.removesuffix(ENC_SUFFIX)


def load_bundle(
    uri: str,
    *,
    gateways: Iterable[str | Gateway] = (),
    key: KeySpec | None = None,
    out_dir: str | os.PathLike[str] | None = None,
    use_store: bool | None = None,
    store: BlockStore | None = None,
    client: httpx.Client | None = None,
    timeout: httpx.Timeout | float = DEFAULT_TIMEOUT,
    retry: RetryPolicy = DEFAULT_RETRY,
    sleep: Callable[[float], None] = time.sleep,
    jitter: Callable[[], float] = random.random,
    concurrency: int = DEFAULT_CONCURRENCY,
    prefer_car: bool = True,
) -> LoadResult:
    """Load and verify the bundle at ``uri``; optionally write it as a memory tree at ``out_dir``.

    ``gateways`` are tried in order (strings like ``http://127.0.0.1:8080``).
    For ``ipfs://`` with no gateway given, the local block store is tried
    first (``use_store`` defaults to that case), then ``$BUNDLEKIT_GATEWAYS``.
    A gateway URL's own host is tried before the others. ``prefer_car=False``
    skips the whole-DAG CAR request (per-block only; used by the benchmark).

    Raises ``UsageError`` (bad URI, ``out_dir`` not empty), ``LoadError``
    (manifest or index unavailable from every source), ``ManifestError``,
    ``KeySourceError`` (encrypted bundle, no key), ``WrongKeyError``,
    ``IntegrityError`` (a file does not match its CID or fails decryption).
    """
    if concurrency < 1:
        raise UsageError("concurrency must be at least 1")
    target = parse_uri(uri)
    gws = [g if isinstance(g, Gateway) else parse_gateway(g) for g in gateways]
    dest = Path(out_dir) if out_dir is not None else None
    if dest is not None:
        _check_destination(dest)
    if target.kind == "https":
        result = _load_https(target, key, client, timeout, retry, sleep, jitter, concurrency)
    else:
        result = _load_dag(target, gws, key, use_store, store, client, timeout, retry, sleep, jitter,
                           concurrency, prefer_car)
    if dest is not None:
        write_tree(result.files, dest, regenerate_index=result.encrypted or bool(result.warnings))
        result.out_dir = dest
    return result


def _check_destination(dest: Path) -> None:
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise UsageError(
            f"{str(dest)!r} exists and is not an empty directory; choose a new one, "
            "or use `bundlekit fork URI DEST` to merge into an existing tree"
        )


def _load_dag(
    target: BundleURI,
    gws: list[Gateway],
    key: KeySpec | None,
    use_store: bool | None,
    store: BlockStore | None,
    client: httpx.Client | None,
    timeout: httpx.Timeout | float,
    retry: RetryPolicy,
    sleep: Callable[[float], None],
    jitter: Callable[[], float],
    concurrency: int,
    prefer_car: bool,
) -> LoadResult:

    notes: list[str] = []
    fetcher: GatewayFetcher | None = None
    car_index: CarIndex | None = None
    if target.kind == "car":
        assert target.car is not None
        # Indexed once, read block by block: a large CAR is never held in memory.
        car_index = CarIndex(target.car, verify=False)
        if len(car_index.roots) != 1:
            car_index.close()
            raise LoadError(
                f"CAR {str(target.car)!r} has {len(car_index.roots)} roots; a bundle CAR has exactly one"
            )
        root = car_index.roots[0]
        get = _locked(car_index.get)  # CarIndex seeks one shared file handle: not thread-safe
    else:
        assert target.root is not None
        root = target.root
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
        fetcher = GatewayFetcher(gws, store=store if use_store else None, client=client, timeout=timeout,
                                 retry=retry, sleep=sleep, jitter=jitter)
        get = fetcher.get
    try:
        if fetcher is not None and prefer_car:
            fetcher.prefetch_car(root)
        # Every getter here returns only blocks it has already hashed against
        # their CIDs (GatewayFetcher, CarIndex.get): no second hash in the reader.
        reader = UnixFSReader(get, verify=False)
        try:
            manifest_cid = reader.resolve(root, MANIFEST_NAME)
            manifest_bytes = b"".join(reader.iter_file(manifest_cid))
        except (MissingBlock, BlockMismatch) as exc:
            if target.kind == "car":
                where, advice = f"CAR {str(target.car)!r}", "the CAR is damaged or incomplete; rebuild or re-download it"
            else:
                where = ", ".join(g.base for g in gws) or "the local store"
                advice = "check the CID or try another --gateway"
            message = f"cannot read {MANIFEST_NAME} of {cid_to_str(root)} from {where} ({exc}); {advice}"
            if isinstance(exc, BlockMismatch):
                raise IntegrityError(message) from exc  # bytes that do not match their CID: exit 3
            raise LoadError(message) from exc
        except VerificationError:
            raise
        except (BundlekitError, LookupError) as exc:  # no manifest.json under the root
            raise ManifestError(f"{cid_to_str(root)} is not a bundle: no readable {MANIFEST_NAME} ({exc})") from exc
        manifest = parse_manifest(manifest_bytes)
        bundle_key = _open_key(manifest, key)

        dag_paths = _bundle_paths(reader, root)

        def fetch(path: str, entry: dict[str, Any]) -> bytes | None:
            listed = cid_from_text(entry["cid"])
            actual = dag_paths.get(path)
            if actual is None:
                raise IntegrityError(f"{path}: listed in the manifest but not in the bundle DAG {cid_to_str(root)}")
            if actual != listed:
                raise IntegrityError(
                    f"{path}: the manifest lists {entry['cid']} but the bundle holds {cid_to_str(actual)}"
                )
            try:
                data = _read_file(reader, get, actual)
            except MissingBlock:
                return None
            except BlockMismatch as exc:
                raise IntegrityError(f"{path}: content does not match its CID {entry['cid']} ({exc})") from exc
            if len(data) != entry["size"]:
                raise IntegrityError(f"{path}: {len(data)} bytes, the manifest says {entry['size']}")
            return data

        # Threads only pay when blocks still have to come over the network.
        local = fetcher is None or fetcher.car_complete or fetcher.root_in_store
        files, warnings = _fetch_all(manifest, fetch, bundle_key, 1 if local else concurrency, "a gateway")
        if fetcher is not None:
            notes.extend(fetcher.notes)
    finally:
        if fetcher is not None:
            fetcher.close()
        if car_index is not None:
            car_index.close()
    return LoadResult(root=root, manifest=manifest, manifest_verified=True, files=files, warnings=warnings,
                      notes=notes, encrypted=bundle_key is not None)


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


def _bundle_paths(reader: UnixFSReader, root: bytes) -> dict[str, bytes]:
    """Bundle path -> CID for every file under ``memory/``, listing each directory once.

    (Resolving each path separately would decode the ``memory/`` directory
    once per file: quadratic in the number of memories.) Raises ``LoadError``
    when a directory block is unavailable and ``IntegrityError`` when one is altered.
    """
    paths: dict[str, bytes] = {}
    try:
        top = dict(reader.list_dir(root))
        memory_cid = top.get(MEMORY_DIR)
        if memory_cid is None:
            raise ManifestError(f"{cid_to_str(root)} has a manifest but no {MEMORY_DIR}/ directory")
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


def _locked(get: Callable[[bytes], bytes]) -> Callable[[bytes], bytes]:
    lock = threading.Lock()

    def locked_get(cid: bytes) -> bytes:
        with lock:
            return get(cid)

    return locked_get


def _load_https(
    target: BundleURI,
    key: KeySpec | None,
    client: httpx.Client | None,
    timeout: httpx.Timeout | float,
    retry: RetryPolicy,
    sleep: Callable[[float], None],
    jitter: Callable[[], float],
    concurrency: int,
) -> LoadResult:

    assert target.url is not None
    own = client is None
    http = client or httpx.Client(timeout=timeout, follow_redirects=True)
    try:
        body, reason = http_get(http, target.url, max_bytes=MAX_MANIFEST_BYTES, retry=retry, sleep=sleep,
                                jitter=jitter)
        if body is None:
            raise LoadError(f"cannot fetch manifest {target.url[:200]!r}: {reason}; check the URL")
        manifest = parse_manifest(body)
        profile = get_profile(manifest["profile"])
        bundle_key = _open_key(manifest, key)
        base = target.url.rsplit("/", 1)[0] + "/"

        def fetch(path: str, entry: dict[str, Any]) -> bytes | None:
            # The manifest says how long the file is: never buffer more than that.
            data, why = http_get(http, base + path, max_bytes=entry["size"], retry=retry, sleep=sleep,
                                 jitter=jitter)
            if data is None:
                if why.startswith(OVER_LIMIT):
                    raise IntegrityError(
                        f"{path}: {base + path} sent more than the {entry['size']} bytes the manifest lists; "
                        "the server altered it"
                    )
                return None
            actual = file_cid(data, profile)
            if actual != cid_from_text(entry["cid"]):
                raise IntegrityError(
                    f"{path}: content fetched from {base + path} has CID {cid_to_str(actual)}, "
                    f"the manifest lists {entry['cid']}; the server altered it"
                )
            return data

        files, warnings = _fetch_all(manifest, fetch, bundle_key, concurrency, target.url)
    finally:
        if own:
            http.close()
    return LoadResult(root=None, manifest=manifest, manifest_verified=False, files=files, warnings=warnings,
                      encrypted=bundle_key is not None, url=target.url)


def _open_key(manifest: dict[str, Any], key: KeySpec | None) -> Any:
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
    bundle_key: Any,
    concurrency: int,
    where: str,
) -> tuple[dict[str, bytes], list[str]]:
    """Index first, then the rest concurrently; decrypt; map to tree paths."""
    entries: dict[str, dict[str, Any]] = manifest["memory"]["files"]
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


def _decrypt(data: bytes, bundle_key: Any, path: str) -> bytes:

    out = io.BytesIO()
    try:
        decrypt_stream(io.BytesIO(data), out, bundle_key, path)
    except DecryptionError as exc:
        raise IntegrityError(f"{path}: the encrypted file fails authentication (tampered, truncated or moved)") from exc
    except CryptoError:
        raise
    return out.getvalue()


def write_tree(files: dict[str, bytes], dest: Path, *, regenerate_index: bool) -> None:
    """Write ``files`` as a memory tree at ``dest`` (new or empty), all or nothing.

    The tree is written and fsynced in a temporary directory beside ``dest``,
    then renamed into place. With ``regenerate_index`` the index is rebuilt
    from the files actually written (an encrypted bundle's index links CIDs;
    a skipped file must not stay listed). Raises ``UsageError`` when ``dest``
    is not empty, ``LoadError`` on an OS failure.
    """
    _check_destination(dest)
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=".loading", dir=dest.parent))
    except OSError as exc:
        raise LoadError(
            f"cannot create the memory tree {str(dest)!r}: {exc.strerror or exc} "
            "(is a file in the way of its parent directory?); choose another destination"
        ) from exc
    try:
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
        if dest.exists():
            dest.rmdir()  # empty, checked above; rename cannot replace a directory portably
        os.replace(tmp, dest)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, OSError):
            raise LoadError(f"cannot write the memory tree to {str(dest)!r}: {exc.strerror}") from exc
        raise
