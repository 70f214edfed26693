"""A pack index's rules (specs/gateway.md, 2.2a) checked in C (``bundlekit/_packscan.c``) decide exactly what the
interpreter's loops decide where it is not built (``blockstore._entries_pass``), on random and mutated entries;
and a lookup by binary search over the index's bytes finds what a dict of its entries holds."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bundlekit import blockstore
from bundlekit.ipld.cid import DAG_PB, MAX_BLOCK_SIZE, RAW

packscan = pytest.importorskip("bundlekit._packscan", reason="bundlekit._packscan is not built")

_MAX = MAX_BLOCK_SIZE


@contextmanager
def _in_python() -> Iterator[None]:
    compiled = getattr(blockstore, "_packscan")
    setattr(blockstore, "_packscan", None)
    try:
        yield
    finally:
        setattr(blockstore, "_packscan", compiled)


def _both(body: bytes, pack_size: int) -> tuple[bool, bool]:
    view = memoryview(body)
    compiled = blockstore._entries_pass(view, pack_size)
    with _in_python():
        interpreted = blockstore._entries_pass(view, pack_size)
    return compiled, interpreted


def _entry(cid: bytes, offset: int, length: int) -> bytes:
    return cid + offset.to_bytes(8, "big") + length.to_bytes(4, "big")


_PREFIXES = st.sampled_from([bytes((1, RAW, 0x12, 0x20)), bytes((1, DAG_PB, 0x12, 0x20)), bytes((1, 0x71, 0x12, 0x20)),
                             bytes((0, RAW, 0x12, 0x20)), bytes((1, RAW, 0x13, 0x20)), bytes((1, RAW, 0x12, 0x21))])
_NUMBERS = st.one_of(st.sampled_from([0, 1, _MAX - 1, _MAX, _MAX + 1, 2**32 - 1, 2**63 - 1, 2**63, 2**64 - 1]),
                     st.integers(0, 2**64 - 1), st.integers(0, 4096))


@st.composite
def _indexes(draw: st.DrawFn) -> tuple[bytes, int]:
    """A body of entries (mostly well formed, sorted or not, repeated or not, cut or not) and a pack size."""
    entries = draw(st.lists(st.tuples(
        st.one_of(_PREFIXES.filter(lambda p: p[:2] in (b"\x01\x55", b"\x01\x70") and p[2:] == b"\x12\x20"), _PREFIXES),
        st.binary(min_size=32, max_size=32) | st.sampled_from([b"\x00" * 32, b"\xff" * 32]),
        _NUMBERS, _NUMBERS.map(lambda n: n % 2**32)), max_size=12))
    raw = [_entry(prefix + digest, offset, length) for prefix, digest, offset, length in entries]
    if draw(st.booleans()):
        raw.sort()
    if draw(st.booleans()) and raw:
        copied = raw[draw(st.integers(0, len(raw) - 1))]
        raw.insert(draw(st.integers(0, len(raw))), copied)
    body = b"".join(raw)
    if draw(st.integers(0, 5)) == 0:
        body = body[: draw(st.integers(0, len(body)))]
    return body, draw(st.one_of(st.sampled_from([0, 1, 4096, _MAX, 2**63 - 1]), st.integers(0, 2**63 - 1)))


@settings(max_examples=400, deadline=None)  # 2,000 took ~10 s a run; the attack pass ran 18,000 once
@given(index=_indexes())
def test_the_compiled_check_decides_what_the_interpreted_check_decides(index: tuple[bytes, int]) -> None:
    body, pack_size = index
    if len(body) % 48:  # the caller refuses these before either check; the compiled one refuses them too
        assert packscan.check(body, pack_size, _MAX) is False
        return
    compiled, interpreted = _both(body, pack_size)
    assert compiled == interpreted


def test_a_well_formed_index_passes_and_each_broken_rule_fails_it() -> None:
    cids = sorted(bytes((1, RAW, 0x12, 0x20)) + bytes([n]) * 32 for n in range(4))
    good = [_entry(cid, 100 * n, 100) for n, cid in enumerate(cids)]
    assert _both(b"".join(good), 400) == (True, True)
    assert _both(b"", 0) == (True, True)
    broken = {
        "swapped": [good[1], good[0], *good[2:]],
        "repeated": [good[0], good[0], *good[2:]],
        "past the end": [*good[:3], _entry(cids[3], 301, 100)],
        "over the block bound": [*good[:3], _entry(cids[3], 0, _MAX + 1)],
        "offset wraps": [*good[:3], _entry(cids[3], 2**64 - 50, 100)],
        "another codec": [*good[:3], _entry(bytes((1, 0x71, 0x12, 0x20)) + b"\xff" * 32, 0, 1)],
    }
    for why, entries in broken.items():
        assert _both(b"".join(entries), 400) == (False, False), why


def test_a_negative_pack_size_or_bound_is_refused_not_wrapped() -> None:
    with pytest.raises(ValueError):
        packscan.check(b"", -1, _MAX)
    with pytest.raises(ValueError):
        packscan.check(b"", 0, -1)


@settings(max_examples=200, deadline=None)
@given(digests=st.sets(st.binary(min_size=32, max_size=32), max_size=40), probes=st.lists(st.binary(min_size=32, max_size=32), max_size=10))
def test_a_lookup_by_binary_search_finds_exactly_the_entries(digests: set[bytes], probes: list[bytes]) -> None:
    prefix = bytes((1, RAW, 0x12, 0x20))
    entries = {prefix + digest: (7 * n, n) for n, digest in enumerate(sorted(digests))}
    index = blockstore._PackIndex(blockstore._INDEX_MAGIC + b"".join(_entry(c, *e) for c, e in sorted(entries.items())))
    for cid, entry in entries.items():
        assert index.get(cid) == entry
    for probe in probes:
        assert index.get(prefix + probe) == entries.get(prefix + probe)
    assert list(index.entries()) == [(cid, *entry) for cid, entry in sorted(entries.items())]
