"""Memory tree -> bundle layout + canonical manifest -> blocks in a CAR.

The layout (``specs/bundle.md``)::

    <root>/                      UnixFS directory, the bundle's root CID
      manifest.json              canonical JSON (bundlekit.bundle.manifest)
      memory/
        MEMORY.md                the index (always plaintext)
        <key>.md                 one per memory      (<key>.md.enc when encrypted)
        timeline/YYYY-MM-DD.jsonl                    (.jsonl.enc when encrypted)

Build steps, in order: validate the tree (``Memory.check``: keys,
frontmatter, secret guard); take its files with a freshly regenerated index
(``Transaction.contents`` of ``memory.transaction()``); encrypt memory and timeline files when a key is
given (and render the plaintext link index); compute each stored file's CID
with the chosen profile; write the manifest; import the whole tree into a CAR
written atomically. The same tree, options and ``created`` give the same root
CID (encryption draws a fresh salt and nonce per file, so encrypted builds
differ unless the randomness is injected through ``rng``).
"""

from __future__ import annotations

import builtins
import os
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field, replace
from operator import itemgetter
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bundlekit._gcpause import gc_paused
from bundlekit.bundle.buildcache import EncryptionCache
from bundlekit.bundle.buildcheck import CheckCache, Passed
from bundlekit.bundle.embeddings import check_buildable, embeddings_file, manifest_entry
from bundlekit.bundle.lineage import build_parents, files_digest, record_build
from bundlekit.bundle.share import SharePolicy, select_shared
from bundlekit.bundle.shardmemo import ShardMemo
from bundlekit.bundle.manifest import (
    ENC_SUFFIX,
    INDEX_PATH,
    MANIFEST_NAME,
    MEMORY_DIR,
    canonical_json,
    make_manifest,
    parse_created,
    validate_manifest,
)
from bundlekit.bundle.signature import SIGNATURE_NAME, ExternalSignature, signature_document
from bundlekit.car.writer import CarFileWriter
from bundlekit.crypto.threews import THREEWS_SCHEME, _threews_encrypt, threews_key_from_spec
from bundlekit.errors import BundleError, MemoryStoreError, UsageError
from bundlekit.ipld.cid import cid_to_str
from bundlekit.memory import Memory
from bundlekit.memory.device import refuse_device_memory
from bundlekit.memory.index import parse_index, render_index
from bundlekit.memory.naming import INDEX_NAME, TIMELINE_DIR
from bundlekit.unixfs.importer import Imported, Source, import_bytes, import_many, import_tree
from bundlekit.unixfs.profiles import Profile, get_profile

if TYPE_CHECKING:
    from bundlekit.crypto._keys import KeySpec
    from bundlekit.crypto.signing import Signer
    from bundlekit.memory import MemoryRecord

    #: A memory as a build sees it: parsed now, or known to its cache (``bundle.buildcheck``).
    IndexEntry = MemoryRecord | Passed

__all__ = [
    "COMPAT_FORMS",
    "SOURCE_DATE_EPOCH",
    "BuildOptions",
    "BundleResult",
    "build_bundle",
    "render_encrypted_index",
    "resolve_created",
]

SOURCE_DATE_EPOCH = "SOURCE_DATE_EPOCH"
#: Encrypted forms other than bundlekit-enc/1 that ``BuildOptions(compat=...)`` builds.
COMPAT_FORMS = ("three.ws",)


@dataclass
class BundleResult:
    """What a build produced: the root CID as bytes (``root_bytes``) and as text (``root_cid``), the manifest,
    the number of files under ``memory/`` (index included), the CAR's size in bytes and its path;
    ``manifest_cid`` is the CID of ``manifest.json`` (what a signature names), ``signer`` the
    identity that signed it (None when unsigned), ``memory_cid`` the CID of the ``memory/`` directory (the
    bundle's files: two bundles with the same one hold the same files)."""

    root_bytes: bytes
    manifest: dict[str, Any]
    files: int
    bytes: int
    car: Path
    paths: list[str] = field(default_factory=list)
    manifest_cid: builtins.bytes = b""
    signer: str | None = None
    memory_cid: builtins.bytes = b""

    @property
    def root_cid(self) -> str:
        """The root CID as text (``bafy...``)."""
        return cid_to_str(self.root_bytes)

    @property
    def root(self) -> builtins.bytes:
        """The old name of ``root_bytes`` (the binary CID), kept for existing callers."""
        return self.root_bytes

    @property
    def manifest_uri(self) -> str:
        """``ipfs://<root>/manifest.json``: what ``load_bundle`` and ``load_memory`` take."""
        return f"ipfs://{self.root_cid}/{MANIFEST_NAME}"


def resolve_created(
    created: datetime | None,
    *,
    env: dict[str, str] | None = None,
    clock: Callable[[], datetime] | None = None,
    content_time: Callable[[], datetime] | None = None,
) -> datetime:
    """The bundle's creation time.

    In order: ``created`` if given; else ``$SOURCE_DATE_EPOCH``; else
    ``clock()`` if a clock is injected; else ``content_time()`` (the builder
    passes the newest ``updated`` or timeline timestamp of the tree, so the
    same tree always gives the same root CID); else the Unix epoch.

    Raises ``UsageError`` for a ``SOURCE_DATE_EPOCH`` that is not an integer.
    """
    if created is not None:
        return created if created.tzinfo else created.replace(tzinfo=UTC)
    source = os.environ if env is None else env
    epoch = source.get(SOURCE_DATE_EPOCH)
    if epoch:
        if not epoch.strip().isdigit():
            raise UsageError(f"{SOURCE_DATE_EPOCH}={epoch[:40]!r} is not an integer number of seconds")
        return parse_created(epoch)
    if clock is not None:
        return clock()
    if content_time is not None:
        return content_time()
    return datetime.fromtimestamp(0, UTC)


def _timeline_shared(options: BuildOptions) -> bool:
    """Whether the timeline's newest time may date the bundle: not a shared bundle's (its newest event may
    be one it leaves out), dated by its memories alone."""
    return options.share is None


def newest_content_time(
    mem: Memory, records: Iterable[IndexEntry] | None = None, *, timeline: bool = True
) -> datetime:
    """The newest ``updated`` of any memory or ``ts`` of any timeline entry; the epoch for an empty tree.

    The default ``created`` of a bundle: it moves only when the content does,
    so building or pinning an unchanged tree twice gives the same root CID.
    ``records`` are the tree's memories when the caller has already listed them; without ``timeline`` the
    timeline does not count (a shared bundle that leaves it out tells nothing of it).
    """
    newest = datetime.fromtimestamp(0, UTC)
    for record in mem.list() if records is None else records:
        newest = max(newest, record.updated)
    for entry in mem.timeline(limit=1) if timeline else ():
        ts = entry.get("ts")
        if isinstance(ts, str):
            try:
                newest = max(newest, parse_created(ts))
            except UsageError:
                pass  # Memory.check() already vetted the timeline; an odd ts just does not count
    return newest


def render_encrypted_index(records: Sequence[IndexEntry], links: dict[str, str], *, redact: bool) -> bytes:
    """The plaintext index of an encrypted bundle.

    The layout of ``MEMORY.md`` (``bundlekit.memory.index.render_index``:
    title, sections by type, keys sorted, the same line limit), but each line
    links the encrypted file by CID the way three.ws's encrypted index does,
    ``- [<key>.md](ipfs://<cid>) — description``, so any gateway can serve it;
    with ``redact`` descriptions are left out. ``links`` maps each key to its
    encrypted file's CID string.
    """
    return render_index(records, links=links, redact=redact).encode("utf-8")


def file_cid(data: bytes, profile: Profile) -> bytes:
    """The CID ``data`` gets as a file under ``profile`` (nothing stored)."""

    return import_bytes(data, profile).cid


@dataclass(frozen=True)
class BuildOptions:
    """How a bundle is built: one value beside the tree, the CAR, the key and the signer; a new choice is a new
    field with a default.

    ``namespace`` defaults to the tree's namespace: a ``Memory``'s own
    (``Memory("memory", namespace="coach")`` builds a ``coach`` bundle), else
    the directory's name.
    ``profile`` names a UnixFS profile (default: ``profiles.DEFAULT_PROFILE``).
    ``created`` defaults to ``$SOURCE_DATE_EPOCH``, else ``clock()`` when one is
    injected, else the newest ``updated``/timeline time of the tree (so an
    unchanged tree always builds to the same root CID).
    With a key, ``redact_index`` leaves descriptions out of the plaintext index,
    and ``compat="three.ws"`` (with a wallet key) encrypts in the three.ws
    runtime's form instead (specs/encryption.md, "three.ws compatibility"):
    each file is base64(IV || AES-GCM ciphertext and tag) under the key of a
    signature of ``agent-3d:memory:v1:<namespace>``, and the index links each
    by CID, which the runtime's ``encrypted-ipfs`` loader follows. It is
    refused when the index cannot list every memory (the 200-line rule).
    ``parents`` default to the roots the tree remembers it was loaded or forked
    from (``bundle.lineage``); they go into the manifest's ``parents``.
    ``rng(n)`` is the source of randomness for the key salt and every file's
    salt and nonce prefix (default ``os.urandom``; tests inject it).
    ``progress(done, total)`` is called as each file is written into the CAR
    (the manifest and the index count as files).
    ``embeddings`` adds the vectors of the memories (``bundle/embeddings``;
    the tree's embedder, computed where its index lacks them), encrypted
    with the files when there is a ``key``.
    A memory file that does not parse is left out with a warning naming it,
    passed to ``warn`` (a given ``Memory`` warns through its own
    ``on_warning``); with ``strict`` it is a :class:`FrontmatterError` before
    anything is written.
    ``share`` makes a shared bundle (``bundle/share``): only the memories of its types (never one marked
    ``share: private``), the timeline only when it says so, the index, vectors and created time of those
    alone, and ``share`` in the manifest.
    ``manifest_version`` 1 (the default) writes the ``bundlekit/1`` manifest listing every file (what a plain
    ``https://.../manifest.json`` load needs); 2 a ``bundlekit/2`` one, whose size does not grow with the
    tree (``sync`` builds those: ``specs/bundle.md``, "Manifest").
    ``leave_out(cid)`` true for a block the CAR's reader holds already (``sync``: every pinner holds it,
    ``pinning.orchestrate.held_by_all``) writes a thin CAR without it; the root block is always written. A
    ``leave_out`` with a ``many(cids)`` method too (the set of those of ``cids`` it is true for) is asked of the
    files' blocks all at once.
    ``scratch_car``: the CAR is read back by this process and removed with its temporary directory (``sync``'s), so
    it is written atomically but not synced to the disk (``CarFileWriter(durable=False)``).
    ``keep_last`` leaves the tree's last root (``bundle.lineage``) as it is, its last build (root, parents, files
    digest) remembered all the same (``sync``: a root it builds becomes the tree's last once published).
    """

    namespace: str | None = None
    profile: str | None = None
    created: datetime | None = None
    redact_index: bool = False
    compat: str | None = None
    parents: Sequence[str] | None = None
    clock: Callable[[], datetime] | None = None
    rng: Callable[[int], bytes] | None = None
    progress: Callable[[int, int], None] | None = None
    embeddings: bool = False
    strict: bool = False
    warn: Callable[[str], None] | None = None
    share: SharePolicy | None = None
    manifest_version: int = 1
    leave_out: Callable[[bytes], bool] | None = None
    keep_last: bool = False
    scratch_car: bool = False


@gc_paused()  # bounded by the tree; nearly nothing it allocates is cyclic (bundlekit._gcpause)
def build_bundle(
    memory_dir: str | os.PathLike[str] | Memory,
    out_car: str | os.PathLike[str],
    *,
    key: KeySpec | None = None,
    sign: Signer | ExternalSignature | None = None,
    options: BuildOptions | None = None,
) -> BundleResult:
    """Build the bundle of the memory tree ``memory_dir`` into the CAR ``out_car``, as ``options`` say
    (``BuildOptions()`` when None).

    ``memory_dir`` is the tree's directory or a :class:`Memory` (a directory
    tree, or ``Memory(None)`` built from what it holds).
    With ``key`` the memory and timeline files are encrypted (``bundlekit-enc/1``,
    or ``options.compat``'s form).
    With ``sign`` (a ``crypto.signing.Signer``, or an ``ExternalSignature`` made
    elsewhere) ``signature.json`` is added beside the manifest (``specs/provenance.md``).

    Raises the tree's ``MemoryStoreError`` subclasses (bad key, frontmatter,
    a secret), ``DeviceMemoryError`` for device-bound memories (they never
    leave the machine), ``ProfileError``, ``UsageError``, ``CryptoError`` from the key,
    ``SignatureError`` for an external signature that does not cover the manifest,
    and the CAR writer's ``BundlekitError`` when the CAR cannot be written.
    The CAR appears only when the build succeeded (temp file, fsync, rename).
    A tree given as a directory is opened here and closed before the call returns (its index's connection
    closed then, not whenever a garbage collection finds it: the collector is paused for the build).
    """
    options = options or BuildOptions()
    mem = _open_tree(memory_dir, options.warn)
    try:
        return _build(mem, out_car, key, sign, options)
    finally:
        if mem is not memory_dir:
            mem.close()


def _build(
    mem: Memory, out_car: str | os.PathLike[str], key: KeySpec | None, sign: Signer | ExternalSignature | None,
    options: BuildOptions,
) -> BundleResult:
    """:func:`build_bundle` of the opened tree ``mem``."""
    _check_options(options, key)
    # Steps 1-3: validate the tree and take its files (index regenerated; a file that does not parse left out;
    # device-bound memories never leave the machine); a shared bundle: all below sees only it.
    tree_files, records, checks = _read_tree(mem, options)
    tree_files, vectors = _with_embeddings(mem, tree_files, options)
    ns = options.namespace or mem.namespace
    if not ns.strip():
        raise UsageError("the bundle needs a namespace; pass --namespace")
    prof = get_profile(options.profile)
    when = resolve_created(options.created, clock=options.clock,
                           content_time=lambda: newest_content_time(mem, records, timeline=_timeline_shared(options)))
    # Steps 4-6: the stored files (encrypted with a key), their CIDs, the index last.
    cache = (EncryptionCache(mem.root, partial=options.share is not None)
             if key is not None and options.compat is None else None)
    stored, encryption = _stored(tree_files, ns, key, options, cache)
    timeline = [path for path, _data in stored if path.startswith(f"{MEMORY_DIR}/timeline/")]
    imported = _with_index(mem, tree_files, records, stored, prof, key=key, options=options,
                           digests=checks.digests if checks is not None and key is None else None)
    # Step 7: the manifest (parents: bundle.lineage.build_parents); step 8: one tree into the CAR.
    files = {path: (imported[path].cid, len(data)) for path, data in stored}
    parents, digest = _lineage(mem, files, options)
    manifest = make_manifest(
        namespace=ns,
        created=when,
        profile=prof.name,
        files=files,
        timeline=timeline,
        encryption=encryption,
        parents=parents,
        embeddings=None if vectors is None else manifest_entry(vectors, encrypted=key is not None),
        version=options.manifest_version,
    )
    top = [(MANIFEST_NAME, import_bytes(canonical_json(_with_share(manifest, options.share)), prof))]
    manifest_cid = top[0][1].cid
    if sign is not None:  # step 7b: signature.json beside the manifest
        top.append((SIGNATURE_NAME, import_bytes(signature_document(manifest_cid, sign), prof)))
    root, memory_cid = _write_car(out_car, [*top, *imported.items()], prof,  # imported: stored's paths, in order
                                  options.progress, options.leave_out, mem.root, durable=not options.scratch_car)
    # a shared bundle is a part of the tree, not its last build: the tree's lineage stays as it was
    _remember(mem.root if options.share is None else None, root, (parents, digest), cache, (ns, encryption),
              last=not options.keep_last)
    if checks is not None:
        checks.save()
    return BundleResult(
        root_bytes=root,
        manifest=manifest,
        files=len(stored),
        bytes=Path(out_car).stat().st_size,
        car=Path(out_car),
        paths=sorted(path for path, _ in stored),
        manifest_cid=manifest_cid,
        signer=None if sign is None else sign.signer if isinstance(sign, ExternalSignature) else sign.identity,
        memory_cid=memory_cid,
    )


class _Checks:
    """A build's verdicts, saved into the tree's cache (``bundle.buildcheck``) once its CAR is written. A plain
    class: a dataclass costs ~0.4 ms of every build's start-up to define (issue 37)."""

    __slots__ = ("cache", "digests", "parsed")

    def __init__(self, cache: CheckCache, digests: dict[str, bytes], parsed: list[MemoryRecord]) -> None:
        self.cache, self.digests, self.parsed = cache, digests, parsed

    def save(self) -> None:
        self.cache.save(self.digests, self.parsed)


def _read_tree(mem: Memory, options: BuildOptions) -> tuple[list[tuple[str, bytes]], list[IndexEntry], _Checks | None]:
    """Steps 1-3: the tree's files sorted by path (``MEMORY.md`` regenerated) and an index entry per memory
    (sorted by key), validated, device-bound memories refused. A whole-tree build reads every file but checks
    and parses only those whose bytes its cache has not seen pass (``bundle.buildcheck``), and returns the
    verdicts to save; a shared bundle (``bundle/share``: all below sees only what it carries) checks all."""
    if options.share is not None:
        with mem.transaction(lock=False) as tx:  # the records of the very bytes packed
            tree_files, records = tx.contents(strict=options.strict)
        _check_is_memory_tree(mem, records)
        tree_files, records = select_shared(tree_files, records, options.share, options.warn)
        refuse_device_memory(records)
        return tree_files, list(records), None
    cache = CheckCache(mem.root)
    with mem.transaction(lock=False) as tx:
        checked = tx.checked(cache.known, strict=options.strict)
    parsed = [record for _name, _data, record in checked.found]
    entries: list[IndexEntry] = [*parsed, *cache.passed(name for name, _data in checked.unchanged)]
    entries.sort(key=lambda entry: entry.key)
    _check_is_memory_tree(mem, entries)
    refuse_device_memory(parsed)  # a file the cache vouches for passed it (its row was saved by a build)
    files = [(INDEX_NAME, render_index(entries).encode("utf-8"))]
    files += [(name, data) for name, data, _record in checked.found]
    files += checked.unchanged
    files += [(f"{TIMELINE_DIR}/{name}", data) for name, data in checked.days]
    files.sort(key=lambda item: item[0])
    return files, entries, _Checks(cache, checked.digests, parsed)


def _with_share(manifest: dict[str, Any], share: SharePolicy | None) -> dict[str, Any]:
    """``manifest`` with a shared bundle's ``share`` policy (validated again), unchanged without one."""
    if share is not None:
        manifest["share"] = share.manifest_entry()
        validate_manifest(manifest)
    return manifest


def _remember(
    tree: Path | None, root: bytes, lineage: tuple[list[str], str], cache: EncryptionCache | None,
    encryption: tuple[str, dict[str, Any] | None], *, last: bool = True,
) -> None:
    """After the CAR is written: the tree's last build (``bundle.lineage.record_build``: root, parents, files
    digest; with ``last``, the root as the tree's last root too) and its encrypted files (``bundle.buildcache``).
    Caches both: a tree they cannot be written in still builds."""
    namespace, params = encryption
    if cache is not None and params is not None:
        cache.save(namespace, params)
    if tree is not None:
        with suppress(MemoryStoreError):
            record_build(tree, root, *lineage, last=last)


def _lineage(mem: Memory, files: dict[str, tuple[bytes, int]], options: BuildOptions) -> tuple[list[str], str]:
    """The manifest's parents (the given ones, else ``bundle.lineage.build_parents``; none for a shared bundle,
    whose parents would lead a reader to the whole tree it came from) and the files' digest the tree
    remembers its build by."""
    digest = files_digest(files)
    if options.share is not None:
        return [], digest
    return (build_parents(mem.root, digest) if options.parents is None else list(options.parents)), digest


def _with_index(
    mem: Memory,
    tree_files: Sequence[tuple[str, bytes]],
    records: Sequence[IndexEntry],
    stored: list[tuple[str, bytes]],
    prof: Profile,
    *,
    key: KeySpec | None,
    options: BuildOptions,
    digests: Mapping[str, bytes] | None = None,
) -> dict[str, Imported]:
    """Steps 5-6: each stored file imported (its CID and blocks, hashed once: the CAR takes the blocks as they
    are; ``digests``, the SHA-256 of each plaintext tree file's bytes by tree path as the read took them,
    ``Checked.digests``, spare hashing them again); then the index, rendered last (an encrypted one links those
    CIDs), appended to ``stored``. Returns the imported files by bundle path, the index's included."""
    known, cut = digests or {}, len(MEMORY_DIR) + 1
    imported = dict(zip([path for path, _data in stored],
                        import_many([(data, known.get(path[cut:])) for path, data in stored], prof)))
    cids = {path: entry.cid for path, entry in imported.items()} if key is not None else {}  # an encrypted index's links
    index_bytes = _index_file(mem, tree_files, records, cids, encrypted=key is not None, redact=options.redact_index)
    if options.compat is not None and len(parse_index(index_bytes.decode("utf-8"))) < len(records):
        raise UsageError(
            f"the index lists only part of the {len(records)} memories (it stops at 200 lines) and three.ws "
            "reaches a file only through its index; build a smaller tree for --compat three.ws"
        )
    stored.append((INDEX_PATH, index_bytes))
    imported[INDEX_PATH] = import_bytes(index_bytes, prof)
    return imported


def _with_embeddings(
    mem: Memory, tree_files: list[tuple[str, bytes]], options: BuildOptions
) -> tuple[list[tuple[str, bytes]], dict[str, Any] | None]:
    """The tree's files plus its vectors file when ``options.embeddings`` (``bundle/embeddings``), and the
    vectors the manifest lists (None without)."""
    if not options.embeddings:
        return tree_files, None
    check_buildable(options.compat)
    extra, vectors = embeddings_file(mem, tree_files)
    return [*tree_files, extra], vectors


def _open_tree(memory_dir: str | os.PathLike[str] | Memory, warn: Callable[[str], None] | None) -> Memory:
    """The tree to build: the given ``Memory``, or one over the directory (which must exist) warning to ``warn``."""
    if isinstance(memory_dir, Memory):
        root_dir = memory_dir.root
        if root_dir is not None and not root_dir.is_dir():
            raise UsageError(
                f"memory tree {str(root_dir)!r} is not a directory; create it with `bundlekit memory init`"
            )
        return memory_dir
    root_dir = Path(memory_dir)
    if not root_dir.is_dir():
        raise UsageError(f"memory tree {str(root_dir)!r} is not a directory; create it with `bundlekit memory init`")
    return Memory(root_dir, on_warning=warn)  # names itself after the directory


def _check_options(options: BuildOptions, key: KeySpec | None) -> None:
    """The option combinations a build refuses (``UsageError``), before the tree is read."""
    namespace, redact_index, compat = options.namespace, options.redact_index, options.compat
    if compat is not None and compat not in COMPAT_FORMS:
        raise UsageError(f"unknown --compat {compat!r}; use one of {', '.join(COMPAT_FORMS)}")
    if compat is not None and key is None:
        raise UsageError("--compat three.ws is an encrypted form; add --encrypt and a wallet key option")
    if options.share is not None and options.parents:
        raise UsageError("a shared bundle carries no parents (they lead to the whole tree); leave them out")
    if redact_index and key is None:
        raise UsageError("--redact-index only applies to encrypted bundles; add a key option with --encrypt")
    if namespace is not None and (not namespace.strip() or any(ord(c) < 0x20 or ord(c) == 0x7F for c in namespace)):
        raise UsageError(
            f"namespace {namespace[:60]!r} is empty or holds a control character; "
            "pass a one-line name such as the agent's id"
        )


def _check_is_memory_tree(mem: Memory, records: Sequence[IndexEntry]) -> None:
    """Refuse a directory that is no memory tree at all (no index, no memories): ``pack`` is for those."""
    if mem.root is not None and not (mem.root / INDEX_NAME).is_file() and not records:
        raise UsageError(
            f"{str(mem.root)!r} is not a memory tree (no MEMORY.md, no memory files); "
            "create one with `bundlekit memory init`, or use `bundlekit pack` for any other directory"
        )


def _stored(
    tree_files: Sequence[tuple[str, bytes]], namespace: str, key: KeySpec | None, options: BuildOptions,
    cache: EncryptionCache | None,
) -> tuple[list[tuple[str, bytes]], dict[str, Any] | None]:
    """Step 4: the stored files and the encryption params, in the form ``options.compat`` names."""
    if options.compat is not None and key is not None:
        return _threews_files(tree_files, namespace, key, options.rng)
    return _stored_files(tree_files, namespace, key, options.rng, cache)


def _stored_files(
    tree_files: Sequence[tuple[str, bytes]],
    namespace: str,
    key: KeySpec | None,
    rng: Callable[[int], bytes] | None,
    cache: EncryptionCache | None = None,
) -> tuple[list[tuple[str, bytes]], dict[str, Any] | None]:
    """Every tree file but the index at its bundle path, encrypted when a key is given; the encryption params.

    One random source serves the bundle key and every file's salt and nonce
    prefix, so an injected ``rng`` makes the whole build reproducible. With the
    tree's ``cache`` (``bundle.buildcache``) the last build's bundle key is kept
    when ``key`` opens it, and an unchanged file keeps its ciphertext (and CID).
    """
    if key is None:
        return [(f"{MEMORY_DIR}/{path}", data) for path, data in tree_files if path != INDEX_NAME], None
    files = [(path, data) for path, data in tree_files if path != INDEX_NAME]
    source = rng or os.urandom
    cache = cache or EncryptionCache(None)
    named = [(f"{MEMORY_DIR}/{path}{ENC_SUFFIX}", data) for path, data in files]
    _bundle_key, encryption = cache.bundle_key(key, namespace, source, {path: len(data) for path, data in named})
    stored = [(bundle_path, cache.encrypt(data, bundle_path, source)) for bundle_path, data in named]
    return stored, encryption


def _threews_files(
    tree_files: Sequence[tuple[str, bytes]], namespace: str, key: KeySpec, rng: Callable[[int], bytes] | None
) -> tuple[list[tuple[str, bytes]], dict[str, Any]]:
    """Every tree file but the index, encrypted in the three.ws form for agent ``namespace``; the params.

    The stored file is the runtime's text form (ASCII base64), at the same
    ``.enc`` path as a bundlekit-enc/1 file. ``KeySourceError`` for a key that
    is not a wallet's.
    """
    tkey = threews_key_from_spec(key, namespace)
    source = rng or os.urandom
    stored = [
        (f"{MEMORY_DIR}/{path}{ENC_SUFFIX}", _threews_encrypt(data, tkey, source).encode("ascii"))
        for path, data in tree_files
        if path != INDEX_NAME
    ]
    return stored, {"scheme": THREEWS_SCHEME, "key_source": "signature", "agent_id": namespace}


def _index_file(
    mem: Memory,
    tree_files: Sequence[tuple[str, bytes]],
    records: Sequence[IndexEntry],
    cids: dict[str, bytes],
    *,
    encrypted: bool,
    redact: bool,
) -> bytes:
    """The stored ``MEMORY.md``: as regenerated, or (encrypted) linking each stored file by its CID."""
    if encrypted:
        links: dict[str, str] = {}
        for path, cid in cids.items():
            name = path[len(MEMORY_DIR) + 1 :]
            if "/" not in name and name.endswith(".md" + ENC_SUFFIX):
                links[name[: -len(".md" + ENC_SUFFIX)]] = cid_to_str(cid)
        return render_encrypted_index(records, links, redact=redact)
    for path, data in tree_files:
        if path == INDEX_NAME:
            return data
    where = str(mem.root) if mem.root is not None else "in memory"
    raise BundleError(f"the memory tree {where!r} produced no MEMORY.md index")


def _write_car(
    out_car: str | os.PathLike[str],
    files: list[tuple[str, Imported]],
    prof: Profile,
    progress: Callable[[int, int], None] | None = None,
    leave_out: Callable[[bytes], bool] | None = None,
    tree: Path | None = None,
    *,
    durable: bool = True,
) -> tuple[bytes, bytes]:
    """The imported ``files`` as one tree straight into the CAR (their blocks as imported: the CIDs the manifest
    lists are the ones written; with ``leave_out``, only the blocks it is false for, and the root, and the
    unchanged sub-shards of ``memory/`` are taken from the ``tree``'s memo, ``bundle.shardmemo``, not written
    either: the reader holds them); the root CID and the ``memory/`` directory's. Without ``durable`` the CAR is not
    synced to the disk (``BuildOptions.scratch_car``)."""
    memo = None if leave_out is None else ShardMemo(tree, leave_out)
    ordered = sorted(files, key=itemgetter(0))
    with CarFileWriter(Path(out_car), durable=durable) as writer:
        sources: list[tuple[str, Source]] = list(ordered) if progress is None else _reporting(ordered, progress)
        sink = writer if leave_out is None else _Thin(writer, leave_out)
        result = import_tree(sources, sink, prof, memo=memo, list_files=False)
        if isinstance(sink, _Thin):
            sink.keep_root(result.root)
        writer.finish(result.root)
    if memo is not None:
        memo.save()
    if progress is not None:
        progress(len(ordered), len(ordered))
    memory = next((entry.cid for entry in reversed(result.entries) if entry.path == MEMORY_DIR), b"")
    return result.root, memory


class _Thin:
    """A block sink into ``writer`` that leaves out the blocks ``leave_out`` is true for, but the root: the importer
    writes the root last, so the last block left out is kept until :meth:`keep_root` says whether it was it."""

    def __init__(self, writer: CarFileWriter, leave_out: Callable[[bytes], bool]) -> None:
        self._writer, self._leave_out = writer, leave_out
        self._last: tuple[bytes, bytes] | None = None

    def put(self, cid: bytes, data: bytes) -> None:
        if self._leave_out(cid):
            self._last = (cid, data)
            return
        self._last = None
        self._writer.put(cid, data)

    def put_many(self, blocks: list[tuple[bytes, bytes]]) -> None:
        """:meth:`put` of each of ``blocks`` (the importer's batch of files imported already), ``leave_out`` asked of
        them all at once where it can be (its ``many(cids)``, the set of those it is true for:
        ``pinning.orchestrate.HeldByAll``)."""
        if not blocks:
            return
        many = getattr(self._leave_out, "many", None)
        held: Container[bytes] = many([cid for cid, _data in blocks]) if callable(many) else _Asking(self._leave_out)
        write = self._writer.put
        for cid, data in blocks:
            if cid not in held:
                write(cid, data)
        last = blocks[-1]
        self._last = last if last[0] in held else None

    def keep_root(self, root: bytes) -> None:
        if self._last is not None and self._last[0] == root:
            self._writer.put(*self._last)


class _Asking:
    """``leave_out`` asked one CID at a time, as a container of the CIDs it is true for."""

    __slots__ = ("_leave_out",)

    def __init__(self, leave_out: Callable[[bytes], bool]) -> None:
        self._leave_out = leave_out

    def __contains__(self, cid: object) -> bool:
        return isinstance(cid, bytes) and self._leave_out(cid)


def _reporting(files: list[tuple[str, Imported]], progress: Callable[[int, int], None]) -> list[tuple[str, Source]]:
    """``files`` as sources that report ``progress(done, total)`` as the importer reaches each."""
    total = len(files)
    opened = 0

    def report() -> None:
        nonlocal opened
        progress(opened, total)
        opened += 1

    return [(path, replace(entry, opened=report)) for path, entry in files]
