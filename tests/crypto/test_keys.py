"""Key sources, normalisation, the manifest parameters and the key commitment."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bundlekit.crypto import _keys as keys
from bundlekit.crypto._keys import (
    PassphraseKey,
    PrivateKeySigner,
    RawKeyFile,
    SignatureKey,
    normalize_signature,
    parse_key_file,
    parse_signature_hex,
    signature_message,
)
from bundlekit.errors import KeySourceError, ManifestError, UsageError, WrongKeyError

N = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141
TEST_KEY = "0x" + "46" * 32
FAST_N = 2**15


def fixed(n: int) -> bytes:
    return b"\x11" * n


@pytest.fixture(scope="module")
def signature() -> bytes:
    return PrivateKeySigner(TEST_KEY).sign(signature_message("demo"))


def high_s(sig: bytes) -> bytes:
    s = int.from_bytes(sig[32:64], "big")
    return sig[:32] + (N - s).to_bytes(32, "big") + bytes([55 - sig[64]])


def test_the_signature_message_is_versioned_and_names_the_namespace() -> None:
    assert signature_message("work") == "bundlekit memory key v1\nnamespace: work"


@pytest.mark.parametrize("namespace", ["", "a\nb", "tab\there", "\x7f"])
def test_namespaces_that_would_make_the_message_ambiguous_are_refused(namespace: str) -> None:
    with pytest.raises(UsageError):
        signature_message(namespace)


def test_v0_v1_v27_v28_and_high_s_forms_derive_the_same_key(signature: bytes) -> None:
    forms = [signature, signature[:64] + bytes([signature[64] - 27]), high_s(signature),
             high_s(signature)[:64] + bytes([high_s(signature)[64] - 27])]
    manifests = [SignatureKey(form).new_bundle_key("demo", fixed)[1] for form in forms]
    assert all(m == manifests[0] for m in manifests)
    assert {form[64] for form in forms} == {0, 1, 27, 28}


def test_normalisation_yields_low_s_and_v_27_or_28(signature: bytes) -> None:
    norm = normalize_signature(high_s(signature))
    assert norm == signature
    assert int.from_bytes(norm[32:64], "big") <= N // 2 and norm[64] in (27, 28)


@pytest.mark.parametrize("size", [0, 64, 66, 130])
def test_signatures_that_are_not_65_bytes_are_refused(size: int) -> None:
    with pytest.raises(KeySourceError, match="65 bytes"):
        SignatureKey(b"\x01" * size)


@pytest.mark.parametrize("v", [2, 26, 29, 255])
def test_a_bad_recovery_byte_is_refused(signature: bytes, v: int) -> None:
    with pytest.raises(KeySourceError):
        normalize_signature(signature[:64] + bytes([v]))


def test_zero_r_or_s_is_refused(signature: bytes) -> None:
    with pytest.raises(KeySourceError):
        normalize_signature(bytes(32) + signature[32:])


@pytest.mark.parametrize("text_form", ["0x{h}", "{h}", "  0X{h}\n", "{H}"])
def test_signature_hex_is_accepted_with_or_without_0x(signature: bytes, text_form: str) -> None:
    text = text_form.format(h=signature.hex(), H=signature.hex().upper())
    assert parse_signature_hex(text, where="$SIG") == signature


def test_non_hex_signature_text_is_refused_without_quoting_it() -> None:
    with pytest.raises(KeySourceError) as info:
        parse_signature_hex("zz-secret-zz", where="$SIG")
    assert "secret" not in str(info.value) and "$SIG" in str(info.value)


def test_a_real_eth_account_signature_round_trips(signature: bytes) -> None:
    key, params = PrivateKeySigner(TEST_KEY).new_bundle_key("demo")
    again = SignatureKey(signature).open_bundle_key(params, "demo")
    assert again.key_id == key.key_id


def test_the_signer_refuses_two_different_signatures(monkeypatch: pytest.MonkeyPatch) -> None:
    from eth_account import Account

    real = Account.sign_message
    calls = iter([0, 1])

    def hedged(message: Any, private_key: Any) -> Any:
        other = "0x" + ("46" if next(calls) == 0 else "47") * 32
        return real(message, other)

    monkeypatch.setattr(Account, "sign_message", staticmethod(hedged))
    with pytest.raises(KeySourceError, match="not deterministic"):
        PrivateKeySigner(TEST_KEY).new_bundle_key("demo")


def test_a_missing_wallet_extra_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "eth_account", None)
    with pytest.raises(KeySourceError, match=r"pip install -e '\.\[wallet\]' \(from a bundlekit clone\)"):
        PrivateKeySigner(TEST_KEY).new_bundle_key("demo")


def test_a_malformed_private_key_is_refused_without_quoting_it() -> None:
    with pytest.raises(KeySourceError) as info:
        PrivateKeySigner("0xnotakey1234").new_bundle_key("demo")
    assert "notakey" not in str(info.value)


def test_wrong_raw_key_fails_the_commitment() -> None:
    _, params = RawKeyFile(b"a" * 32).new_bundle_key("demo")
    with pytest.raises(WrongKeyError):
        RawKeyFile(b"b" * 32).open_bundle_key(params, "demo")


def test_wrong_passphrase_fails_the_commitment() -> None:
    _, params = PassphraseKey("right horse", scrypt_n=FAST_N).new_bundle_key("demo")
    with pytest.raises(WrongKeyError):
        PassphraseKey("wrong horse", scrypt_n=FAST_N).open_bundle_key(params, "demo")


def test_the_right_passphrase_opens_the_bundle() -> None:
    key, params = PassphraseKey("right horse", scrypt_n=FAST_N).new_bundle_key("demo")
    assert PassphraseKey("right horse").open_bundle_key(params, "demo").key_id == key.key_id


def test_passphrases_are_nfc_normalised() -> None:
    _, params = PassphraseKey("caf\u00e9", scrypt_n=FAST_N).new_bundle_key("demo")
    PassphraseKey("cafe\u0301").open_bundle_key(params, "demo")


def test_an_empty_passphrase_is_refused() -> None:
    with pytest.raises(KeySourceError):
        PassphraseKey("")


def test_another_namespace_fails_the_commitment() -> None:
    _, params = RawKeyFile(b"a" * 32).new_bundle_key("demo")
    with pytest.raises(WrongKeyError):
        RawKeyFile(b"a" * 32).open_bundle_key(params, "other")


def test_a_key_of_another_kind_is_named_in_the_error() -> None:
    _, params = RawKeyFile(b"a" * 32).new_bundle_key("demo")
    with pytest.raises(KeySourceError, match="--key-file"):
        PassphraseKey("x", scrypt_n=FAST_N).open_bundle_key(params, "demo")


def test_the_manifest_parameters_have_the_documented_shape() -> None:
    _, params = PassphraseKey("pw", scrypt_n=FAST_N).new_bundle_key("demo", fixed)
    assert params["scheme"] == "bundlekit-enc/1"
    assert params["key_source"] == "passphrase"
    assert params["kdf"] == {"name": "scrypt", "n": FAST_N, "r": 8, "p": 1}
    assert params["salt"] == "11" * 32
    assert len(params["key_id"]) == 32 and len(params["commitment"]) == 64


@pytest.mark.parametrize("n", [2**10, 2**14, 2**21, 2**30, 3 * 2**15, "32768", True])
def test_hostile_scrypt_work_factors_are_refused_on_read(n: Any) -> None:
    _, params = PassphraseKey("pw", scrypt_n=FAST_N).new_bundle_key("demo")
    params["kdf"] = {**params["kdf"], "n": n}
    with pytest.raises(ManifestError, match="scrypt"):
        PassphraseKey("pw").open_bundle_key(params, "demo")


@pytest.mark.parametrize("field,value", [("r", 1), ("r", 64), ("p", 16)])
def test_scrypt_r_and_p_are_fixed(field: str, value: int) -> None:
    _, params = PassphraseKey("pw", scrypt_n=FAST_N).new_bundle_key("demo")
    params["kdf"] = {**params["kdf"], field: value}
    with pytest.raises(ManifestError):
        PassphraseKey("pw").open_bundle_key(params, "demo")


def test_out_of_bounds_scrypt_work_is_refused_on_write() -> None:
    with pytest.raises(UsageError):
        PassphraseKey("pw", scrypt_n=2**12)


@pytest.mark.parametrize(
    "mutate",
    [
        lambda p: p.update(scheme="bundlekit-enc/2"),
        lambda p: p.update(extra=1),
        lambda p: p.pop("commitment"),
        lambda p: p.update(salt="zz" * 32),
        lambda p: p.update(salt="AB" * 32),
        lambda p: p.update(key_id="00" * 8),
        lambda p: p.update(key_source="hsm"),
        lambda p: p.update(kdf={"name": "md5"}),
    ],
)
def test_malformed_manifest_parameters_are_refused(mutate: Any) -> None:
    _, params = RawKeyFile(b"a" * 32).new_bundle_key("demo")
    mutate(params)
    with pytest.raises(ManifestError):
        RawKeyFile(b"a" * 32).open_bundle_key(params, "demo")


def test_a_key_id_that_does_not_match_the_key_is_refused() -> None:
    _, params = RawKeyFile(b"a" * 32).new_bundle_key("demo")
    params["key_id"] = "00" * 16
    with pytest.raises(ManifestError, match="key_id"):
        RawKeyFile(b"a" * 32).open_bundle_key(params, "demo")


def test_key_file_accepts_32_raw_bytes() -> None:
    assert parse_key_file(b"\n" * 32, where="k") == b"\n" * 32


def test_key_file_accepts_64_hex_digits_with_a_newline() -> None:
    assert parse_key_file(b"ab" * 32 + b"\n", where="k") == b"\xab" * 32


@pytest.mark.parametrize("data", [b"", b"x" * 31, b"x" * 33, b"zz" * 32, b"ab" * 31])
def test_key_file_of_any_other_shape_is_refused(data: bytes) -> None:
    with pytest.raises(KeySourceError, match="32 raw bytes or 64 hex"):
        parse_key_file(data, where="k")


def test_a_missing_key_file_is_a_key_source_error(tmp_path: Path) -> None:
    with pytest.raises(KeySourceError, match="cannot read"):
        RawKeyFile.from_path(tmp_path / "absent.key")


def test_key_file_from_path_reads_the_key(tmp_path: Path) -> None:
    (tmp_path / "k").write_bytes(b"\x05" * 32)
    _, params = RawKeyFile.from_path(tmp_path / "k").new_bundle_key("demo")
    RawKeyFile(b"\x05" * 32).open_bundle_key(params, "demo")


def test_reprs_hide_every_secret(signature: bytes) -> None:
    key, _ = RawKeyFile(b"\xaa" * 32).new_bundle_key("demo")
    for obj in (key, SignatureKey(signature), PassphraseKey("hunter2"), RawKeyFile(b"\xaa" * 32),
                PrivateKeySigner(TEST_KEY)):
        text = repr(obj)
        assert "aaaa" not in text and "hunter2" not in text and signature.hex()[:16] not in text
        assert "4646" not in text


def test_a_bundle_key_cannot_be_pickled() -> None:
    import pickle

    key, _ = RawKeyFile(b"a" * 32).new_bundle_key("demo")
    with pytest.raises(TypeError):
        pickle.dumps(key)


def test_the_salt_comes_from_the_injected_source() -> None:
    seen: list[int] = []

    def rng(n: int) -> bytes:
        seen.append(n)
        return b"\x00" * n

    _, params = RawKeyFile(b"a" * 32).new_bundle_key("demo", rng)
    assert seen == [keys.SALT_SIZE] and params["salt"] == "00" * 32


@pytest.mark.parametrize("length", [16, 32, 64, 100])
@pytest.mark.parametrize("salt", [None, b"", b"s" * 16, b"t" * 70])
def test_the_hkdf_matches_cryptography_s(length: int, salt: bytes | None) -> None:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    expected = HKDF(algorithm=hashes.SHA256(), length=length, salt=salt, info=b"info").derive(b"ikm" * 11)
    assert keys._hkdf(b"ikm" * 11, salt, b"info", length) == expected


def test_signing_leaves_the_recursion_limit_as_it_was() -> None:
    # A fresh interpreter: eth-account (through py_ecc) raises the limit only on its first import.
    code = (
        "import sys\n"
        "from bundlekit.crypto import PrivateKeySigner, signature_message\n"
        "before = sys.getrecursionlimit()\n"
        f"PrivateKeySigner({TEST_KEY!r}).sign(signature_message('demo'))\n"
        "assert sys.getrecursionlimit() == before, sys.getrecursionlimit()\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, timeout=120)
