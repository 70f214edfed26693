"""Journey: a new agent is seeded from the accounts its person already has, then some of it taken back (issue 40).

Typed as a person types them, in a temporary home (each line through the CLI in the test process; the
confirmation at a terminal in a fresh process on a pseudo-terminal): ``memory init``; ``memory seed github``
shows what it would write and, with no terminal to ask on, writes nothing (exit 2); ``--yes`` writes it;
``list``, ``recall`` and ``show`` find it; the person rewrites one memory; ``unseed github`` deletes the rest
and names the edited one; ``--force`` deletes that too, and the tree is as it was. Farcaster: the message
printed, signed by the person's wallet outside bundlekit, given back; a stranger's signature refused (exit 3).
X: the profile, and the recent posts only when asked. At a terminal the confirmation asks, and a "y" writes.
The services are loopback fakes answering with their documented examples (tests/seed/fakes.py).
"""

from __future__ import annotations

import importlib.util
import json
import os
import pty
import select
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import Result

from bundlekit.crypto.signing import EthSigner
from tests.journeys.typed import set_up
from tests.seed.fakes import FakeService, github_app, hub_app, x_app
from tests.seeding import register_builtin_seeders, tree_files

if importlib.util.find_spec("eth_account") is None:  # found, not imported: py_ecc would raise the recursion limit
    pytest.skip("needs the wallet extra (eth-account)", allow_module_level=True)
GITHUB_TOKEN = "test-token-Zq81vX0pLm4nB7cR2wY"
X_TOKEN = "AAAAAAAAAAAAAAAAAAAAAjourneybearer0123456789"


class Shell:
    """A temporary home and working folder, the tree in ``$BUNDLEKIT_MEMORY_DIR``; ``run`` types one line."""

    def __init__(self, tmp: Path, extra: dict[str, str]) -> None:
        self.work = tmp / "work"
        self.work.mkdir()
        self.tree = tmp / "agent"
        keep = ("PATH", "PYTHONPATH", "LANG", "LC_ALL")
        self.env = {k: v for k, v in os.environ.items() if k in keep}
        self.env.update(HOME=str(tmp / "home"), BUNDLEKIT_HOME=str(tmp / "store"),
                        BUNDLEKIT_MEMORY_DIR=str(self.tree), **extra)

    def run(self, line: str, code: int = 0) -> Result:
        """Through the CLI in this process: what is checked is what each command asks, writes and prints."""
        return set_up(line, cwd=self.work, env=self.env, code=code)


@pytest.fixture
def services(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, FakeService]]:
    register_builtin_seeders(tmp_path, monkeypatch)
    wallet = EthSigner("0x" + "33" * 32)
    with FakeService(github_app(GITHUB_TOKEN)) as github, FakeService(hub_app(6833, [wallet.identity])) as hub, \
            FakeService(x_app(X_TOKEN)) as x:
        yield {"github": github, "hub": hub, "x": x}


@pytest.fixture
def shell(tmp_path: Path, services: dict[str, FakeService]) -> Shell:
    sh = Shell(tmp_path, {"GITHUB_TOKEN": GITHUB_TOKEN, "GITHUB_API_URL": services["github"].url,
                          "BUNDLEKIT_FARCASTER_HUB": services["hub"].url, "X_BEARER_TOKEN": X_TOKEN,
                          "BUNDLEKIT_X_API_URL": services["x"].url})
    set_up("bundlekit memory init", cwd=sh.work, env=sh.env)  # the set-up, in this process
    return sh


def test_a_person_seeds_from_github_rewrites_one_memory_and_unseeds_the_rest(shell: Shell) -> None:
    empty = tree_files(shell.tree)
    shown = shell.run("bundlekit memory seed github", code=2)
    assert "need your consent; add --yes" in shown.stderr and "github-octocat-profile" in shown.stdout
    assert tree_files(shell.tree) == empty
    shell.run("bundlekit memory seed github --yes")
    assert "github-octocat-repo-spoon-knife" in shell.run("bundlekit memory list").stdout
    hits = json.loads(shell.run("bundlekit memory recall 'San Francisco' --json").stdout)
    assert hits[0]["key"] == "github-octocat-profile"
    assert "seed: github:octocat" in shell.run("bundlekit memory show github-octocat-profile").stdout
    shell.run("bundlekit memory write github-octocat-languages --type user --name Languages "
              "--description 'what I write' --body 'Mostly Rust these days.'")
    kept = shell.run("bundlekit memory unseed github")
    assert "github-octocat-languages: edited since it was seeded; kept" in kept.stderr
    assert shell.run("bundlekit memory list").stdout.split("\t")[0] == "github-octocat-languages"
    shell.run("bundlekit memory unseed github --force")
    assert tree_files(shell.tree) == empty
    for line in ("seed github --json --dry-run", "list", "unseed github"):
        assert GITHUB_TOKEN not in shell.run(f"bundlekit memory {line}").stdout


def test_a_person_proves_their_fid_with_a_wallet_signature_and_a_stranger_cannot(shell: Shell) -> None:
    message = shell.run("bundlekit memory seed farcaster --fid 6833 --print-message").stdout
    (shell.work / "message.txt").write_text(message)
    (shell.work / "sig.txt").write_text("0x" + EthSigner("0x" + "44" * 32).sign(message.encode()).hex())
    refused = shell.run("bundlekit memory seed farcaster --fid 6833 --message-file message.txt "
                        "--signature-file sig.txt --yes", code=3)
    assert "not from any Ethereum address this fid has verified" in refused.stderr
    (shell.work / "sig.txt").write_text("0x" + EthSigner("0x" + "33" * 32).sign(message.encode()).hex())
    shell.run("bundlekit memory seed farcaster --fid 6833 --message-file message.txt --signature-file sig.txt --yes")
    assert "farcaster-6833-profile" in shell.run("bundlekit memory list").stdout
    shell.run("bundlekit memory unseed farcaster")
    assert shell.run("bundlekit memory list").stdout == ""


def test_a_person_seeds_from_x_with_and_without_their_posts(shell: Shell, services: dict[str, FakeService]) -> None:
    shell.run("bundlekit memory seed x --yes")
    assert [a.path for a in services["x"].asked] == ["/2/users/me"]
    shell.run("bundlekit memory seed x --posts 1 --yes")
    assert "x-twitterdev-recent-posts" in shell.run("bundlekit memory list").stdout
    removed = json.loads(shell.run("bundlekit memory unseed x --json").stdout)["removed"]
    assert removed == ["x-twitterdev-profile", "x-twitterdev-recent-posts"]


def _typed_at_a_terminal(shell: Shell, line: str, answer: bytes) -> tuple[int, bytes]:
    """Run ``line`` with stdin and stderr on a pseudo-terminal, answer the confirmation with ``answer``."""
    primary, secondary = pty.openpty()
    args = shlex.split(line)
    proc = subprocess.Popen([sys.executable, "-m", "bundlekit", *args[1:]], cwd=shell.work, env=shell.env,
                            stdin=secondary, stdout=subprocess.PIPE, stderr=secondary)
    os.close(secondary)
    seen = b""
    deadline = time.monotonic() + 60
    try:
        while b"[y/N]" not in seen and time.monotonic() < deadline:
            ready, _, _ = select.select([primary], [], [], 1)
            if ready:
                seen += os.read(primary, 4096)
        os.write(primary, answer)
        proc.wait(timeout=60)
    finally:
        os.close(primary)
        assert proc.stdout is not None
        proc.stdout.close()
    return proc.returncode, seen


def test_at_a_terminal_the_person_is_asked_and_a_no_writes_nothing(shell: Shell) -> None:
    empty = tree_files(shell.tree)
    code, prompt = _typed_at_a_terminal(shell, "bundlekit memory seed github", b"n\n")
    assert b"write these 4 memories from github:octocat?" in prompt
    assert code == 1 and tree_files(shell.tree) == empty
    code, _prompt = _typed_at_a_terminal(shell, "bundlekit memory seed github", b"y\n")
    assert code == 0
    assert len(shell.run("bundlekit memory list").stdout.splitlines()) == 4
