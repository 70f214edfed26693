"""Fetching ahead of a load's reads: the strategy the loader attaches to a session over gateways.

A :class:`~bundlekit.bundle.sources.BlockSession` is a block getter and no more
(``ipld.getter.BlockGetter``: ``get``, ``get_many``). When it reads through a
``GatewayFetcher`` (its ``fetcher``: the store and the gateways of ``LocalStore``
and ``Gateways``), the loader attaches a :class:`FetchAhead` to it
(:func:`fetch_ahead`) and picks what it does: open the DAG's CAR and let ``get``
take blocks from it as it streams in (``stream``), or, when no CAR streams,
fetch the blocks under the files' roots level by level, ``concurrency`` at a time
(``prefetch``); a CAR file's session has no fetcher, nothing to fetch ahead, and
the loader reads it as it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import suppress

from bundlekit.bundle.sources import BlockSession
from bundlekit.errors import BundlekitError
from bundlekit.ipld.walk import MAX_DEPTH, block_links
from bundlekit.net.fetch import GatewayFetcher

__all__ = ["FetchAhead", "fetch_ahead"]

#: Slices of a prefetch level, in multiples of the concurrency, between which its byte bound is checked:
#: at most 16 x 8 = 128 blocks (256 MiB of the largest blocks) past the bound. A slice of 2 x 8 cost the
#: per-block load 35% more CPU (a thread pool and a barrier per 16 blocks; bench/load.py, loader CPU 1.75 s
#: against 1.3 s); at 16 it is within 3% of loading without slices.
_PREFETCH_SLICE = 16


class FetchAhead:
    """A session's blocks fetched ahead of the reads, through its ``GatewayFetcher``: the loader's strategy.

    ``stream`` opens the DAG's CAR, ``get_aside`` reads a block without reading
    on through it, ``prefetch`` fetches whole levels when no CAR streams, and
    ``finish`` ends the CAR after a load that went well.
    """

    def __init__(self, session: BlockSession, fetcher: GatewayFetcher) -> None:
        self._session = session
        self._fetcher = fetcher

    def stream(self) -> bool:
        """Open the DAG's CAR on the first gateway that answers (not when the store holds its root), for the
        session's ``get`` to take from as it arrives. True while that stream is open (or it came complete):
        the load then follows the DAG in the stream's order and fetches nothing ahead."""
        self._fetcher.stream_car(self._session.root)
        return self._fetcher.streaming or self._fetcher.car_complete

    def get_aside(self, cid: bytes) -> bytes:
        """Like the session's ``get``, without reading on through an open CAR stream: a small block the load
        needs before the stream would bring it (a bundle's ``signature.json`` sorts after ``memory/``)."""
        return self._fetcher.get_alone(cid)

    def prefetch(self, cids: Sequence[bytes], max_bytes: int, concurrency: int) -> None:
        """Fetch the DAGs under ``cids`` ahead of their reads: level by level, ``concurrency`` requests at a
        time, past ``max_bytes`` fetched no further (the reads that follow enforce each file's own caps); a
        block that fails is fetched again, alone, when its file is read (and skipped or refused there).
        Nothing when the store holds the DAG's root.

        The bound is checked between slices of a level (``_PREFETCH_SLICE`` x ``concurrency`` blocks), not
        only between levels: one node may link thousands of blocks, and a hostile DAG whose files claim a
        few bytes must not make a level of gigabytes be fetched (and kept) before any read refuses it.
        """
        if self._fetcher.root_in_store:
            return
        get_many = self._session.get_many
        level, fetched = list(cids), 0
        step = max(1, concurrency) * _PREFETCH_SLICE
        for _depth in range(MAX_DEPTH):
            children: list[bytes] = []
            for start in range(0, len(level), step):
                if fetched > max_bytes:
                    return
                part = level[start:start + step]
                got = get_many(part, concurrency)
                for cid in part:  # in link order, a block linked twice counted twice
                    data = got.get(cid)
                    if data is None:
                        continue
                    fetched += len(data)
                    with suppress(BundlekitError):  # a malformed node fails properly when its file is read
                        children.extend(child for child, _name in block_links(cid, data))
            if not children:
                return
            level = children

    def finish(self) -> None:
        """After a load that went well: end a CAR stream so its connection can be reused."""
        self._fetcher.finish_stream()


def fetch_ahead(session: BlockSession) -> FetchAhead | None:
    """The fetch-ahead strategy for ``session``: one over its fetcher, or None when its blocks are local."""
    fetcher = session.fetcher
    return None if fetcher is None else FetchAhead(session, fetcher)
