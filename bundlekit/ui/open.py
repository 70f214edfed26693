"""``bundlekit open URI``: one bundle, its manifest read first, then its verified blocks as the interface's source.

The bundle is opened as ``bundlekit load`` opens it (``bundle.load.bundle_blocks``:
the same sources in the same order, every block hashed against its CID) and
its manifest is read and validated before anything else: a DAG that is not a
bundle (a 300 MB file, a CAR with no ``manifest.json``) is refused having cost
its root block and at most the manifest's limit, and one whose files claim more
than ``max_bytes`` is refused before any of them is fetched.

Then a local CAR is served as it is (``CarFileSource`` indexes and verifies the
user's own file in place). A bundle fetched from ``ipfs://`` or a gateway URL is
walked from the root with the usual DAG limits and held in memory
(``MemorySource``), never written to a temporary file: an encrypted bundle's
index and names are plaintext, and nothing of it may outlive the process. The
walk stops past the bytes the manifest accounts for (its files, the manifest,
a signature and the directory nodes, :func:`_walk_allowance`), so a bundle root
that also links a large foreign file cannot make ``open`` fetch it. A plain
``https://.../manifest.json`` is not content-addressed, so there are no blocks
to serve: it is refused with a usage error.
"""

from __future__ import annotations

from bundlekit.bundle.load import BundleBlocks, LoadOptions, bundle_blocks
from bundlekit.bundle.manifest import claimed_bytes
from bundlekit.bundle.sources import BlockSource
from bundlekit.bundle.sources import gateway_source
from bundlekit.bundle.signature import MAX_SIGNATURE_BYTES
from bundlekit.errors import DAGLimitExceeded, LoadError, MissingBlock, UsageError
from bundlekit.gateway.sources import CarFileSource, MemorySource, ServedBlocks
from bundlekit.ipld.cid import cid_to_str
from bundlekit.ipld.walk import walk_dag
from bundlekit.net.fetch import parse_uri

__all__ = ["FETCHED_MAX_BYTES", "LoadOptions", "gateway_source", "open_bundle"]

# A fetched bundle is held in memory while it is shown: its files may claim this many bytes together
# (``open --max-bytes``); the interface reads at most 32 MiB of one bundle anyway (``model.MAX_SHOWN_BUNDLE``).
FETCHED_MAX_BYTES = 512 * 1024 * 1024

# Directory and file-tree nodes a bundle needs beside its files' bytes: a fixed
# allowance plus a share of the files (a link costs about 40 bytes per 256 KiB chunk,
# a directory entry about 100 bytes per file).
_NODE_ALLOWANCE = 16 * 1024 * 1024
_NODE_SHARE = 64


def open_bundle(
    uri: str, *, source: BlockSource | None = None, options: LoadOptions | None = None
) -> tuple[ServedBlocks, bytes]:
    """The verified blocks of the bundle at ``uri`` as a block source to serve, and its root CID.

    The bundle is fetched from ``source`` with ``options`` (``load_bundle``'s; ``LoadOptions(max_bytes=
    FETCHED_MAX_BYTES)`` when None): ``max_bytes`` bounds what the files of a fetched bundle (held in
    memory) may claim together; a local CAR, served from its file, is bounded by the load limit
    (``DEFAULT_MAX_BYTES``) whatever ``options`` say.

    Raises ``UsageError`` (bad URI, plain HTTPS manifest, no gateway),
    ``ManifestError`` (not a bundle), ``LoadError`` (a block no source has, or
    files claiming more than ``max_bytes``), ``BlockMismatch`` when bytes do not
    match their CID, ``DAGLimitExceeded`` (a DAG past the walk limits or past
    what the manifest accounts for).
    """
    target = parse_uri(uri)
    if target.kind == "https":
        raise UsageError(
            f"{uri[:200]!r} is a plain manifest URL, not content-addressed: `bundlekit open` shows bundles by "
            "CID; give ipfs://CID, a gateway URL (https://host/ipfs/CID) or a CAR file"
        )
    if target.kind == "car":
        assert target.car is not None
        with bundle_blocks(uri) as bundle:  # one root, a manifest, before the full index
            root = bundle.root
        return CarFileSource(target.car), root
    options = options or LoadOptions(max_bytes=FETCHED_MAX_BYTES)
    with bundle_blocks(uri, source=source, options=options) as bundle:
        blocks = _fetch_all(bundle)
    return MemorySource(blocks, [bundle.root], "fetched"), bundle.root


def _walk_allowance(bundle: BundleBlocks) -> int:
    """The bytes a bundle's DAG may hold: its files as the manifest claims them, the manifest, a signature, nodes."""
    files = claimed_bytes(bundle.manifest)
    return files + files // _NODE_SHARE + bundle.manifest_size + MAX_SIGNATURE_BYTES + _NODE_ALLOWANCE


def _fetch_all(bundle: BundleBlocks) -> dict[bytes, bytes]:
    """Every block under the root, verified (the getter hashes each), held in memory up to the allowance."""
    allowance = _walk_allowance(bundle)
    blocks: dict[bytes, bytes] = {}
    held = 0
    try:
        for cid, data in walk_dag(bundle.root, bundle.get, verify=False):
            held += len(data)
            if held > allowance:
                raise DAGLimitExceeded(
                    f"{cid_to_str(bundle.root)} holds more than the {allowance} bytes its manifest accounts for; "
                    "refusing to fetch the rest (it links more than a bundle's files)"
                )
            blocks[cid] = data
    except MissingBlock as exc:  # no source could supply a block: unavailable (exit 1, as load), not altered
        detail = exc.__cause__ if exc.__cause__ is not None else exc  # the fetcher's reason, when the walk wraps it
        raise LoadError(
            f"cannot fetch {cid_to_str(bundle.root)}: {detail}; check the CID or try another --gateway"
        ) from exc
    return blocks
