"""The seeder contract and its registry: a third-party seeder plugs in through ``bundlekit.seeders`` exactly as
the built-ins do; what it proposes is foreign input (the contract's types, the keys, the guard, the cap)."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bundlekit.errors import SeedError, UsageError
from bundlekit.extension_points import SEEDERS
from bundlekit.memory import Memory
from bundlekit.seed.plan import plan_seed, seed_digest, unedited
from bundlekit.seed.apply import preview_seed, write_seed
from bundlekit.seed.protocol import Account, Proposal, Seeder, SeedRequest
from bundlekit.seed.registry import available_seeders, seeder_factory
from tests.seed.conftest import Run
from tests.seeding import install_dist, tree_files

THIRD_PARTY = '''
from bundlekit.seed.protocol import Account, Proposal

class NotebookSeeder:
    """A third party's lane: proposes ``count`` memories from a notebook service it pretends to read."""
    name = "notebook"
    options = ("count",)
    env_vars = ("NOTEBOOK_TOKEN",)

    def __init__(self, request):
        self.count = int(request.options.get("count", "3"))
        self.limit = request.limit

    @classmethod
    def from_request(cls, request):
        return cls(request)

    @classmethod
    def is_configured(cls, env):
        return "NOTEBOOK_TOKEN" in env

    def account(self):
        return Account("notebook", "ada", "token")

    def propose(self, account):
        return [Proposal(f"notebook-ada-{n}", "reference", f"Note {n}", "a note", f"Note {n} body.", "nb://ada")
                for n in range(self.count)]

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
'''


@pytest.fixture
def notebook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = install_dist(tmp_path / "third-party", "notebook_seeder", {"notebook": "notebook_seeder:NotebookSeeder"},
                        {"notebook_seeder": THIRD_PARTY})
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delitem(sys.modules, "notebook_seeder", raising=False)


def test_the_built_in_lanes_are_registered_through_the_entry_point_group() -> None:
    assert {"github", "farcaster", "x"} <= set(available_seeders())
    assert SEEDERS.group == "bundlekit.seeders"


def test_a_third_party_seeder_plugs_in_through_the_same_group(notebook: None, tree: Path, run: Run) -> None:
    assert "notebook" in available_seeders()
    result = run("seed", "notebook", "--set", "count=2", "--yes")
    assert result.exit_code == 0, result.output
    assert [r.meta["seed"] for r in Memory(tree).list()] == ["notebook:ada", "notebook:ada"]
    assert run("unseed", "notebook").exit_code == 0 and Memory(tree).list() == []


def test_a_third_party_seeder_proposing_past_the_cap_writes_only_the_cap(notebook: None, tree: Path,
                                                                        run: Run) -> None:
    result = run("seed", "notebook", "--set", "count=1000", "--max", "10", "--yes")
    assert result.exit_code == 0, result.output
    assert len(Memory(tree).list()) == 10
    assert "990 more proposed past the cap, not written" in result.stderr
    assert run("seed", "notebook", "--set", "count=1000", "--yes", "--strict").exit_code == 1


def test_the_cap_itself_is_bounded(notebook: None, run: Run) -> None:
    assert run("seed", "notebook", "--max", "201", "--yes").exit_code == 2
    assert run("seed", "notebook", "--max", "0", "--yes").exit_code == 2


def test_an_option_the_seeder_does_not_take_is_refused_before_anything_is_read(notebook: None, run: Run) -> None:
    result = run("seed", "notebook", "--set", "colour=red", "--yes")
    assert result.exit_code == 2 and "takes no option colour" in result.stderr


def test_an_unknown_lane_is_a_usage_error_naming_the_registered_ones(run: Run) -> None:
    result = run("seed", "myspace", "--yes")
    assert result.exit_code == 2 and "github" in result.stderr and "x" in result.stderr


def test_a_registered_seeder_that_cannot_import_is_a_usage_error(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    site = install_dist(tmp_path / "broken", "broken_seeder", {"broken": "broken_seeder:Nope"},
                        {"broken_seeder": "raise ImportError('missing dependency')\n"})
    monkeypatch.syspath_prepend(str(site))
    with pytest.raises(UsageError, match="cannot be loaded"):
        seeder_factory("broken")


def test_the_built_in_seeders_meet_the_seeder_protocol() -> None:
    seeder = seeder_factory("github").from_request(SeedRequest(env={"GITHUB_TOKEN": "t" * 20}))
    with seeder:
        assert isinstance(seeder, Seeder)


NOW = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)
ACCOUNT = Account("github", "octocat", "token")


def test_a_proposal_that_breaks_the_contract_is_a_seed_error() -> None:
    with pytest.raises(SeedError, match="not a Proposal"):
        plan_seed([], ACCOUNT, [{"key": "x"}], now=NOW, max_memories=5)


def test_a_bad_key_or_type_is_named_and_the_rest_planned() -> None:
    proposals = [Proposal("../escape", "user", "n", "d", "b", "o"), Proposal("ok", "diary", "n", "d", "b", "o"),
                 Proposal("fine", "user", "n", "d", "b", "o"), Proposal("fine", "user", "n2", "d", "b", "o")]
    plan = plan_seed([], ACCOUNT, proposals, now=NOW, max_memories=5)
    assert [p.record.key for p in plan.writes] == ["fine"]
    assert set(plan.skipped) == {"../escape", "ok", "fine"}
    assert "proposed twice" in plan.skipped["fine"]


def test_a_name_on_two_lines_is_refused_as_the_schema_refuses_it() -> None:
    plan = plan_seed([], ACCOUNT, [Proposal("k", "user", "two\nlines", "d", "b", "o")], now=NOW, max_memories=5)
    assert plan.writes == [] and "single line" in plan.skipped["k"]


def test_the_digest_covers_every_value_and_the_body() -> None:
    plan = plan_seed([], ACCOUNT, [Proposal("k", "user", "n", "d", "body", "o")], now=NOW, max_memories=5)
    record = plan.writes[0].record
    assert unedited(record)
    assert record.meta["seed_sha256"] == seed_digest(record.key, record.meta, record.body)
    assert seed_digest(record.key, {**record.meta, "tags": ["x"]}, record.body) != record.meta["seed_sha256"]
    assert seed_digest(record.key, record.meta, record.body + " ") != record.meta["seed_sha256"]


def test_a_plan_written_after_the_tree_changed_writes_nothing(tree: Path) -> None:
    memory = Memory(tree)
    shown = preview_seed(memory, ACCOUNT, [Proposal("k", "user", "n", "d", "b", "o")], now=NOW, max_memories=5)
    memory.write("k", name="mine", description="d", type="user", body="b")
    before = tree_files(tree)
    with pytest.raises(SeedError, match="changed since"):
        write_seed(memory, shown, now=NOW, max_memories=5)
    assert tree_files(tree) == before


@pytest.mark.parametrize("handle", ["../../x", "a:b", "", "x" * 101, "line\nbreak"])
def test_an_account_whose_handle_breaks_the_contract_is_refused(handle: str, tmp_path: Path, tree: Path, run: Run,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    source = THIRD_PARTY.replace('Account("notebook", "ada", "token")', f"Account('notebook', {handle!r}, 'token')")
    site = install_dist(tmp_path / "bad-handle", "notebook_seeder", {"notebook": "notebook_seeder:NotebookSeeder"},
                        {"notebook_seeder": source})
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delitem(sys.modules, "notebook_seeder", raising=False)
    before = tree_files(tree)
    result = run("seed", "notebook", "--yes")
    assert result.exit_code == 1 and "breaks the seeder contract" in result.stderr
    assert tree_files(tree) == before


def test_a_refused_key_with_a_credential_never_blocks_the_rest_nor_enters_the_timeline(tree: Path) -> None:
    leaked = "AKIA" + "IOSFODNN7EXAMPLE"
    memory = Memory(tree)
    shown = preview_seed(memory, ACCOUNT, [Proposal(f"key {leaked}", "user", "n", "d", "b", "o"),
                                           Proposal("fine", "user", "n", "d", "b", "o")], now=NOW, max_memories=5)
    write_seed(memory, shown, now=NOW, max_memories=5)
    assert [r.key for r in memory.list()] == ["fine"]
    assert all(leaked not in p.read_text() for p in (tree / "timeline").glob("*.jsonl"))


def test_a_file_that_does_not_parse_under_a_proposed_key_is_kept_and_named(tree: Path) -> None:
    (tree / "k.md").write_text("---\nname: x\ntype: usr\n---\nbody\n")
    memory = Memory(tree)
    shown = preview_seed(memory, ACCOUNT, [Proposal("k", "user", "n", "d", "b", "o"),
                                           Proposal("other", "user", "n", "d", "b", "o")], now=NOW, max_memories=5)
    assert "does not parse" in shown.skipped["k"]
    write_seed(memory, shown, now=NOW, max_memories=5)
    assert (tree / "k.md").read_text() == "---\nname: x\ntype: usr\n---\nbody\n"
    assert [r.key for r in memory.list()] == ["other"]


def _listing(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    from click.testing import CliRunner

    from bundlekit.cli import cli

    result = CliRunner(env=env).invoke(cli, ["seeders", *args])
    return result.exit_code, result.stdout, result.stderr


def test_seeders_lists_every_lane_with_its_variables_and_options(notebook: None) -> None:
    import json

    code, out, _ = _listing("--json", env={"GITHUB_TOKEN": "ghp_" + "s3cr3t" * 6, "X_BEARER_TOKEN": ""})
    assert code == 0
    rows = {row["name"]: row for row in json.loads(out)}
    assert {"github", "farcaster", "x", "notebook"} <= set(rows)
    assert rows["github"]["configured"] is True and rows["github"]["env"] == ["GITHUB_TOKEN"]
    assert rows["x"]["configured"] is False and rows["x"]["options"] == ["posts"]
    assert rows["notebook"]["entry_point"] == "notebook_seeder:NotebookSeeder"
    assert rows["notebook"]["description"].startswith("A third party's lane: proposes count memories")
    assert "s3cr3t" not in out


def test_seeders_names_a_lane_that_cannot_load_and_lists_the_rest(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    site = install_dist(tmp_path / "broken", "broken_seeder", {"broken": "broken_seeder:Nope",
                                                               "flaky": "broken_seeder:Flaky"},
                        {"broken_seeder": "raise ImportError('missing dependency')\n"})
    monkeypatch.syspath_prepend(str(site))
    code, out, err = _listing()
    assert code == 0, err
    lines = out.splitlines()
    assert any(line.startswith("github ") for line in lines)
    broken = lines.index(next(line for line in lines if line.startswith("broken ")))
    assert "cannot be loaded" in lines[broken + 1]


def test_seeders_survives_a_third_party_whose_check_raises(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    site = install_dist(tmp_path / "raising", "raising_seeder", {"raising": "raising_seeder:Raising"},
                        {"raising_seeder": 'class Raising:\n    """' + "word " * 500 + '"""\n'
                         "    options = ()\n    @classmethod\n    def is_configured(cls, env):\n"
                         "        raise RuntimeError('boom')\n"})
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delitem(sys.modules, "raising_seeder", raising=False)
    code, out, _ = _listing("--json")
    row = next(row for row in json.loads(out) if row["name"] == "raising")
    assert code == 0 and row["configured"] is False and "is_configured failed (RuntimeError)" in row["error"]
    assert len(row["description"]) <= 300
