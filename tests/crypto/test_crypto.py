"""The bundlekit-enc/1 recipe: round trips, bounded streaming, and every tampering detected."""

from __future__ import annotations

import io
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bundlekit import crypto
from bundlekit.crypto import _stream
from bundlekit.crypto._keys import BundleKey, RawKeyFile
from bundlekit.errors import DecryptionError, HeaderDecryptionError, PayloadDecryptionError, UsageError

CHUNK = crypto.CHUNK_SIZE
SEALED = _stream.ENCRYPTED_CHUNK_SIZE
H = crypto.HEADER_SIZE


@pytest.fixture
def key(raw_spec: RawKeyFile) -> BundleKey:
    return raw_spec.new_bundle_key("demo")[0]


def chunked(ct: bytes) -> tuple[bytes, list[bytes]]:
    body = ct[H:]
    return ct[:H], [body[i : i + SEALED] for i in range(0, len(body), SEALED)]


def test_the_spec_constants_are_the_documented_ones() -> None:
    assert (crypto.CHUNK_SIZE, crypto.HEADER_SIZE, crypto.MAGIC, crypto.VERSION) == (65536, 65, b"BKENC", 1)


@pytest.mark.parametrize("size", [0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 2 * CHUNK, 3 * CHUNK + 7])
def test_round_trip_at_chunk_boundaries(key: BundleKey, size: int) -> None:
    data = bytes(i % 253 for i in range(size))
    ct = crypto.encrypt_bytes(data, key, "memory/a.md.enc")
    assert len(ct) == crypto.encrypted_size(size)
    assert crypto.decrypt_bytes(ct, key, "memory/a.md.enc") == data


@settings(max_examples=25, deadline=None)
@given(
    data=st.binary(max_size=3000),
    path=st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1, max_size=40),
)
def test_round_trip_any_bytes_any_path(data: bytes, path: str) -> None:
    key = RawKeyFile(b"k" * 32).new_bundle_key("demo", lambda n: b"\x07" * n)[0]
    assert crypto.decrypt_bytes(crypto.encrypt_bytes(data, key, path), key, path) == data


def test_an_empty_plaintext_is_one_final_empty_chunk(key: BundleKey) -> None:
    assert len(crypto.encrypt_bytes(b"", key, "p")) == H + _stream.TAG_SIZE


def test_a_full_final_chunk_is_not_followed_by_an_empty_chunk(key: BundleKey) -> None:
    assert len(crypto.encrypt_bytes(b"x" * CHUNK, key, "p")) == H + SEALED


def test_two_encryptions_of_one_file_differ(key: BundleKey) -> None:
    assert crypto.encrypt_bytes(b"same", key, "p") != crypto.encrypt_bytes(b"same", key, "p")


def test_the_header_starts_with_magic_version_and_chunk_size(key: BundleKey) -> None:
    assert crypto.encrypt_bytes(b"x", key, "p")[:10] == b"BKENC\x01" + (65536).to_bytes(4, "big")


class ShortReads(io.RawIOBase):
    """A source that returns at most 1000 bytes a read, like a pipe, and records the largest request."""

    def __init__(self, data: bytes) -> None:
        self.buf = io.BytesIO(data)
        self.largest = 0

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        assert size > 0, "the stream layer must never read without a bound"
        self.largest = max(self.largest, size)
        return self.buf.read(min(size, 1000))


def test_encrypt_stream_copes_with_short_reads_and_reads_bounded(key: BundleKey) -> None:
    data = bytes(range(256)) * 1000
    src = ShortReads(data)
    out = io.BytesIO()
    crypto.encrypt_stream(src, out, key, "p")  # type: ignore[arg-type]
    assert src.largest <= CHUNK
    assert out.getvalue()[H : H + 4] != data[:4]
    assert crypto.decrypt_bytes(out.getvalue(), key, "p") == data


def test_decrypt_stream_copes_with_short_reads_and_reads_bounded(key: BundleKey) -> None:
    data = bytes(range(256)) * 1000
    src = ShortReads(crypto.encrypt_bytes(data, key, "p"))
    out = io.BytesIO()
    crypto.decrypt_stream(src, out, key, "p")  # type: ignore[arg-type]
    assert src.largest <= SEALED
    assert out.getvalue() == data


def test_another_key_fails_at_the_header(key: BundleKey) -> None:
    other = RawKeyFile(b"\x01" * 32).new_bundle_key("demo")[0]
    with pytest.raises(HeaderDecryptionError):
        crypto.decrypt_bytes(crypto.encrypt_bytes(b"secret", key, "p"), other, "p")


def test_the_same_key_file_in_another_bundle_fails_at_the_header(raw_spec: RawKeyFile) -> None:
    first, second = raw_spec.new_bundle_key("demo")[0], raw_spec.new_bundle_key("demo")[0]
    assert first.key_id != second.key_id
    with pytest.raises(HeaderDecryptionError):
        crypto.decrypt_bytes(crypto.encrypt_bytes(b"secret", first, "p"), second, "p")


def test_a_ciphertext_moved_to_another_path_fails(key: BundleKey) -> None:
    ct = crypto.encrypt_bytes(b"secret", key, "memory/a.md.enc")
    with pytest.raises(HeaderDecryptionError):
        crypto.decrypt_bytes(ct, key, "memory/b.md.enc")


@pytest.mark.parametrize("index", range(H))
def test_a_flipped_bit_anywhere_in_the_header_is_a_header_failure(key: BundleKey, index: int) -> None:
    ct = bytearray(crypto.encrypt_bytes(b"secret text", key, "p"))
    ct[index] ^= 0x80
    with pytest.raises(HeaderDecryptionError):
        crypto.decrypt_bytes(bytes(ct), key, "p")


@pytest.mark.parametrize("where", ["first byte of chunk", "middle of chunk", "first tag byte", "last tag byte"])
def test_a_flipped_bit_in_a_chunk_or_its_tag_is_a_payload_failure(key: BundleKey, where: str) -> None:
    ct = bytearray(crypto.encrypt_bytes(b"secret text of some length", key, "p"))
    index = {"first byte of chunk": H, "middle of chunk": H + 13, "first tag byte": len(ct) - 16,
             "last tag byte": len(ct) - 1}[where]
    ct[index] ^= 0x01
    with pytest.raises(PayloadDecryptionError):
        crypto.decrypt_bytes(bytes(ct), key, "p")


def test_every_truncation_fails(key: BundleKey) -> None:
    ct = crypto.encrypt_bytes(b"0123456789" * 10, key, "p")
    for length in range(len(ct)):
        with pytest.raises(DecryptionError):
            crypto.decrypt_bytes(ct[:length], key, "p")


@pytest.mark.parametrize("cut", [1, SEALED - 1, SEALED, SEALED + 1])
def test_a_multi_chunk_file_truncated_inside_or_at_a_chunk_boundary_fails(key: BundleKey, cut: int) -> None:
    ct = crypto.encrypt_bytes(b"z" * (2 * CHUNK + 10), key, "p")
    with pytest.raises(PayloadDecryptionError):
        crypto.decrypt_bytes(ct[: H + cut], key, "p")


def test_a_dropped_final_chunk_is_detected(key: BundleKey) -> None:
    header, parts = chunked(crypto.encrypt_bytes(b"z" * (2 * CHUNK + 10), key, "p"))
    with pytest.raises(PayloadDecryptionError):
        crypto.decrypt_bytes(header + parts[0] + parts[1], key, "p")


def test_a_dropped_full_final_chunk_is_detected(key: BundleKey) -> None:
    header, parts = chunked(crypto.encrypt_bytes(b"z" * (2 * CHUNK), key, "p"))
    assert len(parts) == 2
    with pytest.raises(PayloadDecryptionError):
        crypto.decrypt_bytes(header + parts[0], key, "p")


def test_reordered_chunks_are_detected(key: BundleKey) -> None:
    data = bytes(range(256)) * 600  # three chunks with distinct content
    header, parts = chunked(crypto.encrypt_bytes(data, key, "p"))
    with pytest.raises(PayloadDecryptionError):
        crypto.decrypt_bytes(header + parts[1] + parts[0] + parts[2], key, "p")


def test_a_duplicated_chunk_is_detected(key: BundleKey) -> None:
    header, parts = chunked(crypto.encrypt_bytes(b"q" * (CHUNK + 5), key, "p"))
    with pytest.raises(PayloadDecryptionError):
        crypto.decrypt_bytes(header + parts[0] + parts[0] + parts[1], key, "p")


def test_data_appended_after_the_final_chunk_is_detected(key: BundleKey) -> None:
    ct = crypto.encrypt_bytes(b"q" * CHUNK, key, "p")
    with pytest.raises(PayloadDecryptionError):
        crypto.decrypt_bytes(ct + b"\x00" * 16, key, "p")


def test_a_chunk_spliced_from_another_file_of_the_same_bundle_fails(key: BundleKey) -> None:
    a = crypto.encrypt_bytes(b"a" * 100, key, "p")
    b = crypto.encrypt_bytes(b"b" * 100, key, "p")
    with pytest.raises(PayloadDecryptionError):
        crypto.decrypt_bytes(a[:H] + b[H:], key, "p")


def test_failure_messages_name_the_file_and_not_the_key(key: BundleKey) -> None:
    ct = bytearray(crypto.encrypt_bytes(b"secret", key, "memory/a.md.enc"))
    ct[-1] ^= 1
    with pytest.raises(PayloadDecryptionError) as info:
        crypto.decrypt_bytes(bytes(ct), key, "memory/a.md.enc")
    message = str(info.value)
    assert "memory/a.md.enc" in message and "payload failure" in message
    assert key._key.hex() not in message and "byte" not in message


def test_a_header_failure_writes_nothing(key: BundleKey) -> None:
    ct = crypto.encrypt_bytes(b"secret", key, "p")
    out = io.BytesIO()
    with pytest.raises(HeaderDecryptionError):
        crypto.decrypt_stream(io.BytesIO(ct), out, key, "q")
    assert out.getvalue() == b""


@pytest.mark.parametrize("path", ["", "a\x00b", "\udc80"])
def test_unusable_paths_are_refused(key: BundleKey, path: Any) -> None:
    with pytest.raises(UsageError):
        crypto.encrypt_bytes(b"x", key, path)


def test_encrypted_size_refuses_negative_sizes() -> None:
    with pytest.raises(UsageError):
        crypto.encrypted_size(-1)


@pytest.mark.parametrize("size", [0, 5, CHUNK, 2 * CHUNK + 3])
def test_the_in_memory_and_streaming_forms_give_the_same_bytes(key: BundleKey, size: int) -> None:
    data = bytes(i % 7 for i in range(size))
    out = io.BytesIO()
    crypto._encrypt_stream(io.BytesIO(data), out, key, "p", lambda n: b"\x09" * n)
    assert crypto._encrypt_bytes(data, key, "p", lambda n: b"\x09" * n) == out.getvalue()
    back = io.BytesIO()
    crypto.decrypt_stream(io.BytesIO(out.getvalue()), back, key, "p")
    assert back.getvalue() == data


def _fixed_rng(n: int) -> bytes:
    return bytes(range(n))


@pytest.mark.parametrize("size", [0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 2 * CHUNK, 3 * CHUNK + 7])
def test_in_place_sealing_writes_the_bytes_of_the_chunk_by_chunk_seal(key: BundleKey, size: int) -> None:
    """encrypt_bytes (seal_bytes) and encrypt_stream (encrypt_into one chunk buffer) equal seal_pieces' chunks."""
    data = bytes(i % 251 for i in range(size))
    path = "memory/a.md.enc"
    header, payload_key, prefix = crypto._seal_header(key, path.encode(), _fixed_rng)
    aad = header + key.key_id + path.encode()
    reference = header + b"".join(_stream.seal_pieces(payload_key, prefix, aad, _stream.slice_pieces(data, CHUNK)))
    streamed = io.BytesIO()
    crypto._encrypt_stream(io.BytesIO(data), streamed, key, path, _fixed_rng)
    assert crypto._encrypt_bytes(data, key, path, _fixed_rng) == streamed.getvalue() == reference
