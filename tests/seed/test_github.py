"""The github lane against a loopback fake answering as GitHub's OpenAPI description documents
(github/rest-api-description ``descriptions/api.github.com/api.github.com.yaml`` at 85b6ee9f; fixtures/seed/github/):
seed, list, unseed; consent; the token never shown nor stored; 401; the documented rate limits."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bundlekit.memory import Memory
from tests.seed.conftest import Run
from tests.seed.fakes import GITHUB_LIMIT, Answer, Asked, FakeService, fixture, github_app
from tests.seeding import tree_files

TOKEN = "gho_16C7e42F292c6912E7710c838347Ae178B4a"  # the shape of a GitHub OAuth token: the guard's own rules match it
PLAIN_TOKEN = "test-token-Zq81vX0pLm4nB7cR2wY"  # a token no rule matches: only the run's registration hides it
KEYS = ["github-octocat-languages", "github-octocat-profile", "github-octocat-repo-hello-world",
        "github-octocat-repo-spoon-knife"]


@pytest.fixture
def github(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeService]:
    with FakeService(github_app(TOKEN)) as fake:
        monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
        monkeypatch.setenv("GITHUB_API_URL", fake.url)
        yield fake


def _timeline(tree: Path) -> list[dict[str, object]]:
    return [json.loads(line) for day in sorted((tree / "timeline").glob("*.jsonl"))
            for line in day.read_text().splitlines()]


def test_seed_then_unseed_leaves_the_tree_byte_identical_but_the_timeline(
        github: FakeService, tree: Path, run: Run) -> None:
    before = tree_files(tree)
    seeded = run("seed", "github", "--yes")
    assert seeded.exit_code == 0, seeded.output
    listed = run("list")
    assert [line.split("\t")[0] for line in listed.stdout.splitlines()] == KEYS
    unseeded = run("unseed", "github")
    assert unseeded.exit_code == 0, unseeded.output
    assert tree_files(tree) == before
    assert [entry["type"] for entry in _timeline(tree)] == ["seeded", "unseeded"]


def test_every_memory_records_its_seed_its_origin_and_its_digest(github: FakeService, tree: Path, run: Run) -> None:
    assert run("seed", "github", "--yes").exit_code == 0
    profile = Memory(tree).read("github-octocat-profile")
    assert profile is not None
    assert profile.meta["seed"] == "github:octocat"
    assert profile.meta["source"] == "https://github.com/octocat"
    assert "San Francisco" in profile.body and profile.type == "user"
    entry = _timeline(tree)[0]
    assert entry["seed"] == "github:octocat" and entry["memories"] == {
        key: Memory(tree).read(key).meta["seed_sha256"] for key in KEYS}  # type: ignore[union-attr]


def test_the_most_starred_projects_carry_their_languages_and_forks_are_left_out(
        github: FakeService, tree: Path, run: Run) -> None:
    result = run("seed", "github", "--json", "--dry-run")
    plan = json.loads(result.stdout)
    projects = [w for w in plan["write"] if w["type"] == "project"]
    assert [p["name"] for p in projects] == ["octocat/Spoon-Knife", "octocat/Hello-World"]
    assert "C (78769 bytes), Python (7769 bytes)" in projects[0]["body"]
    assert not any("git-consortium" in w["key"] for w in plan["write"])


def test_without_consent_and_without_a_terminal_nothing_is_written_and_it_exits_2(
        github: FakeService, tree: Path, run: Run) -> None:
    before = tree_files(tree)
    result = run("seed", "github")
    assert result.exit_code == 2
    assert "need your consent; add --yes" in result.stderr
    assert [line.split("\t")[1] for line in result.stdout.splitlines()] == [
        "github-octocat-profile", "github-octocat-languages", "github-octocat-repo-spoon-knife",
        "github-octocat-repo-hello-world"]
    assert tree_files(tree) == before and _timeline(tree) == []


def test_a_dry_run_shows_the_plan_and_writes_nothing(github: FakeService, tree: Path, run: Run) -> None:
    before = tree_files(tree)
    result = run("seed", "github", "--dry-run")
    assert result.exit_code == 0 and "would write 4 memories" in result.stderr
    assert tree_files(tree) == before


def test_an_edited_seeded_memory_survives_unseed_and_is_named(github: FakeService, tree: Path, run: Run) -> None:
    assert run("seed", "github", "--yes").exit_code == 0
    edited = run("write", "github-octocat-profile", "--name", "My GitHub", "--description", "mine now",
                 "--type", "user", "--body", "I rewrote this.")
    assert edited.exit_code == 0, edited.output
    result = run("unseed", "github")
    assert result.exit_code == 0
    assert "github-octocat-profile: edited since it was seeded; kept" in result.stderr
    assert [r.key for r in Memory(tree).list()] == ["github-octocat-profile"]
    forced = run("unseed", "github", "--force")
    assert forced.exit_code == 0 and Memory(tree).list() == []


def test_a_hand_edit_of_the_file_counts_as_an_edit(github: FakeService, tree: Path, run: Run) -> None:
    assert run("seed", "github", "--yes").exit_code == 0
    path = tree / "github-octocat-repo-hello-world.md"
    path.write_text(path.read_text().replace("Stars: 80", "Stars: 81"))
    result = run("unseed", "github", "--json")
    assert json.loads(result.stdout)["kept"] == ["github-octocat-repo-hello-world"]


def test_seeding_never_replaces_a_memory_the_user_wrote(github: FakeService, tree: Path, run: Run) -> None:
    assert run("write", "github-octocat-profile", "--name", "Mine", "--description", "d", "--type", "user",
               "--body", "b").exit_code == 0
    result = run("seed", "github", "--yes")
    assert result.exit_code == 0
    assert "github-octocat-profile: not written: the tree already holds a memory" in result.stderr
    assert Memory(tree).read("github-octocat-profile").name == "Mine"  # type: ignore[union-attr]
    assert run("seed", "github", "--yes", "--strict").exit_code == 1


def test_seeding_again_rewrites_nothing_unchanged(github: FakeService, tree: Path, run: Run) -> None:
    assert run("seed", "github", "--yes").exit_code == 0
    before = tree_files(tree)
    again = run("seed", "github", "--yes")
    assert again.exit_code == 0 and "4 already seeded, unchanged" in again.stderr
    assert tree_files(tree) == before and len(_timeline(tree)) == 1


def test_the_token_is_in_no_output_and_in_no_memory(tree: Path, run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    user = {**fixture("github/user.json"), "bio": f"my token is {PLAIN_TOKEN}"}  # type: ignore[dict-item]
    with FakeService(github_app(PLAIN_TOKEN, user=user)) as fake:
        monkeypatch.setenv("GITHUB_TOKEN", PLAIN_TOKEN)
        monkeypatch.setenv("GITHUB_API_URL", fake.url)
        shown = run("seed", "github", "--json", "--dry-run")
        written = run("seed", "github", "--yes")
    assert shown.exit_code == 0 and written.exit_code == 0
    for result in (shown, written):
        assert PLAIN_TOKEN not in result.output
    assert "github-octocat-profile: not written" in written.stderr
    assert all(PLAIN_TOKEN not in p.read_text() for p in tree.rglob("*") if p.is_file() and p.suffix in (".md",
                                                                                                        ".jsonl"))


def test_credential_looking_text_from_the_account_is_refused_as_a_users_would_be(
        tree: Path, run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    leaked = "AKIA" + "IOSFODNN7EXAMPLE"
    repos = fixture("github/repos.json")
    assert isinstance(repos, list)
    repos[0]["description"] = f"deploy key {leaked}"
    with FakeService(github_app(TOKEN, repos=repos)) as fake:
        monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
        monkeypatch.setenv("GITHUB_API_URL", fake.url)
        result = run("seed", "github", "--yes")
        strict = run("seed", "github", "--yes", "--strict")
    assert result.exit_code == 0
    assert "github-octocat-repo-hello-world: not written" in result.stderr and leaked not in result.output
    assert {r.key for r in Memory(tree).list()} == set(KEYS) - {"github-octocat-repo-hello-world"}
    assert strict.exit_code == 1 and "--strict" in strict.stderr


def test_a_refused_token_is_exit_3_naming_githubs_message_never_the_token(
        github: FakeService, run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", PLAIN_TOKEN)
    result = run("seed", "github", "--yes")
    assert result.exit_code == 3
    assert "Requires authentication" in result.stderr and PLAIN_TOKEN not in result.output


def test_a_missing_token_is_a_usage_error(github: FakeService, run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GITHUB_TOKEN")
    result = run("seed", "github", "--yes")
    assert result.exit_code == 2 and "$GITHUB_TOKEN" in result.stderr


def test_a_403_rate_limit_with_retry_after_is_waited_out(tree: Path, run: Run,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    normal = github_app(TOKEN)
    limited = {"n": 0}

    def app(asked: Asked) -> Answer:
        if asked.path == "/user" and limited["n"] == 0:
            limited["n"] += 1
            return Answer.json(fixture("github/error-rate-limit.json"), 403,
                               {**GITHUB_LIMIT, "x-ratelimit-remaining": "0", "retry-after": "1"})
        return normal(asked)

    with FakeService(app) as fake:
        monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
        monkeypatch.setenv("GITHUB_API_URL", fake.url)
        started = time.monotonic()
        result = run("seed", "github", "--yes")
        assert result.exit_code == 0, result.output
        assert time.monotonic() - started >= 1.0
        assert [a.path for a in fake.asked[:2]] == ["/user", "/user"]


def test_a_spent_limit_resetting_later_fails_at_once_naming_when(tree: Path, run: Run,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    def app(asked: Asked) -> Answer:
        return Answer.json(fixture("github/error-rate-limit.json"), 403,
                           {**GITHUB_LIMIT, "x-ratelimit-remaining": "0"})

    with FakeService(app) as fake:
        monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
        monkeypatch.setenv("GITHUB_API_URL", fake.url)
        started = time.monotonic()
        result = run("seed", "github", "--yes")
        assert time.monotonic() - started < 10
        assert len(fake.asked) == 1
    assert result.exit_code == 1
    assert "rate-limited" in result.stderr and "API rate limit exceeded" in result.stderr
    assert "try again after" in result.stderr
