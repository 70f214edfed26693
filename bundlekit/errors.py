"""The bundlekit error tree.

Every error bundlekit raises on purpose is a ``BundlekitError``. Errors from
libraries and services are translated at the boundary (``raise X(...) from exc``)
and never leak raw. Messages say what happened, to what, and what to do next;
they never contain a secret (token, key, signature, passphrase).

The CLI maps each class to the exit code in its ``exit_code`` attribute, the
codes README promises ("Output and exit codes"): 1 general, 2 usage (bad
arguments, or settings the user must supply: a key source, a pinner's name or
its environment variables), 3 verification, integrity or wrong key (content
that does not match its address, a malformed or truncated CAR or block, a key
that does not open the bundle), 4 publishing; 130 is Ctrl-C, set by the CLI
itself. A subclass that belongs to another class of failure than its parent
says so below.

::

    BundlekitError                  anything bundlekit raises on purpose (exit 1)
    ├── UsageError                  bad arguments or options given to an API or command (exit 2)
    ├── CIDError                    a CID string or bytes that cannot be parsed
    ├── ProfileError                unknown UnixFS profile or invalid override
    ├── SourceError                 an input file or directory that cannot be read or imported
    ├── CodecError                  malformed dag-pb, UnixFS or IPNS record data (exit 3)
    ├── CARError                    malformed or truncated CAR stream (exit 3)
    │   └── CARFileError            the CAR file cannot be created, opened or written: an OS error (exit 1)
    ├── VerificationError           content does not verify (exit 3)
    │   ├── BlockMismatch           a block's bytes do not hash to its CID
    │   ├── MissingBlock            a block the DAG needs is absent
    │   ├── UnsupportedBlock        unknown codec or hash function, or block over the size limit
    │   ├── DAGLimitExceeded        a walk limit hit: depth, links, visits, entries, bytes (hostile, reused or cyclic DAG)
    │   ├── IntegrityError          a file's bytes do not match the CID a manifest lists
    │   └── SignatureError          a manifest signature or IPNS record that does not verify, or the wrong signer
    ├── UnsafePathError             a link name that would escape or corrupt an output directory
    ├── PathNotFound                a path that does not exist inside a UnixFS DAG
    ├── RecordLimitError            the block store keeps IPNS records for its limit of names: a new name is refused
    ├── ImportLimitError            a CAR holds more blocks than one import of the block store takes
    │   └── ImportStopped           an import ended before its next block: the server that ran it is stopping
    ├── MemoryStoreError            memory tree problems
    │   ├── InvalidKeyError         a memory key that is not a portable file name
    │   ├── FrontmatterError        missing, malformed or invalid frontmatter
    │   │   └── MemoryFileUnusable  a memory file left out as broken without being parsed (both below)
    │   │       ├── MemoryFileTooLarge    a memory file over the size bound (``memory.filesize``): never read whole
    │   │       └── MemoryFileUnreadable  a memory file the OS refuses to read (EACCES, EIO, ...)
    │   ├── ConflictError           expected_revision is stale
    │   ├── MemoryNotFoundError     no memory with that key
    │   ├── SecretDetectedError     content matches a credential pattern
    │   └── LockTimeoutError        the tree lock could not be taken in time
    ├── BundleError                 bundle layout or manifest problems
    │   ├── ManifestError           manifest missing, malformed or of an unknown format
    │   └── LoadError               a bundle could not be retrieved from any source
    ├── CryptoError                 encryption layer (says little on purpose)
    │   ├── KeySourceError          no usable key: missing env var, bad key file, bad signature shape (exit 2)
    │   ├── WrongKeyError           the key does not match the bundle's key commitment (exit 3)
    │   └── DecryptionError         a ciphertext failed authentication: tampered, truncated, moved (exit 3)
    │       ├── HeaderDecryptionError   an encrypted file's header is malformed or does not authenticate
    │       └── PayloadDecryptionError  a chunk of an encrypted file does not authenticate
    ├── PinError                    publishing failed (exit 4)
    │   ├── PinnerNotFound          no pinner registered under that name (exit 2)
    │   ├── PinnerNotConfigured     a pinner's settings (env vars) are missing (exit 2)
    │   ├── PinAuthError            the service refused our credentials (never retried)
    │   ├── PinRateLimited          429 after all retries
    │   ├── PinUnavailable          connection errors, timeouts, 5xx after all retries
    │   ├── PinRejected             the service refused the request (4xx other than auth)
    │   ├── PinServiceSunset        the service no longer accepts uploads (never retried)
    │   ├── CIDMismatch             the service reports a CID different from our root
    │   └── Cancelled               the run was interrupted (Ctrl-C): an upload stops at its next read of the CAR
    ├── NameMovedError              an IPNS name moved past the record a publish was based on: another writer (exit 4)
    ├── ConvertError                a foreign memory format cannot be read or written
    │   └── DeviceMemoryError       device-bound memory asked to leave its machine
    ├── EmbedderError               an embedder that cannot embed: its model files, or its service's answer
    └── SeedError                   an account a seeder reads cannot be read: its service's answer, its limits
"""

from __future__ import annotations

# In the drawing's order, not sorted: tests/architecture/test_error_tree.py checks the two agree.
__all__ = [  # noqa: RUF022
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
]


class BundlekitError(Exception):
    """Base of every error bundlekit raises on purpose."""

    exit_code = 1


class UsageError(BundlekitError):
    """Bad arguments or options given to an API call or command."""

    exit_code = 2


class CIDError(BundlekitError, ValueError):
    """A CID string or byte string that cannot be parsed."""


class ProfileError(BundlekitError, ValueError):
    """An unknown UnixFS profile name or an invalid override."""


class SourceError(BundlekitError):
    """An input file or directory that cannot be read or imported."""


class CodecError(BundlekitError, ValueError):
    """Malformed dag-pb, UnixFS or IPNS record data (content that cannot be what it claims to be: exit 3)."""

    exit_code = 3


class CARError(BundlekitError):
    """A malformed or truncated CAR stream (an integrity failure: exit 3)."""

    exit_code = 3


class CARFileError(CARError):
    """The CAR file itself cannot be created, opened or written (permissions, a full disk).

    An operating-system failure, not a statement about the CAR's content: a general error (exit 1).
    """

    exit_code = 1


class VerificationError(BundlekitError):
    """Content does not verify against its content address."""

    exit_code = 3


class BlockMismatch(VerificationError):
    """A block's bytes do not hash to the CID it was stored or sent under."""


class MissingBlock(VerificationError):
    """A block the DAG needs is not available."""


class UnsupportedBlock(VerificationError):
    """A block with an unknown codec or hash function, or over the size limit."""


class DAGLimitExceeded(VerificationError):
    """A walk limit was hit: depth, links, block visits, entries or content bytes (``ipld.walk.WalkLimits``)."""


class IntegrityError(VerificationError):
    """A file's bytes do not match the CID its manifest lists for it."""


class SignatureError(VerificationError):
    """A manifest signature or IPNS record that does not verify, or a signer other than the expected ones."""


class UnsafePathError(BundlekitError):
    """A link name that would escape or corrupt an output directory."""


class PathNotFound(BundlekitError, LookupError):
    """A path that does not exist inside a UnixFS DAG (no such entry, or a file where a directory was needed)."""


class RecordLimitError(BundlekitError):
    """``BlockStore.put_record`` with ``max_names``: the record is of a new name and the store keeps records for
    that many (the routing API's bound on what a client may make it keep)."""


class ImportLimitError(BundlekitError):
    """``BlockStore.import_car`` with ``max_blocks``: the CAR holds more blocks than the caller takes from one
    import."""


class ImportStopped(ImportLimitError):
    """Raised by an ``import_reporting`` ``admit`` whose server is stopping: the blocks of the batch under way
    are removed, the ones before it stay, unpinned, for ``gc``."""


class MemoryStoreError(BundlekitError):
    """A problem with a memory tree."""


class InvalidKeyError(MemoryStoreError, ValueError):
    """A memory key that is not a portable file name."""


class FrontmatterError(MemoryStoreError, ValueError):
    """Missing, malformed or invalid frontmatter in a memory file."""


class MemoryFileUnusable(FrontmatterError):
    """A memory file that cannot be carried, found without parsing it: returned in place of its bytes by every
    reader of many files, so one such file is one file listed as broken and left out with a warning naming it
    (``--strict``: an error), as a file that does not parse is. Consumers test this base, never one kind."""


class MemoryFileTooLarge(MemoryFileUnusable):
    """A memory file larger than a memory may be (``memory.filesize.MAX_MEMORY_BYTES``): read no further than
    the bound, listed as broken like a file that does not parse."""


class MemoryFileUnreadable(MemoryFileUnusable):
    """A memory file that exists but whose bytes the OS refuses (permission denied, an I/O error, ...): listed
    as broken like a file that does not parse. (A link or a directory under a memory's name is not this: the
    tree's shape is refused, ``MemoryStoreError``.)"""


class ConflictError(MemoryStoreError):
    """A write carried an expected revision that is no longer current."""


class MemoryNotFoundError(MemoryStoreError, LookupError):
    """No memory exists under the given key."""


class SecretDetectedError(MemoryStoreError):
    """Content matches a credential pattern; the message names the rule and line, never the secret.

    ``finding`` is that naming alone (where, line, rule), without the advice the
    message goes on with, for a caller whose user has other choices (``fork``).
    """

    def __init__(self, message: str, *, finding: str | None = None) -> None:
        super().__init__(message)
        self.finding = message if finding is None else finding


class LockTimeoutError(MemoryStoreError):
    """The memory tree's lock could not be taken in time."""


class BundleError(BundlekitError):
    """A bundle layout or manifest problem."""


class ManifestError(BundleError):
    """A manifest that is missing, malformed, or of an unknown format."""


class LoadError(BundleError):
    """A bundle could not be retrieved from any source."""


class CryptoError(BundlekitError):
    """Base of the encryption layer's errors. Messages say little on purpose."""


class KeySourceError(CryptoError):
    """No usable key: a missing environment variable, a bad key file, a malformed signature.

    A setting the user must fix before running again, so a usage error (exit 2).
    """

    exit_code = 2


class WrongKeyError(CryptoError):
    """The key does not match the bundle's key commitment (exit 3)."""

    exit_code = 3


class DecryptionError(CryptoError):
    """A ciphertext failed authentication: tampered, truncated, reordered or moved (exit 3)."""

    exit_code = 3


class HeaderDecryptionError(DecryptionError):
    """An encrypted file's header is malformed or does not authenticate (tampered, moved, other key)."""


class PayloadDecryptionError(DecryptionError):
    """A chunk of an encrypted file does not authenticate (tampered, truncated, reordered, dropped)."""


class PinError(BundlekitError):
    """Publishing to a pinning service failed."""

    exit_code = 4


class PinnerNotFound(PinError):
    """No pinner is registered under the requested name: a usage error (exit 2), nothing was published."""

    exit_code = 2


class PinnerNotConfigured(PinError):
    """A pinner's required settings (usually environment variables) are missing.

    A setting the user must supply, checked before any upload: a usage error (exit 2).
    """

    exit_code = 2


class PinAuthError(PinError):
    """The service refused our credentials. Never retried."""


class PinRateLimited(PinError):
    """The service kept answering 429 after every retry."""


class PinUnavailable(PinError):
    """Connection errors, timeouts or 5xx answers after every retry."""


class PinRejected(PinError):
    """The service refused the request itself (a 4xx other than auth)."""


class PinServiceSunset(PinError):
    """The service no longer accepts uploads. Never retried."""


class CIDMismatch(PinError):
    """The service reports a CID different from the root we computed."""


class Cancelled(PinError):
    """The run was interrupted (Ctrl-C): an upload stops at its next read of the CAR (``pinning.pin_all``)."""


class NameMovedError(BundlekitError):
    """An IPNS name moved past the record a publish was based on: another writer published meanwhile.

    A publishing failure (exit 4, as ``PinError``), of the name rather than of a pin.
    """

    exit_code = 4


class ConvertError(BundlekitError):
    """A foreign memory format that cannot be read or written."""


class DeviceMemoryError(ConvertError):
    """Device-bound memory was asked to leave its machine without an explicit local-only export."""


class EmbedderError(BundlekitError):
    """An embedder that cannot embed: its packaged model files are missing or damaged, or its service
    refused the request or answered with something that is not the embeddings asked for."""


class SeedError(BundlekitError):
    """An account a seeder reads (``bundlekit memory seed``) cannot be read: its service refused or failed,
    rate-limited past the deadline, or answered with something other than what it documents (too large, too
    deep, not the documented shape). A failed ownership proof is a ``SignatureError`` (exit 3)."""
