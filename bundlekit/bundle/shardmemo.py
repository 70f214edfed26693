"""The sub-shards of a tree's last thin build, so the next one neither lays out nor encodes those unchanged.

``memory/`` is a HAMT (``unixfs.hamt``): at 10,000 memories about 960 shard blocks, every one laid out, encoded
and hashed again at each build although a sync that changed k files changes at most k of the 256 sub-shards
under the root. A sub-shard under one slot of the root holds exactly the entries whose names hash to that slot,
laid out by their hashes alone, so its bytes are decided by those entries (``hamt.slot_message``: names, CIDs,
Tsizes, the CID version): the same message, the same block. :class:`ShardMemo` remembers, per message, the
finished sub-shard's CID and Tsize and answers ``find`` only for a block the CAR's reader holds already
(``BuildOptions.leave_out``: a thin build), since a sub-shard found here is not written into the CAR. The root
block is always encoded and written, so the root is the one a full build makes, byte for byte.

Table ``shards`` in ``<tree>/.bundlekit/build-cache.sqlite`` (beside ``bundle.buildcache``'s tables): ``tag`` (the
HMAC-SHA-256 of the message under this user's key, ``buildcheck.seal_key``, after a fingerprint of the code that
encodes shards), ``cid``, ``tsize``, ``seal`` (the HMAC of the tag, CID and Tsize under the same key). A message is
looked up by its tag alone, so a row planted by anyone without the key (a tree copied from elsewhere) never
matches one, and a row made under other encoding code neither; a row whose seal does not verify (one of this
user's, edited to name another block the reader holds) is ignored. Each build keeps only the rows it used or made (about 256). A cache: lost, damaged, or unwritable,
it costs an encoding, never a wrong byte.
"""

from __future__ import annotations

import hmac
import sqlite3
from collections.abc import Callable
from contextlib import closing, suppress
from pathlib import Path
from typing import Final

from bundlekit.bundle.buildcache import CACHE_NAME, plain_files, write_cache
from bundlekit.bundle.buildcheck import seal_key, sources_digest
from bundlekit.crypto._hmac import hmac_sha256
from bundlekit.unixfs.hamt import DirNode

__all__ = ["ShardMemo"]

_SCHEMA: Final = ("CREATE TABLE IF NOT EXISTS shards (tag BLOB PRIMARY KEY, cid BLOB NOT NULL, tsize INTEGER NOT NULL, "
                  "seal BLOB NOT NULL)")
_ROW: Final = b"bundlekit shard row 1"
#: The modules whose code decides a shard's bytes: a row made under other code is never looked up.
_ENCODERS: Final = ("unixfs/hamt", "ipld/dagpb", "ipld/cid", "bundle/shardmemo")
#: Read when this module loads, not at a first thin build: a process that runs for hours (``sync --interval``) and
#: first builds after an upgrade rewrote the sources would tag the old encoder's sub-shards as the new one's.
_fingerprint: Final = sources_digest(b"bundlekit shard memo 1", _ENCODERS)


def _encoders() -> bytes:
    """The fingerprint of the code in :data:`_ENCODERS` (of the code loaded, :data:`_fingerprint`)."""
    return _fingerprint


def _seal(key: bytes, tag: bytes, node: DirNode) -> bytes:
    """The HMAC under ``key`` of a whole row (its tag, CID and Tsize): a row of this user's edited to name another
    block (a CID the reader holds, under a tag that verifies) is never taken."""
    return hmac_sha256(key, _ROW + tag + len(node.cid).to_bytes(4, "big") + node.cid + node.tsize.to_bytes(8, "big"))


class ShardMemo:
    """The sub-shards ``tree``'s last thin build wrote (a ``hamt.ShardMemo``); ``held(cid)``: whether the CAR's
    reader holds a block (only such sub-shards are found). :meth:`save` after the CAR is written."""

    def __init__(self, tree: Path | None, held: Callable[[bytes], bool]) -> None:
        self.path = None if tree is None else tree / CACHE_NAME
        self._held = held
        self._key = None if tree is None else seal_key(tree)
        self._rows: dict[bytes, DirNode] = {}
        self._used: dict[bytes, DirNode] = {}
        self._load()

    def _load(self) -> None:
        if self.path is None or self._key is None or not self.path.exists() or not plain_files(self.path):
            return
        with suppress(sqlite3.Error), closing(sqlite3.connect(self.path)) as db:
            if db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'shards'").fetchone() is None:
                return
            for tag, cid, tsize, seal in db.execute("SELECT tag, cid, tsize, seal FROM shards"):
                if (isinstance(tag, bytes) and isinstance(cid, bytes) and isinstance(tsize, int)
                        and 0 <= tsize < 1 << 63 and isinstance(seal, bytes)
                        and hmac.compare_digest(seal, _seal(self._key, tag, DirNode(cid, tsize)))):
                    self._rows[tag] = DirNode(cid, tsize)

    def _tag(self, message: bytes) -> bytes | None:
        return None if self._key is None else hmac_sha256(self._key, _encoders() + message)

    def find(self, message: bytes) -> DirNode | None:
        """The sub-shard ``message`` decides, when a build of this user's wrote it and the reader holds it."""
        tag = self._tag(message)
        node = None if tag is None else self._rows.get(tag)
        if tag is None or node is None or not self._held(node.cid):
            return None
        self._used[tag] = node
        return node

    def keep(self, message: bytes, node: DirNode) -> None:
        """Remember the sub-shard ``message`` decides, just written."""
        tag = self._tag(message)
        if tag is not None:
            self._used[tag] = node

    def save(self) -> None:
        """Keep the rows this build used or made, only those (one transaction; nothing when they are the same)."""
        if self.path is None or self._key is None or self._used == self._rows:
            return
        key = self._key
        fresh = [(tag, node.cid, node.tsize, _seal(key, tag, node)) for tag, node in self._used.items()
                 if self._rows.get(tag) != node]

        def write(db: sqlite3.Connection) -> None:
            if "seal" not in {column[1] for column in db.execute("PRAGMA table_info(shards)")}:
                db.execute("DROP TABLE IF EXISTS shards")  # made by code that sealed no row: none is taken
            db.execute(_SCHEMA)
            gone = [(tag,) for (tag,) in db.execute("SELECT tag FROM shards").fetchall() if tag not in self._used]
            db.executemany("DELETE FROM shards WHERE tag = ?", gone)
            db.executemany("INSERT OR REPLACE INTO shards VALUES (?, ?, ?, ?)", fresh)

        write_cache(self.path, write)
