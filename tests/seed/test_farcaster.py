"""The farcaster lane against a loopback hub answering as the hub's HTTP API documents (farcasterxyz/hub-monorepo
``apps/hubble/www/docs/docs/httpapi/``: ``userdata.md`` at 662e3836, ``verification.md`` at aeab5a4c, ``httpapi.md``
at 286b3cd7; fixtures/seed/farcaster/): ownership by an EIP-191 signature from one of the fid's verified addresses
over a message naming the fid, the namespace and a time; a forged, unverified or expired proof is exit 3 before
anything is read past the verifications or written."""

from __future__ import annotations

import functools
import importlib.util
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bundlekit.crypto.signing import EthSigner
from bundlekit.memory import Memory
from bundlekit.seed.ownership import ownership_message
from tests.seed.conftest import Run
from tests.seed.fakes import Answer, FakeService, fixture, hub_app
from tests.seeding import tree_files

if importlib.util.find_spec("eth_account") is None:  # found, not imported: py_ecc would raise the recursion limit
    pytest.skip("needs the wallet extra (eth-account)", allow_module_level=True)

FID = 6833
#: The wallets' keys, made into signers when a test runs (:func:`wallet`): made at import, every test process
#: imported eth-account (~0.6 s of CPU) while collecting, whether or not it ran a test of this module.
OWNER = "0x" + "11" * 32  # the fid's verified wallet
STRANGER = "0x" + "22" * 32  # a wallet the fid never verified
KEY_VAR = "SEED_TEST_WALLET_KEY"


@functools.cache
def wallet(key: str) -> EthSigner:
    """The signer of ``key``, made once per test process."""
    return EthSigner(key)


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeService]:
    with FakeService(hub_app(FID, ["0x91031dcfdea024b4d51e775486111d2b2a715871", wallet(OWNER).identity])) as fake:
        monkeypatch.setenv("BUNDLEKIT_FARCASTER_HUB", fake.url)
        yield fake


def _proof(tmp_path: Path, signer: EthSigner, message: str) -> list[str]:
    (tmp_path / "message.txt").write_text(message, encoding="utf-8")
    (tmp_path / "signature.txt").write_text("0x" + signer.sign(message.encode()).hex(), encoding="utf-8")
    return ["--message-file", str(tmp_path / "message.txt"), "--signature-file", str(tmp_path / "signature.txt")]


def test_seed_with_a_wallet_signature_then_unseed_leaves_the_tree_byte_identical(
        hub: FakeService, tree: Path, run: Run, tmp_path: Path) -> None:
    before = tree_files(tree)
    message = run("seed", "farcaster", "--fid", str(FID), "--print-message").stdout
    assert f"fid: {FID}\nnamespace: agent\n" in message
    seeded = run("seed", "farcaster", "--fid", str(FID), *_proof(tmp_path, wallet(OWNER), message), "--yes")
    assert seeded.exit_code == 0, seeded.output
    assert f"proved by eip191:{wallet(OWNER).identity.lower()}" in seeded.stderr
    assert [line.split("\t")[0] for line in run("list").stdout.splitlines()] == [
        f"farcaster-{FID}-addresses", f"farcaster-{FID}-profile"]
    profile = Memory(tree).read(f"farcaster-{FID}-profile")
    assert profile is not None and profile.meta["seed"] == f"farcaster:{FID}"
    assert "Username: dwr" in profile.body and "Bio: Working on Farcaster" in profile.body
    assert run("unseed", "farcaster").exit_code == 0
    assert tree_files(tree) == before


def test_a_private_key_signs_the_message_on_the_spot(hub: FakeService, tree: Path, run: Run,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_VAR, "0x" + "11" * 32)
    result = run("seed", "farcaster", "--fid", str(FID), "--private-key-env", KEY_VAR, "--yes")
    assert result.exit_code == 0, result.output
    assert ("11" * 32) not in result.output


def _refused(run: Run, tree: Path, hub: FakeService, args: list[str], words: str) -> None:
    before = tree_files(tree)
    result = run("seed", "farcaster", "--fid", str(FID), *args, "--yes")
    assert result.exit_code == 3, result.output
    assert words in result.stderr
    assert tree_files(tree) == before
    assert not any(a.path == "/v1/userDataByFid" for a in hub.asked)


def test_a_forged_signature_is_refused_with_exit_3_before_anything_is_written(
        hub: FakeService, tree: Path, run: Run, tmp_path: Path) -> None:
    args = _proof(tmp_path, wallet(OWNER), ownership_message(FID, "agent", datetime.now(UTC)))
    (tmp_path / "signature.txt").write_text("0x" + "ab" * 64 + "1b")
    _refused(run, tree, hub, args, "not from any Ethereum address this fid has verified")


def test_a_signature_from_an_address_the_fid_never_verified_is_refused(
        hub: FakeService, tree: Path, run: Run, tmp_path: Path) -> None:
    args = _proof(tmp_path, wallet(STRANGER), ownership_message(FID, "agent", datetime.now(UTC)))
    _refused(run, tree, hub, args, "not from any Ethereum address this fid has verified")


def test_an_expired_message_is_refused_before_the_hub_is_asked(
        hub: FakeService, tree: Path, run: Run, tmp_path: Path) -> None:
    old = ownership_message(FID, "agent", datetime.now(UTC) - timedelta(minutes=11))
    _refused(run, tree, hub, _proof(tmp_path, wallet(OWNER), old), "expired")
    assert hub.asked == []


def test_a_message_for_another_fid_or_namespace_is_refused(hub: FakeService, tree: Path, run: Run,
                                                           tmp_path: Path) -> None:
    now = datetime.now(UTC)
    _refused(run, tree, hub, _proof(tmp_path, wallet(OWNER), ownership_message(FID + 1, "agent", now)), "another fid")
    _refused(run, tree, hub, _proof(tmp_path, wallet(OWNER), ownership_message(FID, "other-agent", now)),
             "another agent namespace")
    _refused(run, tree, hub, _proof(tmp_path, wallet(OWNER), "I own it, trust me\n"),
             "not a bundlekit ownership message")


def test_a_message_from_the_future_is_refused(hub: FakeService, tree: Path, run: Run, tmp_path: Path) -> None:
    ahead = ownership_message(FID, "agent", datetime.now(UTC) + timedelta(minutes=5))
    _refused(run, tree, hub, _proof(tmp_path, wallet(OWNER), ahead), "in the future")


def test_a_malformed_signature_is_refused_with_exit_3(hub: FakeService, tree: Path, run: Run,
                                                      tmp_path: Path) -> None:
    args = _proof(tmp_path, wallet(OWNER), ownership_message(FID, "agent", datetime.now(UTC)))
    (tmp_path / "signature.txt").write_text("not hex at all")
    _refused(run, tree, hub, args, "not hex")


def test_no_proof_is_a_usage_error_naming_the_options(hub: FakeService, run: Run) -> None:
    result = run("seed", "farcaster", "--fid", str(FID), "--yes")
    assert result.exit_code == 2 and "--message-file" in result.stderr and hub.asked == []


def test_an_edited_seeded_memory_survives_unseed(hub: FakeService, tree: Path, run: Run,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_VAR, "0x" + "11" * 32)
    assert run("seed", "farcaster", "--fid", str(FID), "--private-key-env", KEY_VAR, "--yes").exit_code == 0
    path = tree / f"farcaster-{FID}-profile.md"
    path.write_text(path.read_text() + "I also like cats.\n")
    result = run("unseed", "farcaster", "--json")
    assert json.loads(result.stdout) == {"lane": "farcaster", "removed": [f"farcaster-{FID}-addresses"],
                                         "kept": [f"farcaster-{FID}-profile"], "dry_run": False}


def test_no_consent_no_write(hub: FakeService, tree: Path, run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_VAR, "0x" + "11" * 32)
    before = tree_files(tree)
    result = run("seed", "farcaster", "--fid", str(FID), "--private-key-env", KEY_VAR)
    assert result.exit_code == 2 and tree_files(tree) == before


def test_the_hubs_documented_error_is_named(tree: Path, run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeService(lambda asked: Answer.json(fixture("farcaster/error-400.json"), 400)) as fake:
        monkeypatch.setenv("BUNDLEKIT_FARCASTER_HUB", fake.url)
        monkeypatch.setenv(KEY_VAR, "0x" + "11" * 32)
        result = run("seed", "farcaster", "--fid", str(FID), "--private-key-env", KEY_VAR, "--yes")
    assert result.exit_code == 1
    assert "bad_request.validation_failure: fid must be an integer" in result.stderr
