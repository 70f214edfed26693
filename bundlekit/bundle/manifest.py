"""The bundle manifest: canonical JSON bytes and schema validation.

A manifest is the one plaintext JSON document at the root of a bundle
(``manifest.json``). Its bytes are canonical so that the same tree and options
always give the same root CID (see ``specs/bundle.md``):

* keys sorted (by code point), separators ``","`` and ``":"`` (no whitespace);
* UTF-8, non-ASCII characters written as themselves (``ensure_ascii=False``);
* exactly one trailing ``"\\n"``;
* no floats (only strings, integers, booleans, null, lists and objects).

``validate_manifest`` is what a loader runs on bytes it fetched: anything that
is not a well-formed ``bundlekit/1`` or ``bundlekit/2`` manifest raises ``ManifestError`` before a
single memory file is fetched, and every path it lists is checked to be a safe
relative path under ``memory/``. A ``bundlekit/2`` manifest lists no paths, only their count and bytes:
the loader checks each path of its DAG as it walks it (``check_walked_path``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from bundlekit.bundle.share import check_manifest_share
from bundlekit.embed.protocol import MAX_DIMENSION, check_model_id
from bundlekit.errors import CIDError, ManifestError, UsageError
from bundlekit.ipld.cid import cid_from_text, cid_to_str

__all__ = [
    "EMBEDDINGS_DTYPE",
    "EMBEDDINGS_PATH",
    "ENC_SUFFIX",
    "FORMAT",
    "FORMAT_V2",
    "FORMATS",
    "INDEX_PATH",
    "MANIFEST_NAME",
    "MAX_MANIFEST_BYTES",
    "MAX_PARENTS",
    "MEMORY_DIR",
    "canonical_json",
    "check_bundle_path",
    "check_walked_path",
    "claimed_bytes",
    "file_count",
    "is_listed",
    "cid_from_text",
    "format_created",
    "make_manifest",
    "parse_created",
    "parse_manifest",
    "validate_manifest",
]

FORMAT = "bundlekit/1"
#: The format whose manifest does not list the files: the UnixFS DAG under ``memory/`` is the list, its paths
#: validated entry by entry as a loader walks it (``check_walked_path``); the manifest holds their count and bytes.
FORMAT_V2 = "bundlekit/2"
FORMATS = (FORMAT, FORMAT_V2)
MANIFEST_NAME = "manifest.json"
MEMORY_DIR = "memory"
INDEX_PATH = "memory/MEMORY.md"
ENC_SUFFIX = ".enc"

# Bundle paths are what the importer turns into UnixFS links and what a loader
# turns into file names: keep them portable and unable to escape ``memory/``.
# Used with fullmatch only: "$" would also match before a trailing newline ("memory/evil.md\n").
_SEGMENT = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,199}")
# Every path check_bundle_path accepts, in one match (the loader checks thousands per manifest).
_BUNDLE_PATH = re.compile(rf"{MEMORY_DIR}/(?:timeline/)?{_SEGMENT.pattern}")
# The same, for many paths at once, each followed by a newline (no path may hold one: _usual_paths).
_BUNDLE_PATHS = re.compile(rf"(?:{_BUNDLE_PATH.pattern}\n)*")
_CREATED = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z")
_TIMELINE = re.compile(r"memory/timeline/\d{4}-\d{2}-\d{2}\.jsonl(\.enc)?")
#: The string fields of ``encryption`` (the crypto layer checks their values).
_ENCRYPTION_STRINGS = ("scheme", "key_source", "salt", "key_id", "commitment")
MAX_MANIFEST_BYTES = 64 * 1024 * 1024
MAX_PARENTS = 64
#: The optional embeddings file (``bundle/embeddings``): its one path in ``memory/`` (``.enc`` when encrypted).
EMBEDDINGS_PATH = f"{MEMORY_DIR}/embeddings.f16"
EMBEDDINGS_DTYPE = "float16"


def canonical_json(value: Any) -> bytes:
    """Serialise ``value`` as canonical JSON bytes (sorted keys, compact, UTF-8, trailing newline).

    Raises ``ManifestError`` for floats or non-JSON values: a float's text form
    is not stable across implementations, so it has no place in a hashed document.
    """
    _reject_floats(value)
    try:
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ManifestError(f"manifest holds a value that is not canonical JSON: {exc}") from exc
    return text.encode("utf-8") + b"\n"


def _reject_floats(value: Any) -> None:
    if isinstance(value, float):
        raise ManifestError("manifest holds a float; use an integer or a string")
    if isinstance(value, Mapping):
        for item in value.values():
            _reject_floats(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _reject_floats(item)


def format_created(when: datetime) -> str:
    """``when`` in UTC, whole seconds: ``YYYY-MM-DDTHH:MM:SSZ``. Naive datetimes are taken as UTC."""
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    w = when.astimezone(UTC)
    # Not strftime: it does not zero-pad years before 1000 on every platform.
    return f"{w.year:04d}-{w.month:02d}-{w.day:02d}T{w.hour:02d}:{w.minute:02d}:{w.second:02d}Z"


def parse_created(text: str) -> datetime:
    """Parse a ``--created`` value: ISO 8601 (``Z`` or offset; naive = UTC) or integer Unix seconds.

    Raises ``UsageError`` when the text is neither (it comes from the user).
    """
    text = text.strip()
    if re.fullmatch(r"-?\d+", text):
        try:
            when = datetime.fromtimestamp(int(text), tz=UTC)
        except (OverflowError, OSError, ValueError) as exc:
            raise UsageError(f"created time {text[:60]!r} is out of range; use Unix seconds from 0") from exc
    else:
        try:
            when = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError as exc:
            raise UsageError(
                f"created time {text[:60]!r} is not ISO 8601 or Unix seconds; use e.g. 2026-01-31T12:00:00Z"
            ) from exc
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
    try:
        when = when.astimezone(UTC)
    except (OverflowError, ValueError) as exc:
        raise UsageError(f"created time {text[:60]!r} is out of range") from exc
    if not _EARLIEST <= when <= _LATEST:
        raise UsageError(
            f"created time {text[:60]!r} is outside 1970-01-01T00:00:00Z .. 9999-12-31T23:59:59Z; "
            "a manifest's created is a four-digit-year UTC time"
        )
    return when


_EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
_LATEST = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)


def make_manifest(
    *,
    namespace: str,
    created: datetime,
    profile: str,
    files: Mapping[str, tuple[bytes, int]],
    timeline: list[str],
    encryption: Mapping[str, Any] | None,
    parents: Sequence[str] = (),
    embeddings: Mapping[str, Any] | None = None,
    version: int = 1,
) -> dict[str, Any]:
    """Assemble a manifest dict (validated) from the build's results: ``bundlekit/1``, or with ``version=2``
    ``bundlekit/2``, which holds the files' count and bytes instead of listing them.

    ``files`` maps each bundle path under ``memory/`` (the index included) to
    ``(binary cid, size in bytes of the stored file)``. ``parents`` are the root
    CIDs the tree was loaded or forked from (``specs/provenance.md``, "Lineage");
    the field is written only when there is one, so other manifests keep their bytes.
    """
    memory: dict[str, Any] = {"index": INDEX_PATH}
    if version == 1:
        memory["files"] = {path: {"cid": cid_to_str(cid), "size": size} for path, (cid, size) in sorted(files.items())}
        memory["timeline"] = sorted(timeline)
    else:
        memory["count"] = len(files)
        memory["bytes"] = sum(size for _cid, size in files.values())
    manifest: dict[str, Any] = {
        "format": FORMAT if version == 1 else FORMAT_V2,
        "namespace": namespace,
        "created": format_created(created),
        "profile": profile,
        "encryption": dict(encryption) if encryption is not None else None,
        "memory": memory,
    }
    if parents:
        manifest["parents"] = sorted(set(parents))
    if embeddings is not None:  # written only when there are some: other manifests keep their bytes
        manifest["embeddings"] = dict(embeddings)
    validate_manifest(manifest)
    return manifest


def is_listed(manifest: Mapping[str, Any]) -> bool:
    """True for a ``bundlekit/1`` manifest (it lists every file); False for ``bundlekit/2`` (the DAG is the list)."""
    return manifest.get("format") == FORMAT


def check_walked_path(path: str, *, encrypted: bool) -> None:
    """Raise ``ManifestError`` unless ``path``, found walking a ``bundlekit/2`` bundle's ``memory/`` directory,
    is one a ``bundlekit/1`` manifest could list (``check_bundle_path``, rules 6, 8 and 9): a safe segment under
    ``memory/`` or a day file under ``memory/timeline/``, ``.enc`` exactly when the bundle is encrypted."""
    check_bundle_path(path)
    if path.startswith(f"{MEMORY_DIR}/timeline/") and not _TIMELINE.fullmatch(path):
        raise ManifestError(f"the bundle holds {path[:120]!r} under timeline/, which is no day file")
    if path != INDEX_PATH and path.endswith(ENC_SUFFIX) != encrypted:
        state = "encrypted" if encrypted else "plaintext"
        raise ManifestError(f"the bundle holds {path[:120]!r} in a {state} bundle; '.enc' files and encryption "
                            "must agree")


def check_bundle_path(path: str) -> None:
    """Raise ``ManifestError`` unless ``path`` is a safe relative path under ``memory/``."""
    if _BUNDLE_PATH.fullmatch(path):
        return
    parts = path.split("/")
    if len(parts) < 2 or parts[0] != MEMORY_DIR or any(not _SEGMENT.fullmatch(p) for p in parts[1:]):
        raise ManifestError(f"manifest lists an unsafe or foreign path {path[:120]!r}; refusing the bundle")
    if len(parts) > 3 or (len(parts) == 3 and parts[1] != "timeline"):
        raise ManifestError(f"manifest lists a path outside the bundle layout: {path[:120]!r}")


def _usual_paths(paths: Mapping[str, Any]) -> bool:
    """True when every path has the usual shape ``check_bundle_path`` accepts: one match over all of them.

    Per path, the regex call costs more than the match itself. A path holding
    a newline could pass for two lines; the count of newlines rules that out.
    """
    try:
        joined = "\n".join(paths)
    except TypeError:  # a key that is not a string: check_bundle_path names it
        return False
    return joined.count("\n") == len(paths) - 1 and _BUNDLE_PATHS.fullmatch(joined + "\n") is not None


def validate_manifest(manifest: Any) -> dict[str, Any]:
    """Check that ``manifest`` is a well-formed ``bundlekit/1`` or ``bundlekit/2`` manifest and return it (a
    ``bundlekit/2`` one's paths are checked on its DAG as a loader walks it: ``check_walked_path``).

    Raises ``ManifestError`` naming the first problem: wrong format, a missing
    or mistyped field, an unsafe path, a CID that does not parse, a timeline
    path not listed in ``files``, or an encrypted bundle whose files lack the
    ``.enc`` suffix (and the reverse).
    """
    if not isinstance(manifest, dict):
        raise ManifestError("manifest is not a JSON object")
    fmt = manifest.get("format")
    if fmt not in FORMATS:
        raise ManifestError(f"manifest format is {str(fmt)[:40]!r}, expected one of {', '.join(FORMATS)}; "
                            "upgrade bundlekit or check the URI")
    for field in ("namespace", "created", "profile"):
        if not isinstance(manifest.get(field), str) or not manifest[field]:
            raise ManifestError(f"manifest field {field!r} is missing or not a non-empty string")
    if not _CREATED.fullmatch(manifest["created"]):
        raise ManifestError(f"manifest 'created' is {manifest['created'][:40]!r}, expected YYYY-MM-DDTHH:MM:SSZ")
    encryption = manifest.get("encryption", "missing")
    if encryption == "missing" or not (encryption is None or isinstance(encryption, dict)):
        raise ManifestError("manifest field 'encryption' must be null or an object")
    if encryption is not None:
        _check_encryption_types(encryption)
    memory = manifest.get("memory")
    if not isinstance(memory, dict):
        raise ManifestError("manifest field 'memory' is missing or not an object")
    if memory.get("index") != INDEX_PATH:
        raise ManifestError(f"manifest 'memory.index' must be {INDEX_PATH!r}")
    if fmt == FORMAT:
        _check_files(memory, encryption is not None)
    else:
        _check_summary(memory)
    _check_parents(manifest)
    _check_embeddings(manifest)
    check_manifest_share(manifest)
    return manifest


def _check_files(memory: dict[str, Any], encrypted: bool) -> None:
    """``bundlekit/1``'s ``memory.files`` and ``memory.timeline`` (rules 5 to 9)."""
    files = memory.get("files")
    if not isinstance(files, dict):
        raise ManifestError("manifest 'memory.files' is missing or not an object")
    if INDEX_PATH not in files:
        raise ManifestError(f"manifest 'memory.files' does not list the index {INDEX_PATH!r}")
    usual = _usual_paths(files)
    for path, entry in files.items():
        if not usual:
            check_bundle_path(path)
        if not isinstance(entry, dict) or not isinstance(entry.get("cid"), str):
            raise ManifestError(f"manifest entry for {path!r} has no 'cid' string")
        size = entry.get("size")
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise ManifestError(f"manifest entry for {path!r} has no non-negative integer 'size'")
        try:
            cid_from_text(entry["cid"])
        except CIDError as exc:
            raise ManifestError(f"manifest entry for {path!r} has an invalid CID") from exc
        encrypted_name = path.endswith(ENC_SUFFIX)
        if path != INDEX_PATH and encrypted_name != encrypted:
            state = "encrypted" if encrypted else "plaintext"
            raise ManifestError(f"manifest lists {path!r} in a {state} bundle; '.enc' files and encryption must agree")
    timeline = memory.get("timeline")
    if not isinstance(timeline, list) or not all(isinstance(p, str) for p in timeline):
        raise ManifestError("manifest 'memory.timeline' is missing or not a list of paths")
    for path in timeline:
        if not _TIMELINE.fullmatch(path) or path not in files:
            raise ManifestError(f"manifest timeline path {path[:120]!r} is malformed or not listed in 'memory.files'")


def _check_summary(memory: dict[str, Any]) -> None:
    """``bundlekit/2``'s ``memory``: exactly ``index``, ``count`` (files under ``memory/``, the index included:
    at least 1) and ``bytes`` (their stored sizes together), which a loader holds the DAG to as it walks it."""
    if set(memory) != {"index", "count", "bytes"}:
        raise ManifestError("a bundlekit/2 manifest's 'memory' holds exactly 'index', 'count' and 'bytes'")
    for name, least in (("count", 1), ("bytes", 0)):
        value = memory[name]
        if isinstance(value, bool) or not isinstance(value, int) or not least <= value < 2**63:
            raise ManifestError(f"manifest 'memory.{name}' must be an integer from {least} to 2^63 - 1")


def file_count(manifest: Mapping[str, Any]) -> int:
    """How many files the bundle holds under ``memory/`` (the index included), as its manifest says."""
    memory = manifest["memory"]
    return len(memory["files"]) if is_listed(manifest) else int(memory["count"])


def claimed_bytes(manifest: Mapping[str, Any]) -> int:
    """The bytes the bundle's files under ``memory/`` claim together, as its manifest says."""
    memory = manifest["memory"]
    if is_listed(manifest):
        return sum(int(entry["size"]) for entry in memory["files"].values())
    return int(memory["bytes"])


def _check_embeddings(manifest: dict[str, Any]) -> None:
    """The optional ``embeddings`` (``bundle/embeddings``): the vectors file listed in ``files`` at
    :data:`EMBEDDINGS_PATH`, a usable model id, a dimension of 1 to ``MAX_DIMENSION``, ``float16``, and the
    memory keys in order (distinct strings, at most one per file); a plaintext file holds exactly 2 bytes per
    value (an encrypted one is checked once decrypted)."""
    if "embeddings" not in manifest:
        return
    entry = manifest["embeddings"]
    if not isinstance(entry, dict):
        raise ManifestError("manifest 'embeddings' is not an object")
    listed = is_listed(manifest)
    files = manifest["memory"]["files"] if listed else {}
    encrypted = manifest["encryption"] is not None
    path = entry.get("path")
    if path != EMBEDDINGS_PATH + (ENC_SUFFIX if encrypted else "") or (listed and path not in files):
        raise ManifestError(f"manifest 'embeddings.path' must be {EMBEDDINGS_PATH!r}, listed in 'memory.files'")
    try:
        check_model_id(entry.get("model"), what="manifest 'embeddings.model'")
    except UsageError as exc:
        raise ManifestError(str(exc)) from None
    dimension, keys = entry.get("dimension"), entry.get("keys")
    if isinstance(dimension, bool) or not isinstance(dimension, int) or not 0 < dimension <= MAX_DIMENSION:
        raise ManifestError(f"manifest 'embeddings.dimension' must be an integer from 1 to {MAX_DIMENSION}")
    if entry.get("dtype") != EMBEDDINGS_DTYPE:
        raise ManifestError(f"manifest 'embeddings.dtype' must be {EMBEDDINGS_DTYPE!r}")
    if (
        not isinstance(keys, list) or len(keys) > file_count(manifest)
        or not all(isinstance(k, str) and 0 < len(k) <= 200 for k in keys) or len(set(keys)) != len(keys)
    ):
        raise ManifestError("manifest 'embeddings.keys' must list distinct memory keys, at most one per file")
    if listed and not encrypted and files[path]["size"] != len(keys) * dimension * 2:
        raise ManifestError(
            f"manifest 'embeddings' lists {len(keys)} vectors of {dimension} float16 values, "
            f"not the {files[path]['size']} bytes of {path}"
        )


def _check_parents(manifest: dict[str, Any]) -> None:
    """The optional ``parents``: 1 to ``MAX_PARENTS`` root CIDs as text."""
    if "parents" not in manifest:
        return
    parents = manifest["parents"]
    if not isinstance(parents, list) or not 0 < len(parents) <= MAX_PARENTS:
        raise ManifestError(f"manifest 'parents' must be a list of 1 to {MAX_PARENTS} root CIDs")
    for parent in parents:
        try:
            cid_from_text(parent if isinstance(parent, str) else "")
        except CIDError as exc:
            raise ManifestError(f"manifest 'parents' holds {str(parent)[:80]!r}, which is not a CID") from exc


def _check_encryption_types(encryption: dict[str, Any]) -> None:
    """The shape of ``encryption`` the crypto layer relies on: strings and a ``kdf`` object."""
    for name in _ENCRYPTION_STRINGS:
        if name in encryption and not isinstance(encryption[name], str):
            raise ManifestError(f"manifest encryption.{name} must be a string; the manifest is damaged")
    if "kdf" in encryption and not isinstance(encryption["kdf"], dict):
        raise ManifestError("manifest encryption.kdf must be an object; the manifest is damaged")


def parse_manifest(data: bytes) -> dict[str, Any]:
    """Decode and validate manifest bytes. Raises ``ManifestError``.

    Non-canonical bytes are accepted (a hand-written manifest behind a plain
    HTTPS URL is still usable); only the content is checked.
    """
    if len(data) > MAX_MANIFEST_BYTES:
        raise ManifestError(f"manifest is {len(data)} bytes, over the {MAX_MANIFEST_BYTES}-byte limit")
    try:
        value = json.loads(data.decode("utf-8"), parse_float=_no_float)
    except (UnicodeDecodeError, json.JSONDecodeError, ValueError) as exc:
        raise ManifestError(f"manifest is not valid UTF-8 JSON: {exc}") from exc
    except RecursionError as exc:  # hostile nesting: malformed input, not a crash
        raise ManifestError("manifest JSON is nested too deeply to be a bundlekit manifest") from exc
    return validate_manifest(value)


def _no_float(text: str) -> float:
    raise ValueError(f"float {text!r} in manifest")
