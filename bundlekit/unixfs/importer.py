"""The UnixFS importer: files and directories in, blocks with CIDs out.

Three entry points, all emitting blocks into a sink (anything with
``put(cid, data)``) children before parents, each distinct block once:

* ``import_file(stream, sink, profile)``: one byte stream.
* ``import_path(path, sink, profile, hidden=False)``: a file or a directory on
  disk; the root is the path itself (never a wrapping directory).
* ``import_tree(files, sink, profile, dirs=())``: a virtual tree of
  ``(path, source)`` pairs with implied intermediate directories; a source
  may be a file imported already (``Imported``, from ``import_bytes``), whose
  blocks are written as they are, nothing hashed again.

What the bytes look like is fixed by the profile (``bundlekit.unixfs.profiles``) and
described in ``specs/unixfs-profiles.md``: ``chunker`` cuts, ``layout`` builds
file DAGs, ``hamt`` writes directories.

Filesystem rules for ``import_path``: names starting with ``.`` are skipped
unless ``hidden=True``; symbolic links (and sockets, FIFOs, devices) are never
followed or read: they are skipped and reported in ``ImportResult.warnings``;
a file or directory that cannot be read, or a name that is not valid UTF-8,
raises ``SourceError`` naming the path.
"""

from __future__ import annotations

import functools
import io
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import BinaryIO, Union

from bundlekit.errors import SourceError, UsageError
from bundlekit.ipld.cid import RAW, cid_from_digest
from bundlekit.unixfs.chunker import iter_bytes_chunks, iter_chunks, read_full
from bundlekit.unixfs.hamt import Child, DirNode, ShardMemo, encode_flat, encode_hamt, needs_shard
from bundlekit.unixfs.layout import BlockSink, FileBuilder, LeafHasher, leaf_block, make_leaf
from bundlekit.unixfs.profiles import Profile

__all__ = [
    "ImportResult",
    "Imported",
    "ImportedEntry",
    "ListSink",
    "NullSink",
    "Source",
    "import_bytes",
    "import_file",
    "import_many",
    "import_path",
    "import_tree",
]



@dataclass(slots=True)
class Imported:
    """A file imported already: its CID, sizes and blocks (children first). ``import_tree`` writes the blocks
    into its sink as they are and links the CID: a file whose CID is known is not hashed twice. ``opened``, when
    given, is called as the tree reaches it (a build's progress). A value nothing changes (``dataclasses.replace``
    makes another), not frozen: a frozen dataclass sets each field through ``object.__setattr__``, ~0.45 us more a
    file of a build's 10,000 (issue 37)."""

    cid: bytes
    size: int
    tsize: int
    blocks: tuple[tuple[bytes, bytes], ...]
    opened: Callable[[], None] | None = None


Source = Union[bytes, "os.PathLike[str]", Callable[[], BinaryIO], Imported]


@dataclass
class ImportedEntry:
    """One imported file or directory. ``path`` is relative to the root ("" = root).

    ``size`` is the content size (for a directory, the sum over its files);
    ``tsize`` is the DAG size as written in a parent link.
    """

    path: str
    cid: bytes
    size: int
    tsize: int
    kind: str


@dataclass
class ImportResult:
    """The root CID, every entry (root last), and the distinct blocks emitted."""

    root: bytes
    entries: list[ImportedEntry]
    blocks: int
    bytes: int
    warnings: list[str] = field(default_factory=list)


class NullSink:
    """Discards blocks: for computing CIDs only."""

    def put(self, cid: bytes, data: bytes) -> None:
        pass


class ListSink:
    """Keeps ``(cid, data)`` pairs in the order received."""

    def __init__(self) -> None:
        self.blocks: list[tuple[bytes, bytes]] = []

    def put(self, cid: bytes, data: bytes) -> None:
        self.blocks.append((cid, data))


class _Reporting:
    """Forwards every block and reports the bytes forwarded so far against ``total``."""

    __slots__ = ("done", "progress", "sink", "total")

    def __init__(self, sink: BlockSink, progress: Callable[[int, int], None], total: int) -> None:
        self.sink = sink
        self.progress = progress
        self.total = total
        self.done = 0
        progress(0, total)

    def put(self, cid: bytes, data: bytes) -> None:
        self.sink.put(cid, data)
        self.done += len(data)
        self.progress(min(self.done, self.total), self.total)


def _input_bytes(path: str) -> int:
    """The bytes of the regular files at or under ``path`` (what the importer will read, about)."""
    try:
        if not os.path.isdir(path):
            return os.stat(path).st_size
    except OSError:
        return 0
    total = 0
    for folder, _dirs, names in os.walk(path):
        for name in names:
            try:
                total += os.lstat(os.path.join(folder, name)).st_size
            except OSError:
                continue  # the import itself reports what it cannot read
    return total


class _Counter:
    """Forwards each distinct block once and counts them."""

    __slots__ = ("blocks", "bytes", "seen", "sink")

    def __init__(self, sink: BlockSink) -> None:
        self.sink = sink
        self.seen: set[bytes] = set()
        self.blocks = 0
        self.bytes = 0

    def put(self, cid: bytes, data: bytes) -> None:
        if cid in self.seen:
            return
        self.seen.add(cid)
        self.blocks += 1
        self.bytes += len(data)
        self.sink.put(cid, data)

    def put_many(self, blocks: list[tuple[bytes, bytes]]) -> None:
        """Forward the blocks of ``blocks`` not forwarded before, in order, in one hand-over where the sink takes
        a batch (``put_many``): a build's 10,000 files imported already cost one pass, not a call chain each."""
        seen = self.seen
        fresh = {cid: data for cid, data in blocks if cid not in seen}
        if not fresh:
            return
        seen.update(fresh)
        self.blocks += len(fresh)
        self.bytes += sum(map(len, fresh.values()))
        batch = getattr(self.sink, "put_many", None)
        if batch is not None:
            batch(list(fresh.items()))
            return
        put = self.sink.put
        for cid, data in fresh.items():
            put(cid, data)


def _file_from_chunks(
    chunks: Iterable[bytes], sink: BlockSink, profile: Profile, path: str, hasher: LeafHasher
) -> ImportedEntry:
    builder = FileBuilder(profile, sink)
    for node, block in hasher.leaves(chunks):
        builder.add_leaf(node, block)
    node = builder.finish()
    return ImportedEntry(path, node.cid, node.size, node.tsize, "file")


def import_bytes(data: bytes, profile: Profile, digest: bytes | None = None) -> Imported:
    """``data`` imported as one UnixFS file, its blocks kept (``Imported``): what ``import_file`` computes, and a
    file of one chunk (a memory file) as its single leaf, hashed once. ``digest``: the SHA-256 of ``data``, taken
    already by the caller's read (a build's, ``TreeAccess.checked``); a single raw leaf's CID is that digest, so
    the bytes are not hashed a second time."""
    if len(data) <= profile.chunk_size:
        if digest is not None and profile.raw_leaves:  # leaf_block's raw CID: CIDv1, raw, sha2-256 of the bytes
            cid = cid_from_digest(1, RAW, digest)
            return Imported(cid, len(data), len(data), ((cid, data),))
        node, block = leaf_block(data, profile)
        return Imported(node.cid, node.size, node.tsize, ((node.cid, block),))
    sink = ListSink()
    entry = import_file(io.BytesIO(data), sink, profile)
    return Imported(entry.cid, entry.size, entry.tsize, tuple(sink.blocks))


def import_many(files: Iterable[tuple[bytes, bytes | None]], profile: Profile) -> list[Imported]:
    """:func:`import_bytes` of each ``(data, digest)`` of ``files``, in order. Under a profile with raw leaves, a file
    of one chunk whose digest is known (a build's 10,000 memory files, hashed as they were read) is its raw leaf:
    the CIDv1 of that digest, made here in one pass without a call per file; any other as ``import_bytes`` makes it."""
    if not profile.raw_leaves:
        return [import_bytes(data, profile, digest) for data, digest in files]
    limit, prefix, new = profile.chunk_size, cid_from_digest(1, RAW, b""), Imported
    return [new(cid, len(data), len(data), ((cid, data),))
            if digest is not None and len(data) <= limit and (cid := prefix + digest)
            else import_bytes(data, profile, digest)
            for data, digest in files]


def import_file(stream: BinaryIO, sink: BlockSink, profile: Profile) -> ImportedEntry:
    """Import one byte stream as a UnixFS file; return its entry (path "").

    Raises ``SourceError`` when reading the stream fails.
    """
    hasher = LeafHasher(profile)
    try:
        return _file_from_chunks(iter_chunks(stream, profile.chunk_size), _Counter(sink), profile, "", hasher)
    except OSError as exc:
        raise SourceError(f"error reading the input stream: {exc.strerror or exc}") from exc
    finally:
        hasher.close()


# Where pread exists (not on Windows), the pool's threads read the chunks after the first.
_PREAD = hasattr(os, "pread")
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)


def _open_file(path: str) -> int:
    """Open for reading without following a symlink swapped in after the walk saw a file."""
    try:
        return os.open(path, _OPEN_FLAGS)
    except OSError as exc:
        raise SourceError(f"cannot read {path!r}: {exc.strerror or exc}; check it exists and is readable") from exc


def _import_disk_file(path: str, rel: str, sink: BlockSink, profile: Profile, hasher: LeafHasher) -> ImportedEntry:
    """Import one regular file by its descriptor; most files are one chunk, so that path is direct."""
    fd = _open_file(path)
    read = functools.partial(os.read, fd)
    try:
        size = profile.chunk_size
        chunk = read_full(read, size)
        if len(chunk) < size:
            node = make_leaf(chunk, profile, sink)
        else:
            builder = FileBuilder(profile, sink)
            leaves = hasher.file_leaves(fd, chunk) if _PREAD else hasher.leaves(_rest_of_file(chunk, read, size))
            try:
                for leaf, block in leaves:
                    builder.add_leaf(leaf, block)
            finally:
                leaves.close()  # every pool read of fd is over before fd is closed
            node = builder.finish()
        return ImportedEntry(rel, node.cid, node.size, node.tsize, "file")
    except OSError as exc:
        raise SourceError(f"error reading {path!r}: {exc.strerror or exc}") from exc
    finally:
        os.close(fd)


def _rest_of_file(first: bytes, read: Callable[[int], bytes], size: int) -> Iterator[bytes]:
    """``first`` (a full chunk) and the chunks after it, the last one short (possibly none)."""
    chunk = first
    while chunk:
        yield chunk
        if len(chunk) < size:
            return
        chunk = read_full(read, size)


def _finish_dir(children: list[Child], sizes: int, rel: str, sink: BlockSink, profile: Profile,
                memo: ShardMemo | None = None) -> ImportedEntry:
    node: DirNode
    if needs_shard(children, profile):
        node = encode_hamt(children, profile, sink, memo)
    else:
        node = encode_flat(children, profile, sink)
    return ImportedEntry(rel, node.cid, sizes, node.tsize, "directory")


def _check_name(name: str, where: str) -> bytes:
    try:
        return name.encode("utf-8")
    except UnicodeEncodeError as exc:
        shown = os.path.join(where, name).encode("utf-8", "backslashreplace").decode("ascii", "backslashreplace")
        raise SourceError(f"file name {shown!r} is not valid UTF-8; rename it to import this tree") from exc


class _DiskDir:
    """A directory being walked: its pending names and the children finished so far."""

    __slots__ = ("children", "path", "pending", "rel", "size")

    def __init__(self, path: str, rel: str, pending: list[tuple[bytes, str, int]]) -> None:
        self.path = path
        self.rel = rel
        self.pending = pending  # reversed: pop() yields names in byte order
        self.children: list[Child] = []
        self.size = 0


_DIR, _FILE, _LINK, _OTHER = range(4)


def _list_dir(path: str, hidden: bool) -> list[tuple[bytes, str, int]]:
    """``(utf8 name, name, kind)`` for each entry, reverse-sorted so ``pop()`` gives byte order.

    ``scandir`` reports the entry type without following symlinks and,
    on most filesystems, without a ``stat`` call per entry.
    """
    out = []
    try:
        with os.scandir(path) as it:
            for entry in it:
                name = entry.name
                if not hidden and name.startswith("."):
                    continue
                if entry.is_dir(follow_symlinks=False):
                    kind = _DIR
                elif entry.is_file(follow_symlinks=False):
                    kind = _FILE
                elif entry.is_symlink():
                    kind = _LINK
                else:
                    kind = _OTHER
                out.append((_check_name(name, path), name, kind))
    except OSError as exc:
        raise SourceError(f"cannot list directory {path!r}: {exc.strerror or exc}") from exc
    out.sort(reverse=True)
    return out


def _join(rel: str, name: str) -> str:
    return name if not rel else f"{rel}/{name}"


def _holds_a_file(path: str, hidden: bool) -> bool:
    """Whether a regular file (not skipped as hidden) lies anywhere under ``path``."""
    stack = [path]
    while stack:
        current = stack.pop()
        for _bname, name, kind in _list_dir(current, hidden):
            if kind == _FILE:
                return True
            if kind == _DIR:
                stack.append(current + os.sep + name)
    return False


def _common_file_dir(top: str, hidden: bool) -> str:
    """The deepest directory under ``top`` that holds every file imported from ``top``.

    ``ipfs-car pack DIR`` strips the path prefix common to all the files it
    finds, so when everything sits inside one sub-directory (empty
    directories, hidden names and symlinks do not count) its root is that
    sub-directory. Profiles with ``root_at_common_dir`` reproduce that.
    """
    while True:
        holding = []
        for _bname, name, kind in _list_dir(top, hidden):
            if kind == _FILE:
                return top
            if kind == _DIR and _holds_a_file(top + os.sep + name, hidden):
                holding.append(name)
                if len(holding) > 1:
                    return top
        if len(holding) != 1:
            return top
        top = top + os.sep + holding[0]


def import_path(
    path: str | os.PathLike[str], sink: BlockSink, profile: Profile, *, hidden: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> ImportResult:
    """Import a file or a directory tree from disk; the root is ``path`` itself.

    ``progress(done, total)``, when given, follows the bytes of the blocks emitted against the
    bytes of the input's regular files (walked once first, only then): about the input read.

    Except with a profile whose ``root_at_common_dir`` is set (``ipfs-car``):
    there the root is the deepest directory holding every file, as ``ipfs-car
    pack`` does, and entry paths are relative to it.

    Raises ``SourceError`` when ``path`` (or anything under it) cannot be read,
    when a name is not valid UTF-8, or when ``path`` is a symlink or not a
    regular file or directory. Skipped entries are listed in ``warnings``.
    """
    hasher = LeafHasher(profile)
    if progress is not None:
        sink = _Reporting(sink, progress, _input_bytes(os.fspath(path)))
    try:
        return _import_path(os.fspath(path), _Counter(sink), profile, hidden, hasher)
    finally:
        hasher.close()


def _import_path(top: str, counter: _Counter, profile: Profile, hidden: bool, hasher: LeafHasher) -> ImportResult:
    """The walk behind :func:`import_path`."""
    try:
        st = os.lstat(top)
    except OSError as exc:
        raise SourceError(f"cannot read {top!r}: {exc.strerror or exc}; check the path") from exc
    if stat.S_ISREG(st.st_mode):
        entry = _import_disk_file(top, "", counter, profile, hasher)
        return ImportResult(entry.cid, [entry], counter.blocks, counter.bytes)
    if not stat.S_ISDIR(st.st_mode):
        raise SourceError(f"{top!r} is not a regular file or directory (symlinks are not followed)")
    if profile.root_at_common_dir:
        top = _common_file_dir(top, hidden)

    entries: list[ImportedEntry] = []
    warnings: list[str] = []
    # Iterative post-order walk: deep trees cannot hit the recursion limit, and
    # only the open directories' pending names are held in memory.
    stack = [_DiskDir(top, "", _list_dir(top, hidden))]
    while True:
        cur = stack[-1]
        if cur.pending:
            bname, name, kind = cur.pending.pop()
            full = cur.path + os.sep + name
            rel = _join(cur.rel, name)
            if kind == _DIR:
                stack.append(_DiskDir(full, rel, _list_dir(full, hidden)))
                # Placeholder keeps the name until the sub-directory is finished.
                cur.children.append(Child(bname, b"", -1))
            elif kind == _FILE:
                entry = _import_disk_file(full, rel, counter, profile, hasher)
                entries.append(entry)
                cur.children.append(Child(bname, entry.cid, entry.tsize))
                cur.size += entry.size
            else:
                what = "symbolic link" if kind == _LINK else "special file"
                warnings.append(f"skipped {what} {rel!r} (not followed)")
            continue
        stack.pop()
        if not cur.children and not profile.keep_empty_dirs and stack:
            parent = stack[-1]
            parent.children.pop()  # drop the placeholder: empty directories vanish
            continue
        entry = _finish_dir(cur.children, cur.size, cur.rel, counter, profile)
        entries.append(entry)
        if not stack:
            return ImportResult(entry.cid, entries, counter.blocks, counter.bytes, warnings)
        parent = stack[-1]
        placeholder = parent.children[-1]
        parent.children[-1] = Child(placeholder.name, entry.cid, entry.tsize, not cur.children)
        parent.size += entry.size


def _split(path: str) -> list[str]:
    """``path``'s parts; ``UsageError`` for an empty part, ``.``, ``..``, a backslash or a NUL (asked of the list and
    the path in C, not part by part: a build's 10,000 paths)."""
    parts = path.split("/")
    if "" in parts or "." in parts or ".." in parts or "\\" in path or "\0" in path:
        raise UsageError(f"invalid path {path!r} in import tree: use '/'-separated names without '.', '..' or empty parts")
    return parts


class _VDir:
    __slots__ = ("dirs", "files")

    def __init__(self) -> None:
        self.dirs: dict[str, _VDir] = {}
        self.files: dict[str, Source] = {}


def _import_source(source: Source, rel: str, sink: BlockSink, profile: Profile, hasher: LeafHasher) -> ImportedEntry:
    if isinstance(source, Imported):
        if source.opened is not None:
            source.opened()
        for cid, block in source.blocks:
            sink.put(cid, block)
        return ImportedEntry(rel, source.cid, source.size, source.tsize, "file")
    if isinstance(source, (bytes, bytearray, memoryview)):
        return _file_from_chunks(iter_bytes_chunks(bytes(source), profile.chunk_size), sink, profile, rel, hasher)
    if isinstance(source, os.PathLike):
        return _import_disk_file(os.fspath(source), rel, sink, profile, hasher)
    if callable(source):
        try:
            stream = source()
        except OSError as exc:
            raise SourceError(f"cannot open the source for {rel!r}: {exc}") from exc
        with stream:
            try:
                return _file_from_chunks(iter_chunks(stream, profile.chunk_size), sink, profile, rel, hasher)
            except OSError as exc:
                raise SourceError(f"error reading the source for {rel!r}: {exc}") from exc
    raise UsageError(f"unsupported source type {type(source).__name__} for {rel!r}: use bytes, a path or an opener")


def _virtual_tree(files: Iterable[tuple[str, Source]], dirs: Iterable[str]) -> _VDir:
    """The directories and files of :func:`import_tree`'s ``files`` and ``dirs``; ``UsageError`` for a malformed or
    duplicate path, or one that is both a file and a directory."""
    root = _VDir()
    for path in dirs:
        _made(root, _split(path), path)
    # each folder found once (a build's 10,000 files lie in two): a file's own name is then all there is to check
    folders: dict[str, _VDir] = {"": root}
    for path, source in files:
        folder, _slash, leaf = path.rpartition("/")
        parent = folders.get(folder)
        if parent is None:
            parent = folders[folder] = _folder(root, path)
        if leaf in _BAD_NAMES or "\\" in leaf or "\0" in leaf or (_slash and not folder):
            _split(path)  # raises, naming the path
        if leaf in parent.files or leaf in parent.dirs:
            raise UsageError(f"duplicate path {path!r} in the import tree")
        parent.files[leaf] = source
    return root


_BAD_NAMES = frozenset(("", ".", ".."))


def _folder(root: _VDir, path: str) -> _VDir:
    """The directory of ``root`` the file at ``path`` goes in (made, with those on its way, when missing):
    ``UsageError`` naming ``path`` when one on its way is a file or a part of it is not a name."""
    return _made(root, _split(path)[:-1], path)  # the whole path checked first, as a file in a folder found already is


def _made(root: _VDir, parts: list[str], path: str) -> _VDir:
    """The directory ``parts`` of ``root``, made with those on its way when missing; ``UsageError`` naming ``path``
    when one of them is a file."""
    node = root
    for part in parts:
        if part in node.files:
            raise UsageError(f"{path!r} is both a file and a directory in the import tree")
        node = node.dirs.setdefault(part, _VDir())
    return node


def import_tree(
    files: Iterable[tuple[str, Source]],
    sink: BlockSink,
    profile: Profile,
    *,
    dirs: Iterable[str] = (),
    memo: ShardMemo | None = None,
    list_files: bool = True,
) -> ImportResult:
    """Import a virtual tree: ``files`` are ``("a/b.md", source)`` pairs.

    A source is ``bytes``, an ``os.PathLike`` (read from disk) or a callable
    returning a binary stream (closed after reading). Intermediate directories
    are implied; ``dirs`` adds directories that may be empty. The root is the
    tree itself. Raises ``UsageError`` for a malformed or duplicate path, or a
    path that is both a file and a directory; ``SourceError`` when a source
    cannot be read. ``memo``: sub-shards of sharded directories written before (``hamt.encode_hamt``).
    Without ``list_files`` the result's ``entries`` are the directories' alone (a build asks only for ``memory/``'s,
    not for an entry per file of its 10,000). The blocks are emitted in the same order either way.
    """
    root = _virtual_tree(files, dirs)
    counter = _Counter(sink)
    entries: list[ImportedEntry] = []
    new_child = tuple.__new__  # a Child made as the tuple it is (a NamedTuple's __new__ is a Python function)

    def build(node: _VDir, rel: str) -> ImportedEntry | None:
        children: list[Child] = []
        size = 0
        # the blocks of files imported already, forwarded together (counter.put_many) before anything else is
        pending: list[tuple[bytes, bytes]] = []
        names = sorted([(n.encode("utf-8"), n, True) for n in node.dirs] + [(n.encode("utf-8"), n, False) for n in node.files])
        for bname, name, is_dir in names:
            if not is_dir:
                source = node.files[name]  # a build's 10,000 files come imported already: no call chain each
                if type(source) is Imported and source.opened is None:
                    pending += source.blocks
                    if list_files:
                        entries.append(ImportedEntry(f"{rel}/{name}" if rel else name, source.cid, source.size,
                                                     source.tsize, "file"))
                    children.append(new_child(Child, (bname, source.cid, source.tsize, True)))
                    size += source.size
                    continue
            if pending:
                counter.put_many(pending)
                pending = []
            sub_rel = f"{rel}/{name}" if rel else name
            if is_dir:
                sub = node.dirs[name]
                entry = build(sub, sub_rel)
                if entry is None:
                    continue
                children.append(Child(bname, entry.cid, entry.tsize, not (sub.dirs or sub.files)))
            else:
                entry = _import_source(node.files[name], sub_rel, counter, profile, hasher)
                if list_files:
                    entries.append(entry)
                children.append(new_child(Child, (bname, entry.cid, entry.tsize, True)))
            size += entry.size
        if pending:
            counter.put_many(pending)
        if not children and not profile.keep_empty_dirs and rel:
            return None
        entry = _finish_dir(children, size, rel, counter, profile, memo)
        entries.append(entry)
        return entry

    hasher = LeafHasher(profile)
    try:
        result = build(root, "")
    finally:
        hasher.close()
        # build refers to itself through its closure: a cycle that kept every entry and block the import made
        # alive until a collection found it (issue 37: 10,000 entries, ~3 ms of a sync round); now freed with it
        del build
    assert result is not None  # the root is always written
    return ImportResult(result.cid, entries, counter.blocks, counter.bytes)
