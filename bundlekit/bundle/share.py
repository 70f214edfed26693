"""Per-type sharing that fails closed: which memories a shared bundle may carry.

A shared bundle (``build``/``pin --share TYPES``, or the ``[share]`` section of
the tree's ``.bundlekit/config.toml``) holds only the memories whose ``type`` is
named, never one whose frontmatter says ``share: private``, and the timeline
only with ``--share-timeline`` (``timeline = true``). The model is Magic
Context's workspace sharing (seed 002, "Workspaces"): a workspace shares only
the categories it names, read-only for non-owners, and a malformed share list
fails closed to sharing nothing. Here "nothing" is an error before anything is
written (exit 2), never an empty or a whole bundle: an unknown type, an empty
list, a config that does not parse or holds an unknown key all stop the build.

The selection is an allow-list: a memory file is kept only when its parsed
record is admitted, the index is re-rendered from the kept records alone
(``memory.index.render_index``, the one renderer), a timeline day only when the
policy shares the timeline, and then without a ``forgot`` tombstone or an event whose ``key`` names a
memory that is not shared; anything else the tree gave is dropped. What is
built from the selection (embeddings, the manifest, the created time) sees
only what was kept. The manifest records the policy as ``share``
(``{"types": [...], "timeline": bool}``) so a reader can hold the bundle to it
(:func:`enforce_share`: a memory the manifest does not admit is dropped with a
warning naming it).
"""

from __future__ import annotations

import errno
import json
import os
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bundlekit._fs import open_regular
from bundlekit._lazy import lazy_module
from bundlekit.errors import ManifestError, UsageError
from bundlekit.memory.index import render_index
from bundlekit.memory.naming import INDEX_NAME
from bundlekit.memory.record import MEMORY_TYPES, MemoryRecord, frontmatter_text

if TYPE_CHECKING:
    import tomllib
else:  # imported when a tree holds a share config (DEVELOPERS.md, "Lazy imports": a build of one without)
    tomllib = lazy_module("tomllib")

__all__ = [
    "CONFIG_PATH",
    "MAX_CONFIG_BYTES",
    "PRIVATE",
    "SharePolicy",
    "check_manifest_share",
    "enforce_share",
    "parse_share_types",
    "read_share_config",
    "select_shared",
    "share_policy",
]

#: The tree's config file, under the store's own folder (never bundled, exported or converted).
CONFIG_PATH = ".bundlekit/config.toml"
#: A config larger than this is refused unread (it is a few lines).
MAX_CONFIG_BYTES = 64 * 1024
#: Why a share config that ``_fs.open_regular`` refused is not one (by its ``errno``).
_NOT_PLAIN = {errno.ELOOP: "is a symbolic link", errno.EINVAL: "is not a regular file (a directory, FIFO or device)"}
#: The frontmatter value that keeps a memory out of every shared bundle.
PRIVATE = "private"
_CONFIG_KEYS = frozenset({"types", "timeline"})
# Where a flow mapping starts another key on one line: ``metadata: {share: private}``.
_FLOW_PARTS = re.compile(r"[{,]")
_KEY_WORDS = re.compile(r"[a-z0-9_.-]+")
_FOLD_TRIM = " \t\r\n\"'-?{}[]"


@dataclass(frozen=True)
class SharePolicy:
    """What a shared bundle carries: the memory ``types`` (sorted, at least one, each a known type) and
    whether the ``timeline`` goes too."""

    types: tuple[str, ...]
    timeline: bool = False

    def manifest_entry(self) -> dict[str, Any]:
        """The manifest's ``share`` object."""
        return {"types": list(self.types), "timeline": self.timeline}

    def refusal(self, record: MemoryRecord) -> str | None:
        """Why ``record`` stays out of the bundle (None: it is shared).

        Read as every reader might read the frontmatter (:func:`_marks`): a ``share`` key in any spelling
        (``Share``, ``SHARE``, quoted, nested, null, written twice) keeps the memory out, and so does a
        ``type`` written more than once or where a reader could see another value than the parsed one.
        """
        marks, types = _marks(record)
        if marks:
            mark = record.meta.get("share")
            if isinstance(mark, str) and mark.strip().lower() == PRIVATE:
                return "marked share: private"
            shown = ", ".join(sorted({m[:40] for m in marks}))
            return f"its 'share' mark ({shown!r}) is not understood (only one 'share: private' is), so it stays out"
        if record.type not in self.types:
            return f"type {record.type!r} is not shared"
        if types != [record.type]:
            return f"its frontmatter names its type more than once or ambiguously ({', '.join(types)[:80]}), so it stays out"
        return None


def _marks(record: MemoryRecord) -> tuple[list[str], list[str]]:
    """The ``share`` marks and ``type`` values of a memory's frontmatter as any reader might see them.

    Every line, and every part of it after a flow mapping's ``{`` or ``,``, split at its first ``:`` (as a
    line reader such as three.ws's splits it), its key folded (:func:`_fold`: compatibility forms, format
    characters, quotes, white space and case away); the parsed keys folded too. PyYAML keeps the last of
    two equal keys, a line reader may keep the first, js-yaml refuses them: only one plain reading shares.
    """
    marks = [str(value) for key, value in record.meta.items() if _fold(str(key)) == "share"]
    types: list[str] = []
    for line in frontmatter_text(record.raw).splitlines():
        for part in _FLOW_PARTS.split(line):
            key, sep, value = part.partition(":")
            if not sep:
                continue
            folded = _fold(key)
            if folded == "share":
                marks.append(value.strip())
            elif folded == "type":
                types.append(_fold(value.split(" #", 1)[0]))
    return marks, types


def _fold(text: str) -> str:
    """``text`` as a key comparison sees it: NFKC, no format characters (zero-width, BOM, bidi), trimmed of
    white space, quotes and YAML's ``-``/``?`` indicators, case-folded."""
    plain = "".join(c for c in unicodedata.normalize("NFKC", text) if unicodedata.category(c) != "Cf")
    return plain.strip(_FOLD_TRIM).casefold()


def parse_share_types(values: Iterable[str], *, where: str = "--share") -> tuple[str, ...]:
    """The memory types named by ``values`` (each may list several, comma-separated), sorted and unique.

    Raises ``UsageError`` for an empty list or an unknown type: sharing fails closed, never to everything.
    """
    named: set[str] = set()
    for value in values:
        for part in str(value).split(","):
            item = part.strip()
            if not item:
                continue
            if item not in MEMORY_TYPES:
                raise UsageError(
                    f"{where}: unknown memory type {item[:40]!r}; share one or more of {', '.join(MEMORY_TYPES)} "
                    "(nothing was shared)"
                )
            named.add(item)
    if not named:
        raise UsageError(
            f"{where} names no memory type; name one or more of {', '.join(MEMORY_TYPES)} "
            "(an empty share list shares nothing, so nothing was built)"
        )
    return tuple(sorted(named))


def read_share_config(root: Path) -> SharePolicy | None:
    """The ``[share]`` section of ``<root>/.bundlekit/config.toml`` (None: no file, or no such section).

    Read bounded and without following a link. Raises ``UsageError`` naming the problem for a config that
    is a link, too large, not UTF-8 TOML, or whose ``share`` is not a table of ``types`` (a non-empty list
    of known types) and ``timeline`` (true or false) alone: a malformed share config shares nothing.
    """
    path = root / CONFIG_PATH
    data = _config_bytes(path)
    if data is None:
        return None
    try:
        document = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(f"{path} is not valid TOML ({str(exc)[:120]}); nothing was shared") from None
    misspelt = sorted(k for k in document if k != "share" and (_fold(k).startswith("shar") or _fold(k) in _CONFIG_KEYS))
    if misspelt:  # [Share], [sharing], a top-level types = [...]: a share config misspelt never shares the whole tree
        shown = ", ".join(repr(str(k)[:40]) for k in misspelt[:5])
        raise UsageError(f"{path} holds {shown} where a share config is [share] with 'types' and 'timeline' "
                         "(nothing was shared)")
    if "share" not in document:
        return None
    return _policy_from_table(document["share"], f"{path} [share]")


def _config_bytes(path: Path) -> bytes | None:
    """The bytes of the config at ``path`` (None: there is none), read bounded, never through a link nor
    from anything but a regular file (a FIFO would block the open and the read for ever, a device never
    ends); ``UsageError`` naming what it is instead."""
    try:
        fd = open_regular(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        why = _NOT_PLAIN.get(exc.errno or 0, f"cannot be read ({exc.strerror})")
        raise UsageError(f"{path} {why}; the share config must be a plain file (nothing was shared)") from None
    with os.fdopen(fd, "rb") as stream:
        try:
            data = stream.read(MAX_CONFIG_BYTES + 1)
        except OSError as exc:
            raise UsageError(f"{path} cannot be read ({exc.strerror}); nothing was shared") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise UsageError(f"{path} is larger than {MAX_CONFIG_BYTES} bytes; it is not a share config (nothing was shared)")
    return data


def _policy_from_table(table: Any, where: str) -> SharePolicy:
    """A ``[share]`` table as a policy; ``UsageError`` for anything else (fail closed)."""
    if not isinstance(table, dict):
        raise UsageError(f"{where} must be a table with 'types' (and 'timeline'); nothing was shared")
    unknown = sorted(set(table) - _CONFIG_KEYS)
    if unknown:
        shown = ", ".join(repr(str(k)[:40]) for k in unknown[:5])
        raise UsageError(f"{where} holds unknown key(s) {shown}; use 'types' and 'timeline' (nothing was shared)")
    types = table.get("types")
    if not isinstance(types, list) or not all(isinstance(t, str) for t in types):
        raise UsageError(f"{where} 'types' must be a list of memory types such as [\"project\"]; nothing was shared")
    timeline = table.get("timeline", False)
    if not isinstance(timeline, bool):
        raise UsageError(f"{where} 'timeline' must be true or false; nothing was shared")
    return SharePolicy(parse_share_types(types, where=f"{where} 'types'"), timeline)


def share_policy(types: Sequence[str], *, timeline: bool, root: Path | None) -> SharePolicy | None:
    """The policy of a build: ``--share`` values when given (``types``), else the tree's config; None shares
    the whole tree as before. ``--share-timeline`` with neither is a ``UsageError``."""
    if types:
        return SharePolicy(parse_share_types(types), timeline)
    policy = None if root is None else read_share_config(root)
    if policy is None:
        if timeline:
            raise UsageError("--share-timeline applies to a shared bundle: add --share TYPES")
        return None
    return SharePolicy(policy.types, policy.timeline or timeline)


def select_shared(
    tree_files: Sequence[tuple[str, bytes]],
    records: Sequence[MemoryRecord],
    policy: SharePolicy,
    warn: Callable[[str], None] | None = None,
) -> tuple[list[tuple[str, bytes]], list[MemoryRecord]]:
    """The files and records a shared bundle carries (an allow-list, module docstring).

    ``warn`` hears each memory of a shared type kept out by its ``share`` mark; memories of other types
    are left out silently (that is the request).
    """
    kept: list[MemoryRecord] = []
    for record in records:
        why = policy.refusal(record)
        if why is None:
            kept.append(record)
        elif warn is not None and record.type in policy.types:
            warn(f"{record.filename}: not shared ({why})")
    names = {record.filename for record in kept}
    keys = {record.key.lower() for record in kept}
    files: list[tuple[str, bytes]] = [(INDEX_NAME, render_index(kept).encode("utf-8"))]
    days = [(path, data) for path, data in tree_files if policy.timeline and path.startswith("timeline/")]
    hidden = _Hidden.of([r for r in records if r.key.lower() not in keys], [data for _path, data in days], keys)
    for path, data in tree_files:
        if path in names:
            files.append((path, data))
    for path, data in days:
        day = _shared_day(data, keys, hidden)
        if day:
            files.append((path, day))
    files.sort(key=lambda item: item[0])
    return files, kept


class _Hidden:
    """What names a memory a shared bundle leaves out: its key (and file name) and its name, folded, for the
    memories of the tree not shared and those the timeline's ``forgot`` tombstones name. A plain class: a
    dataclass costs ~0.4 ms of every build's start-up to define (issue 37)."""

    __slots__ = ("keys", "names")

    def __init__(self, keys: frozenset[str], names: frozenset[str]) -> None:
        self.keys, self.names = keys, names

    @classmethod
    def of(cls, left_out: Sequence[MemoryRecord], days: Sequence[bytes], shared: set[str]) -> _Hidden:
        keys = {record.key.lower() for record in left_out}
        names = {record.name.strip().casefold() for record in left_out}
        for data in days:
            for event in _events(data):
                if event.get("type") == "forgot":
                    keys.update(str(event.get("key", "")).lower().split())
                    names.add(str(event.get("name", "")).strip().casefold())
        return cls(frozenset(keys - shared - {""}), frozenset(names - {""}))

    def named_in(self, value: Any) -> bool:
        """Whether ``value`` (an event, walked through its lists and objects, keys included) names one: a word
        of key characters equal to a key (or its file name) anywhere in a text, or a text equal to a name."""
        if isinstance(value, dict):
            return any(self.named_in(k) or self.named_in(v) for k, v in value.items())
        if isinstance(value, list):
            return any(self.named_in(item) for item in value)
        if not isinstance(value, str):
            return False
        if value.strip().casefold() in self.names:
            return True
        for word in _KEY_WORDS.findall(value.lower()):
            trimmed = word.strip("._-")
            if {word, trimmed, word.removesuffix(".md"), trimmed.removesuffix(".md")} & self.keys:
                return True
        return False


def _events(data: bytes) -> list[dict[str, Any]]:
    """The JSON objects among a day's lines (one that does not parse is skipped)."""
    found: list[dict[str, Any]] = []
    for line in data.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            found.append(event)
    return found


def _shared_day(data: bytes, keys: set[str], hidden: _Hidden) -> bytes:
    """The lines of one timeline day a shared bundle may carry, as stored: never a ``forgot`` tombstone (the
    forgotten memory's type is gone with it), an event whose ``key`` names a memory not shared, nor one that
    names a memory left out anywhere else (``from``, ``to``, a list of ``memories``, a note's text:
    :class:`_Hidden`); a line that does not parse as a JSON object stays out too."""
    kept: list[bytes] = []
    for line in data.splitlines(keepends=True):
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict) or event.get("type") == "forgot":
            continue
        key = event.get("key")
        if key is not None and (not isinstance(key, str) or key.lower() not in keys):
            continue
        if hidden.named_in(event):
            continue
        kept.append(line if line.endswith(b"\n") else line + b"\n")
    return b"".join(kept)


def check_manifest_share(manifest: Mapping[str, Any]) -> None:
    """Raise ``ManifestError`` unless the manifest's optional ``share`` is ``{"types": [known type, ...],
    "timeline": bool}`` with at least one type; a timeline listed in a bundle that says it shares none too."""
    if "share" not in manifest:
        return
    share = manifest["share"]
    if not isinstance(share, dict) or set(share) != _CONFIG_KEYS:
        raise ManifestError("manifest 'share' must be an object of 'types' and 'timeline'")
    types, timeline = share["types"], share["timeline"]
    if (not isinstance(types, list) or not types or not all(isinstance(t, str) and t in MEMORY_TYPES for t in types)
            or len(set(types)) != len(types)):
        raise ManifestError(f"manifest 'share.types' must list memory types among {', '.join(MEMORY_TYPES)}")
    if not isinstance(timeline, bool):
        raise ManifestError("manifest 'share.timeline' must be true or false")
    memory = manifest.get("memory")
    if not timeline and isinstance(memory, dict) and memory.get("timeline"):
        raise ManifestError("manifest says it shares no timeline but lists timeline files; refusing the bundle")


def enforce_share(
    manifest: Mapping[str, Any], records: Mapping[str, MemoryRecord], timeline: list[dict[str, Any]],
    warn: Callable[[str], None],
) -> tuple[dict[str, MemoryRecord], list[dict[str, Any]]]:
    """Hold a loaded shared bundle to its own ``share`` claim: a memory of a type it does not name, or marked
    ``share: private``, is dropped and named in a warning; its timeline is dropped unless it claims one.
    A bundle with no ``share`` is returned whole."""
    share = manifest.get("share")
    if not isinstance(share, dict):
        return dict(records), list(timeline)
    policy = SharePolicy(tuple(share["types"]), bool(share["timeline"]))
    kept: dict[str, MemoryRecord] = {}
    for key, record in records.items():
        why = policy.refusal(record)
        if why is None:
            kept[key] = record
        else:
            warn(f"{record.filename}: dropped: the bundle claims to share only {', '.join(policy.types)} ({why})")
    if timeline and not policy.timeline:
        warn("the timeline was dropped: the bundle claims to share none")
        return kept, []
    return kept, list(timeline)
