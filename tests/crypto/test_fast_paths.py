"""The per-file fast paths (issue 16) give the bytes of the straightforward computations.

HMAC on two ``hashlib`` calls equals the standard library's ``hmac.digest``; the
written-out file-key derivation equals the generic HKDF (itself checked against
``cryptography``'s in test_keys.py); the pooled OS random hands each record out
once, also across a refill, between threads and after a fork.
"""

from __future__ import annotations

import hmac
import os
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bundlekit import crypto
from bundlekit.crypto import _keys, _pool, _stream
from bundlekit.crypto._hmac import BLOCK_SIZE, hmac_pads, hmac_sha256, hmac_with
from bundlekit.crypto._keys import BundleKey, RawKeyFile
from bundlekit.errors import UsageError

# Key lengths on both sides of every HMAC branch: empty, the ones bundlekit uses (16, 32),
# one short of a block, a block, and longer than a block (hashed first).
KEY_LENGTHS = [0, 1, 16, 32, BLOCK_SIZE - 1, BLOCK_SIZE, BLOCK_SIZE + 1, 200]


@pytest.mark.parametrize("key_length", KEY_LENGTHS)
@pytest.mark.parametrize("msg_length", [0, 1, 55, 56, 64, 119, 200])
def test_hmac_sha256_is_the_standard_library_hmac(key_length: int, msg_length: int) -> None:
    key, msg = os.urandom(key_length), os.urandom(msg_length)
    assert hmac_sha256(key, msg) == hmac.digest(key, msg, "sha256")


@settings(max_examples=200, deadline=None)
@given(key=st.binary(max_size=150), msgs=st.lists(st.binary(max_size=300), min_size=1, max_size=3))
def test_pads_computed_once_serve_every_message(key: bytes, msgs: list[bytes]) -> None:
    pads = hmac_pads(key)
    assert [hmac_with(pads, m) for m in msgs] == [hmac.digest(key, m, "sha256") for m in msgs]


@settings(max_examples=100, deadline=None)
@given(bundle_key=st.binary(min_size=32, max_size=32), salt=st.binary(min_size=16, max_size=16),
       path=st.binary(min_size=1, max_size=300))
def test_file_keys_are_the_generic_hkdf_cut_in_two(bundle_key: bytes, salt: bytes, path: bytes) -> None:
    key = BundleKey(bundle_key)
    okm = _keys._hkdf(bundle_key, salt, b"bundlekit-enc/1 file\x00" + key.key_id + path, 64)
    assert _keys._file_keys(key, salt, path) == (okm[:32], okm[32:])


def test_an_empty_salt_derives_as_the_rfc_default_salt() -> None:
    key = BundleKey(bytes(range(32)))
    okm = _keys._hkdf(bytes(range(32)), None, b"bundlekit-enc/1 file\x00" + key.key_id + b"p", 64)
    assert _keys._file_keys(key, b"", b"p") == (okm[:32], okm[32:])


@pytest.mark.parametrize("size", [0, 1, 2_000, _stream.CHUNK_SIZE, _stream.CHUNK_SIZE + 1, 3 * _stream.CHUNK_SIZE + 7])
def test_seal_bytes_is_the_header_then_the_chunk_by_chunk_seal(size: int) -> None:
    data, key, prefix, aad, head = os.urandom(size), os.urandom(32), os.urandom(7), b"ad", b"head"
    reference = head + b"".join(_stream.seal_pieces(key, prefix, aad, _stream.slice_pieces(data, _stream.CHUNK_SIZE)))
    assert _stream.seal_bytes(key, prefix, aad, head, data) == reference


def test_seal_bytes_takes_a_memoryview_as_it_takes_bytes() -> None:
    data, key, prefix = os.urandom(2 * _stream.CHUNK_SIZE + 5), os.urandom(32), os.urandom(7)
    view = memoryview(b"xx" + data)[2:]
    assert _stream.seal_bytes(key, prefix, b"ad", b"h", view) == _stream.seal_bytes(key, prefix, b"ad", b"h", data)


def test_a_pool_record_has_the_record_size() -> None:
    assert {len(_pool.RandomPool(23, batch=4).take()) for _ in range(10)} == {23}


def test_a_pool_never_hands_out_a_record_twice_across_refills() -> None:
    pool = _pool.RandomPool(16, batch=3)
    records = [pool.take() for _ in range(50)]  # 17 system calls' worth
    assert len(set(records)) == len(records)


def test_threads_sharing_a_pool_get_distinct_records() -> None:
    pool = _pool.RandomPool(16, batch=7)
    taken: list[list[bytes]] = [[] for _ in range(4)]

    def work(out: list[bytes]) -> None:
        out.extend(pool.take() for _ in range(500))

    threads = [threading.Thread(target=work, args=(out,)) for out in taken]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    every = [record for out in taken for record in out]
    assert len(every) == 2000 and len(set(every)) == 2000


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_does_not_reuse_its_parents_records() -> None:
    pool = _pool.RandomPool(16, batch=64)
    pool.take()  # the pool now holds 63 records the parent will use next
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report its first record and leave without running pytest's teardown
        os.close(read_end)
        os.write(write_end, pool.take())
        os._exit(0)
    os.close(write_end)
    child_record = os.read(read_end, 16)
    os.close(read_end)
    os.waitpid(pid, 0)
    assert len(child_record) == 16 and child_record not in {pool.take() for _ in range(63)}


def test_a_pool_refuses_an_empty_record_size() -> None:
    with pytest.raises(UsageError):
        _pool.RandomPool(0)


def test_encrypt_bytes_draws_each_files_salt_and_prefix_from_the_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    key = RawKeyFile(bytes(range(32))).new_bundle_key("demo")[0]
    drawn = [bytes([i]) * 23 for i in (1, 2)]
    monkeypatch.setattr(crypto, "_HEADER_RANDOM", _FixedPool(drawn))
    first, second = (crypto.encrypt_bytes(b"x", key, "memory/a.md.enc") for _ in range(2))
    assert first[10:33] == drawn[0] and second[10:33] == drawn[1]
    assert crypto.decrypt_bytes(second, key, "memory/a.md.enc") == b"x"


def test_an_injected_rng_is_asked_for_the_salt_then_the_prefix() -> None:
    key = RawKeyFile(bytes(range(32))).new_bundle_key("demo")[0]
    asked: list[int] = []

    def rng(n: int) -> bytes:
        asked.append(n)
        return bytes(n)

    crypto._encrypt_bytes(b"x", key, "memory/a.md.enc", rng)
    assert asked == [16, 7]


class _FixedPool:
    """Stands in for the header pool: hands out the given records in order."""

    def __init__(self, records: list[bytes]) -> None:
        self._records = list(records)

    def take(self) -> bytes:
        return self._records.pop(0)
