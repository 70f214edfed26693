"""Differential tests against Debian's ``age`` 1.1 (``age``, ``age-keygen``; .ci/run installs them).

Both directions: ``age -d -i`` opens the envelope bundlekit wraps a bundle's key in and prints the
same 32 bytes, and an envelope ``age -r`` made opens a bundle the same way bundlekit's own does.
Keys and recipients agree with ``age-keygen`` byte for byte (Bech32 both ways).
"""

from __future__ import annotations

import hmac
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

from bundlekit.crypto import _bech32, age
from bundlekit.crypto._keys import _bundle_key, _hkdf
from bundlekit.crypto.recipients import (
    IdentityKey,
    RecipientsKey,
    identity_file_text,
    new_identity,
    read_identity_file,
    read_recipients_file,
    recipient_of,
)
from bundlekit.errors import HeaderDecryptionError, KeySourceError

AGE = shutil.which("age")
KEYGEN = shutil.which("age-keygen")
pytestmark = pytest.mark.skipif(AGE is None or KEYGEN is None, reason="Debian's age is not installed (.ci/run installs it)")


def run(*args: str, stdin: bytes = b"") -> bytes:
    done = subprocess.run(args, input=stdin, capture_output=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def keygen(path: Path) -> str:
    run(str(KEYGEN), "-o", str(path))
    return run(str(KEYGEN), "-y", str(path)).decode().strip()


def test_age_keygen_identities_read_to_the_recipient_age_keygen_prints(tmp_path: Path) -> None:
    for n in range(5):
        recipient = keygen(tmp_path / f"k{n}")
        [identity] = read_identity_file(tmp_path / f"k{n}")
        assert recipient_of(identity) == recipient


def test_age_keygen_reads_our_identity_files_to_our_recipient(tmp_path: Path) -> None:
    for n in range(5):
        identity = new_identity()
        (tmp_path / f"k{n}").write_text(identity_file_text(identity))
        os.chmod(tmp_path / f"k{n}", 0o600)
        assert run(str(KEYGEN), "-y", str(tmp_path / f"k{n}")).decode().strip() == recipient_of(identity)


def test_bech32_round_trips_what_age_keygen_writes(tmp_path: Path) -> None:
    keygen(tmp_path / "k")
    secret = [line for line in (tmp_path / "k").read_text().splitlines() if line.startswith("AGE-SECRET")][0]
    hrp, data = _bech32.decode(secret)
    assert hrp == "age-secret-key-" and _bech32.encode(hrp, data, upper=True) == secret


def test_age_decrypts_our_envelope_to_the_key_material_of_the_bundle_key(tmp_path: Path) -> None:
    recipients = [keygen(tmp_path / f"k{n}") for n in range(3)]
    key, params = RecipientsKey(recipients).new_bundle_key("team")
    for n in range(3):
        ikm = run(str(AGE), "-d", "-i", str(tmp_path / f"k{n}"), stdin=params["envelope"].encode())
        assert len(ikm) == 32
        derived = _bundle_key(ikm, bytes.fromhex(params["salt"]), "recipients", b"team")
        assert derived.key_id == key.key_id and derived.commitment() == key.commitment()


def test_age_refuses_our_envelope_for_an_identity_not_among_the_recipients(tmp_path: Path) -> None:
    recipients = [keygen(tmp_path / "k0")]
    keygen(tmp_path / "other")
    _, params = RecipientsKey(recipients).new_bundle_key("team")
    done = subprocess.run([str(AGE), "-d", "-i", str(tmp_path / "other")], input=params["envelope"].encode(),
                          capture_output=True, timeout=60, check=False)
    assert done.returncode != 0 and b"no identity matched" in done.stderr


def test_an_envelope_age_made_opens_the_bundle_like_ours(tmp_path: Path) -> None:
    recipients = [keygen(tmp_path / f"k{n}") for n in range(3)]
    key, params = RecipientsKey(recipients).new_bundle_key("team")
    ikm = run(str(AGE), "-d", "-i", str(tmp_path / "k0"), stdin=params["envelope"].encode())
    flags = [arg for r in recipients for arg in ("-r", r)]
    theirs = run(str(AGE), "-a", *flags, stdin=ikm).decode()
    assert theirs != params["envelope"]
    for n in range(3):
        opened = IdentityKey(read_identity_file(tmp_path / f"k{n}")).open_bundle_key(dict(params, envelope=theirs), "team")
        assert opened.key_id == key.key_id


def test_a_binary_age_file_from_age_decrypts_with_our_reader(tmp_path: Path) -> None:
    recipient = keygen(tmp_path / "k")
    [identity] = read_identity_file(tmp_path / "k")
    plaintext = bytes(range(256)) * 700  # three chunks
    data = run(str(AGE), "-r", recipient, stdin=plaintext)
    header, offset = age.parse_header(data, max_stanzas=4, max_bytes=4096)
    file_key, _ = age.unwrap_file_key(header, [identity])
    age.check_mac(header, file_key)
    assert b"".join(age.open_payload(file_key, data[offset:])) == plaintext


def test_age_decrypts_a_multi_chunk_file_we_wrote(tmp_path: Path) -> None:
    recipient = keygen(tmp_path / "k")
    plaintext = os.urandom(3 * 65536 + 5)
    ours = age.encrypt(plaintext, [age.X25519Recipient(_bech32.decode(recipient)[1])], os.urandom)
    assert run(str(AGE), "-d", "-i", str(tmp_path / "k"), stdin=ours) == plaintext


# --- ssh-ed25519 (FiloSottile/age agessh/agessh.go), with keys from ssh-keygen ---------------------------

SSH_KEYGEN = shutil.which("ssh-keygen")
needs_ssh_keygen = pytest.mark.skipif(SSH_KEYGEN is None, reason="ssh-keygen is not installed")


def ssh_key(path: Path, *, kind: str = "ed25519", passphrase: str = "") -> str:
    run(str(SSH_KEYGEN), "-q", "-t", kind, "-N", passphrase, "-C", "someone@example.org", "-f", str(path))
    return (path.parent / f"{path.name}.pub").read_text()


@needs_ssh_keygen
def test_age_decrypts_our_envelope_with_an_ssh_ed25519_key(tmp_path: Path) -> None:
    public = ssh_key(tmp_path / "id")
    x25519 = keygen(tmp_path / "k")
    key, params = RecipientsKey([public, x25519]).new_bundle_key("team")
    assert all("someone@" not in r for r in params["recipients"])  # the comment is not kept
    ikm = run(str(AGE), "-d", "-i", str(tmp_path / "id"), stdin=params["envelope"].encode())
    assert _bundle_key(ikm, bytes.fromhex(params["salt"]), "recipients", b"team").key_id == key.key_id


@needs_ssh_keygen
def test_an_envelope_age_made_for_an_ssh_key_opens_with_our_reader(tmp_path: Path) -> None:
    public = ssh_key(tmp_path / "id")
    key, params = RecipientsKey([public]).new_bundle_key("team")
    ikm = run(str(AGE), "-d", "-i", str(tmp_path / "id"), stdin=params["envelope"].encode())
    theirs = run(str(AGE), "-a", "-R", str(tmp_path / "id.pub"), stdin=ikm).decode()
    opened = IdentityKey(read_identity_file(tmp_path / "id")).open_bundle_key(dict(params, envelope=theirs), "team")
    assert opened.key_id == key.key_id


@needs_ssh_keygen
def test_our_ssh_identity_answers_for_the_public_key_ssh_keygen_wrote(tmp_path: Path) -> None:
    public = ssh_key(tmp_path / "id")
    [identity] = read_identity_file(tmp_path / "id")
    assert identity.recipient_text() == " ".join(public.split()[:2])


@needs_ssh_keygen
@pytest.mark.parametrize(("kind", "passphrase", "why"), [
    ("ed25519", "a passphrase", "protected by a passphrase"),
    ("ecdsa", "", "only ssh-ed25519"),
])
def test_an_ssh_key_bundlekit_cannot_use_is_refused_saying_why(tmp_path: Path, kind: str, passphrase: str, why: str) -> None:
    ssh_key(tmp_path / "id", kind=kind, passphrase=passphrase)
    from bundlekit.errors import KeySourceError
    with pytest.raises(KeySourceError, match=why):
        read_identity_file(tmp_path / "id")


# --- differential: what age refuses bundlekit refuses, and what age reads bundlekit reads ---------------


def age_accepts(*args: str, stdin: bytes = b"x") -> bool:
    return subprocess.run(args, input=stdin, capture_output=True, timeout=60, check=False).returncode == 0


def we_accept(read: Callable[[], object]) -> bool:
    try:
        read()
    except KeySourceError:
        return False
    return True


def _respelled(recipient: str, *, constant: int = 1, pad_bit: int = 0, hrp: str = "age") -> str:
    """``recipient``'s key re-encoded with another checksum constant (bech32m: 0x2BC830A3), a set
    padding bit or another human-readable part."""
    words = _bech32._convert(_bech32.decode(recipient)[1], 8, 5, pad=True)
    words[-1] |= pad_bit
    polymod = _bech32._polymod(_bech32._hrp_expand(hrp) + words + [0] * 6) ^ constant
    checksum = [(polymod >> 5 * (5 - i)) & 31 for i in range(6)]
    return hrp + "1" + "".join(_bech32._CHARSET[w] for w in words + checksum)


@pytest.mark.parametrize("spelling", ["as-is", "upper", "bech32m", "padding", "age2", "mixed"])
def test_a_recipient_spelling_is_taken_exactly_when_age_takes_it(tmp_path: Path, spelling: str) -> None:
    good = keygen(tmp_path / "k")
    text = {"as-is": good, "upper": good.upper(), "bech32m": _respelled(good, constant=0x2BC830A3),
            "padding": _respelled(good, pad_bit=1), "age2": _respelled(good, hrp="age2"),
            "mixed": good[:10].upper() + good[10:]}[spelling]
    assert we_accept(lambda: RecipientsKey([text])) == age_accepts(str(AGE), "-r", text)


@pytest.mark.parametrize("layout", ["plain", "crlf", "leading space", "trailing space", "indented comment",
                                    "tab comment", "blank lines"])
def test_a_recipients_file_is_read_exactly_when_age_r_reads_it(tmp_path: Path, layout: str) -> None:
    good = keygen(tmp_path / "k")
    text = {"plain": f"{good}\n", "crlf": f"# team\r\n{good}\r\n", "leading space": f" {good}\n",
            "trailing space": f"{good} \n", "indented comment": f"  # team\n{good}\n",
            "tab comment": f"\t# team\n{good}\n", "blank lines": f"\n\n{good}\n\n"}[layout]
    (tmp_path / "r.txt").write_bytes(text.encode())
    ours = we_accept(lambda: read_recipients_file(tmp_path / "r.txt"))
    assert ours == age_accepts(str(AGE), "-R", str(tmp_path / "r.txt"))


@pytest.mark.parametrize("layout", ["plain", "crlf", "leading space", "trailing space", "indented comment",
                                    "bom", "lowercase", "two keys, second opens"])
def test_an_identity_file_is_read_exactly_when_age_d_reads_it(tmp_path: Path, layout: str) -> None:
    recipient = keygen(tmp_path / "k")
    key = [line for line in (tmp_path / "k").read_text().splitlines() if line.startswith("AGE-SECRET")][0]
    other = identity_file_text(new_identity()).splitlines()[-1]
    text = {"plain": f"{key}\n", "crlf": f"# mine\r\n{key}\r\n", "leading space": f" {key}\n",
            "trailing space": f"{key} \n", "indented comment": f"  # mine\n{key}\n", "bom": f"\ufeff{key}\n",
            "lowercase": f"{key.lower()}\n", "two keys, second opens": f"{other}\n{key}\n"}[layout]
    (tmp_path / "id").write_bytes(text.encode())
    os.chmod(tmp_path / "id", 0o600)
    _, params = RecipientsKey([recipient]).new_bundle_key("team")
    ours = we_accept(lambda: IdentityKey(read_identity_file(tmp_path / "id")).open_bundle_key(params, "team"))
    assert ours == age_accepts(str(AGE), "-d", "-i", str(tmp_path / "id"), stdin=params["envelope"].encode())


def _file_with_stanzas(stanzas: list[str], file_key: bytes, plaintext: bytes) -> bytes:
    """A binary age file whose header holds ``stanzas`` as given, MAC'd and sealed under ``file_key``."""
    text = b"age-encryption.org/v1\n" + "".join(stanzas).encode() + b"---"
    mac = hmac.digest(_hkdf(file_key, None, b"header", 32), text, "sha256")
    nonce = os.urandom(16)
    sealed = ChaCha20Poly1305(_hkdf(file_key, nonce, b"payload", 32)).encrypt(bytes(11) + b"\x01", plaintext, None)
    return text + b" " + age.b64_raw(mac).encode() + b"\n" + nonce + sealed


@pytest.mark.parametrize("where", ["before the matching stanza", "after the matching stanza"])
def test_a_low_order_share_fails_the_file_exactly_when_age_fails_it(tmp_path: Path, where: str) -> None:
    """age stops at the first stanza that opens: a low-order share met before it is an error, one
    after it is never seen. bundlekit tries every stanza (timing) but decides as age does."""
    identity = new_identity()
    (tmp_path / "id").write_text(identity_file_text(identity))
    os.chmod(tmp_path / "id", 0o600)
    file_key = os.urandom(16)
    mine = age.X25519Recipient(identity.recipient).wrap(file_key, os.urandom)
    low = f"-> X25519 {age.b64_raw(bytes(32))}\n{mine.splitlines()[1]}\n"
    data = _file_with_stanzas([low, mine] if where.startswith("before") else [mine, low], file_key, bytes(32))

    def ours() -> None:
        header, _ = age.parse_header(data, max_stanzas=4, max_bytes=4096)
        age.check_mac(header, age.unwrap_file_key(header, read_identity_file(tmp_path / "id"))[0])

    try:
        ours()
        accepted = True
    except HeaderDecryptionError:
        accepted = False
    assert accepted == age_accepts(str(AGE), "-d", "-i", str(tmp_path / "id"), stdin=data)
    assert accepted == where.startswith("after")


def test_a_non_canonical_recipient_is_refused_where_age_encrypts_for_a_key_no_identity_opens(tmp_path: Path) -> None:
    """age binds the recipient's bytes into the wrap key: ``age -r`` takes the key with its top bit
    set, but ``age -d`` with the matching identity cannot open the result. bundlekit refuses it."""
    good = keygen(tmp_path / "k")
    words = bytearray(_bech32.decode(good)[1])
    words[31] |= 0x80
    spelled = _bech32.encode("age", bytes(words))
    sealed = run(str(AGE), "-r", spelled, stdin=b"x")
    assert not age_accepts(str(AGE), "-d", "-i", str(tmp_path / "k"), stdin=sealed)
    with pytest.raises(KeySourceError, match="not the canonical encoding"):
        RecipientsKey([spelled])
