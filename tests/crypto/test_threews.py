"""three.ws compatibility beyond the vectors: key sources and round trips."""

from __future__ import annotations

import pytest

from bundlekit.crypto._keys import PassphraseKey, PrivateKeySigner, RawKeyFile, SignatureKey
from bundlekit.crypto.threews import (
    threews_decrypt,
    threews_encrypt,
    threews_key,
    threews_key_from_spec,
    threews_message,
)
from bundlekit.errors import KeySourceError, PayloadDecryptionError, UsageError

TEST_KEY = "0x" + "46" * 32


def test_the_private_key_signer_and_its_signature_give_the_same_three_ws_key() -> None:
    signer = PrivateKeySigner(TEST_KEY)
    text = threews_encrypt(b"memory", threews_key_from_spec(signer, "a1"))
    sig = SignatureKey(signer.sign(threews_message("a1")))
    assert threews_decrypt(text, threews_key_from_spec(sig, "a1")) == b"memory"


def test_another_agent_id_gives_another_key() -> None:
    signer = PrivateKeySigner(TEST_KEY)
    text = threews_encrypt(b"memory", threews_key_from_spec(signer, "a1"))
    with pytest.raises(PayloadDecryptionError):
        threews_decrypt(text, threews_key_from_spec(signer, "a2"))


@pytest.mark.parametrize("spec", [RawKeyFile(b"k" * 32), PassphraseKey("pw", scrypt_n=2**15)])
def test_non_wallet_sources_cannot_make_a_three_ws_key(spec: object) -> None:
    with pytest.raises(KeySourceError, match="wallet signature"):
        threews_key_from_spec(spec, "a1")  # type: ignore[arg-type]


def test_an_empty_agent_id_is_refused() -> None:
    with pytest.raises(UsageError):
        threews_message("")


def test_the_text_form_is_plain_base64_and_accepts_surrounding_whitespace() -> None:
    key = threews_key(PrivateKeySigner(TEST_KEY).sign(threews_message("a1")))
    text = threews_encrypt(b"", key)
    assert text.isascii() and "\n" not in text
    assert threews_decrypt("  " + text + "\n", key) == b""


def test_the_signature_is_hashed_as_given_like_the_runtime() -> None:
    """three.ws's deriveEncryptionKey (src/memory/crypto.js, nirholas/three.ws) hashes the wallet's bytes
    as they come: the same signature written with v = 0/1 is another key there, and so here."""
    sig = PrivateKeySigner(TEST_KEY).sign(threews_message("a1"))
    as_v0 = sig[:64] + bytes([sig[64] - 27])
    text = threews_encrypt(b"memory", threews_key_from_spec(SignatureKey(as_v0), "a1"))
    assert threews_decrypt(text, threews_key(as_v0)) == b"memory"
    with pytest.raises(PayloadDecryptionError):
        threews_decrypt(text, threews_key(sig))


def test_bundlekit_enc_still_normalises_the_signature() -> None:
    sig = PrivateKeySigner(TEST_KEY).sign("any message")
    as_v0 = sig[:64] + bytes([sig[64] - 27])
    assert SignatureKey(as_v0)._signature() == SignatureKey(sig)._signature()
