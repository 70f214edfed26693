"""Issue 34 (item 2): a team syncs through one ``bundlekit serve`` hub with a token, and nothing else running.

Two writers on different "machines" (each its own ``BUNDLEKIT_HOME``, ``HOME`` and XDG directories, the
default pinner set aside for ``--pinner kubo``) and a follower on a new, empty folder, every sync, name and
listing typed as a user would (each line through the CLI in the test process, ``typed.in_process``: what is
checked is what each command sends, keeps and reports, not a fresh process's start-up).
The hub is one ``bundlekit serve`` subprocess with ``$BUNDLEKIT_SERVE_TOKEN``; the writers push with the ``kubo`` pinner (``BUNDLEKIT_KUBO_URL`` = the hub,
``BUNDLEKIT_KUBO_TOKEN``) and send ``$BUNDLEKIT_ROUTING_TOKEN`` with their routing PUTs.

The same commands then run against a kubo node instead of the hub: a loopback fake answering kubo's
RPC API as kubo documents it (``tests/journeys/kubo_node.py``: ipfs/kubo ``core/commands/dag/import.go``,
``core/commands/pin/pin.go``, ``core/corehttp/commands.go`` ``withAuthSecrets``), with its gateway port
serving the trustless gateway and the routing API (kubo's ``Gateway.ExposeRoutingAPI``).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.journeys.kubo_node import kubo_node
from tests.journeys.typed import in_process, set_up

TOKEN = "team-token-7d41c0a9e2b35f68"


class Person:
    """One user on their own machine: their home, XDG directories and block store, and the CLI they type."""

    def __init__(self, root: Path, env: dict[str, str]) -> None:
        self.root = root
        root.mkdir(parents=True)
        home = root / "home"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("BUNDLEKIT_", "XDG_"))}
        self.env.update({
            "HOME": str(home),
            "XDG_DATA_HOME": str(home / ".local/share"),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_CACHE_HOME": str(home / ".cache"),
            "BUNDLEKIT_HOME": str(root / "bundlekit"),
            "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
            **env,
        })

    def run(self, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
        """One line through the CLI in the test process, on this machine (``typed.in_process``)."""
        done = in_process(args, cwd=self.root, env=self.env)
        if ok:
            assert done.returncode == 0, f"bundlekit {' '.join(args)}: exit {done.returncode}\n{done.stderr}"
        return done

    def prepare(self, *args: str) -> None:
        """A set-up line, not what the test checks: the same CLI, its exit code asserted."""
        set_up(shlex.join(["bundlekit", *args]), cwd=self.root, env=self.env)

    def write(self, tree: str, key: str, body: str) -> None:
        """A memory written, as set-up (:meth:`prepare`): what the journey checks is that the syncs carry it."""
        self.prepare("memory", "-d", tree, "write", key, "--type", "project", "--name", key,
                     "--description", f"about {key}", "--body", body)


@contextmanager
def running_hub(machine: Path, env: dict[str, str]) -> Iterator[tuple[str, Path]]:
    """``bundlekit serve --port 0`` on a machine of its own with ``env``: its URL and its store."""
    person = Person(machine, env)
    proc = subprocess.Popen([sys.executable, "-m", "bundlekit", "serve", "--port", "0"], env=person.env,
                            cwd=person.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), url
        yield url, Path(person.env["BUNDLEKIT_HOME"])
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=30)
        assert TOKEN not in out + err


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[str]:
    """The team's hub: ``serve`` with the team's token; yields its URL."""
    with running_hub(tmp_path / "hub-machine", {"BUNDLEKIT_SERVE_TOKEN": TOKEN}) as (url, _store):
        yield url


def lone_writer_sync(person: Person, url: str) -> subprocess.CompletedProcess[str]:
    """A writer's first steps on a machine of their own: a key, a tree, a memory (set up), a sync through ``url``
    (typed)."""
    person.prepare("name", "create", "--key-file", "team.pem")
    person.prepare("memory", "-d", "memory", "init")
    person.prepare("memory", "-d", "memory", "write", "project_gamma", "--type", "project", "--name", "project_gamma",
                   "--description", "about project_gamma", "--body", f"{person.root.name} was here.")
    return person.run("sync", "memory", "--name-key", "team.pem", "--pinner", "kubo", "--routing", url,
                      "--gateway", url, ok=False)


def team(tmp_path: Path, pusher: dict[str, str], routing: str, gateway: str) -> tuple[Person, Person, Person]:
    """Two writers sharing the team's name key and a follower, each on a machine of their own."""
    writers = tuple(Person(tmp_path / who, {**pusher, "BUNDLEKIT_ROUTING_TOKEN": TOKEN}) for who in ("ada", "bo"))
    follower = Person(tmp_path / "cy", {})
    key = writers[0].root / "team.pem"
    writers[0].prepare("name", "create", "--key-file", str(key))  # the team's key, set up
    (writers[1].root / "team.pem").write_bytes(key.read_bytes())
    return writers[0], writers[1], follower


def journey(ada: Person, bo: Person, cy: Person, routing: str, gateway: str) -> None:
    """Ada writes and syncs, Bo writes and syncs (merging Ada's), Ada syncs again, Cy follows on an empty folder."""
    writer_sync = ("sync", "memory", "--name-key", "team.pem", "--pinner", "kubo", "--routing", routing,
                   "--gateway", gateway)
    ada.prepare("memory", "-d", "memory", "init")
    ada.write("memory", "project_alpha", "Ada: alpha ships on Friday.")
    ada.run(*writer_sync)
    bo.prepare("memory", "-d", "memory", "init")
    bo.write("memory", "project_beta", "Bo: beta needs a review.")
    bo.run(*writer_sync)
    ada.run(*writer_sync)
    name = ada.run("name", "create", "--key-file", "team.pem").stdout.strip()
    (cy.root / "team-memory").mkdir()
    cy.run("sync", "team-memory", "--name", name, "--routing", routing, "--gateway", gateway)
    for person, tree in ((ada, "memory"), (bo, "memory"), (cy, "team-memory")):
        keys = person.run("memory", "-d", tree, "list").stdout
        assert "project_alpha" in keys and "project_beta" in keys, (person.root.name, keys)


def test_two_writers_and_a_follower_sync_through_one_serve_hub_with_a_token(hub: str, tmp_path: Path) -> None:
    pusher = {"BUNDLEKIT_KUBO_URL": hub, "BUNDLEKIT_KUBO_TOKEN": TOKEN}
    ada, bo, cy = team(tmp_path, pusher, hub, hub)
    journey(ada, bo, cy, hub, hub)


def test_the_same_commands_sync_through_a_kubo_node(tmp_path: Path) -> None:
    with kubo_node(tmp_path / "kubo", TOKEN) as node:
        pusher = {"BUNDLEKIT_KUBO_URL": node.rpc, "BUNDLEKIT_KUBO_TOKEN": TOKEN}
        ada, bo, cy = team(tmp_path, pusher, node.gateway, node.gateway)
        journey(ada, bo, cy, node.gateway, node.gateway)


def test_a_writer_with_a_wrong_token_is_refused_with_exit_4_and_the_hub_keeps_nothing(tmp_path: Path) -> None:
    wrong = "not-the-team-token-0000"
    with running_hub(tmp_path / "hub-machine", {"BUNDLEKIT_SERVE_TOKEN": TOKEN}) as (url, store):
        mallory = Person(tmp_path / "mallory", {"BUNDLEKIT_KUBO_URL": url, "BUNDLEKIT_KUBO_TOKEN": wrong,
                                               "BUNDLEKIT_ROUTING_TOKEN": wrong})
        done = lone_writer_sync(mallory, url)
    assert done.returncode == 4, done.stderr
    assert "dag/import answered HTTP 403: the credentials were refused" in done.stderr
    assert wrong not in done.stderr + done.stdout and "Traceback" not in done.stderr
    assert not (store / "pins.json").exists() and not (store / "ipns").exists()
    assert not [f for f in (store / "blocks").rglob("*") if f.is_file()]


def test_a_hub_without_a_token_has_no_push_api_and_a_writer_is_told(tmp_path: Path) -> None:
    with running_hub(tmp_path / "hub-machine", {}) as (url, _store):
        ada = Person(tmp_path / "ada", {"BUNDLEKIT_KUBO_URL": url, "BUNDLEKIT_KUBO_TOKEN": TOKEN})
        done = lone_writer_sync(ada, url)
    assert done.returncode == 4, done.stderr
    assert "dag/import answered HTTP 405" in done.stderr, done.stderr
