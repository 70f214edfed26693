"""Issue 28's convergence simulation through one ``bundlekit serve`` on loopback, over the routing API.

Three agents with separate trees and separate record stores share one name key. For 20 rounds
each does random writes, forgets and notes, and at random moments some of them sync, several
at once (threads), some while another writer publishes under them. The name's records travel
only through the served Delegated Routing API (``GET``/``PUT /routing/v1/ipns/{name}``, its
compare-and-swap refusing a stale sequence: specs/sync.md, "Routing API use"): each agent's own
store never sees another's record. Bundles are pinned into the served store (the team's pinner)
and fetched from the served gateway, verified. After a final round all three trees are identical,
and every write is present or was superseded by a later write or forget of its key.
"""

from __future__ import annotations

import random
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from bundlekit.blockstore import BlockStore
from bundlekit.cli import cli
from bundlekit.crypto.signing import Ed25519Signer
from bundlekit.memory import Memory
from bundlekit.names.record import name_from_key
from bundlekit.names.resolve import resolve
from bundlekit.names.routing import RoutingEndpoint, parse_routing
from bundlekit.bundle.sources import Gateways
from bundlekit.syncer import SyncOptions, SyncReport, sync

from .conftest import HookedPinner

SIGNER = Ed25519Signer.from_seed(bytes([11]) * 32)
NAME = name_from_key(SIGNER.public)
ROUNDS = 20


class Clock:
    """One clock for every agent, a second per reading, safe across the syncing threads."""

    def __init__(self) -> None:
        self.now = datetime(2026, 4, 14, 12, 0, 0, tzinfo=UTC)
        self.lock = threading.Lock()

    def __call__(self) -> datetime:
        with self.lock:
            self.now += timedelta(seconds=1)
            return self.now


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[RoutingEndpoint, Path]]:
    """``bundlekit serve --store S --port 0``, the one meeting point, and its store S."""
    store = tmp_path / "served"
    proc = subprocess.Popen([sys.executable, "-m", "bundlekit", "serve", "--port", "0", "--store", str(store)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert line.startswith("serving on http://127.0.0.1:"), line
        yield parse_routing(line.split()[-1]), store
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        if proc.stderr is not None:
            proc.stderr.close()


@pytest.mark.slow  # 50-65 s of CPU: started first so it runs beside the rest
def test_three_agents_syncing_through_a_served_routing_api_converge_and_lose_no_write(
    served: tuple[RoutingEndpoint, Path], tmp_path: Path
) -> None:
    endpoint, served_store = served
    rng = random.Random(2028)
    clock = Clock()
    agents = [tmp_path / f"agent{i}" for i in range(3)]
    for tree in agents:
        Memory(tree, namespace="agent", clock=clock).init()
    records = {tree: BlockStore(tmp_path / f"records-{tree.name}") for tree in agents}

    def synced(tree: Path, before: Callable[[], object] | None = None) -> SyncReport:
        return sync(tree, name_key=SIGNER, pinners=[HookedPinner(before, served_store)],
                    source=Gateways([endpoint.base], store=records[tree]),
                    options=SyncOptions(routing=(endpoint,), max_attempts=10))

    history: list[tuple[str, str | None]] = []  # (key, body, or None for a forget), in order
    history_lock = threading.Lock()
    lost = {"rounds": 0, "refused at the endpoint": 0, "conflicts": 0}

    def tally(report: SyncReport) -> None:
        lost["rounds"] += report.attempts - 1
        lost["refused at the endpoint"] += sum("routing/v1 refused" in note for note in report.notes)
        lost["conflicts"] += len(report.merge.report.conflicts) if report.merge is not None else 0

    for _round in range(ROUNDS):
        for tree in agents:
            mem = Memory(tree, clock=clock)
            for _ in range(rng.randint(0, 2)):
                key = f"project_{rng.choice('abcdef')}"
                if rng.random() < 0.2 and mem.read(key) is not None:
                    mem.forget(key)
                    with history_lock:
                        history.append((key, None))
                else:
                    body = f"{tree.name} wrote {key} #{len(history)}"
                    mem.write(key, name=key, description=f"about {key}", type="project", body=body)
                    with history_lock:
                        history.append((key, body))
            if rng.random() < 0.3:
                mem.note("observed", n=len(history))
        moment = rng.random()
        if moment < 0.4:  # some agents sync at once
            together = rng.sample(agents, k=rng.randint(2, 3))
            with ThreadPoolExecutor(len(together)) as pool:
                for report in pool.map(synced, together):
                    tally(report)
        elif moment < 0.7:  # one syncs while another publishes under it
            first, second = rng.sample(agents, k=2)

            def under(other: Path = second) -> None:
                tally(synced(other))

            tally(synced(first, before=under))
        elif moment < 0.9:
            tally(synced(rng.choice(agents)))
    for _final in range(2):
        for tree in agents:
            tally(synced(tree))

    assert lost["rounds"] > 0 and lost["conflicts"] > 0  # the seed makes races and conflicts happen
    files = [{p.name: p.read_bytes() for p in sorted(t.glob("*.md")) if p.name != "MEMORY.md"} for t in agents]
    days = [_days(t) for t in agents]
    assert files[0] and all(f == files[0] for f in files[1:]) and all(d == days[0] for d in days[1:])
    held = {r.body for r in Memory(agents[0]).list()}
    for order, (written, text) in enumerate(history):
        superseded = any(later == written for later, _b in history[order + 1:])
        assert text is None or text in held or superseded, (written, text)
    # The name lives at the endpoint; no agent's store learnt it but through the routing API.
    at_endpoint = resolve(NAME, store=BlockStore(tmp_path / "fresh"), routing=[endpoint])
    assert at_endpoint.sources == [endpoint.label]
    assert all(records[t].get_record(NAME) == BlockStore(served_store).get_record(NAME) for t in agents)


def test_the_sync_command_meets_through_routing_endpoints(served: tuple[RoutingEndpoint, Path], tmp_path: Path) -> None:
    endpoint, served_store = served
    key_file = tmp_path / "name.pem"
    SIGNER.write(key_file)
    writer, follower = tmp_path / "writer", tmp_path / "follower"
    Memory(writer, namespace="agent").init()
    Memory(writer).write("project_a", name="a", description="about a", type="project", body="A.")
    Memory(follower, namespace="agent").init()
    # The writer pins into the served store (its home); the follower has a store of its own.
    wrote = CliRunner().invoke(cli, ["sync", str(writer), "--name-key", str(key_file), "--routing", endpoint.base],
                               env={"BUNDLEKIT_HOME": str(served_store)})
    assert wrote.exit_code == 0, wrote.stderr
    followed = CliRunner().invoke(cli, ["sync", str(follower), "--name", NAME, "--gateway", endpoint.base],
                                  env={"BUNDLEKIT_HOME": str(tmp_path / "own"), "BUNDLEKIT_ROUTING": endpoint.base})
    assert followed.exit_code == 0, followed.stderr
    assert followed.stdout.strip() == wrote.stdout.strip()
    assert [r.body for r in Memory(follower).list()] == ["A."]


def test_mcp_sync_with_an_unusable_routing_endpoint_is_a_usage_error_before_serving(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    tree = tmp_path / "memory"
    Memory(tree, namespace="agent").init()
    SIGNER.write(tmp_path / "name.pem")
    result = CliRunner().invoke(cli, ["mcp", "--memory", str(tree), "--sync-name-key", str(tmp_path / "name.pem")],
                                env={"BUNDLEKIT_ROUTING": "ftp://team-host"})
    assert result.exit_code == 2 and "routing endpoint" in result.stderr


def _days(tree: Path) -> dict[str, bytes]:
    with Memory(tree).transaction(lock=False) as tx:
        return tx.days()
