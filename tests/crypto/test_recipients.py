"""The recipients key source (``crypto/recipients``): every recipient opens, a removed one cannot after a
rebuild, and hostile manifests and identity files fail bounded, with the documented error and no key in
any message (specs/encryption.md, "Recipients")."""

from __future__ import annotations

import base64
import hmac
import os
import time
from pathlib import Path
from typing import Any

import pytest

from bundlekit.bundle.keyoptions import KeyOptions, key_spec
from bundlekit.crypto import age
from bundlekit.crypto._keys import PassphraseKey, _hkdf
from bundlekit.crypto.recipients import (
    MAX_RECIPIENTS,
    IdentityKey,
    RecipientsKey,
    identity_file_text,
    new_identity,
    parse_recipient,
    parse_identities,
    read_identity_file,
    read_recipients_file,
    recipient_of,
    write_new_identity,
)
from bundlekit.errors import HeaderDecryptionError, KeySourceError, ManifestError, UsageError, WrongKeyError

from .conftest import FixedRandom

NS = "team"


def people(n: int) -> list[age.X25519Identity]:
    return [new_identity() for _ in range(n)]


def opener(*identities: age.Identity) -> IdentityKey:
    return IdentityKey(list(identities))


def secret_line(identity: age.X25519Identity) -> str:
    return identity_file_text(identity).splitlines()[-1]


# --- opening and revoking -------------------------------------------------------------------------


def test_each_of_three_recipients_opens_the_same_bundle_key() -> None:
    a, b, c = people(3)
    key, params = RecipientsKey(map(recipient_of, (a, b, c))).new_bundle_key(NS)
    for who in (a, b, c):
        assert opener(who).open_bundle_key(params, NS).key_id == key.key_id


def test_a_recipient_removed_before_a_rebuild_cannot_open_the_new_bundle() -> None:
    a, b, c = people(3)
    _, old = RecipientsKey(map(recipient_of, (a, b, c))).new_bundle_key(NS)
    _, new = RecipientsKey(map(recipient_of, (a, b))).new_bundle_key(NS)
    with pytest.raises(WrongKeyError, match="no identity given is a recipient"):
        opener(c).open_bundle_key(new, NS)
    assert opener(a).open_bundle_key(new, NS)
    assert opener(c).open_bundle_key(old, NS)  # what was published stays readable: the spec says so


def test_every_build_draws_a_fresh_bundle_key_for_the_same_recipients() -> None:
    a = new_identity()
    keys = [RecipientsKey([recipient_of(a)]).new_bundle_key(NS) for _ in range(3)]
    assert len({k.key_id for k, _ in keys}) == 3 and len({p["envelope"] for _, p in keys}) == 3


def test_the_manifest_lists_the_recipients_sorted_without_repeats() -> None:
    a, b = people(2)
    ra, rb = recipient_of(a), recipient_of(b)
    _, params = RecipientsKey([rb, f" {ra}\n", rb]).new_bundle_key(NS)
    assert params["recipients"] == sorted([ra, rb])
    assert set(params) == {"scheme", "key_source", "kdf", "salt", "key_id", "commitment", "recipients", "envelope"}


def test_an_identity_file_with_several_identities_opens_with_whichever_is_a_recipient() -> None:
    a, b = people(2)
    _, params = RecipientsKey([recipient_of(b)]).new_bundle_key(NS)
    assert opener(a, b).open_bundle_key(params, NS)


def test_the_namespace_is_bound_into_the_key() -> None:
    a = new_identity()
    _, params = RecipientsKey([recipient_of(a)]).new_bundle_key(NS)
    with pytest.raises(WrongKeyError, match="commitment"):
        opener(a).open_bundle_key(params, "other")


def test_a_recipients_key_only_encrypts() -> None:
    a = new_identity()
    spec = RecipientsKey([recipient_of(a)])
    _, params = spec.new_bundle_key(NS)
    with pytest.raises(KeySourceError, match="--identity-file"):
        spec.open_bundle_key(params, NS)


def test_an_identity_on_a_passphrase_bundle_names_the_option_to_use() -> None:
    _, params = PassphraseKey("a long enough passphrase", scrypt_n=2**15).new_bundle_key(NS)
    with pytest.raises(KeySourceError, match="passphrase key"):
        opener(new_identity()).open_bundle_key(params, NS)


def test_a_passphrase_on_a_recipients_bundle_names_identity_file() -> None:
    _, params = RecipientsKey([recipient_of(new_identity())]).new_bundle_key(NS)
    with pytest.raises(KeySourceError, match="--identity-file"):
        PassphraseKey("a long enough passphrase").open_bundle_key(params, NS)


def test_a_merge_reencrypts_for_the_readers_every_opened_bundle_lists() -> None:
    a, b, c = people(3)
    _, first = RecipientsKey(map(recipient_of, (a, b, c))).new_bundle_key(NS)
    _, second = RecipientsKey(map(recipient_of, (a, b))).new_bundle_key(NS)
    spec = opener(a)
    spec.open_bundle_key(first, NS)
    spec.open_bundle_key(second, NS)
    _, merged = spec.new_bundle_key(NS)
    assert merged["recipients"] == sorted([recipient_of(a), recipient_of(b)])


def test_a_merge_never_reencrypts_for_readers_that_leave_out_every_identity_held() -> None:
    """Two identities in one file open two bundles whose only shared reader is someone else: the
    intersection would lock the writer out of their own merged tree, so it is refused."""
    mine_a, mine_b, other = people(3)
    _, first = RecipientsKey(map(recipient_of, (mine_a, other))).new_bundle_key(NS)
    _, second = RecipientsKey(map(recipient_of, (mine_b, other))).new_bundle_key(NS)
    spec = opener(mine_a, mine_b)
    spec.open_bundle_key(first, NS)
    spec.open_bundle_key(second, NS)
    with pytest.raises(UsageError, match="lock you out"):
        spec.new_bundle_key(NS)


def test_an_identity_that_opened_nothing_cannot_name_readers() -> None:
    with pytest.raises(UsageError, match="--recipient"):
        opener(new_identity()).new_bundle_key(NS)


# --- hostile manifests ------------------------------------------------------------------------------


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode().rstrip("=")


def forge(file_key: bytes, stanzas: list[str], plaintext: bytes) -> str:
    """An armored age file with these stanzas, a valid MAC under ``file_key``, and ``plaintext``."""
    throwaway = age.X25519Recipient(new_identity().recipient)
    data = age.encrypt(plaintext, [throwaway], FixedRandom(file_key + os.urandom(48)))
    _, offset = age.parse_header(data, max_stanzas=2, max_bytes=4096)
    text = b"age-encryption.org/v1\n" + "".join(stanzas).encode() + b"---"
    mac = hmac.digest(_hkdf(file_key, None, b"header", 32), text, "sha256")
    return age.armor(text + b" " + _b64(mac).encode() + b"\n" + data[offset:])


def stanza(file_key: bytes, who: age.X25519Identity) -> str:
    return age._wrap_x25519(file_key, who.recipient, os.urandom)


def listed_bundle(listed: list[age.X25519Identity]) -> tuple[dict[str, Any], bytes]:
    """Real parameters for ``listed`` and the 32 bytes of key material inside them."""
    randomness = os.urandom(32 + 32 + 16 + 32 * len(listed) + 16)
    _, params = RecipientsKey(map(recipient_of, listed)).new_bundle_key(NS, FixedRandom(randomness))
    return params, randomness[32:64]


class _Counting:
    """An identity that counts the stanzas it is asked to try."""

    def __init__(self, inner: age.X25519Identity) -> None:
        self.inner, self.tried = inner, 0

    def unwrap(self, stanza: age.Stanza) -> bytes | None:
        self.tried += 1
        return self.inner.unwrap(stanza)

    def recipient_text(self) -> str:
        return self.inner.recipient_text()


def test_every_stanza_is_tried_after_a_match_so_timing_does_not_tell_which_reader() -> None:
    first, *rest = people(4)
    data = age.encrypt(bytes(32), [age.X25519Recipient(p.recipient) for p in (first, *rest)], os.urandom)
    header, _ = age.parse_header(data, max_stanzas=8, max_bytes=4096)
    counting = _Counting(first)
    file_key, identity = age.unwrap_file_key(header, [counting])
    assert identity is counting and counting.tried == 4
    age.check_mac(header, file_key)


def test_a_stanza_for_a_key_not_among_the_recipients_is_refused_for_that_key() -> None:
    a, b, c = people(3)
    params, ikm = listed_bundle([a, b])
    file_key = os.urandom(16)
    forged = dict(params, envelope=forge(file_key, [stanza(file_key, a), stanza(file_key, c)], ikm))
    with pytest.raises(HeaderDecryptionError, match="does not list its recipient"):
        opener(c).open_bundle_key(forged, NS)
    assert opener(a).open_bundle_key(forged, NS)  # a listed reader cannot tell; the list is checked where it can be


def test_a_duplicated_stanza_is_refused() -> None:
    a, b = people(2)
    params, ikm = listed_bundle([a, b])
    file_key = os.urandom(16)
    twice = stanza(file_key, a)
    forged = dict(params, envelope=forge(file_key, [twice, twice], ikm))
    with pytest.raises(HeaderDecryptionError, match="distinct"):
        opener(a).open_bundle_key(forged, NS)


def test_fewer_stanzas_than_listed_recipients_is_refused() -> None:
    a, b = people(2)
    params, ikm = listed_bundle([a, b])
    file_key = os.urandom(16)
    with pytest.raises(HeaderDecryptionError, match="1 distinct recipient stanzas for 2"):
        opener(a).open_bundle_key(dict(params, envelope=forge(file_key, [stanza(file_key, a)], ikm)), NS)


@pytest.mark.parametrize("bad", [
    "-> X25519 !!!!\nAAAA\n",                      # not base64
    "-> X25519 AAAA\nAAAA\n",                      # a share that is not 32 bytes
    "-> X25519\nAAAA\n",                           # no share
    "-> X25519 " + "A" * 43 + " extra\nAAAA\n",    # an extra argument
    "->  X25519\n\n",                              # an empty argument
    "-> X25519 " + "A" * 43 + "\n" + "A" * 65 + "\n",  # a body line over 64 columns
])
def test_a_malformed_stanza_is_a_header_failure(bad: str) -> None:
    a = new_identity()
    params, ikm = listed_bundle([a])
    file_key = os.urandom(16)
    with pytest.raises(HeaderDecryptionError, match="malformed"):
        opener(a).open_bundle_key(dict(params, envelope=forge(file_key, [stanza(file_key, a), bad], ikm)), NS)


def test_ten_thousand_stanzas_are_refused_by_the_envelope_bound_before_any_key_agreement() -> None:
    a = new_identity()
    params, ikm = listed_bundle([a])
    file_key = os.urandom(16)
    one = stanza(file_key, a)
    envelope = forge(file_key, [one] * 10_000, ikm)
    start = time.process_time()
    with pytest.raises(HeaderDecryptionError, match="longer than"):
        opener(a).open_bundle_key(dict(params, envelope=envelope), NS)
    assert time.process_time() - start < 5  # refused on its size, not after 10,000 X25519 operations


def test_the_stanza_count_is_bounded_even_under_a_larger_size_limit() -> None:
    file_key = os.urandom(16)
    header = b"age-encryption.org/v1\n" + stanza(file_key, new_identity()).encode() * 10_000 + b"--- " + b"A" * 43 + b"\n"
    with pytest.raises(HeaderDecryptionError, match=f"more than {MAX_RECIPIENTS} stanzas"):
        age.parse_header(header, max_stanzas=MAX_RECIPIENTS, max_bytes=len(header))


def test_an_altered_header_fails_its_mac() -> None:
    a, b = people(2)
    params, _ = listed_bundle([a, b])
    data = age.dearmor(params["envelope"], max_bytes=1 << 20)
    header, offset = age.parse_header(data, max_stanzas=4, max_bytes=4096)
    second = data.index(b"-> X25519", 30)
    swapped = data[:22] + data[second:data.index(b"---")] + data[22:second] + data[data.index(b"---"):]
    with pytest.raises(HeaderDecryptionError, match="MAC"):
        opener(a).open_bundle_key(dict(params, envelope=age.armor(swapped)), NS)


def test_an_envelope_that_holds_other_than_32_bytes_is_refused() -> None:
    a = new_identity()
    params, _ = listed_bundle([a])
    file_key = os.urandom(16)
    with pytest.raises(HeaderDecryptionError, match="33 bytes, not a 32-byte key"):
        opener(a).open_bundle_key(dict(params, envelope=forge(file_key, [stanza(file_key, a)], bytes(33))), NS)


@pytest.mark.parametrize("recipients", [
    "age1notalist", [], ["age1xyz"], [1], None,
    ["AGE1QQQQ"],
])
def test_a_malformed_recipients_list_is_a_manifest_error(recipients: Any) -> None:
    a = new_identity()
    params, _ = listed_bundle([a])
    with pytest.raises(ManifestError, match="recipients"):
        opener(a).open_bundle_key(dict(params, recipients=recipients), NS)


def test_an_unsorted_or_repeated_recipients_list_is_a_manifest_error() -> None:
    a, b = people(2)
    params, _ = listed_bundle([a, b])
    for listed in (params["recipients"][::-1], params["recipients"][:1] * 2):
        with pytest.raises(ManifestError, match="sorted and without repeats"):
            opener(a).open_bundle_key(dict(params, recipients=listed), NS)


def test_more_listed_recipients_than_the_limit_is_a_manifest_error() -> None:
    a = new_identity()
    params, _ = listed_bundle([a])
    many = sorted(recipient_of(new_identity()) for _ in range(MAX_RECIPIENTS + 1))
    with pytest.raises(ManifestError, match=f"1 to {MAX_RECIPIENTS}"):
        opener(a).open_bundle_key(dict(params, recipients=many), NS)


@pytest.mark.parametrize("change", [
    {"envelope": 7}, {"envelope": "not armor"}, {"extra": 1},
])
def test_a_malformed_envelope_member_is_refused(change: dict[str, Any]) -> None:
    a = new_identity()
    params, _ = listed_bundle([a])
    with pytest.raises((ManifestError, HeaderDecryptionError)):
        opener(a).open_bundle_key({**params, **change}, NS)


def test_no_message_quotes_a_key() -> None:
    a, b = people(2)
    _, params = RecipientsKey([recipient_of(a)]).new_bundle_key(NS)
    with pytest.raises(WrongKeyError) as caught:
        opener(b).open_bundle_key(params, NS)
    assert secret_line(b) not in str(caught.value) and "AGE-SECRET" not in str(caught.value)


# --- identity files ---------------------------------------------------------------------------------


def write_private(path: Path, text: str | bytes) -> Path:
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    path.chmod(0o600)
    return path


def test_an_identity_file_keygen_style_reads_with_its_comments(tmp_path: Path) -> None:
    a = new_identity()
    [read] = read_identity_file(write_private(tmp_path / "k", identity_file_text(a)))
    assert read.recipient == a.recipient


@pytest.mark.parametrize(("line", "why"), [
    ("AGE-SECRET-KEY-1QQQQQQ", "is not an age identity"),
    ("age1qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq", "is a recipient"),
    ("-----BEGIN PRIVATE KEY-----", "not an OpenSSH private key"),
    ("AGE-PLUGIN-YUBIKEY-1QQQQQQ", "plugin"),
    ("AGE-SECRET-KEY-PQ-1QQQQQQ", "post-quantum"),
    ("hello", "is not an age identity"),
])
def test_a_line_that_is_not_an_identity_is_named_by_number_never_quoted(tmp_path: Path, line: str, why: str) -> None:
    path = write_private(tmp_path / "k", f"# comment\n\n{secret_line(new_identity())}\n{line}\n")
    with pytest.raises(KeySourceError, match=why) as caught:
        read_identity_file(path)
    assert "line 4" in str(caught.value) and line not in str(caught.value)


def test_an_identity_with_a_broken_checksum_is_refused_without_quoting_it(tmp_path: Path) -> None:
    line = secret_line(new_identity())
    broken = line[:-1] + ("Q" if line[-1] != "Q" else "P")
    with pytest.raises(KeySourceError, match="line 1") as caught:
        read_identity_file(write_private(tmp_path / "k", broken + "\n"))
    assert broken not in str(caught.value)


def test_a_huge_identity_file_is_refused_without_reading_it_all(tmp_path: Path) -> None:
    path = write_private(tmp_path / "k", b"#" * (64 * 1024 + 1))
    with pytest.raises(KeySourceError, match="over the limit"):
        read_identity_file(path)


def test_an_identity_file_of_binary_bytes_is_refused(tmp_path: Path) -> None:
    with pytest.raises(KeySourceError, match="not ASCII"):
        read_identity_file(write_private(tmp_path / "k", os.urandom(64) + b"\xff"))


def test_an_empty_identity_file_holds_no_identity(tmp_path: Path) -> None:
    with pytest.raises(KeySourceError, match="no age identity"):
        read_identity_file(write_private(tmp_path / "k", "# only a comment\n"))


def test_too_many_identities_are_refused(tmp_path: Path) -> None:
    text = "\n".join(secret_line(new_identity()) for _ in range(65))
    with pytest.raises(KeySourceError, match="more than 64"):
        read_identity_file(write_private(tmp_path / "k", text))


def test_a_symlink_to_an_identity_file_is_followed(tmp_path: Path) -> None:
    a = new_identity()
    write_private(tmp_path / "real", identity_file_text(a))
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert read_identity_file(tmp_path / "link")[0].recipient == a.recipient


@pytest.mark.parametrize("target", ["/dev/zero", "fifo", "dir"])
def test_an_identity_path_to_a_device_fifo_or_directory_is_refused_without_blocking(tmp_path: Path, target: str) -> None:
    if target == "fifo":
        os.mkfifo(tmp_path / "fifo")
        target = str(tmp_path / "fifo")
    elif target == "dir":
        (tmp_path / "dir").mkdir()
        target = str(tmp_path / "dir")
    (tmp_path / "link").symlink_to(target)
    with pytest.raises(KeySourceError, match="not a regular file|cannot read"):
        read_identity_file(tmp_path / "link")


def test_a_missing_identity_file_names_it(tmp_path: Path) -> None:
    with pytest.raises(KeySourceError, match="cannot read the identity file"):
        read_identity_file(tmp_path / "absent")


def test_a_world_readable_identity_file_draws_a_warning(tmp_path: Path) -> None:
    path = write_private(tmp_path / "k", identity_file_text(new_identity()))
    warnings: list[str] = []
    read_identity_file(path, warn=warnings.append)
    assert warnings == []
    path.chmod(0o644)
    read_identity_file(path, warn=warnings.append)
    assert len(warnings) == 1 and "chmod 600" in warnings[0] and "644" in warnings[0]


def test_key_new_writes_0600_and_never_replaces_a_file(tmp_path: Path) -> None:
    path = tmp_path / "agent.key"
    recipient = write_new_identity(path)
    assert path.stat().st_mode & 0o777 == 0o600
    assert recipient_of(read_identity_file(path)[0]) == recipient
    before = path.read_bytes()
    with pytest.raises(KeySourceError, match="already exists"):
        write_new_identity(path)
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["agent.key"]


@pytest.mark.parametrize("kind", ["dangling symlink", "symlink to a file"])
def test_key_new_never_writes_through_a_symlink(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "elsewhere"
    if kind == "symlink to a file":
        target.write_text("kept")
    (tmp_path / "agent.key").symlink_to(target)
    with pytest.raises(KeySourceError, match="already exists"):
        write_new_identity(tmp_path / "agent.key")
    assert (target.read_text() == "kept") if target.exists() else not target.exists()


def test_key_new_in_a_missing_directory_says_so_without_the_never_replaced_hint(tmp_path: Path) -> None:
    with pytest.raises(KeySourceError, match="No such file or directory") as caught:
        write_new_identity(tmp_path / "nowhere" / "agent.key")
    assert "never replaced" not in str(caught.value)


# --- recipients lists and the key options ------------------------------------------------------------


def test_a_recipients_file_skips_comments_and_names_the_line_that_does_not_parse(tmp_path: Path) -> None:
    good = recipient_of(new_identity())
    path = tmp_path / "team.txt"
    path.write_text(f"# the team\n{good}\n\nnot-a-key\n")
    with pytest.raises(KeySourceError, match="team.txt line 4 is not an age recipient"):
        read_recipients_file(path)
    path.write_text(f"# the team\n{good}\n\n")
    assert read_recipients_file(path) == [good]


@pytest.mark.parametrize(("line", "why"), [
    ("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB comment", "not a usable ssh-ed25519 key"),
    ("ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ comment", "another type"),
    ("age1pq1qqqq", "post-quantum"),
    ("age1tag1qqqq", "tagged"),
    ("age1tagpq1qqqq", "tagged"),
])
def test_a_recipient_of_an_unsupported_kind_says_which(tmp_path: Path, line: str, why: str) -> None:
    path = tmp_path / "r.txt"
    path.write_text(line + "\n")
    with pytest.raises(KeySourceError, match=why):
        read_recipients_file(path)


def test_an_x25519_key_whose_data_begins_tag_or_pq_is_a_recipient() -> None:
    """Its human-readable part is "age" (before the last ``1``): an ``age-keygen`` key that drew
    ``tag`` first failed CI when the kind was read from the prefix."""
    drawn = "age1tag9y44vt96hwaqdf6euqduenhhehde6w9vhrek985r44x4fk3hsvpacnf"
    assert parse_recipient(drawn, where="--recipient") == drawn
    for word in ("tag", "pq"):
        key = _key_beginning(word)
        assert parse_recipient(key, where="--recipient") == key


def _key_beginning(word: str) -> str:
    """A canonical X25519 recipient whose Bech32 data begins with ``word``."""
    from bundlekit.crypto import _bech32
    for n in range(1 << 16):
        data = n.to_bytes(2, "big") + bytes([7]) * 30
        text = _bech32.encode("age", data)
        if text.startswith("age1" + word) and age.is_canonical_point(data) and not age.is_low_order(data):
            return text
    raise AssertionError(word)


def test_a_secret_identity_in_a_recipients_file_is_refused_unquoted(tmp_path: Path) -> None:
    line = secret_line(new_identity())
    path = tmp_path / "r.txt"
    path.write_text(line + "\n")
    with pytest.raises(KeySourceError, match="line 1 is a secret identity") as caught:
        read_recipients_file(path)
    assert line not in str(caught.value)


def test_a_low_order_recipient_is_refused() -> None:
    from bundlekit.crypto import _bech32
    with pytest.raises(KeySourceError, match="low-order"):
        RecipientsKey([_bech32.encode("age", bytes(32))])


def test_recipient_and_recipients_file_together_are_one_key_option(tmp_path: Path) -> None:
    a, b = people(2)
    (tmp_path / "r.txt").write_text(recipient_of(b) + "\n")
    spec = key_spec(KeyOptions(recipient=(recipient_of(a),), recipients_file=tmp_path / "r.txt"), new_key=True)
    assert isinstance(spec, RecipientsKey) and set(spec.recipients) == {recipient_of(a), recipient_of(b)}


def test_recipient_with_another_key_option_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="--passphrase-env and --recipient cannot be combined"):
        key_spec(KeyOptions(recipient=(recipient_of(new_identity()),), passphrase_env="P"), new_key=True)


def test_the_identity_environment_variable_opens_when_no_option_is_given() -> None:
    a = new_identity()
    env = {"BUNDLEKIT_IDENTITY": identity_file_text(a)}
    spec = key_spec(KeyOptions(), environ=env)
    assert isinstance(spec, IdentityKey)
    _, params = RecipientsKey([recipient_of(a)]).new_bundle_key(NS)
    assert spec.open_bundle_key(params, NS)
    assert key_spec(KeyOptions(), environ=env, new_key=True) is None
    assert key_spec(KeyOptions(), environ=env, identity_env=False) is None


def test_an_identity_environment_variable_holding_a_path_says_to_give_identity_file(tmp_path: Path) -> None:
    path = tmp_path / "agent.key"
    path.write_text(identity_file_text(new_identity()))
    with pytest.raises(KeySourceError, match=r"holds the path of a file.*--identity-file"):
        key_spec(KeyOptions(), environ={"BUNDLEKIT_IDENTITY": str(path)})


def test_a_malformed_identity_environment_variable_is_named_not_quoted() -> None:
    with pytest.raises(KeySourceError, match=r"\$BUNDLEKIT_IDENTITY line 1") as caught:
        key_spec(KeyOptions(), environ={"BUNDLEKIT_IDENTITY": "AGE-SECRET-KEY-1NOPE"})
    assert "NOPE" not in str(caught.value)


def test_parse_identities_reads_crlf_lines() -> None:
    a = new_identity()
    assert parse_identities(f"# made by hand\r\n\r\n{secret_line(a)}\r\n", where="x")[0].recipient == a.recipient


@pytest.mark.parametrize("text", ["  {key}\n", "{key}  \n", "\t{key}\n", "  # a comment\n{key}\n"])
def test_an_identity_line_with_whitespace_around_it_is_refused_as_age_refuses_it(text: str) -> None:
    """age reads identity lines exactly as written (Debian's age 1.1: "unknown identity type"),
    so a file bundlekit reads is one age reads too (tests/crypto/test_age_interop.py)."""
    line = secret_line(new_identity())
    with pytest.raises(KeySourceError, match=r"x line \d has whitespace around it") as caught:
        parse_identities(text.format(key=line), where="x")
    assert line not in str(caught.value)


@pytest.mark.parametrize("line", ["  {r}", "{r} ", "  # the team"])
def test_a_recipients_file_line_with_whitespace_around_it_is_refused_as_age_refuses_it(
    tmp_path: Path, line: str
) -> None:
    path = tmp_path / "team.txt"
    path.write_text("# ok\n" + line.format(r=recipient_of(new_identity())) + "\n")
    with pytest.raises(KeySourceError, match="team.txt line 2 has whitespace around it"):
        read_recipients_file(path)


def test_an_uppercase_recipient_is_refused_as_age_refuses_it() -> None:
    """Debian's age 1.1 refuses ``AGE1...`` ("unknown recipient type"); bundlekit says why."""
    with pytest.raises(KeySourceError, match="is in uppercase"):
        RecipientsKey([recipient_of(new_identity()).upper()])


# --- ssh-ed25519 keys: hostile private key files -----------------------------------------------------


def openssh_key(seed: bytes, *, check2: int | None = None, padding: bytes | None = None, cipher: bytes = b"none",
                stored_public: bytes | None = None) -> str:
    """An OpenSSH private key file (PROTOCOL.key) for ``seed``, with one field changed on request."""
    import struct

    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    def string(b: bytes) -> bytes:
        return struct.pack(">I", len(b)) + b

    public = stored_public or Ed25519PrivateKey.from_private_bytes(seed).public_key().public_bytes_raw()
    wire = string(b"ssh-ed25519") + string(public)
    block = struct.pack(">II", 7, 7 if check2 is None else check2) + string(b"ssh-ed25519") + string(public)
    block += string(seed + public) + string(b"comment")
    block += padding if padding is not None else bytes(range(1, 1 + (-len(block)) % 8))
    data = b"openssh-key-v1\x00" + string(cipher) + string(b"none" if cipher == b"none" else b"bcrypt")
    data += string(b"") + struct.pack(">I", 1) + string(wire) + string(block)
    text = base64.b64encode(data).decode()
    return "-----BEGIN OPENSSH PRIVATE KEY-----\n" + "\n".join(text[i:i + 70] for i in range(0, len(text), 70)) + \
        "\n-----END OPENSSH PRIVATE KEY-----\n"


def test_a_well_formed_openssh_key_reads_and_opens_a_bundle_for_its_public_key(tmp_path: Path) -> None:
    [identity] = read_identity_file(write_private(tmp_path / "id", openssh_key(os.urandom(32))))
    _, params = RecipientsKey([identity.recipient_text()]).new_bundle_key(NS)
    assert opener(identity).open_bundle_key(params, NS)


@pytest.mark.parametrize("change", [
    {"check2": 8}, {"padding": b"\x09"}, {"cipher": b"aes256-ctr"}, {"stored_public": bytes(32)},
])
def test_a_tampered_or_encrypted_openssh_key_is_refused(tmp_path: Path, change: dict[str, Any]) -> None:
    with pytest.raises(KeySourceError, match="malformed OpenSSH|passphrase"):
        read_identity_file(write_private(tmp_path / "id", openssh_key(os.urandom(32), **change)))


def test_a_truncated_openssh_key_is_refused(tmp_path: Path) -> None:
    text = openssh_key(os.urandom(32))
    lines = text.splitlines()
    cut = "\n".join(lines[:2] + lines[-1:]) + "\n"
    with pytest.raises(KeySourceError, match="malformed OpenSSH"):
        read_identity_file(write_private(tmp_path / "id", cut))


def test_an_ssh_ed25519_recipient_off_the_curve_is_refused() -> None:
    import struct

    def string(b: bytes) -> bytes:
        return struct.pack(">I", len(b)) + b

    for public in (bytes([2]) + bytes(31), (1).to_bytes(32, "little")):  # not on the curve; the identity point
        line = "ssh-ed25519 " + base64.b64encode(string(b"ssh-ed25519") + string(public)).decode()
        with pytest.raises(KeySourceError, match="not a usable ssh-ed25519 key"):
            RecipientsKey([line])
