"""An Ed25519 key file in the usual PEM form is read without cryptography's serialization package, as that parser reads it.

``Ed25519Signer.from_file`` reads the one form ``write`` and OpenSSL make (RFC 8410 section 7: PKCS#8 version 0,
the 16 DER bytes ``302e020100300506032b657004220420`` and the seed, in three PEM lines) by itself, so a writer's
sync round never imports ``cryptography.hazmat.primitives.serialization`` (~5 ms of CPU, DEVELOPERS.md "Lazy
imports"); any other text goes to that parser. Both must agree on every file: the same key, or the same refusal.
"""

from __future__ import annotations

import base64
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given, settings
from hypothesis import strategies as st

from bundlekit.crypto.signing import Ed25519Signer
from bundlekit.errors import KeySourceError

_HEAD, _TAIL = b"-----BEGIN PRIVATE KEY-----\n", b"\n-----END PRIVATE KEY-----\n"


def _pem(seed: bytes) -> bytes:
    return Ed25519PrivateKey.from_private_bytes(seed).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())


def _parser_public(data: bytes) -> bytes | None:
    """The public key cryptography's own parser finds in ``data``, None where it refuses the file."""
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm):
        return None
    return key.public_key().public_bytes_raw() if isinstance(key, Ed25519PrivateKey) else None


def _read_public(path: Path, data: bytes) -> bytes | None:
    path.write_bytes(data)
    try:
        return Ed25519Signer.from_file(path).public
    except KeySourceError:
        return None


@settings(max_examples=60, deadline=None)
@given(seed=st.binary(min_size=32, max_size=32))
def test_a_key_file_in_the_usual_form_reads_as_the_parser_reads_it(tmp_path_factory: pytest.TempPathFactory,
                                                                   seed: bytes) -> None:
    data = _pem(seed)
    assert data.startswith(_HEAD) and data.endswith(_TAIL) and len(data) == len(_HEAD) + 64 + len(_TAIL)
    path = tmp_path_factory.mktemp("key") / "name.key"
    assert _read_public(path, data) == _parser_public(data) == Ed25519Signer.from_seed(seed).public


@settings(max_examples=200, deadline=None)
@given(seed=st.binary(min_size=32, max_size=32), at=st.integers(min_value=0, max_value=200),
       byte=st.integers(min_value=0, max_value=255), how=st.sampled_from(["replace", "insert", "delete"]))
def test_a_changed_key_file_reads_or_is_refused_as_the_parser_decides(
    tmp_path_factory: pytest.TempPathFactory, seed: bytes, at: int, byte: int, how: str
) -> None:
    data = bytearray(_pem(seed))
    at %= len(data)
    if how == "replace":
        data[at] = byte
    elif how == "insert":
        data.insert(at, byte)
    else:
        del data[at]
    path = tmp_path_factory.mktemp("key") / "name.key"
    assert _read_public(path, bytes(data)) == _parser_public(bytes(data))


def test_a_key_of_another_der_shape_in_the_usual_length_is_refused(tmp_path: Path) -> None:
    """48 DER bytes under the same PEM lines that are not RFC 8410's Ed25519 prefix (an X25519 key's OID,
    1.3.101.110) are not taken as a seed: the parser reads them and refuses an X25519 key for signing."""
    der = bytes.fromhex("302e020100300506032b656e04220420") + bytes(range(32))
    data = _HEAD + base64.b64encode(der) + _TAIL
    assert _read_public(tmp_path / "x25519.key", data) is None


def test_a_key_file_openssl_made_signs_as_cryptography_reads_it(tmp_path: Path) -> None:
    """The real OpenSSL (Debian's ``openssl genpkey -algorithm ed25519``) writes the usual form."""
    path = tmp_path / "openssl.key"
    subprocess.run(["openssl", "genpkey", "-algorithm", "ed25519", "-out", str(path)], check=True, capture_output=True)
    data = path.read_bytes()
    assert len(data) == len(_HEAD) + 64 + len(_TAIL)
    assert Ed25519Signer.from_file(path).public == _parser_public(data)


@pytest.mark.parametrize("layout", [
    lambda pem: pem.replace(b"\n", b"\r\n"),  # Windows line ends
    lambda pem: b"an Ed25519 key\n" + pem,  # text before the PEM block
    lambda pem: pem + b"\n",  # one more line end
])
def test_a_key_file_in_another_pem_layout_still_reads(tmp_path: Path, layout: Callable[[bytes], bytes]) -> None:
    """Not the usual bytes, so the parser reads them: to the same key."""
    seed = bytes(range(32))
    data = layout(_pem(seed))
    assert _read_public(tmp_path / "other.key", data) == Ed25519Signer.from_seed(seed).public == _parser_public(data)


def test_a_key_file_of_an_unknown_algorithm_is_a_key_source_error(tmp_path: Path) -> None:
    """An OID OpenSSL does not know (hypothesis found one a byte away from an Ed25519 key): before, the parser's
    ``UnsupportedAlgorithm`` escaped as a traceback."""
    der = bytes.fromhex("302e020100300506032bff7004220420") + bytes(32)
    path = tmp_path / "unknown.key"
    path.write_bytes(_HEAD + base64.b64encode(der) + _TAIL)
    with pytest.raises(KeySourceError, match="is not an Ed25519 private key in PEM"):
        Ed25519Signer.from_file(path)


def test_reading_a_usual_key_file_imports_no_serialization_package(tmp_path: Path) -> None:
    path = tmp_path / "name.key"
    Ed25519Signer.from_seed(bytes(32)).write(path)
    script = ("import sys\nfrom bundlekit.crypto.signing import Ed25519Signer\n"
              f"Ed25519Signer.from_file({str(path)!r}).sign(b'x')\n"
              "print('cryptography.hazmat.primitives.serialization' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
