"""bundlekit: agent memory as content-addressed, optionally encrypted IPFS bundles.

The public API is re-exported here. Everything but the error tree is loaded
on first attribute access (PEP 562), so ``import bundlekit`` and
``bundlekit --help`` stay fast: the YAML parser, the crypto backend, httpx
and boto3 are imported only by the code that needs them.

The flow, one way and back::

    Memory (tree) -> build_bundle -> import_tree/import_path (blocks, CIDs)
        -> CarFileWriter / BlockStore -> Pinner (create_pinner, pin_all)
    load_bundle / load_memory (ipfs://, gateway URL, CAR) -> verified blocks -> Memory

The layers, lowest first (DEVELOPERS.md's module map has each module's job): ``errors`` (the error
tree), ``_fs`` (the one atomic write), ``_lazy`` and ``_closing``, ``_redact`` (the one redaction
of every output) with ``_secrets`` (the secret rules), ``_bounds``, ``_signals``, ``_terminal``, ``_marks`` (the marks those checks look for, in one pass; ``_textscan`` its compiled scan), ``_packscan`` (a block store pack index checked in one pass, compiled), ``_plugins`` (a third party read for a listing), ``_gcpause``;
``ipld``, ``unixfs``, ``car``, ``blockstore`` (with ``storereport``: what ``store verify`` found), ``net``, ``pinning``, ``gateway``, ``embed``, ``memory``,
``crypto``, ``names``, ``hub`` (the apps ``serve`` mounts over its store), ``bundle``, ``convert`` (with ``seed``: memories from an account),
``flows`` (with ``syncer``, the sync's old name), ``mcp_server``, ``ui``, ``cli`` (with ``__main__``:
``python -m bundlekit``) and this module. The extension points
(entry-point groups and their contracts) are listed in ``extension_points``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bundlekit import errors
from bundlekit._lazy import lazy_getattr
from bundlekit.errors import *  # noqa: F403  (the error tree is part of the public API)

__version__ = "0.1.0"

# public name -> module that defines it
_LAZY: dict[str, str] = {
    # memory tree
    "Memory": "bundlekit.memory",
    "MemoryRecord": "bundlekit.memory",
    "RecallHit": "bundlekit.memory",
    "parse_memory_file": "bundlekit.memory",
    "render_memory_file": "bundlekit.memory",
    # content addressing
    "Profile": "bundlekit.unixfs.profiles",
    "PROFILES": "bundlekit.unixfs.profiles",
    "DEFAULT_PROFILE": "bundlekit.unixfs.profiles",
    "get_profile": "bundlekit.unixfs.profiles",
    "ImportResult": "bundlekit.unixfs.importer",
    "ImportedEntry": "bundlekit.unixfs.importer",
    "import_path": "bundlekit.unixfs.importer",
    "import_tree": "bundlekit.unixfs.importer",
    "import_file": "bundlekit.unixfs.importer",
    "CarWriter": "bundlekit.car",
    "CarFileWriter": "bundlekit.car",
    "CarIndex": "bundlekit.car",
    "read_car": "bundlekit.car",
    "walk_dag": "bundlekit.ipld.walk",
    "verify_car": "bundlekit.car",
    "UnixFSReader": "bundlekit.unixfs.reader",
    "unpack_car": "bundlekit.car",
    "UnpackOptions": "bundlekit.unixfs.unpack",
    "cid_to_str": "bundlekit.ipld.cid",
    "parse_cid": "bundlekit.ipld.cid",
    # bundles
    "BuildOptions": "bundlekit.bundle.build",
    "BundleResult": "bundlekit.bundle.build",
    "build_bundle": "bundlekit.bundle.build",
    "LoadOptions": "bundlekit.bundle.load",
    "LoadResult": "bundlekit.bundle.load",
    "load_bundle": "bundlekit.bundle.load",
    "load_memory": "bundlekit.bundle.load",
    "Gateways": "bundlekit.bundle.sources",
    "LocalStore": "bundlekit.bundle.sources",
    "CarFile": "bundlekit.bundle.sources",
    "fork_bundle": "bundlekit.bundle.fork",
    "diff_sources": "bundlekit.bundle.diff",
    "BlockStore": "bundlekit.blockstore",
    "serve_in_thread": "bundlekit.gateway.server",
    # encryption
    "KeySpec": "bundlekit.crypto",
    "SignatureKey": "bundlekit.crypto",
    "PassphraseKey": "bundlekit.crypto",
    "RawKeyFile": "bundlekit.crypto",
    "PrivateKeySigner": "bundlekit.crypto",
    "signature_message": "bundlekit.crypto",
    # publishing
    "Pinner": "bundlekit.pinning",
    "PinResult": "bundlekit.pinning",
    "PinReport": "bundlekit.pinning",
    "available_pinners": "bundlekit.pinning",
    "create_pinner": "bundlekit.pinning",
    "pin_all": "bundlekit.pinning",
    # interop
    "import_from": "bundlekit.convert",
    "export_to": "bundlekit.convert",
    "load_layered": "bundlekit.bundle.layers",
    # provenance
    "Ed25519Signer": "bundlekit.crypto.signing",
    "EthSigner": "bundlekit.crypto.signing",
    "ExternalSignature": "bundlekit.bundle.signature",
    "walk_lineage": "bundlekit.bundle.log",
    # many writers
    "merge": "bundlekit.bundle.merge",
    "MergeResult": "bundlekit.bundle.merge",
    "sync": "bundlekit.flows.sync",
    "SyncReport": "bundlekit.flows.sync",
}

# Spelled out (not built from errors.__all__ and _LAZY) so linters and type checkers see it;
# tests/test_public_api.py checks it equals that union, in that order (so not sorted).
__all__ = [  # noqa: RUF022
    "errors",
    "__version__",
    "BundlekitError",
    "UsageError",
    "CIDError",
    "ProfileError",
    "SourceError",
    "CodecError",
    "CARError",
    "CARFileError",
    "VerificationError",
    "BlockMismatch",
    "MissingBlock",
    "UnsupportedBlock",
    "DAGLimitExceeded",
    "IntegrityError",
    "SignatureError",
    "UnsafePathError",
    "PathNotFound",
    "RecordLimitError",
    "ImportLimitError",
    "ImportStopped",
    "MemoryStoreError",
    "InvalidKeyError",
    "FrontmatterError",
    "MemoryFileUnusable",
    "MemoryFileTooLarge",
    "MemoryFileUnreadable",
    "ConflictError",
    "MemoryNotFoundError",
    "SecretDetectedError",
    "LockTimeoutError",
    "BundleError",
    "ManifestError",
    "LoadError",
    "CryptoError",
    "KeySourceError",
    "WrongKeyError",
    "DecryptionError",
    "HeaderDecryptionError",
    "PayloadDecryptionError",
    "PinError",
    "PinnerNotFound",
    "PinnerNotConfigured",
    "PinAuthError",
    "PinRateLimited",
    "PinUnavailable",
    "PinRejected",
    "PinServiceSunset",
    "CIDMismatch",
    "Cancelled",
    "NameMovedError",
    "ConvertError",
    "DeviceMemoryError",
    "EmbedderError",
    "SeedError",
    "Memory",
    "MemoryRecord",
    "RecallHit",
    "parse_memory_file",
    "render_memory_file",
    "Profile",
    "PROFILES",
    "DEFAULT_PROFILE",
    "get_profile",
    "ImportResult",
    "ImportedEntry",
    "import_path",
    "import_tree",
    "import_file",
    "CarWriter",
    "CarFileWriter",
    "CarIndex",
    "read_car",
    "walk_dag",
    "verify_car",
    "UnixFSReader",
    "unpack_car",
    "UnpackOptions",
    "cid_to_str",
    "parse_cid",
    "BuildOptions",
    "BundleResult",
    "build_bundle",
    "LoadOptions",
    "LoadResult",
    "load_bundle",
    "load_memory",
    "Gateways",
    "LocalStore",
    "CarFile",
    "fork_bundle",
    "diff_sources",
    "BlockStore",
    "serve_in_thread",
    "KeySpec",
    "SignatureKey",
    "PassphraseKey",
    "RawKeyFile",
    "PrivateKeySigner",
    "signature_message",
    "Pinner",
    "PinResult",
    "PinReport",
    "available_pinners",
    "create_pinner",
    "pin_all",
    "import_from",
    "export_to",
    "load_layered",
    "Ed25519Signer",
    "EthSigner",
    "ExternalSignature",
    "walk_lineage",
    "merge",
    "MergeResult",
    "sync",
    "SyncReport",
]


__getattr__ = lazy_getattr(__name__, _LAZY)


def __dir__() -> list[str]:
    return sorted(__all__)


if TYPE_CHECKING:  # pragma: no cover - static view of the lazy names for type checkers
    from bundlekit.blockstore import BlockStore
    from bundlekit.bundle.build import BuildOptions, BundleResult, build_bundle
    from bundlekit.bundle.diff import diff_sources
    from bundlekit.bundle.fork import fork_bundle
    from bundlekit.bundle.layers import load_layered
    from bundlekit.bundle.load import LoadOptions, LoadResult, load_bundle, load_memory
    from bundlekit.bundle.log import walk_lineage
    from bundlekit.bundle.merge import MergeResult, merge
    from bundlekit.bundle.sources import CarFile, Gateways, LocalStore
    from bundlekit.bundle.signature import ExternalSignature
    from bundlekit.car.extract import unpack_car
    from bundlekit.car.index import CarIndex
    from bundlekit.car.reader import read_car
    from bundlekit.car.verify import verify_car
    from bundlekit.car.writer import CarFileWriter, CarWriter
    from bundlekit.convert import export_to, import_from
    from bundlekit.crypto._keys import (
        KeySpec,
        PassphraseKey,
        PrivateKeySigner,
        RawKeyFile,
        SignatureKey,
        signature_message,
    )
    from bundlekit.crypto.signing import Ed25519Signer, EthSigner
    from bundlekit.gateway.server import serve_in_thread
    from bundlekit.ipld.cid import cid_to_str, parse_cid
    from bundlekit.ipld.walk import walk_dag
    from bundlekit.memory import Memory, MemoryRecord, RecallHit, parse_memory_file, render_memory_file
    from bundlekit.pinning.orchestrate import PinReport, pin_all
    from bundlekit.pinning.protocol import Pinner, PinResult
    from bundlekit.pinning.registry import available_pinners, create_pinner
    from bundlekit.flows.sync import SyncReport, sync
    from bundlekit.unixfs.importer import ImportedEntry, ImportResult, import_file, import_path, import_tree
    from bundlekit.unixfs.profiles import DEFAULT_PROFILE, PROFILES, Profile, get_profile
    from bundlekit.unixfs.reader import UnixFSReader
    from bundlekit.unixfs.unpack import UnpackOptions
