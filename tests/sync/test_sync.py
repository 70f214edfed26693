"""`bundlekit sync`: writers and followers meeting at one IPNS name, through the local store and the local pinner."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import bundlekit.bundle.lineage
import bundlekit.bundle.load
from bundlekit.blockstore import BlockStore
from bundlekit.bundle.lineage import read_last, read_parents
from bundlekit.bundle.load import load_bundle
from bundlekit.bundle.sources import Gateways
from bundlekit.cli import cli
from bundlekit.crypto.signing import Ed25519Signer
from bundlekit.errors import BundlekitError, LoadError, NameMovedError, PinError, UsageError
from bundlekit.gateway.server import serve_in_thread
from bundlekit.ipld.cid import cid_from_text, cid_to_str
from bundlekit.ipld.walk import walk_dag
from bundlekit.memory import Memory
from bundlekit.names.publish import publish
from bundlekit.names.record import name_from_key
from bundlekit.names.resolve import resolve
from bundlekit.syncer import SyncOptions, SyncReport, sync, sync_forever

from .conftest import CountingStore, HookedPinner

SIGNER = Ed25519Signer.from_seed(bytes([9]) * 32)
NAME = name_from_key(SIGNER.public)


class Clock:
    """One clock for every agent, a second per reading: later writes really are later."""

    def __init__(self) -> None:
        self.now = datetime(2026, 4, 14, 12, 0, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


def _tree(path: Path, clock: Clock, **memories: str) -> Path:
    mem = Memory(path, namespace="agent", clock=clock)
    mem.init()
    for key, body in memories.items():
        mem.write(key, name=key, description=f"about {key}", type="project", body=body)
    return path


def _write(path: Path, clock: Clock, key: str, body: str) -> None:
    Memory(path, clock=clock).write(key, name=key, description=f"about {key}", type="project", body=body)


def _writer(path: Path, **options: Any) -> SyncReport:
    return sync(path, name_key=SIGNER, pinners=[HookedPinner(options.pop("before", None))], **options)


def _bodies(path: Path) -> dict[str, str]:
    return {r.key: r.body for r in Memory(path).list()}


def _contents(path: Path) -> tuple[dict[str, bytes], dict[str, bytes]]:
    files = {p.name: p.read_bytes() for p in sorted(path.glob("*.md")) if p.name != "MEMORY.md"}
    with Memory(path).transaction(lock=False) as tx:
        return files, tx.days()


def test_a_first_writer_publishes_sequence_0_and_remembers_the_root(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "a", Clock(), project_a="A's plan.")
    report = _writer(tree)
    assert report.published is not None and report.published.sequence == 0 and report.remote is None
    assert report.root is not None and read_parents(tree) == [report.root] and read_last(tree) == report.root
    assert cid_to_str(resolve(NAME).cid) == report.root


def test_a_writer_with_nothing_new_publishes_nothing(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "a", Clock(), project_a="A's plan.")
    first = _writer(tree)
    again = _writer(tree)
    assert again.up_to_date and again.published is None and again.root == first.root
    assert again.merge is None and any("already descends" in note for note in again.notes)  # nothing loaded
    assert resolve(NAME).record.sequence == 0


def test_a_follower_merges_the_name_and_publishes_nothing(tmp_path: Path) -> None:
    clock = Clock()
    writer = _tree(tmp_path / "a", clock, project_a="A's plan.")
    _writer(writer)
    follower = _tree(tmp_path / "f", clock, project_f="F's own.")
    report = sync(follower, name=NAME)
    assert report.role == "follower" and report.published is None and report.pins is None
    assert _bodies(follower) == {"project_a": "A's plan.", "project_f": "F's own."}
    assert resolve(NAME).record.sequence == 0


def test_a_follower_whose_tree_descends_from_the_name_loads_nothing_and_keeps_its_own_changes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock()
    _writer(_tree(tmp_path / "a", clock, project_a="A's plan."))
    follower = _tree(tmp_path / "f", clock)
    sync(follower, name=NAME)
    (follower / "project_a.md").unlink()  # a change of the follower's own since: merging an ancestor keeps it
    loads: list[str] = []
    monkeypatch.setattr(bundlekit.bundle.load, "load_bundle", lambda uri, **_kw: loads.append(uri))
    monkeypatch.setattr(bundlekit.bundle.load, "bundle_blocks", lambda uri, **_kw: loads.append(uri))
    again = sync(follower, name=NAME)
    assert again.merge is None and any("already descends" in note for note in again.notes) and loads == []
    assert _bodies(follower) == {}


def test_a_follower_of_a_name_without_record_fails_with_load_error(tmp_path: Path) -> None:
    with pytest.raises(LoadError):
        sync(_tree(tmp_path / "f", Clock()), name=NAME)


def test_a_second_writer_merges_then_publishes_one_above_with_both_roots_as_parents(tmp_path: Path) -> None:
    clock = Clock()
    a, b = _tree(tmp_path / "a", clock, project_a="A."), _tree(tmp_path / "b", clock, project_b="B.")
    first = _writer(a)
    report = _writer(b)  # b was never built: its only parent is the root it merged
    assert report.remote == first.root and report.published is not None and report.published.sequence == 1
    assert report.root is not None
    assert load_bundle(f"ipfs://{report.root}").manifest["parents"] == [first.root]
    _writer(a)
    assert _contents(a) == _contents(b)


def test_a_writer_syncing_with_its_own_name_key_applies_deletions_past_the_bound_and_names_them_first(
        tmp_path: Path) -> None:
    clock = Clock()
    a = _tree(tmp_path / "a", clock, p1="1.", p2="2.", p3="3.", p4="4.")
    _writer(a)
    b = tmp_path / "b"
    _writer(_tree(b, clock))  # b follows the name: it holds p1..p4 now
    for key in ("p1", "p2", "p3"):
        Memory(a, clock=clock).forget(key)
    _writer(a)
    report = _writer(b)
    assert report.merge is not None and _bodies(b) == {"p4": "4."}
    assert [e.action for e in report.merge.report.entries[:3]] == ["deleted"] * 3


def test_parents_are_the_remote_root_and_the_trees_last_root(tmp_path: Path) -> None:
    clock = Clock()
    a, b = _tree(tmp_path / "a", clock, project_a="A."), _tree(tmp_path / "b", clock, project_b="B.")
    first = _writer(a)
    _writer(b)  # b: parents [first]; its last root is now its own publish
    _write(a, clock, "project_a", "A, second.")
    b_root = _writer(b).root  # nothing new in b: up to date
    second = _writer(a)
    assert second.root is not None and second.remote == b_root
    assert load_bundle(f"ipfs://{second.root}").manifest["parents"] == sorted({str(b_root), str(first.root)})


def _two_writers_with_changes(tmp_path: Path) -> tuple[Path, Path]:
    """a published, b following it, then each with a change of its own."""
    clock = Clock()
    a, b = _tree(tmp_path / "a", clock, shared="v1"), _tree(tmp_path / "b", clock)
    _writer(a)
    sync(b, name=NAME)
    _write(a, clock, "project_a", "A's change.")
    _write(b, clock, "project_b", "B's change.")
    return a, b


def test_a_writer_the_name_moved_under_starts_again_and_keeps_both_writers_memories(tmp_path: Path) -> None:
    a, b = _two_writers_with_changes(tmp_path)
    report = _writer(a, before=lambda: _writer(b))  # b publishes while a is pinning
    assert report.attempts == 2 and any("moved" in note for note in report.notes)
    assert report.published is not None and report.published.sequence == 2
    landed = load_bundle(f"ipfs://{report.root}").files
    assert {"project_a.md", "project_b.md", "shared.md"} <= set(landed)


def test_a_writer_out_of_attempts_raises_name_moved_and_the_name_keeps_the_other_writer(tmp_path: Path) -> None:
    a, b = _two_writers_with_changes(tmp_path)
    with pytest.raises(NameMovedError, match="gave up after 1 rounds"):
        _writer(a, before=lambda: _writer(b), options=SyncOptions(max_attempts=1))
    b_root = resolve(NAME).cid
    assert "project_b.md" in load_bundle(f"ipfs://{cid_to_str(b_root)}").files


def test_publish_following_a_sequence_refuses_when_the_store_holds_a_later_one(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "a", Clock(), project_a="A.")
    root = _writer(tree).root
    assert root is not None
    with pytest.raises(NameMovedError, match="moved"):
        publish(SIGNER, load_bundle(f"ipfs://{root}").root_bytes or b"", follows=-1)
    assert publish(SIGNER, load_bundle(f"ipfs://{root}").root_bytes or b"", follows=0).sequence == 1


def test_sync_needs_exactly_one_of_name_key_and_name(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "a", Clock())
    for options in ({}, {"name": NAME, "name_key": SIGNER}):
        with pytest.raises(UsageError, match="not both or neither"):
            sync(tree, **options)  # type: ignore[arg-type]


def test_two_writers_whose_days_hold_the_same_lines_in_other_bytes_converge(tmp_path: Path) -> None:
    clock = Clock()
    a, b = _tree(tmp_path / "a", clock, project_a="A."), _tree(tmp_path / "b", clock, project_b="B.")
    note = b'{"ts":"2026-04-14T12:00:00.000Z","type":"note","text":"the same, twice"}\n'
    (a / "timeline" / "2026-04-14.jsonl").write_bytes(note + note)  # two notes within one millisecond
    for tree in (a, b):
        _writer(tree)
    assert [_writer(tree).up_to_date for tree in (a, b)] == [True, True]  # not publishing its own form again
    assert _contents(a) == _contents(b)


def test_a_writer_given_a_gateway_reads_what_its_store_holds_from_the_store(tmp_path: Path) -> None:
    clock = Clock()
    a, b = _tree(tmp_path / "a", clock, project_a="A."), _tree(tmp_path / "b", clock, project_b="B.")
    _writer(a)
    down = ["http://127.0.0.1:9"]  # nothing answers there: every block must come from the store
    merged = _writer(b, source=Gateways(down))
    assert merged.merge is not None and merged.published is not None
    assert _writer(a, source=Gateways(down)).up_to_date and _writer(b, source=Gateways(down)).up_to_date
    assert _contents(a) == _contents(b)


@pytest.mark.slow  # many subprocess-free rounds of three trees: started first so it runs beside the rest
def test_three_agents_syncing_at_random_moments_converge_and_lose_no_acknowledged_write(tmp_path: Path) -> None:
    rng = random.Random(28)
    clock = Clock()
    agents = [_tree(tmp_path / f"agent{i}", clock) for i in range(3)]
    history: list[tuple[int, str, str | None]] = []  # (order, key, body or None for a forget)
    stats = {"rounds lost": 0, "conflicts": 0}
    for _round in range(12):
        for agent in agents:
            for _ in range(rng.randint(0, 2)):
                key = f"project_{rng.choice('abcdef')}"
                mem = Memory(agent, clock=clock)
                if rng.random() < 0.2 and mem.read(key) is not None:
                    mem.forget(key)
                    history.append((len(history), key, None))
                else:
                    body = f"{agent.name} wrote {key} #{len(history)}"
                    _write(agent, clock, key, body)
                    history.append((len(history), key, body))
            if rng.random() < 0.3:
                mem = Memory(agent, clock=clock)
                mem.note("observed", n=len(history))
        order = rng.sample(agents, k=rng.randint(1, 3))
        for i, agent in enumerate(order):
            other = order[(i + 1) % len(order)] if len(order) > 1 and rng.random() < 0.4 else None
            report = _writer(agent, before=(lambda o=other: _writer(o)) if other is not None and other != agent else None)
            stats["rounds lost"] += report.attempts - 1
            stats["conflicts"] += len(report.merge.report.conflicts) if report.merge is not None else 0
    for _final in range(2):
        for agent in agents:
            _writer(agent)
    assert stats["rounds lost"] > 0 and stats["conflicts"] > 0  # the seed makes races and conflicts happen
    first = _contents(agents[0])
    assert all(_contents(agent) == first for agent in agents[1:])
    held = {r.body for r in Memory(agents[0]).list()}
    for order, key, body in history:
        if body is None:
            continue
        superseded = any(later > order and k == key for later, k, _b in history)
        assert body in held or superseded, (key, body)


def test_the_interval_loop_reports_a_failed_round_and_goes_on(tmp_path: Path) -> None:
    calls: list[str] = []

    def run() -> SyncReport:
        calls.append("run")
        if len(calls) == 1:
            raise LoadError("gateway down")
        return SyncReport(NAME, "follower")

    errors: list[BundlekitError] = []
    reports: list[SyncReport] = []
    sync_forever(run, 5.0, on_report=reports.append, on_error=errors.append, sleep=lambda s: calls.append("sleep"),
                 rounds=3)
    assert calls == ["run", "sleep", "run", "sleep", "run"] and len(errors) == 1 and len(reports) == 2


def _cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_the_sync_command_writes_as_writer_and_merges_as_follower(tmp_path: Path) -> None:
    clock = Clock()
    key_file = tmp_path / "name.pem"
    SIGNER.write(key_file)
    a, f = _tree(tmp_path / "a", clock, project_a="A."), _tree(tmp_path / "f", clock)
    code, out, err = _cli("sync", str(a), "--name-key", str(key_file), "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["role"] == "writer" and doc["published"]["sequence"] == 0 and doc["pins"][0]["status"] == "pinned"
    code, out, err = _cli("sync", str(f), "--name", NAME)
    assert code == 0, err
    assert out.strip() == doc["root"] and _bodies(f) == {"project_a": "A."}
    assert "loaded 1 memory files and 0 day files" in err and "a first follow" in err


def test_the_sync_command_with_neither_role_is_a_usage_error(tmp_path: Path) -> None:
    code, _out, err = _cli("sync", str(_tree(tmp_path / "a", Clock())))
    assert code == 2 and "--name-key" in err


def test_the_interval_loop_ends_on_a_usage_error(tmp_path: Path) -> None:
    def run() -> SyncReport:
        raise UsageError("no such tree")

    with pytest.raises(UsageError):
        sync_forever(run, 5.0, on_report=lambda r: None, on_error=lambda e: None, sleep=lambda s: None, rounds=3)


def _dag(root: str) -> set[bytes]:
    store = BlockStore()
    return {cid for cid, _data in walk_dag(cid_from_text(root), store.get)}


def test_a_follower_through_a_gateway_fetches_only_the_blocks_a_change_added(tmp_path: Path) -> None:
    clock = Clock()
    writer = _tree(tmp_path / "a", clock, **{f"project_{i:02d}": f"Plan {i}." for i in range(30)})
    first = _writer(writer).root
    served = CountingStore(tmp_path / "home")  # the writer's store (BUNDLEKIT_HOME), served on loopback
    follower = _tree(tmp_path / "f", clock)
    with serve_in_thread(served) as server:
        source = Gateways([server.url], store=BlockStore(tmp_path / "follower-home"))
        sync(follower, name=NAME, source=source)
        assert set(served.served) == _dag(first or "")  # a first follow: every block, once kept
        _write(writer, clock, "project_07", "Plan 7, changed.")
        second = _writer(writer).root
        served.served.clear()
        sync(follower, name=NAME, source=source)
    added = _dag(second or "") - _dag(first or "")
    assert set(served.served) == added and len(served.served) == len(added)
    assert len(added) < len(_dag(second or "")) // 4
    assert _bodies(follower) == _bodies(writer)


def test_a_writers_round_writes_its_last_root_once_and_only_once_published(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The build of a round leaves the tree's last root as it was (no write of the new root and a second undoing
    it): a round whose pin fails keeps the last published root, one that publishes writes the new one once."""
    clock = Clock()
    tree = _tree(tmp_path / "a", clock, project_a="A's plan.")
    first = _writer(tree)
    written: list[bytes] = []
    real = bundlekit.bundle.lineage.record_last

    def counted(where: Any, root: bytes) -> None:
        written.append(root)
        real(where, root)

    monkeypatch.setattr(bundlekit.bundle.lineage, "record_last", counted)
    _write(tree, clock, "project_b", "B's plan.")

    def refuse() -> None:
        raise OSError("the pinning service is down")

    with pytest.raises(PinError):
        _writer(tree, before=refuse)
    assert written == [] and read_last(tree) == first.root
    again = _writer(tree)
    assert again.root is not None and again.root != first.root
    assert [cid_to_str(root) for root in written] == [again.root] and read_last(tree) == again.root
