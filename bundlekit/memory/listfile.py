"""The kept listing: ``memory list``'s lines as the index last joined them, in one file beside the derived index.

At 100,000 memories SQLite joins the listing (``Listing.listed``: a key, a tab and a row's ``line``, in key
order, and the rows' files) in about 150 ms, half of a ``memory list``; the same text read back from a file
costs a read and one check of its bytes (UTF-8, and the marks the output checks ask of it:
``_marks.marks_utf8``, ~15 ms); a listing no output check changes is printed as those bytes, never decoded
(``_redact.shown_as_is``). The first ``memory list`` of an index state writes it; every one after it, while
the state stands, reads it instead of joining the rows again.

Derived data, and read as foreign: ``<tree>/.bundlekit/listing.bin``, every number little-endian::

    magic       8 bytes  b"BKLIST\\r\\n"
    version     uint32   FORMAT (1)
    reserved    uint32   0
    gen         int64    the index's generation      \\  the index state it was written from
    written_ns  int64    its state's written_ns      /
    text_len    uint64   then the lines (UTF-8, newline between, no newline after the last)
    flags_len   uint64   then the files whose line made from the file shows a credential (UTF-8, NUL between)

It decides no key: :func:`read` gives the lines only when they list exactly the files of the tree's listing in
key order, each line's key being its file's name less ``.md`` (``_statscan.listing_matches``, one pass in C;
where that is not built, no file is kept or read). So what a hand-written file can change is what a line
prints after its key, as a hand-edited ``line`` column can (specs/memory.md, "Derived index"); the lines are
escaped and redacted as any are. :func:`read` answers None for a file that is not exactly that: absent, not a
regular file (never followed through a symbolic link, never waited on as a FIFO), of another version or
index state, of a size not the one its header gives or past :data:`MAX_LINE_BYTES` a file listed, text that is
not UTF-8, lines that are not the listing's. A file that cannot be written is left as it is.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable
from pathlib import Path

from bundlekit._fs import atomic_write, open_regular
from bundlekit._marks import marks_utf8
from bundlekit.errors import BundlekitError, MemoryStoreError

try:
    from bundlekit.memory import _statscan
except ImportError:  # not built: the listing is joined by SQLite every time
    _statscan = None  # type: ignore[assignment]


def _compiled_check() -> Callable[[str | bytes, bytes], bool] | None:
    """The compiled check; None where it is not built, or built before it had one or before it took the lines as
    bytes (an install not rebuilt since: it raises TypeError for bytes, asked once here, not at each use)."""
    check: Callable[[str | bytes, bytes], bool] | None = getattr(_statscan, "listing_matches", None)
    if check is None:
        return None
    try:
        check(b"", b"")
    except TypeError:
        return None
    return check


_listing_matches = _compiled_check()

__all__ = ["FORMAT", "LISTING_FILE", "MAGIC", "MAX_LINE_BYTES", "Stamp", "read", "write"]

LISTING_FILE = "listing.bin"
MAGIC = b"BKLIST\r\n"
FORMAT = 1
# What a kept listing may hold per file listed (a line and a flagged name), on average: a longer one is not kept.
MAX_LINE_BYTES = 8192
_HEADER = struct.Struct("<8sIIqqQQ")

Stamp = tuple[int, int]
"""The index state a listing is of: (generation, ``written_ns``)."""


def write(path: Path, stamp: Stamp, body: bytes, flagged: list[str], names: bytes) -> None:
    """Keep ``body`` (the listing of the index state ``stamp`` as UTF-8, lines of the files ``names``: UTF-8, NUL
    between) and ``flagged`` at ``path``, atomically; nothing when :func:`read` would not take it back (the lines
    are not the files' in key order: a key that sorts before another only by the ``.md`` after it), it cannot be
    written (a read-only tree), or the compiled check is not built."""
    if _listing_matches is None or not _listing_matches(body, names):
        return
    try:
        flags = "\0".join(flagged).encode("utf-8")
    except UnicodeEncodeError:
        return
    if len(body) + len(flags) > MAX_LINE_BYTES * (names.count(b"\0") + 1):
        return
    header = _HEADER.pack(MAGIC, FORMAT, 0, stamp[0], stamp[1], len(body), len(flags))
    try:
        with atomic_write(path, error=MemoryStoreError, sync_dir=False) as file:
            for part in (header, body, flags):  # written in turn: no 15 MB copy joined first
                file.write(part)
    except BundlekitError:
        return  # derived: list joins the rows instead


def read(path: Path, stamp: Stamp, names: bytes) -> tuple[bytes, list[str]] | None:
    """The lines (as their UTF-8 bytes, checked to be UTF-8: ``_marks.marks_utf8``) and flagged files kept at
    ``path`` when it is a listing of the index state ``stamp`` whose lines are exactly those of the files
    ``names`` (UTF-8, NUL between, sorted as the tree's listing sorts them), in key order; else None (see the
    module). The bytes are not decoded here: a listing printed as it is read never is (``_redact.shown_as_is``)."""
    if _listing_matches is None or not names:
        return None
    most = MAX_LINE_BYTES * (names.count(b"\0") + 1)
    try:
        fd = open_regular(path)
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb", buffering=0) as file:
            size = os.fstat(fd).st_size
            head = file.read(_HEADER.size)
            if not _HEADER.size <= size <= _HEADER.size + most or len(head) != _HEADER.size:
                return None
            magic, version, _reserved, gen, written_ns, text_len, flags_len = _HEADER.unpack(head)
            if (magic, version, (gen, written_ns)) != (MAGIC, FORMAT, stamp) or _HEADER.size + text_len + flags_len != size:
                return None
            body = file.read(text_len)  # one read(2) of a regular file: all of it, or the file changed meanwhile
            flags_data = file.read(flags_len + 1)
    except OSError:
        return None
    if len(body) != text_len or len(flags_data) != flags_len or marks_utf8(body) is None:
        return None
    try:
        flags = flags_data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if not _listing_matches(body, names):
        return None
    flagged = flags.split("\0") if flags else []
    if flagged and not set(flagged) <= set(names.decode("utf-8", "surrogateescape").split("\0")):
        return None  # a file named that is not listed: it would be read
    return body, flagged
