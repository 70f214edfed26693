"""What a tree's last build found of each file, so the next build checks and parses only the files that changed.

A build checks every file it packs (key rules, frontmatter, the whole secret guard, the device rule) and
needs of every memory its index fields (key, type, name, description: ``MEMORY.md`` lists them) and its
``updated`` time (the bundle's default ``created``). Parsing and guarding 10,000 files costs most of a
build; git's answer is its index, which remembers each file's object by stat signature. Here the key is
stronger than a stat signature: the SHA-256 of the bytes read now. Every file is still read at every build
(the bundle carries the files' bytes as read, never a cached copy), and a file whose bytes hash to the
digest remembered for its name was checked at that digest: the same bytes pass the same checks and parse
to the same fields, so it is neither parsed nor checked again. An edit in place that keeps size, mtime and
inode changes the bytes, so the digest: nothing like git's racy-entry rule is needed.

The verdicts hold under the rules that made them: the cache is kept with a fingerprint of the checking code
(:func:`rules_fingerprint`: the source of the modules that parse and guard, and the built secret scanner).
Another fingerprint (an upgrade, a new secret rule) takes no row: the next build checks every file again. Only a
build that succeeded saves (a file refused never gets a row), and only memories that are not device-bound (those
refuse the build).

One file, ``<tree>/.bundlekit/build-checks`` (:data:`CHECKS_NAME`), local to this copy of the tree, every number
little-endian (issue 37: at 10,000 memories the sealed SQLite rows it replaces cost ~55 ms to load and 13 to 35 ms
to save; this is read, verified and split in a few calls)::

    magic      8 bytes   b"BKCHECK\\n"
    tag        32 bytes  HMAC-SHA-256, under this user's key (:func:`seal_key`), of every byte after it
    version    uint32    FORMAT (2: the SQLite table ``checked`` was 1)
    rules      64 bytes  rules_fingerprint(), ASCII hex
    memories   uint32    m, the memory files' rows
    days       uint32    d, the timeline days' rows
    texts_len  uint64    t
    digests    (m + d) * 32 bytes: each memory's SHA-256 in row order, then each day's
    updated    m * int64: each memory's ``updated`` in microseconds since the epoch (exact)
    texts      t bytes: UTF-8 (``surrogatepass``), each text ended by a NUL, column by column: the memories'
               paths (``<key>.md``), their ``type``, their ``name``, their ``description``; then the days'
               paths (``timeline/<day>``)

A tree may come from elsewhere with its ``.bundlekit/`` (copied, unpacked): a file planted there could name the
digest of a file the planter wrote with other index fields, or a secret it holds as checked. So the file is
sealed, and read as foreign (:func:`_read_blob`): opened as ``open_regular`` does (never through a link, never
waiting on a FIFO), not read when larger than the rows a cache may hold at most (:data:`_MAX_ROWS`, each of
:data:`_MAX_ROW_TEXT` text bytes) could fill, and its tag verified over everything after it before a byte of it is
parsed. Then (:func:`_unpack`) it is taken whole or not at all: the magic, version and rules as written, the size
exactly the one its counts give, ``t`` within the per-row bound, the texts valid UTF-8 that split into exactly
``4m + d`` texts; any exception while parsing is a cache not taken. Of a file taken, a row is taken only when of
its shape: a memory's path ends in ``.md`` and is no day's, its ``updated`` in a ``datetime``'s range; a day's path
is under ``timeline/`` (a day's row gives its digest only). A text cannot hold a NUL (it ends one), and a save
writes no row whose texts hold one or are longer than :data:`_MAX_ROW_TEXT`: that file is checked at every build.
Lost, damaged, torn (it is written without fsync: a crash may leave it short or empty, which fails the seal), of
another version, rules or user, it costs a full check, never a wrong byte.

A save writes only when a row changed: the rows loaded that still hold plus this build's, packed anew and
renamed into place (``_fs.atomic_write``). Two builds saving at once each write rows that are true (a verdict is
keyed by the digest it was made at): the last rename wins, and a row it lacks costs a check. The SQLite tables
``checked`` and ``seal`` in ``build-cache.sqlite`` that held the verdicts until format 2 are no longer read; the
first save without this file drops them (the file's other tables, ``bundle.buildcache``'s and
``bundle.shardmemo``'s, are left as they are).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import struct
import sys
from collections.abc import Iterable, Mapping, Sequence
from contextlib import suppress
from datetime import UTC, datetime, timedelta
from importlib.util import find_spec
from itertools import compress, repeat
from pathlib import Path
from typing import TYPE_CHECKING, Final, NamedTuple

from bundlekit._fs import atomic_write, atomic_write_bytes, open_regular, read_up_to
from bundlekit.blockstore import default_store_root
from bundlekit.bundle.buildcache import CACHE_NAME, drop_tables, write_cache
from bundlekit.errors import BundleError, BundlekitError
from bundlekit.memory.links import ensure_real_dir
from bundlekit.memory.naming import HIDDEN_DIR, TIMELINE_DIR

if TYPE_CHECKING:
    from bundlekit.memory import MemoryRecord

__all__ = ["CHECKS_NAME", "FORMAT", "KEY_FILE", "MAGIC", "CheckCache", "Passed", "rules_fingerprint", "seal_key",
           "sources_digest"]

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_US: Final = timedelta(microseconds=1)
#: The modules whose code decides whether a file passes a build's checks and what its index fields are.
_RULES: Final = ("_secrets", "_marks", "memory/screen", "memory/record", "memory/quickyaml", "memory/frontmatter",
                 "memory/naming", "memory/timeline", "memory/device", "memory/timefmt", "memory/access",
                 "memory/indexer", "memory/filesize", "bundle/build", "bundle/buildcheck")
# memory/access: TreeAccess.checked, which calls the guards; _marks: which secret rules run over a text;
# memory/indexer: a file's bytes decoded and parsed; memory/filesize: a memory's size bound; bundle/build: the
# checks a build runs over the memories it parsed (the device rule).
#: The built modules whose every file (source, built library) is in the fingerprint: ``_marks`` asks the scanner
#: which secret rules a text can match.
_BUILT: Final = ("_textscan",)
#: The package whose sources are fingerprinted.
_PACKAGE = Path(__file__).resolve().parents[1]
_TIMELINE_PREFIX: Final = f"{TIMELINE_DIR}/"
_CHECKS_VERSION: Final = b"bundlekit build checks 2"  # bump to drop every verdict whatever the sources say
#: The verdicts' file, beside ``bundle.buildcache``'s ``build-cache.sqlite``.
CHECKS_NAME: Final = f"{HIDDEN_DIR}/build-checks"
MAGIC: Final = b"BKCHECK\n"
#: The layout's version (the SQLite table ``checked`` was 1): a file of another is not taken.
FORMAT: Final = 2
_DIGEST: Final = 32
#: magic, tag, then what the tag covers: version, rules, memories, days, texts_len.
_HEADER: Final = struct.Struct("<8s32sI64sIIQ")
_SEALED_FROM: Final = 8 + _DIGEST
#: Rows a cache holds at most (a loaded bundle lists at most ``ipld.walk.MAX_ENTRIES`` paths by default); a
#: tree of more is built without one.
_MAX_ROWS: Final = 1_000_000
#: Text bytes of one row at most (its texts' UTF-8 with their NULs; a key is at most 128 characters): a memory of
#: longer fields gets no row and is checked at every build.
_MAX_ROW_TEXT: Final = 4096
#: Past this size a file is not read, and a save that would write more writes nothing (that tree is checked in
#: full at every build): a planted file costs at most this much memory while its seal is checked. A million
#: memories fit with ~220 text bytes a row on average (rows of 10,000 generated memories average ~110).
_MAX_BYTES: Final = 256 * 1024 * 1024
#: The tables that held the verdicts until format 2, in ``build-cache.sqlite``: dropped by a first save.
_OLD_TABLES: Final = ("checked", "seal")
#: This user's sealing key, in their bundlekit data directory (``default_store_root``).
KEY_FILE: Final = "build-check.key"
_KEY_BYTES: Final = 32


class _Columns(NamedTuple):
    """The rows of a cache file, column by column, in row order: each memory file's path, ``type``, ``name``,
    ``description``, ``updated_us`` and SHA-256, then each timeline day's path and SHA-256."""

    paths: list[str]
    types: list[str]
    names: list[str]
    descriptions: list[str]
    updated: list[int]
    digests: list[bytes]
    day_paths: list[str]
    day_digests: list[bytes]


_NONE: Final = _Columns([], [], [], [], [], [], [], [])


class Passed(NamedTuple):
    """A memory file that passed a build's checks at the digest remembered for it: its index fields and
    ``updated`` (what ``render_index`` and the bundle's ``created`` read of a ``MemoryRecord``)."""

    key: str
    type: str
    name: str
    description: str
    updated: datetime


def rules_fingerprint() -> str:
    """The SHA-256 (hex) of the source of every module in :data:`_RULES` and the built scanner (:data:`_BUILT`):
    a verdict made under other code is not taken. Read when this module is loaded, beside the modules it names,
    not at a first build: a process that runs for hours (``sync --interval``, the MCP server) and first builds
    after an upgrade rewrote the sources would seal the old code's verdicts as the new code's."""
    return _fingerprint


def sources_digest(version: bytes, modules: Sequence[str], *, built: Sequence[str] = ()) -> bytes:
    """The SHA-256 of ``version``, the source of each of ``modules`` (paths under ``bundlekit/``, without
    ``.py``) and every file of each of the ``built`` modules (``<name>.*``: its C source, its built library):
    what a cached verdict was made under, so code that changed takes none of it."""
    digest = hashlib.sha256(version)
    for module in modules:
        try:
            digest.update((_PACKAGE / f"{module}.py").read_bytes())
        except OSError:  # an install without sources: a salt no install with them shares
            digest.update(f"no source for {module}".encode())
    for module in built:
        for path in sorted(_PACKAGE.glob(f"{module}.*")):
            with suppress(OSError):
                digest.update(path.name.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return digest.digest()


def _runtime() -> bytes:
    """What else decides a verdict than :data:`_RULES`: the Python that runs them (its ``re``, Unicode database,
    ``datetime``) and the YAML parser the frontmatter falls back to (PyYAML's ``__init__.py``, which holds its
    version, and its package's file names: whether its C loader is built), found without importing it (a lazy
    import). The key is the user's, shared by every install: one of another Python or PyYAML takes no verdict."""
    parts = [sys.version]
    try:
        spec = find_spec("yaml")
    except (ImportError, ValueError):  # a stand-in in sys.modules without a spec, a broken path hook
        spec = None
    if spec is not None and spec.origin:
        init = Path(spec.origin)
        with suppress(OSError):
            parts.append(hashlib.sha256(init.read_bytes()).hexdigest())
            parts += sorted(name for name in os.listdir(init.parent) if name != "__pycache__")  # made by an import
    return "\0".join(parts).encode("utf-8", "surrogateescape")


_fingerprint: str = sources_digest(_CHECKS_VERSION + _runtime(), _RULES, built=_BUILT).hex()


#: A ``Passed`` made from its fields as a tuple is (a NamedTuple's own ``__new__`` is a Python function: ~0.2 us a
#: row of a 10,000-row load).
_new_passed: Final = tuple.__new__


def seal_key(tree: Path | None = None) -> bytes | None:
    """This user's key for sealing a tree's verdicts: 32 random bytes in ``<data dir>/build-check.key``
    (``blockstore.default_store_root``: ``$BUNDLEKIT_HOME``, else the XDG data directory), made on first use
    (mode 0600; a file there that is not this user's alone, :func:`_read_key`, is replaced). None when it can
    be neither read nor made (nothing is then taken from or saved into a cache), no data directory is to be found
    (no ``$HOME``, a user id without a passwd entry), or the data directory lies inside ``tree`` (a relative
    ``$BUNDLEKIT_HOME`` read in the tree, a store kept in it): a key a copy of the tree carries, or that arrived
    with it beside a cache sealed under it, seals nothing.
    Two processes making it at once may each seal with their own: the loser's rows cost a check, never a byte."""
    try:
        home = default_store_root()
    except RuntimeError:  # no home directory to find (no $HOME, a user id without a passwd entry): no key
        return None
    if tree is not None and Path(os.path.realpath(home)).is_relative_to(os.path.realpath(tree)):
        return None
    path = home / KEY_FILE
    for _attempt in range(2):
        data = _read_key(path)
        if data is not None:
            return data
        try:
            atomic_write_bytes(path, os.urandom(_KEY_BYTES), error=BundleError, mode=0o600, parents=True)
        except BundlekitError:
            return None
    return None


def _read_key(path: Path) -> bytes | None:
    """The key at ``path`` when it is this user's alone: a regular file (opened without following a link or
    waiting on a FIFO), owned by this user, neither group- nor world-accessible, exactly 32 bytes. Anything
    else (a key another user owns or could read, a link, a FIFO, a short file) is no key: it is made again."""
    with suppress(OSError):
        fd = open_regular(path)
        try:
            info = os.fstat(fd)
            if info.st_uid != os.geteuid() or info.st_mode & 0o077:
                return None
            data = read_up_to(fd, _KEY_BYTES + 1)
        finally:
            os.close(fd)
        if len(data) == _KEY_BYTES:
            return data
    return None


def _read_blob(path: Path) -> bytearray | None:
    """The bytes of the file at ``path`` when it is a regular file (opened without following a link or waiting on a
    FIFO) of at most :data:`_MAX_BYTES`; None for anything else, or absent. Nothing of it is trusted yet."""
    try:
        fd = open_regular(path)
    except OSError:
        return None
    try:
        size = os.fstat(fd).st_size
        if not _HEADER.size <= size <= _MAX_BYTES:
            return None
        return _read_whole(fd, size)
    except OSError:
        return None
    finally:
        os.close(fd)


def _read_whole(fd: int, size: int) -> bytearray | None:
    """The ``size`` bytes of ``fd`` read into one buffer of that size (chunks joined would hold the file twice at
    the bound); None when the file ends before them or goes on after them (cut or grown while read)."""
    data = bytearray(size)
    with memoryview(data) as view, open(fd, "rb", buffering=0, closefd=False) as raw:
        done = 0
        while done < size and (got := raw.readinto(view[done:])):
            done += got
        return data if done == size and not raw.read(1) else None


def _unpack(data: bytes | bytearray, key: bytes, rules: str) -> _Columns | None:
    """The rows of the file ``data`` a build may take (module docstring): None unless its tag verifies under
    ``key`` (checked before any of it is parsed) and it is exactly of its layout, of :data:`FORMAT` and ``rules``.
    Never raises: any exception while parsing is a file not taken."""
    view = memoryview(data)
    if data[:8] != MAGIC or not hmac.compare_digest(hmac.digest(key, view[_SEALED_FROM:], "sha256"),
                                                    data[8:_SEALED_FROM]):
        return None
    try:
        return _parse(view, rules)
    except Exception:  # noqa: BLE001 - a file sealed by this user yet not of its layout: not taken, whatever it is
        return None


def _parse(view: memoryview, rules: str) -> _Columns | None:
    """The rows of a verified file (:func:`_unpack`), a call or two per region: the texts decoded and split
    once and cut into their columns, the digests sliced, ``updated`` unpacked; then only the rows of their shape
    (:func:`_of_shape`)."""
    _magic, _tag, version, made, memories, days, texts_len = _HEADER.unpack_from(view)
    rows = memories + days
    digests_at = _HEADER.size
    updated_at = digests_at + _DIGEST * rows
    texts_at = updated_at + 8 * memories
    if (version != FORMAT or made != rules.encode("ascii") or rows > _MAX_ROWS
            or texts_len > rows * _MAX_ROW_TEXT or len(view) != texts_at + texts_len):
        return None
    texts = str(view[texts_at:], "utf-8", "surrogatepass").split("\0")
    if len(texts) != 4 * memories + days + 1 or texts[-1]:
        return None
    blob = view[digests_at:updated_at].tobytes()
    digests = [blob[at:at + _DIGEST] for at in range(0, len(blob), _DIGEST)]
    cut = [memories * column for column in range(5)]
    return _of_shape(_Columns(texts[:cut[1]], texts[cut[1]:cut[2]], texts[cut[2]:cut[3]], texts[cut[3]:cut[4]],
                              list(struct.unpack_from(f"<{memories}q", view, updated_at)), digests[:memories],
                              texts[cut[4]:-1], digests[memories:]))


def _of_shape(found: _Columns) -> _Columns:
    """The rows of ``found`` a build may take: a memory's path ends in ``.md`` and is no day's and its
    ``updated_us`` is a ``datetime``'s; a day's path is under ``timeline/``. Tested over each column at once (a
    file this user's build wrote holds no other row), row by row only when one is not."""
    paths, updated, days = found.paths, found.updated, found.day_paths
    if (all(map(str.endswith, paths, repeat(".md"))) and not any(map(str.startswith, paths, repeat(_TIMELINE_PREFIX)))
            and (not updated or _LOWEST_US <= min(updated) <= max(updated) <= _HIGHEST_US)
            and all(map(str.startswith, days, repeat(_TIMELINE_PREFIX)))):
        return found
    return _kept(found, [path.endswith(".md") and not path.startswith(_TIMELINE_PREFIX) and _LOWEST_US <= when <= _HIGHEST_US
                         for path, when in zip(paths, updated, strict=True)],
                 [path.startswith(_TIMELINE_PREFIX) for path in days])


def _kept(rows: _Columns, memories: list[bool], days: list[bool]) -> _Columns:
    """The rows of ``rows`` whose flag in ``memories`` (the memories') or ``days`` (the days') is set."""
    return _Columns(list(compress(rows.paths, memories)), list(compress(rows.types, memories)),
                    list(compress(rows.names, memories)), list(compress(rows.descriptions, memories)),
                    list(compress(rows.updated, memories)), list(compress(rows.digests, memories)),
                    list(compress(rows.day_paths, days)), list(compress(rows.day_digests, days)))


_LOWEST_US: Final = (datetime.min.replace(tzinfo=UTC) - _EPOCH) // _US
_HIGHEST_US: Final = (datetime.max.replace(tzinfo=UTC) - _EPOCH) // _US


def _pack(key: bytes, rules: str, rows: _Columns) -> list[bytes]:
    """The file of ``rows`` (module docstring), sealed under ``key``, as its parts in order (the texts joined in
    one call). The caller keeps each row to the bounds and without a NUL (:func:`_fits`)."""
    texts = [*rows.paths, *rows.types, *rows.names, *rows.descriptions, *rows.day_paths]
    packed = ("\0".join(texts) + "\0" if texts else "").encode("utf-8", "surrogatepass")
    memories = len(rows.paths)
    body = [struct.pack("<I64sIIQ", FORMAT, rules.encode("ascii"), memories, len(rows.day_paths), len(packed)),
            b"".join(rows.digests), b"".join(rows.day_digests), struct.pack(f"<{memories}q", *rows.updated), packed]
    seal = hmac.new(key, digestmod="sha256")
    for part in body:
        seal.update(part)
    return [MAGIC, seal.digest(), *body]


def _fits(texts: Sequence[str]) -> bool:
    """Whether a row of ``texts`` can be kept: no NUL in one (it would end the text) and at most
    :data:`_MAX_ROW_TEXT` bytes of them with their NULs."""
    size = 0
    for text in texts:
        if "\0" in text:
            return False
        size += len(text.encode("utf-8", "surrogatepass")) + 1
    return size <= _MAX_ROW_TEXT


def _updated_us(record: MemoryRecord) -> int:
    return (record.updated - _EPOCH) // _US


class CheckCache:
    """The verdicts of ``tree``'s last build (None: a tree held in memory, nothing kept): :attr:`known` (path
    -> SHA-256) for ``Transaction.checked``, :meth:`passed` for the memories it skipped, :meth:`save` after a
    build that succeeded."""

    def __init__(self, tree: Path | None) -> None:
        self.path = None if tree is None else tree / CHECKS_NAME
        self.known: dict[str, bytes] = {}
        self._fields: dict[str, Passed] = {}
        self._rows = _NONE  # the rows taken: what a save keeps of them
        self._found = False  # a file stood at ``path`` (else a save drops the SQLite tables of format 1)
        self._load()

    def _load(self) -> None:
        if self.path is None:
            return
        data = _read_blob(self.path)
        self._found = data is not None or os.path.lexists(self.path)
        key = None if data is None else seal_key(self.path.parent.parent)
        if data is None or key is None:
            return
        rows = _unpack(data, key, rules_fingerprint())
        if rows is None:
            return  # not sealed by this user's key (a tree copied from elsewhere, a planted or edited file)
        paths = rows.paths
        when = map(_EPOCH.__add__, map(_US.__mul__, rows.updated))
        fields = zip([path[:-3] for path in paths], rows.types, rows.names, rows.descriptions, when, strict=True)
        self._fields = dict(zip(paths, map(_new_passed, repeat(Passed), fields), strict=True))
        self.known = dict(zip(paths, rows.digests, strict=True))
        self.known.update(zip(rows.day_paths, rows.day_digests, strict=True))
        self._rows = rows

    def passed(self, names: Iterable[str]) -> list[Passed]:
        """The index fields of the memory files ``names`` (skipped as known by ``Transaction.checked``)."""
        return [self._fields[name] for name in names]

    def save(self, digests: Mapping[str, bytes], records: Sequence[MemoryRecord]) -> None:
        """Keep this build's verdicts in place of the last: ``digests`` (path -> SHA-256) of every file it
        packed, ``records`` the memories it parsed and checked now (the others kept their rows). Written only
        when a row changed: the rows loaded that still hold and this build's, as one file renamed into place. A
        cache: a tree it cannot be written in still builds."""
        key = None if self.path is None else seal_key(self.path.parent.parent)  # a tree held in memory makes none
        if self.path is None or key is None:
            return
        new = [record for record in records if record.filename in digests
               and _fits((record.filename, record.type, record.name, record.description))]
        changed = [path for path, digest in self.known.items() if digests.get(path) != digest]  # or gone
        fresh = sorted(path for path in (*changed, *(digests.keys() - self.known.keys()))
                       if path.startswith(_TIMELINE_PREFIX) and path in digests)
        days = {path: digests[path] for path in fresh}  # a day new or changed
        written = {record.filename for record in new}.union(days)
        # a file gone, or changed and not checked now (it did not parse, or its row cannot be kept): its row goes
        gone = {path for path in changed if path not in written}
        if not new and not days and not gone:
            return
        drop = written | gone
        old = self._rows
        rows = _kept(old, [path not in drop for path in old.paths], [path not in drop for path in old.day_paths])
        for record in new:
            rows.paths.append(record.filename)
            rows.types.append(record.type)
            rows.names.append(record.name)
            rows.descriptions.append(record.description)
            rows.updated.append(_updated_us(record))
            rows.digests.append(digests[record.filename])
        rows.day_paths.extend(days)
        rows.day_digests.extend(days.values())
        if len(rows.paths) + len(rows.day_paths) <= _MAX_ROWS:
            parts = _pack(key, rules_fingerprint(), rows)
            if sum(map(len, parts)) <= _MAX_BYTES:
                self._write(parts)

    def _write(self, parts: list[bytes]) -> None:
        """``parts`` as the cache file, renamed into place without fsync (a crash may leave it torn or empty: it
        then fails its seal, a full check); and, when no file stood there at the load, the SQLite tables of
        format 1 dropped."""
        assert self.path is not None
        with suppress(BundlekitError, OSError):
            ensure_real_dir(self.path.parent)
            with atomic_write(self.path, error=BundleError, sync=False, sync_dir=False) as file:
                file.writelines(parts)
        old = self.path.parent.parent / CACHE_NAME
        if not self._found and os.path.lexists(old):
            write_cache(old, lambda db: drop_tables(db, _OLD_TABLES))
