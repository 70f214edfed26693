"""A bounded fuzz run of the recipients readers (issue 39's attack pass): age armor, the age header and
payload, identity files (age and OpenSSH), recipients. Random bytes and mutations of a valid input
(``test_fuzz_parsers``'s mutator), derandomized. The property: each returns, or raises its documented
``BundlekitError`` (header or payload failure, wrong key, key source failure); never another exception."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from bundlekit.crypto import age, agessh
from bundlekit.crypto.recipients import (
    IdentityKey,
    RecipientsKey,
    identity_file_text,
    new_identity,
    parse_identities,
    parse_recipient,
    recipient_of,
)
from bundlekit.errors import HeaderDecryptionError, KeySourceError, ManifestError, PayloadDecryptionError, WrongKeyError

from tests.crypto.test_recipients import openssh_key

from .test_fuzz_parsers import FUZZ, _inputs

ALICE = new_identity()
_, PARAMS = RecipientsKey([recipient_of(ALICE), recipient_of(new_identity())]).new_bundle_key("ns")
ENVELOPE = PARAMS["envelope"].encode()
BINARY = age.dearmor(ENVELOPE, max_bytes=1 << 20)


@FUZZ
@given(_inputs(ENVELOPE))
def test_an_envelope_opens_or_fails_as_documented(data: bytes) -> None:
    try:
        IdentityKey([ALICE]).open_bundle_key(dict(PARAMS, envelope=data.decode("latin-1")), "ns")
    except (HeaderDecryptionError, PayloadDecryptionError, WrongKeyError, ManifestError):
        pass


@FUZZ
@given(_inputs(BINARY))
def test_a_binary_age_file_reads_or_fails_as_documented(data: bytes) -> None:
    try:
        header, offset = age.parse_header(data, max_stanzas=16, max_bytes=4096)
        file_key, _ = age.unwrap_file_key(header, [ALICE])
        age.check_mac(header, file_key)
        b"".join(age.open_payload(file_key, data[offset:]))
    except (HeaderDecryptionError, PayloadDecryptionError, WrongKeyError):
        pass


@FUZZ
@given(_inputs(identity_file_text(ALICE).encode()))
def test_an_identity_file_parses_or_is_refused_as_a_key_source_failure(data: bytes) -> None:
    try:
        parse_identities(data.decode("latin-1"), where="fuzz")
    except KeySourceError:
        pass


@FUZZ
@given(_inputs(openssh_key(bytes(range(32))).encode()))
def test_an_openssh_key_parses_or_is_refused_as_a_key_source_failure(data: bytes) -> None:
    try:
        agessh.parse_private_key(data.decode("latin-1"), where="fuzz")
    except KeySourceError:
        pass


@FUZZ
@given(st.one_of(_inputs(recipient_of(ALICE).encode()),
                 _inputs(b"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHhvVBf7arL5K8k7mOr4OZyWQuAXLrLUC4+7/qTo1QnS x")))
def test_a_recipient_parses_or_is_refused_as_a_key_source_failure(data: bytes) -> None:
    try:
        parse_recipient(data.decode("latin-1"), where="fuzz")
    except KeySourceError:
        pass
