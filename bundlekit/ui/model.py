"""What the browsing interface shows, read from the gateway's own blocks: bundles, memories, timeline days.

Every value here comes from a bundle and is untrusted: the templates escape it
and render Markdown with raw HTML off (``render.py``). Reading is bounded: a file
larger than :data:`MAX_SHOWN_FILE` is not read (its page says so), and one bundle
is read up to :data:`MAX_SHOWN_BUNDLE` bytes in all (files past it are listed, not
read), so a hostile bundle cannot make a page hold gigabytes, not even a small CAR
whose manifest lists thousands of paths that share one large file's blocks. Blocks come from the server's block
source, whose blocks were verified when they entered it (a CAR indexed by
``bundlekit serve``, the block store, or a bundle ``bundlekit open`` fetched
block by block against its CIDs).
"""

from __future__ import annotations

import difflib
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bundlekit.bundle._bounded import read_bounded
from bundlekit.bundle.diff import DiffResult, diff_memories
from bundlekit.bundle.listing import bundle_files
from bundlekit.bundle.manifest import EMBEDDINGS_PATH, ENC_SUFFIX, INDEX_PATH, MANIFEST_NAME, MEMORY_DIR, parse_manifest
from bundlekit.bundle.signature import SIGNATURE_NAME, verify_signature_file
from bundlekit.errors import BundlekitError, CodecError
from bundlekit.ipld.cid import cid_to_str
from bundlekit.memory.record import MemoryRecord, parse_memory_file
from bundlekit.memory.timeline import DAY_FILE_RE, parse_day
from bundlekit.unixfs.reader import UnixFSReader

__all__ = [
    "MAX_SHOWN_BUNDLE",
    "MAX_SHOWN_FILE",
    "MAX_CACHED_DIFFS",
    "MAX_DIFF_PAGE_LINES",
    "MAX_DIFF_PAIRS",
    "MAX_DIFF_SHOWN_LINES",
    "BodyDiff",
    "BundleView",
    "DiffCache",
    "MemoryItem",
    "bundle_diff",
    "read_bundle",
    "read_manifest",
]

_Getter = Callable[[bytes], bytes]  # a verified block source (the server's)
MAX_SHOWN_FILE = 4 * 1024 * 1024  # bytes: larger files are listed, not read into a page
MAX_SHOWN_BUNDLE = 32 * 1024 * 1024  # bytes read from one bundle's files in all (memories, index, days)
_TIMELINE_PREFIX = f"{MEMORY_DIR}/timeline/"


@dataclass
class MemoryItem:
    """One memory of a bundle: its record when readable, else why not (encrypted, too large, malformed)."""

    key: str
    path: str
    size: int
    record: MemoryRecord | None = None
    problem: str | None = None

    @property
    def encrypted(self) -> bool:
        return self.path.endswith(ENC_SUFFIX)

    @property
    def type(self) -> str:
        return self.record.type if self.record is not None else "unknown"


@dataclass
class BundleView:
    """A bundle as the pages show it."""

    root: str
    manifest: dict[str, Any]
    index_text: str
    memories: list[MemoryItem]
    timeline: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # day -> entries, plaintext only
    encrypted_days: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    signer: str | None = None  # who signed the manifest, when signature.json verifies
    signature_problem: str | None = None  # why a signature.json present does not verify

    @property
    def signature_status(self) -> str:
        """``signed``, ``invalid`` or ``unsigned`` (specs/provenance.md)."""
        if self.signer is not None:
            return "signed"
        return "invalid" if self.signature_problem is not None else "unsigned"

    @property
    def encrypted(self) -> bool:
        return self.manifest.get("encryption") is not None

    def memory(self, key: str) -> MemoryItem | None:
        return next((item for item in self.memories if item.key == key), None)

    def by_type(self) -> list[tuple[str, list[MemoryItem]]]:
        """Memories grouped by type, in the index's order of types, then any other type."""
        order = ["user", "feedback", "project", "reference"]
        groups: dict[str, list[MemoryItem]] = {}
        for item in self.memories:
            groups.setdefault(item.type, []).append(item)
        names = [t for t in order if t in groups] + sorted(t for t in groups if t not in order)
        return [(name, groups[name]) for name in names]

    def records(self) -> dict[str, MemoryRecord]:
        return {item.key: item.record for item in self.memories if item.record is not None}


class _Budget:
    """The bytes one bundle may still have read: each file takes its manifest size before it is read."""

    def __init__(self, total: int) -> None:
        self.left = total

    def take(self, size: int, path: str) -> None:
        if size > self.left:
            raise CodecError(
                f"{path} is not read: the interface reads at most {MAX_SHOWN_BUNDLE} bytes of one bundle"
            )
        self.left -= size


def _read_small(get: _Getter, cid: bytes, size: int, path: str, budget: _Budget | None = None) -> bytes:
    # read_bounded also counts block visits against a budget keyed to ``size``: a DAG linking
    # one block over and over is refused after a few thousand visits, not the walker's million
    # (a 138 KB CAR kept every page request of it busy for seconds; review of issue 12).
    if size > MAX_SHOWN_FILE:
        raise CodecError(f"{path} is {size} bytes; the interface shows files up to {MAX_SHOWN_FILE} bytes")
    if budget is not None:
        budget.take(size, path)

    def too_big(seen: int) -> CodecError:
        return CodecError(f"{path} holds more bytes than the manifest's {size}")

    return read_bounded(get, cid, size, too_big, path)


def read_manifest(get: Callable[[bytes], bytes], root: bytes) -> dict[str, Any]:
    """The validated manifest of the bundle at ``root``. Raises ``BundlekitError`` when it is not a bundle."""
    reader = UnixFSReader(get, verify=False)  # the source's blocks are verified already
    return _manifest(get, reader, root)


def _manifest(get: _Getter, reader: UnixFSReader, root: bytes) -> dict[str, Any]:
    manifest_cid = reader.resolve(root, MANIFEST_NAME)
    return parse_manifest(_read_small(get, manifest_cid, MAX_SHOWN_FILE, MANIFEST_NAME))


def read_bundle(get: Callable[[bytes], bytes], root: bytes) -> BundleView:
    """Read the bundle at ``root`` from verified blocks. Raises ``BundlekitError`` when it is not a bundle."""
    reader = UnixFSReader(get, verify=False)  # the source's blocks are verified already
    manifest = _manifest(get, reader, root)
    files = bundle_files(manifest, reader.list_dir, root)
    view = BundleView(cid_to_str(root), manifest, "", [])
    _check_signature(get, reader, root, view)
    budget = _Budget(MAX_SHOWN_BUNDLE)
    # The index first, so a bundle over the budget still shows its names.
    for path, info in sorted(files.items(), key=lambda item: (item[0] != INDEX_PATH, item[0])):
        try:
            if path == INDEX_PATH:
                data = _read_small(get, reader.resolve(root, path), int(info["size"]), path, budget)
                view.index_text = data.decode("utf-8", errors="replace")
            elif path.startswith(_TIMELINE_PREFIX):
                _read_day(get, reader, root, path, int(info["size"]), view, budget)
            elif path.removesuffix(ENC_SUFFIX) == EMBEDDINGS_PATH:
                continue  # the memories' vectors (build --embeddings): nothing to show
            else:
                view.memories.append(_read_memory(get, reader, root, path, int(info["size"]), budget))
        except BundlekitError as exc:
            view.problems.append(f"{path}: {exc}")
    return view


def _check_signature(get: _Getter, reader: UnixFSReader, root: bytes, view: BundleView) -> None:
    """Verify ``signature.json`` (when the root has one) against the manifest it sits beside."""
    entries = dict(reader.list_dir(root))
    if SIGNATURE_NAME not in entries:
        return
    try:
        data = _read_small(get, entries[SIGNATURE_NAME], MAX_SHOWN_FILE, SIGNATURE_NAME)
        view.signer = verify_signature_file(data, entries[MANIFEST_NAME])
    except BundlekitError as exc:
        view.signature_problem = str(exc)


def _read_memory(get: _Getter, reader: UnixFSReader, root: bytes, path: str, size: int, budget: _Budget) -> MemoryItem:
    name = path[len(MEMORY_DIR) + 1 :].removesuffix(ENC_SUFFIX)
    item = MemoryItem(key=name.removesuffix(".md"), path=path, size=size)
    if item.encrypted:
        item.problem = "encrypted: the body is not shown (no key ever reaches the browser)"
        return item
    try:
        text = _read_small(get, reader.resolve(root, path), size, path, budget).decode("utf-8")
        item.record = parse_memory_file(text, key=item.key, where=path)
    except (BundlekitError, UnicodeDecodeError) as exc:
        item.problem = f"cannot show this memory: {exc}"
    return item


def _read_day(
    get: _Getter, reader: UnixFSReader, root: bytes, path: str, size: int, view: BundleView, budget: _Budget
) -> None:
    name = path[len(_TIMELINE_PREFIX) :]
    if name.endswith(ENC_SUFFIX):
        view.encrypted_days.append(name.removesuffix(ENC_SUFFIX).removesuffix(".jsonl"))
        return
    match = DAY_FILE_RE.fullmatch(name)
    if match is None:
        view.problems.append(f"{path}: not a timeline day file")
        return
    data = _read_small(get, reader.resolve(root, path), size, path, budget)
    view.timeline[match.group(1)] = parse_day(name, data, strict=False)


# Line-by-line comparison is quadratic at worst (difflib's matcher; two bodies of distinct lines
# swapped pairwise took 47 s at 288 KB). After the common first and last lines are set aside (linear),
# the lines left on both sides may make at most this many pairs in one diff page, all bodies together;
# past it a body's differing lines are shown as replaced whole, with a note saying so.
MAX_DIFF_PAIRS = 1_000_000
MAX_DIFF_SHOWN_LINES = 5_000  # lines of one body's diff put on the page; past it, a note
MAX_DIFF_PAGE_LINES = 50_000  # lines of all bodies' diffs on one page; past it, notes only
_CONTEXT = 3  # unchanged lines shown around each change, as diff -u
MAX_CACHED_DIFFS = 16  # diffs kept per interface, by pair of roots


@dataclass
class BodyDiff:
    """One changed memory: the fields that differ, a unified line diff of the bodies, and why it is partial."""

    key: str
    fields: tuple[str, ...]
    lines: list[str]
    note: str | None = None


class _Pairs:
    """The line pairs one diff may still compare (``MAX_DIFF_PAIRS``) and lines it may still show
    (``MAX_DIFF_PAGE_LINES``)."""

    def __init__(self, total: int, lines: int | None = None) -> None:
        self.left = total
        self.lines = MAX_DIFF_PAGE_LINES if lines is None else lines

    def take(self, pairs: int) -> bool:
        if pairs > self.left:
            return False
        self.left -= pairs
        return True

    def show(self, wanted: int) -> int:
        """How many of ``wanted`` lines one body may show (its own cap and what the page has left)."""
        shown = min(wanted, MAX_DIFF_SHOWN_LINES, self.lines)
        self.lines -= shown
        return shown


def bundle_diff(old: BundleView, new: BundleView) -> tuple[DiffResult, list[BodyDiff]]:
    """Added, removed and changed memories between two bundles, with body diffs.

    Memories are compared by content where both sides can be read; an encrypted or
    unreadable memory still counts as added or removed by its key, and one present on
    both sides but unreadable on either is named in ``warnings`` (not compared, not
    counted unchanged). Body diffs are bounded (``MAX_DIFF_PAIRS``, ``MAX_DIFF_SHOWN_LINES``, ``MAX_DIFF_PAGE_LINES``):
    what is not compared line by line or not shown is said in the body's ``note``.
    """
    a, b = old.records(), new.records()
    result = diff_memories(a, b, old_label=old.root, new_label=new.root)
    old_keys, new_keys = {item.key for item in old.memories}, {item.key for item in new.memories}
    result.added = sorted(set(result.added) | (new_keys - old_keys))
    result.removed = sorted(set(result.removed) | (old_keys - new_keys))
    unread = sorted(key for key in old_keys & new_keys if key not in a or key not in b)
    if unread:
        result.warnings.append(
            f"{len(unread)} memories on both sides are encrypted or unreadable, so not compared: {', '.join(unread)}"
        )
    pairs = _Pairs(MAX_DIFF_PAIRS)
    bodies = [
        _body_diff(changed.key, changed.fields, a[changed.key].body, b[changed.key].body, pairs)
        for changed in result.changed
    ]
    return result, bodies


def _body_diff(key: str, fields: tuple[str, ...], old: str, new: str, pairs: _Pairs) -> BodyDiff:
    """A unified diff of two bodies: line by line within ``pairs``, else the differing lines as replaced."""
    x, y = old.splitlines(), new.splitlines()
    head = _common_head(x, y)
    tail = _common_head(x[head:][::-1], y[head:][::-1])
    if head == len(x) == len(y):
        return BodyDiff(key, fields, [])
    # The changed middle with its context; everything outside it is equal on both sides.
    lo = max(head - _CONTEXT, 0)
    x_mid, y_mid = x[lo : len(x) - max(tail - _CONTEXT, 0)], y[lo : len(y) - max(tail - _CONTEXT, 0)]
    note = None
    if pairs.take((len(x) - head - tail) * (len(y) - head - tail)):
        groups = difflib.SequenceMatcher(None, x_mid, y_mid, autojunk=False).get_grouped_opcodes(_CONTEXT)
    else:
        groups = iter([[("replace", 0, len(x_mid), 0, len(y_mid))]])
        note = (
            f"{len(x) - head - tail} and {len(y) - head - tail} lines differ: too many to compare line by line "
            f"here ({MAX_DIFF_PAIRS} line pairs per diff), so the differing lines are shown as replaced whole"
        )
    lines = [f"--- {key} (old)", f"+++ {key} (new)"]
    for group in groups:
        lines.extend(_hunk(group, x_mid, y_mid, lo))
        if len(lines) > MAX_DIFF_SHOWN_LINES:
            break
    shown = pairs.show(len(lines))
    if shown < len(lines):
        del lines[shown:]
        cut = (f"only the first {shown} lines of this diff are shown" if shown else
               f"this diff is not shown: the page shows {MAX_DIFF_PAGE_LINES} diff lines at most")
        note = cut if note is None else f"{note}; {cut}"
    return BodyDiff(key, fields, lines, note)


def _common_head(x: list[str], y: list[str]) -> int:
    """How many first lines ``x`` and ``y`` share."""
    n = 0
    for left, right in zip(x, y):
        if left != right:
            break
        n += 1
    return n


def _hunk(group: list[tuple[str, int, int, int, int]], x: list[str], y: list[str], offset: int) -> list[str]:
    """One unified-diff hunk (``@@ -l,n +l,n @@`` and its lines) of opcodes over ``x``/``y``, numbered from ``offset``."""
    first, last = group[0], group[-1]
    lines = [f"@@ -{_range(offset + first[1], last[2] - first[1])} +{_range(offset + first[3], last[4] - first[3])} @@"]
    for tag, i1, i2, j1, j2 in group:
        if tag == "equal":
            lines.extend(" " + line for line in x[i1:i2])
            continue
        lines.extend("-" + line for line in x[i1:i2])
        lines.extend("+" + line for line in y[j1:j2])
    return lines


def _range(start: int, length: int) -> str:
    """A hunk range as diff -u writes it (1-based; an empty range names the line before it)."""
    if length == 1:
        return str(start + 1)
    return f"{start + 1 if length else start},{length}"


class DiffCache:
    """Body diffs by pair of roots (a root names its bytes: a diff once made stays right), the
    ``MAX_CACHED_DIFFS`` most recent kept; safe for the server's threads."""

    def __init__(self, size: int = MAX_CACHED_DIFFS) -> None:
        self._size = size
        self._diffs: OrderedDict[tuple[str, str], tuple[DiffResult, list[BodyDiff]]] = OrderedDict()
        self._lock = threading.Lock()

    def diff(self, old: BundleView, new: BundleView) -> tuple[DiffResult, list[BodyDiff]]:
        """``bundle_diff(old, new)``, made once per pair of roots while it stays among the most recent."""
        pair = (old.root, new.root)
        with self._lock:
            cached = self._diffs.get(pair)
            if cached is not None:
                self._diffs.move_to_end(pair)
                return cached
        made = bundle_diff(old, new)
        with self._lock:
            self._diffs[pair] = made
            while len(self._diffs) > self._size:
                self._diffs.popitem(last=False)
        return made
