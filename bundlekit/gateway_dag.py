"""Which blocks a gateway response carries: path resolution and ``dag-scope``.

Path resolution goes through ``UnixFSReader.resolve`` one segment at a time
with a *recording* block getter, so the blocks needed to verify each step
(directory nodes, HAMT shards on the way) are known without this module
knowing how directories are laid out. A CAR response is those path blocks
followed by the blocks the scope asks for, at the terminal CID:

* ``block``  - the terminal block only;
* ``entity`` - a UnixFS file: every block of the file; a UnixFS directory:
  its node and, for a HAMT, every shard (enough to list it, not its
  children); anything else: the terminal block;
* ``all``    - the whole DAG under the terminal CID.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from .cid import DAG_PB, parse_cid_bytes

__all__ = ["DAG_SCOPES", "RecordingGetter", "Resolved", "resolve_path", "scope_blocks"]

DAG_SCOPES = ("block", "entity", "all")

Getter = Callable[[bytes], bytes]


class RecordingGetter:
    """A block getter that remembers every distinct block it handed out, in order."""

    def __init__(self, get_block: Getter) -> None:
        self._get = get_block
        self._seen: set[bytes] = set()
        self.blocks: list[tuple[bytes, bytes]] = []

    def __call__(self, cid: bytes) -> bytes:
        data = self._get(cid)
        if cid not in self._seen:
            self._seen.add(cid)
            self.blocks.append((cid, data))
        return data


@dataclass
class Resolved:
    """The outcome of resolving ``/ipfs/<root>/<segments...>``."""

    cids: list[bytes]  # the root, then the CID each segment resolved to
    path_blocks: list[tuple[bytes, bytes]]  # every block read to get there, root first

    @property
    def terminal(self) -> bytes:
        return self.cids[-1]


def resolve_path(get_block: Getter, root: bytes, segments: list[str]) -> Resolved:
    """Resolve ``segments`` under ``root`` one at a time, recording the blocks read.

    The root block is always read, so a missing root raises ``MissingBlock``
    before anything else. Whatever ``UnixFSReader.resolve`` raises for a
    missing name, a non-directory or an unsafe name propagates unchanged.
    """
    recorder = RecordingGetter(get_block)
    recorder(root)
    cids = [root]
    if segments:  # a bare /ipfs/{cid} needs no UnixFS decoding at all (raw blocks, any codec)
        from .unixfs_read import UnixFSReader

        reader = UnixFSReader(recorder, verify=False)
        for segment in segments:
            cids.append(reader.resolve(cids[-1], segment))
    return Resolved(cids, recorder.blocks)


def scope_blocks(get_block: Getter, cid: bytes, scope: str) -> Iterator[tuple[bytes, bytes]]:
    """The blocks ``dag-scope=scope`` selects at ``cid``, verified, parents first.

    ``get_block`` is trusted to verify (a ``BlockSource`` does), so blocks
    are not hashed twice. Raises ``MissingBlock`` (possibly mid-iteration)
    when the source lacks one.
    """
    from .verify import walk_dag

    if scope == "all":
        yield from walk_dag(cid, get_block, verify=False)
        return
    if scope == "entity" and parse_cid_bytes(cid).codec == DAG_PB:
        from .unixfs_read import UnixFSReader

        kind = UnixFSReader(get_block, verify=False).stat(cid).kind
        if kind == "file":
            yield from walk_dag(cid, get_block, verify=False)
            return
        if kind == "directory":
            recorder = RecordingGetter(get_block)
            recorder(cid)
            UnixFSReader(recorder, verify=False).list_dir(cid)
            yield from recorder.blocks
            return
    yield cid, get_block(cid)
