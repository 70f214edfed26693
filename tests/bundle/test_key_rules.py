"""Which key options go together when a bundle is built or published: the library's rules (bundle.signature).

The CLI (``build``, ``pin``) only parses its options into a ``KeyOptions`` and
prints; these are the same rules any other front end (the MCP server, the
Python API) applies, with the messages the CLI prints.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bundlekit.bundle.keyoptions import KeyOptions, key_spec
from bundlekit.bundle.signature import ExternalSignature, build_keys, manifest_signer, publish_keys
from bundlekit.crypto._keys import PassphraseKey, parse_signature_hex
from bundlekit.crypto.signing import Ed25519Signer
from bundlekit.errors import KeySourceError, UsageError

PASSPHRASE = {"PW": "correct horse battery staple"}


def test_a_signer_address_without_sign_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match=r"^--signer goes with --sign --signature-file; add --sign$"):
        manifest_signer(KeyOptions(), sign=False, signer_address="0x" + "ab" * 20)


def test_signing_with_two_key_options_names_both_in_option_order() -> None:
    options = KeyOptions(private_key_env="PK", signature_env="SIG")
    with pytest.raises(UsageError, match=r"^--signature-env and --private-key-env cannot be combined"):
        manifest_signer(options, sign=True, environ={})


def test_sign_without_a_signing_option_says_which_options_sign() -> None:
    with pytest.raises(UsageError, match=r"^--sign needs --private-key-env VAR, an Ed25519 --key-file"):
        manifest_signer(KeyOptions(passphrase_env="PW"), sign=True, environ=PASSPHRASE)


def test_a_signing_variable_that_is_blank_is_a_key_source_error_naming_it() -> None:
    with pytest.raises(KeySourceError, match=r"environment variable PK is not set or empty"):
        manifest_signer(KeyOptions(private_key_env="PK"), sign=True, environ={"PK": "   "})


def test_an_ed25519_key_file_signs_as_its_did_key(tmp_path: Path) -> None:
    key = Ed25519Signer.generate()
    key.write(tmp_path / "k.pem")
    signer = manifest_signer(KeyOptions(key_file=tmp_path / "k.pem"), sign=True)
    assert isinstance(signer, Ed25519Signer) and signer.identity == key.identity


def test_a_signature_file_reads_only_its_first_4096_characters(tmp_path: Path) -> None:
    signature = "0x" + "11" * 64 + "1b"
    (tmp_path / "sig.txt").write_text(signature + "\n" * 10_000 + "not hex", encoding="ascii")
    signer = manifest_signer(KeyOptions(signature_file=tmp_path / "sig.txt"), sign=True,
                             signer_address=" 0x" + "ab" * 20 + " ")
    assert signer == ExternalSignature("0x" + "ab" * 20, parse_signature_hex(signature, where="sig.txt"))


def test_build_refuses_sign_with_encrypt_unless_the_key_is_a_private_key(tmp_path: Path) -> None:
    Ed25519Signer.generate().write(tmp_path / "k.pem")
    with pytest.raises(UsageError, match=r"^--sign with --encrypt needs --private-key-env"):
        build_keys(KeyOptions(key_file=tmp_path / "k.pem"), sign=True, encrypt=True)


def test_build_refuses_encrypt_without_a_key_option() -> None:
    with pytest.raises(UsageError, match=r"^--encrypt needs a key option \(--signature-env, --passphrase-env"):
        build_keys(KeyOptions(), sign=False, encrypt=True)


def test_build_refuses_a_key_option_without_encrypt() -> None:
    with pytest.raises(UsageError, match=r"^a key option was given without --encrypt; add --encrypt"):
        build_keys(KeyOptions(passphrase_env="PW"), sign=False, encrypt=False, environ=PASSPHRASE)


def test_build_refuses_a_compat_form_without_encrypt() -> None:
    with pytest.raises(UsageError, match=r"^--compat three\.ws is an encrypted form; add --encrypt"):
        build_keys(KeyOptions(), sign=False, encrypt=False, compat="three.ws")


def test_build_with_encrypt_gives_the_key_and_no_signer() -> None:
    keys = build_keys(KeyOptions(passphrase_env="PW"), sign=False, encrypt=True, environ=PASSPHRASE)
    assert keys.signer is None and isinstance(keys.key, PassphraseKey)


def test_publish_signs_with_the_key_option_and_leaves_the_bundle_unencrypted(tmp_path: Path) -> None:
    Ed25519Signer.generate().write(tmp_path / "k.pem")
    keys = publish_keys(KeyOptions(key_file=tmp_path / "k.pem"), sign=True)
    assert isinstance(keys.signer, Ed25519Signer) and keys.key is None


def test_a_weak_new_passphrase_goes_to_the_warning_callback() -> None:
    warned: list[str] = []
    key = key_spec(KeyOptions(passphrase_env="PW"), environ={"PW": "tiny7"}, new_key=True, warn=warned.append)
    assert isinstance(key, PassphraseKey) and len(warned) == 1 and "tiny7" not in warned[0]


def test_strong_passphrase_refuses_a_weak_new_passphrase() -> None:
    with pytest.raises(UsageError, match=r"\(--strong-passphrase refuses it\)$"):
        key_spec(KeyOptions(passphrase_env="PW", strong_passphrase=True), environ={"PW": "short"}, new_key=True)


def test_key_options_from_a_commands_parameters_ignore_the_others() -> None:
    options = KeyOptions.from_params({"passphrase_env": "PW", "namespace": "demo", "key_file": None})
    assert options == KeyOptions(passphrase_env="PW") and options.flags() == ["--passphrase-env"]


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_an_endless_signature_file_is_refused_after_its_first_4096_characters() -> None:
    # It was read whole before being cut to 4096 characters: /dev/zero ran the process out of memory.
    with pytest.raises(KeySourceError, match="is not hex"):
        manifest_signer(KeyOptions(signature_file="/dev/zero"), sign=True, signer_address="0x" + "ab" * 20)
