"""Issue 39's recipients journey, typed as a team types it: three people make keys (``key new``), one
builds a bundle for all three (``build --recipient`` x3), each opens it with their own identity
(``load --identity-file``, ``$BUNDLEKIT_IDENTITY``), one is removed and the bundle rebuilt
(``--recipients-file``), and the removed key can no longer open it (exit 3, nothing written) while the
others merge it (``merge --identity-file``); ``pin --recipient`` publishes one, opened back from the store; ``sync``
re-encrypts for the same readers; an SSH ed25519 key reads beside age keys; a publisher signs one.
Bad input on the way: a recipients file with a bad line (exit 2 naming it, no CAR written), an identity
that is not a recipient (exit 3 before any file), a key file that would be replaced (refused), and a
hostile publisher's envelope (10,000 stanzas, a stanza for an unlisted key, a duplicated stanza: exit 3,
nothing written)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from bundlekit.bundle.build import build_bundle
from bundlekit.cli import cli
from bundlekit.crypto.recipients import IdentityKey, RecipientsKey, read_identity_file
from bundlekit.flows.load import LoadRequest, load_tree
from tests.crypto.conftest import FixedRandom
from tests.crypto.test_recipients import forge, stanza

MEMORIES = {"deploy_days": "we ship on fridays", "tea_not_coffee": "the lead drinks tea"}


def bk(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """``bundlekit ARGS...``: exit code, stdout, stderr."""
    result = CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def ok(*args: str, env: dict[str, str] | None = None) -> str:
    code, out, err = bk(*args, env=env)
    assert code == 0, err
    return out


def bodies(tree: Path) -> dict[str, str]:
    return {p.stem: p.read_text() for p in sorted(tree.glob("*.md")) if p.name != "MEMORY.md"}


@pytest.fixture
def team(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A memory tree and three people's identities; returns name -> recipient."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BUNDLEKIT_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("BUNDLEKIT_IDENTITY", raising=False)
    ok("memory", "init", "-d", "tree")
    for key, body in MEMORIES.items():
        ok("memory", "-d", "tree", "write", key, "--name", key, "--description", f"about {key}",
           "--type", "project", "--body", body)
    return {who: ok("key", "new", "-o", f"{who}.key").strip() for who in ("ana", "bo", "cy")}


def test_three_readers_open_it_and_a_removed_one_cannot_after_a_rebuild(team: dict[str, str], tmp_path: Path) -> None:
    assert ok("key", "recipient", "ana.key").strip() == team["ana"]
    ok("build", "-d", "tree", "-o", "team.car", *[arg for r in team.values() for arg in ("--recipient", r)])
    expected = bodies(tmp_path / "tree")
    for who in team:
        ok("load", "team.car", "--identity-file", f"{who}.key", "-o", f"out-{who}")
        assert bodies(tmp_path / f"out-{who}") == expected

    (tmp_path / "readers.txt").write_text(f"# cy left the team\n{team['ana']}\n{team['bo']}\n")
    ok("memory", "-d", "tree", "write", "new_plan", "--name", "plan", "--description", "the plan",
       "--type", "project", "--body", "cy is not told")
    ok("build", "-d", "tree", "-o", "team2.car", "--recipients-file", "readers.txt")
    code, out, err = bk("load", "team2.car", "--identity-file", "cy.key", "-o", "out-cy2")
    assert code == 3 and "no identity given is a recipient" in err and out == ""
    assert not (tmp_path / "out-cy2").exists()
    ok("merge", "team2.car", "-d", "out-bo", "--identity-file", "bo.key")
    assert (tmp_path / "out-bo" / "new_plan.md").is_file()


def test_the_identity_variable_opens_a_bundle_without_an_option(team: dict[str, str], tmp_path: Path) -> None:
    ok("build", "-d", "tree", "-o", "team.car", "--recipient", team["bo"])
    identity = (tmp_path / "bo.key").read_text()
    ok("load", "team.car", "-o", "out", env={"BUNDLEKIT_IDENTITY": identity})
    assert bodies(tmp_path / "out") == bodies(tmp_path / "tree")
    code, _, err = bk("load", "team.car", "-o", "out2")
    assert code == 2 and "--identity-file" in err


def test_a_recipients_file_with_a_bad_line_is_exit_2_naming_it_and_writes_nothing(team: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "readers.txt").write_text(f"{team['ana']}\n\nage1-not-a-key\n")
    code, _, err = bk("build", "-d", "tree", "-o", "team.car", "--recipients-file", "readers.txt")
    assert code == 2 and "readers.txt line 3 is not an age recipient" in err
    assert not (tmp_path / "team.car").exists()


def test_a_secret_key_given_as_a_recipient_is_refused_and_not_echoed(team: dict[str, str], tmp_path: Path) -> None:
    secret = (tmp_path / "ana.key").read_text().splitlines()[-1]
    code, out, err = bk("build", "-d", "tree", "-o", "team.car", "--recipient", secret)
    assert code == 2 and "secret identity" in err and secret not in err + out


def test_an_identity_file_is_never_replaced(team: dict[str, str], tmp_path: Path) -> None:
    before = (tmp_path / "ana.key").read_bytes()
    code, _, err = bk("key", "new", "-o", "ana.key")
    assert code == 2 and "already exists" in err
    assert (tmp_path / "ana.key").read_bytes() == before


def test_an_identity_with_build_encrypt_says_to_give_recipients(team: dict[str, str]) -> None:
    code, _, err = bk("build", "-d", "tree", "-o", "team.car", "--encrypt", "--identity-file", "ana.key")
    assert code == 2 and "--recipient" in err


def test_pin_for_recipients_then_load_from_the_store(team: dict[str, str], tmp_path: Path) -> None:
    out = ok("pin", "-d", "tree", "--recipient", team["ana"], "--recipient", team["cy"], "--json")
    root = json.loads(out)["root"]
    ok("load", f"ipfs://{root}", "--identity-file", "cy.key", "-o", "out")
    assert bodies(tmp_path / "out") == bodies(tmp_path / "tree")
    code, _, _ = bk("load", f"ipfs://{root}", "--identity-file", "bo.key", "-o", "out-bo")
    assert code == 3


@pytest.mark.skipif(shutil.which("age") is None, reason="Debian's age is not installed (.ci/run installs it)")
def test_age_opens_the_envelope_in_the_built_bundle_with_the_same_identity(team: dict[str, str], tmp_path: Path) -> None:
    ok("build", "-d", "tree", "-o", "team.car", "--recipient", team["ana"])
    ok("unpack", "team.car", "-o", "raw")
    envelope = json.loads((tmp_path / "raw" / "manifest.json").read_text())["encryption"]["envelope"]
    done = subprocess.run(["age", "-d", "-i", "ana.key"], input=envelope.encode(), capture_output=True,
                          timeout=60, check=False)
    assert done.returncode == 0 and len(done.stdout) == 32


@pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="ssh-keygen is not installed")
def test_an_ssh_ed25519_key_is_a_reader_beside_age_keys(team: dict[str, str], tmp_path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "dee@example.org", "-f", "id_ed25519"],
                   check=True, timeout=60)
    (tmp_path / "readers.txt").write_text(f"{team['ana']}\n" + (tmp_path / "id_ed25519.pub").read_text())
    ok("build", "-d", "tree", "-o", "team.car", "--recipients-file", "readers.txt")
    ok("load", "team.car", "--identity-file", "id_ed25519", "-o", "out-dee")
    assert bodies(tmp_path / "out-dee") == bodies(tmp_path / "tree")
    code, _, err = bk("load", "team.car", "--identity-file", "bo.key", "-o", "out-bo")
    assert code == 3 and "encrypted for 2" in err


def test_a_bundle_signed_by_its_publisher_and_encrypted_for_readers(team: dict[str, str], tmp_path: Path) -> None:
    name = ok("name", "create", "--name-key", "publisher.pem").strip()
    assert name.startswith("k51")
    built = json.loads(ok("build", "-d", "tree", "-o", "team.car", "--sign-key", "publisher.pem",
                          "--recipient", team["bo"], "--json"))
    ok("load", "team.car", "--identity-file", "bo.key", "--publisher", built["signer"], "-o", "out")
    assert bodies(tmp_path / "out") == bodies(tmp_path / "tree")
    code, _, err = bk("build", "-d", "tree", "-o", "x.car", "--passphrase-env", "P", "--recipient", team["bo"])
    assert code == 2 and "--passphrase-env and --recipient cannot be combined" in err


def test_an_identity_file_others_can_read_draws_a_warning(team: dict[str, str], tmp_path: Path) -> None:
    ok("build", "-d", "tree", "-o", "team.car", "--recipient", team["ana"])
    (tmp_path / "ana.key").chmod(0o644)
    code, _, err = bk("load", "team.car", "--identity-file", "ana.key", "-o", "out")
    assert code == 0 and "can be read by other users" in err and "chmod 600" in err


def test_what_mcp_from_serves_is_the_bundle_opened_with_the_identity(team: dict[str, str], tmp_path: Path) -> None:
    """``mcp --from URI --identity-file F`` serves ``flows.load.load_tree`` of the bundle with that key."""
    ok("build", "-d", "tree", "-o", "team.car", "--recipient", team["cy"])
    loaded = load_tree(LoadRequest(uri=str(tmp_path / "team.car"),
                                   key=IdentityKey(read_identity_file(tmp_path / "cy.key"))))
    assert {r.key for r in loaded.memory.list()} == set(MEMORIES)
    assert [hit.key for hit in loaded.memory.recall("fridays")][:1] == ["deploy_days"]


def test_layers_of_recipients_bundles_open_with_the_identity(team: dict[str, str], tmp_path: Path) -> None:
    ok("build", "-d", "tree", "-o", "team.car", "--recipient", team["ana"])
    ok("load", "--layer", "account=team.car", "--identity-file", "ana.key", "-o", "effective")
    assert set(bodies(tmp_path / "effective")) == set(MEMORIES)


def test_sync_keeps_a_recipients_bundle_for_the_same_readers(team: dict[str, str], tmp_path: Path) -> None:
    """A writer publishes for ana and bo; its next ``sync --identity-file`` re-encrypts for the readers the
    bundle it merged lists, so bo, following with ``sync --name --identity-file``, gets the new memory."""
    name = ok("name", "create", "--name-key", "writer.pem").strip()
    ok("pin", "-d", "tree", "--recipient", team["ana"], "--recipient", team["bo"], "--name-key", "writer.pem")
    ok("memory", "init", "-d", "follower")
    ok("sync", "-d", "follower", "--name", name, "--identity-file", "bo.key")
    assert set(bodies(tmp_path / "follower")) == set(MEMORIES)
    ok("memory", "-d", "tree", "write", "new_plan", "--name", "plan", "--description", "the plan",
       "--type", "project", "--body", "after the first sync")
    ok("sync", "-d", "tree", "--name-key", "writer.pem", "--identity-file", "ana.key")
    ok("sync", "-d", "follower", "--name", name, "--identity-file", "bo.key")
    assert (tmp_path / "follower" / "new_plan.md").is_file()
    # cy, no reader, cannot follow: a tree of cy's own gets nothing (bo's tree is up to date with the name, so a
    # sync there loads nothing and decrypts nothing, whoever's key it is given)
    ok("memory", "init", "-d", "cy_tree")
    code, _, _ = bk("sync", "-d", "cy_tree", "--name", name, "--identity-file", "cy.key")
    assert code == 3
    assert set(bodies(tmp_path / "cy_tree")) == set()


class _ForgingPublisher(RecipientsKey):
    """A hostile publisher: a real bundle whose envelope is replaced by ``forge(ikm)`` (it knows ``ikm``)."""

    def __init__(self, recipients: list[str], forge: Callable[[bytes], str]) -> None:
        super().__init__(recipients)
        self._forge = forge

    def new_bundle_key(self, namespace: str, rng: Callable[[int], bytes] = os.urandom) -> tuple[Any, dict[str, Any]]:
        drawn = os.urandom(64 + 16 + 32 * len(self.recipients) + 16)
        key, params = super().new_bundle_key(namespace, FixedRandom(drawn))
        return key, dict(params, envelope=self._forge(drawn[32:64]))


@pytest.mark.parametrize(("stanzas", "why"), [
    ("ten thousand", "longer than"),
    ("unlisted", "does not list its recipient"),
    ("duplicated", "distinct recipient stanzas"),
])
def test_a_hostile_publisher_s_envelope_is_refused_at_load_exit_3_nothing_written(
    team: dict[str, str], tmp_path: Path, stanzas: str, why: str
) -> None:
    ana, cy = (read_identity_file(tmp_path / f"{who}.key")[0] for who in ("ana", "cy"))
    file_key = os.urandom(16)

    def forged(ikm: bytes) -> str:
        chosen = {"ten thousand": [stanza(file_key, cy)] * 10_000,
                  "unlisted": [stanza(file_key, ana), stanza(file_key, cy)],
                  "duplicated": [stanza(file_key, cy)] * 2}[stanzas]
        return forge(file_key, chosen, ikm)

    listed = [team["ana"], team["bo"]] if stanzas != "duplicated" else [team["cy"], team["bo"]]
    build_bundle(tmp_path / "tree", tmp_path / "evil.car", key=_ForgingPublisher(listed, forged))
    code, out, err = bk("load", "evil.car", "--identity-file", "cy.key", "-o", "out")
    assert code == 3 and why in err and out == ""
    assert not (tmp_path / "out").exists()
