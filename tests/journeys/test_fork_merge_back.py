"""Issue 34's journey and issue 35's attacks, typed as a user (or an attacker) types them.

Fork an agent by importing its bundle, edit one memory, merge back: exactly the memories changed on one
side change, no conflict and no sibling where one side edited, every untouched file byte-identical, and the
base found wherever the fork came from (a CAR, the local store, a gateway: ``bundlekit serve``'s handler,
``gateway.server.serve_in_thread``), or a clear error saying how to give it. Then the attacks on a merge:
a future-dated ``forgot`` from a bundle sharing no ancestor, the same bundle replayed, an unsigned bundle
claiming the tree's last root as its parent, and a bundle forgetting most of the tree.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from bundlekit.blockstore import BlockStore
from bundlekit.bundle.build import BuildOptions, build_bundle
from bundlekit.bundle.fork import fork_bundle
from bundlekit.bundle.lineage import read_last
from bundlekit.bundle.merge import merge_bundle
from bundlekit.car.reader import read_car
from bundlekit.car.writer import CarWriter
from bundlekit.cli import cli
from bundlekit.errors import LoadError
from bundlekit.gateway.server import serve_in_thread
from bundlekit.ipld.cid import RAW, cid_from_text, make_cid
from bundlekit.memory.timeline import version_digest

KEYS = ("user_role", "feedback_tone", "project_plan", "reference_reel")


def bk(*args: str) -> tuple[int, str, str]:
    """``bundlekit ARGS...``: exit code, stdout, stderr."""
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def ok(*args: str) -> str:
    code, out, err = bk(*args)
    assert code == 0, err
    return out


def write(tree: Path, key: str, body: str, description: str = "about it") -> None:
    ok("memory", "-d", str(tree), "write", key, "--name", key.title(), "--description", description,
       "--type", "project", "--body", body)


def files(tree: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(tree.glob("*.md"))}


def machine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, name: str) -> None:
    """Work as another machine: its own block store."""
    monkeypatch.setenv("BUNDLEKIT_HOME", str(tmp_path / f"home-{name}"))


@pytest.fixture
def agent(tmp_path: Path) -> tuple[Path, Path, str]:
    """``m``: four memories, built into ``a.car`` (its last root)."""
    m = tmp_path / "m"
    ok("memory", "-d", str(m), "init")
    for key in KEYS:
        write(m, key, f"{key} as it was")
    car = tmp_path / "a.car"
    root = ok("build", str(m), "-o", str(car)).strip()
    return m, car, root


def fork_edit_build(source: str, tmp_path: Path, *extra: str) -> Path:
    """``fork SOURCE f --strategy merge``, change ``project_plan`` in f, ``build f -o f.car``."""
    f = tmp_path / "f"
    ok("fork", source, str(f), "--strategy", "merge", *extra)
    write(f, "project_plan", "the fork's new plan", "changed in the fork")
    car = tmp_path / "f.car"
    ok("build", str(f), "-o", str(car))
    return car


def assert_only_the_plan_changed(m: Path, before: dict[str, bytes], report: dict[str, object], base: str) -> None:
    assert report["base"] == base and report["conflicts"] == []
    assert report["counts"] == {"updated": 1}
    assert [(e["key"], e["action"], e["from"]) for e in report["entries"]] == [("project_plan", "updated", "theirs")]
    after = files(m)
    assert set(after) == set(before)  # no sibling
    assert {k: v for k, v in after.items() if k not in ("project_plan.md", "MEMORY.md")} == \
           {k: v for k, v in before.items() if k not in ("project_plan.md", "MEMORY.md")}
    assert b"the fork's new plan" in after["project_plan.md"] and b"source:" not in after["project_plan.md"]


def test_fork_a_car_edit_one_memory_and_merge_back_changes_only_that_memory(
        agent: tuple[Path, Path, str], tmp_path: Path) -> None:
    m, a_car, root = agent
    f_car = fork_edit_build(str(a_car), tmp_path)
    forked = tmp_path / "f"
    assert {k: v for k, v in files(forked).items() if k not in ("project_plan.md", "MEMORY.md")} == \
           {k: v for k, v in files(m).items() if k not in ("project_plan.md", "MEMORY.md")}  # no memory rewritten
    before = files(m)
    report = json.loads(ok("merge", str(f_car), "--into", str(m), "--json"))
    assert_only_the_plan_changed(m, before, report, root)


def test_both_sides_edit_different_memories_and_each_edit_is_taken_without_a_conflict(
        agent: tuple[Path, Path, str], tmp_path: Path) -> None:
    m, a_car, root = agent
    f_car = fork_edit_build(str(a_car), tmp_path)
    write(m, "user_role", "edited at home")
    mine = (m / "user_role.md").read_bytes()
    report = json.loads(ok("merge", str(f_car), "--into", str(m), "--json"))
    assert report["base"] == root and report["conflicts"] == [] and report["counts"] == {"updated": 1}
    assert (m / "user_role.md").read_bytes() == mine
    assert b"the fork's new plan" in (m / "project_plan.md").read_bytes()
    assert not list(m.glob("*.conflict-*"))


def test_a_fork_from_a_car_another_machine_made_says_how_to_give_the_base_then_merges(
        agent: tuple[Path, Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    m, a_car, root = agent
    machine(monkeypatch, tmp_path, "laptop")
    f_car = fork_edit_build(str(a_car), tmp_path)
    machine(monkeypatch, tmp_path, "home")  # a store that never saw a.car
    before = files(m)
    code, _out, err = bk("merge", str(f_car), "--into", str(m))
    assert code == 1 and root in err and "store import" in err and "--gateway" in err
    assert files(m) == before and read_last(m) == root
    ok("store", "import", str(a_car))
    report = json.loads(ok("merge", str(f_car), "--into", str(m), "--json"))
    assert_only_the_plan_changed(m, before, report, root)


def test_fork_from_the_local_store_edit_and_merge_back(agent: tuple[Path, Path, str], tmp_path: Path) -> None:
    m, a_car, root = agent
    ok("store", "import", str(a_car))
    f_car = fork_edit_build(f"ipfs://{root}", tmp_path)
    before = files(m)
    report = json.loads(ok("merge", str(f_car), "--into", str(m), "--json"))
    assert_only_the_plan_changed(m, before, report, root)


def test_fork_through_a_gateway_edit_and_merge_back_with_or_without_the_gateway(
        agent: tuple[Path, Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    m, a_car, root = agent
    with serve_in_thread(cars=[a_car]) as server:
        machine(monkeypatch, tmp_path, "laptop")
        f_car = fork_edit_build(f"ipfs://{root}", tmp_path, "--gateway", server.url)
        machine(monkeypatch, tmp_path, "home")
        before = files(m)
        code, _out, err = bk("merge", str(f_car), "--into", str(m))
        assert code == 1 and "--gateway" in err and files(m) == before
        report = json.loads(ok("merge", str(f_car), "--into", str(m), "--gateway", server.url, "--json"))
    assert_only_the_plan_changed(m, before, report, root)
    assert BlockStore(tmp_path / "home-laptop").has(cid_from_text(root))  # the forking machine kept its blocks


def test_fork_through_a_gateway_and_merge_back_on_the_same_machine_needs_no_gateway(
        agent: tuple[Path, Path, str], tmp_path: Path) -> None:
    m, a_car, root = agent
    with serve_in_thread(cars=[a_car]) as server:
        f_car = fork_edit_build(f"ipfs://{root}", tmp_path, "--gateway", server.url)
    before = files(m)  # the gateway is gone: the base comes from what the fork kept
    report = json.loads(ok("merge", str(f_car), "--into", str(m), "--json"))
    assert_only_the_plan_changed(m, before, report, root)


def test_the_python_api_forks_and_merges_back_the_same_way(agent: tuple[Path, Path, str], tmp_path: Path) -> None:
    m, a_car, root = agent
    fork_bundle(str(a_car), tmp_path / "f")
    write(tmp_path / "f", "project_plan", "the fork's new plan", "changed in the fork")
    ok("build", str(tmp_path / "f"), "-o", str(tmp_path / "f.car"))
    before = files(m)
    result = merge_bundle(str(tmp_path / "f.car"), m)
    assert_only_the_plan_changed(m, before, result.to_dict(), root)


def test_a_tree_forked_by_an_older_bundlekit_with_source_in_every_memory_merges_back_sensibly(
        agent: tuple[Path, Path, str], tmp_path: Path) -> None:
    m, a_car, root = agent
    f = tmp_path / "f"
    ok("fork", str(a_car), str(f))
    for path in f.glob("*.md"):  # what fork wrote before issue 34: source: ipfs://<root> in every memory
        if path.name != "MEMORY.md":
            path.write_bytes(path.read_bytes().replace(b"\nrevision:", f"\nsource: ipfs://{root}\nrevision:".encode()))
    write(f, "project_plan", "the fork's new plan", "changed in the fork")
    ok("build", str(f), "-o", str(tmp_path / "f.car"))
    before = files(m)
    report = json.loads(ok("merge", str(tmp_path / "f.car"), "--into", str(m), "--json"))
    assert report["counts"] == {"updated": 1} and report["conflicts"] == []
    after = files(m)
    assert {k: v for k, v in after.items() if k not in ("project_plan.md", "MEMORY.md")} == \
           {k: v for k, v in before.items() if k not in ("project_plan.md", "MEMORY.md")}


# Issue 35 -------------------------------------------------------------------------------------------------

def stranger(tmp_path: Path, lines: list[dict[str, object]], *, parents: tuple[str, ...] = (),
             memories: tuple[str, ...] = ("their_note",)) -> Path:
    """An attacker's bundle: its own memories, a timeline holding ``lines``, claiming ``parents``; unsigned."""
    x = tmp_path / "x"
    ok("memory", "-d", str(x), "init")
    for key in memories:
        write(x, key, "theirs")
    for entry in lines:
        day = x / "timeline" / f"{str(entry['ts'])[:10]}.jsonl"
        with open(day, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(entry, separators=(",", ":")) + "\n")
    car = tmp_path / "x.car"
    build_bundle(x, car, options=BuildOptions(parents=list(parents)))
    return car


@pytest.mark.parametrize("ts", ["2099-01-01T00:00:00.000Z", "9999-12-31T23:59:59.999Z"])
def test_a_future_dated_forgot_from_a_bundle_sharing_no_ancestor_deletes_nothing(
        agent: tuple[Path, Path, str], tmp_path: Path, ts: str) -> None:
    m, _car, _root = agent
    write(m, "localonly", "only mine")
    car = stranger(tmp_path, [{"ts": ts, "type": "forgot", "key": "localonly"}])
    before = files(m)
    code, out, err = bk("merge", str(car), "--into", str(m), "--json")
    assert code == 0, err
    assert (m / "localonly.md").read_bytes() == before["localonly.md"]
    report = json.loads(out)
    assert report["base"] is None and "deleted" not in report["counts"]
    assert any("dated later than now" in w for w in report["warnings"]) and "dated later than now" in err


def test_merging_the_same_bundle_again_never_deletes_a_memory_written_since(
        agent: tuple[Path, Path, str], tmp_path: Path) -> None:
    m, _car, _root = agent
    car = stranger(tmp_path, [{"ts": "2099-01-01T00:00:00.000Z", "type": "forgot", "key": "victim"}])
    ok("merge", str(car), "--into", str(m))
    write(m, "victim", "written after the first merge")
    report = json.loads(ok("merge", str(car), "--into", str(m), "--json"))
    assert (m / "victim.md").exists() and report["counts"] == {}
    ok("memory", "-d", str(m), "write", "victim", "--name", "Victim", "--description", "again", "--type",
       "project", "--body", "and again")
    report = json.loads(ok("merge", str(car), "--into", str(m), "--json"))
    assert (m / "victim.md").exists() and report["counts"] == {}


def test_an_unsigned_bundle_claiming_the_trees_last_root_as_parent_deletes_nothing(
        agent: tuple[Path, Path, str], tmp_path: Path) -> None:
    m, a_car, root = agent
    ok("store", "import", str(a_car))  # the tree's last root is loadable: the claim names a real base
    car = stranger(tmp_path, [], parents=(root,))
    before = files(m)
    code, out, err = bk("merge", str(car), "--into", str(m), "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["base"] == root and "deleted" not in report["counts"]
    assert report["counts"] == {"added": 1, "kept": len(KEYS)}
    assert {k: v for k, v in files(m).items() if k != "MEMORY.md" and k in before} == \
           {k: v for k, v in before.items() if k != "MEMORY.md"}


def test_a_bundle_forgetting_most_of_the_tree_stops_unless_allow_deletes_and_names_deletions_first(
        agent: tuple[Path, Path, str], tmp_path: Path) -> None:
    m, a_car, root = agent
    ok("store", "import", str(a_car))
    forgets = [{"ts": "2026-01-01T00:00:00.000Z", "type": "forgot", "key": key, "name": key,
                "sha256": version_digest((m / f"{key}.md").read_text(encoding="utf-8"))} for key in KEYS[:2]]
    car = stranger(tmp_path, forgets, parents=(root,), memories=KEYS[2:])
    before = files(m)
    code, _out, err = bk("merge", str(car), "--into", str(m))
    assert code == 1 and "would delete 2 of the 4 memories" in err and "--allow-deletes" in err
    assert files(m) == before
    code, out, err = bk("merge", str(car), "--into", str(m), "--dry-run")
    assert code == 0 and "would delete 2 of the 4 memories" in err and files(m) == before
    code, out, err = bk("merge", str(car), "--into", str(m), "--allow-deletes")
    assert code == 0, err
    rows = [row.split()[:2] for row in out.splitlines()[1:]]
    assert rows[:2] == sorted([[KEYS[0], "deleted"], [KEYS[1], "deleted"]])  # every deletion first
    summary = next(row for row in err.splitlines() if row.startswith("merged "))
    assert summary.split(": ", 1)[1].startswith("2 deleted")
    assert not (m / f"{KEYS[0]}.md").exists() and not (m / f"{KEYS[1]}.md").exists()
    assert (m / f"{KEYS[2]}.md").exists() and (m / f"{KEYS[3]}.md").exists()


def test_a_forget_in_the_fork_comes_back_as_a_deletion_of_that_version(
        agent: tuple[Path, Path, str], tmp_path: Path) -> None:
    m, a_car, root = agent
    f = tmp_path / "f"
    ok("fork", str(a_car), str(f))
    ok("memory", "-d", str(f), "forget", "reference_reel")
    ok("build", str(f), "-o", str(tmp_path / "f.car"))
    report = json.loads(ok("merge", str(tmp_path / "f.car"), "--into", str(m), "--json"))
    assert report["base"] == root and report["entries"][0]["key"] == "reference_reel"
    assert report["entries"][0]["action"] == "deleted" and not (m / "reference_reel.md").exists()


def test_a_forget_of_an_older_version_keeps_the_edit_and_reports_it(
        agent: tuple[Path, Path, str], tmp_path: Path) -> None:
    m, a_car, root = agent
    f = tmp_path / "f"
    ok("fork", str(a_car), str(f))
    ok("memory", "-d", str(f), "forget", "reference_reel")
    ok("build", str(f), "-o", str(tmp_path / "f.car"))
    write(m, "reference_reel", "edited at home meanwhile")
    report = json.loads(ok("merge", str(tmp_path / "f.car"), "--into", str(m), "--json"))
    assert (m / "reference_reel.md").exists()
    assert [(e["key"], e["action"]) for e in report["entries"]] == [("reference_reel", "kept")]


def test_a_base_no_source_supplies_is_a_load_error_through_the_python_api(
        agent: tuple[Path, Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    m, a_car, _root = agent
    machine(monkeypatch, tmp_path, "laptop")
    f_car = fork_edit_build(str(a_car), tmp_path)
    machine(monkeypatch, tmp_path, "home")
    with pytest.raises(LoadError, match="store import"):
        merge_bundle(str(f_car), m)


def test_a_fork_dating_its_edit_in_9999_loses_the_conflict_to_the_edit_made_at_home(
        agent: tuple[Path, Path, str], tmp_path: Path) -> None:
    m, a_car, root = agent
    f = tmp_path / "f"
    ok("fork", str(a_car), str(f))
    write(f, "project_plan", "the fork's plan, dated ahead")
    forged = f / "project_plan.md"
    text = forged.read_text(encoding="utf-8")
    updated = next(row for row in text.splitlines() if row.startswith("updated: "))
    forged.write_text(text.replace(updated, "updated: 9999-12-31T23:59:59Z"), encoding="utf-8")
    ok("build", str(f), "-o", str(tmp_path / "f.car"))
    write(m, "project_plan", "the plan edited at home after the fork")
    mine = (m / "project_plan.md").read_bytes()
    code, out, err = bk("merge", str(tmp_path / "f.car"), "--into", str(m), "--on-conflict", "newer", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["base"] == root and report["conflicts"][0]["winner"] == "ours"
    assert (m / "project_plan.md").read_bytes() == mine and "ordered before every other time" in err


def padded(car: Path, out: Path, blocks: int) -> list[bytes]:
    """``car`` with ``blocks`` random raw blocks of 16 KiB appended, which its bundle never links; their CIDs."""
    with open(car, "rb") as fh:
        roots, sections = read_car(fh, verify=True)
        held = [(cid, data) for cid, data in sections]
    pad = [os.urandom(16 * 1024) for _ in range(blocks)]
    with open(out, "wb") as fh:
        writer = CarWriter(fh, roots)
        for cid, data in [*held, *((make_cid(1, RAW, data), data) for data in pad)]:
            writer.put(cid, data)
        writer.close()
    return [make_cid(1, RAW, data) for data in pad]


def test_a_fork_of_a_car_padded_with_unrelated_blocks_keeps_only_the_bundles_and_still_merges_back(
        agent: tuple[Path, Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    m, a_car, root = agent
    machine(monkeypatch, tmp_path, "laptop")
    evil = tmp_path / "padded.car"
    junk = padded(a_car, evil, 64)
    f_car = fork_edit_build(str(evil), tmp_path)
    store = BlockStore(tmp_path / "home-laptop")
    assert store.has(cid_from_text(root)) and not any(store.has(cid) for cid in junk)
    ok("memory", "-d", str(tmp_path / "g"), "init")
    ok("merge", str(evil), "--into", str(tmp_path / "g"))  # a merge of it keeps no padding either
    assert (tmp_path / "g" / "project_plan.md").exists() and not any(store.has(cid) for cid in junk)
    before = files(m)
    report = json.loads(ok("merge", str(f_car), "--into", str(m), "--json"))  # the base: what the fork kept
    assert_only_the_plan_changed(m, before, report, root)


def test_device_notes_do_not_dilute_the_delete_bound(tmp_path: Path) -> None:
    m = tmp_path / "m"
    ok("memory", "-d", str(m), "init")
    write(m, "project_plan", "the only memory that crosses machines")
    root = ok("build", str(m), "-o", str(tmp_path / "a.car")).strip()  # a build never carries device notes
    ok("store", "import", str(tmp_path / "a.car"))
    for n in range(3):  # this machine's notes: never merged, so never a share of what a bundle may delete
        (m / f"device_{n}.md").write_text(
            f"---\nname: Device {n}\ndescription: this laptop\ntype: reference\ncreated: 2026-04-14T12:00:00Z\n"
            f"updated: 2026-04-14T12:00:00Z\nx-magicfrog-local-only: true\n---\n\n/home/me/{n}\n", encoding="utf-8")
    digest = version_digest((m / "project_plan.md").read_text(encoding="utf-8"))
    car = stranger(tmp_path, [{"ts": "2026-04-15T00:00:00.000Z", "type": "forgot", "key": "project_plan",
                               "name": "project_plan", "sha256": digest}], parents=(root,), memories=())
    code, _out, err = bk("merge", str(car), "--into", str(m))
    assert code == 1 and "would delete 1 of the 1 memories" in err and (m / "project_plan.md").exists()
    assert bk("merge", str(car), "--into", str(m), "--allow-deletes")[0] == 0
    assert not (m / "project_plan.md").exists() and len(list(m.glob("device_*.md"))) == 3


def test_a_memory_forgotten_then_forked_back_in_survives_a_fork_carrying_that_forget(
        agent: tuple[Path, Path, str], tmp_path: Path) -> None:
    m, a_car, root = agent
    ok("store", "import", str(a_car))
    ok("fork", str(a_car), str(tmp_path / "f"))
    ok("memory", "-d", str(m), "forget", "reference_reel")
    build_bundle(m, tmp_path / "b.car", options=BuildOptions(parents=[root]))  # as a tree that merged A builds
    ok("store", "import", str(tmp_path / "b.car"))
    ok("merge", str(tmp_path / "b.car"), "--into", str(tmp_path / "f"))  # the fork takes the forget
    assert not (tmp_path / "f" / "reference_reel.md").exists()
    write(tmp_path / "f", "project_plan", "the fork's new plan")
    ok("build", str(tmp_path / "f"), "-o", str(tmp_path / "c.car"))
    ok("fork", str(a_car), str(m))  # the user wants the reel back: the same text, the same digest
    kept = (m / "reference_reel.md").read_bytes()
    (m / ".bundlekit" / "last-root").unlink()  # local state lost: it may cost the base, never data
    report = json.loads(ok("merge", str(tmp_path / "c.car"), "--into", str(m), "--json"))
    assert report["base"] == root and (m / "reference_reel.md").read_bytes() == kept
    assert "deleted" not in report["counts"] and b"the fork's new plan" in (m / "project_plan.md").read_bytes()
