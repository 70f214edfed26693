"""The x lane against a loopback fake answering as X's API v2 OpenAPI description documents (api.twitter.com/2/
openapi.json as xdevplatform/twitter-api-typescript-sdk ``src/gen/openapi-types.ts`` at 0d12a20a; fixtures/seed/x/):
the profile always, the user's own recent posts only with --posts; the Problem body; the x-rate-limit-* headers."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bundlekit.memory import Memory
from tests.seed.conftest import Run
from tests.seed.fakes import X_LIMIT, Answer, Asked, FakeService, fixture, x_app
from tests.seeding import tree_files

TOKEN = "AAAAAAAAAAAAAAAAAAAAAtestbearerZq81vX0pLm4nB7cR2wY"


@pytest.fixture
def x(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeService]:
    with FakeService(x_app(TOKEN)) as fake:
        monkeypatch.setenv("X_BEARER_TOKEN", TOKEN)
        monkeypatch.setenv("BUNDLEKIT_X_API_URL", fake.url)
        yield fake


def test_seed_then_unseed_leaves_the_tree_byte_identical(x: FakeService, tree: Path, run: Run) -> None:
    before = tree_files(tree)
    seeded = run("seed", "x", "--yes")
    assert seeded.exit_code == 0, seeded.output
    assert run("list").stdout.splitlines()[0].startswith("x-twitterdev-profile\tuser")
    assert run("unseed", "x").exit_code == 0
    assert tree_files(tree) == before


def test_posts_are_read_only_when_asked(x: FakeService, tree: Path, run: Run) -> None:
    assert run("seed", "x", "--yes").exit_code == 0
    assert [a.path for a in x.asked] == ["/2/users/me"]
    assert x.asked[0].query["user.fields"].split(",")[:3] == ["created_at", "description", "location"]
    result = run("seed", "x", "--posts", "3", "--yes")
    assert result.exit_code == 0, result.output
    asked = x.asked[-1]
    assert asked.path == "/2/users/2244994945/tweets"
    assert asked.query == {"max_results": "5", "exclude": "replies,retweets", "tweet.fields": "created_at"}
    posts = Memory(tree).read("x-twitterdev-recent-posts")
    assert posts is not None and posts.meta["seed"] == "x:TwitterDev"
    assert "https://x.com/TwitterDev/status/1346889436626259968" in posts.body


def test_an_edited_seeded_memory_survives_unseed(x: FakeService, tree: Path, run: Run) -> None:
    assert run("seed", "x", "--yes").exit_code == 0
    assert run("write", "x-twitterdev-profile", "--name", "n", "--description", "d", "--type", "user",
               "--body", "mine").exit_code == 0
    result = run("unseed", "x")
    assert "x-twitterdev-profile: edited since it was seeded; kept" in result.stderr
    assert Memory(tree).read("x-twitterdev-profile") is not None


def test_no_consent_no_write(x: FakeService, tree: Path, run: Run) -> None:
    before = tree_files(tree)
    assert run("seed", "x").exit_code == 2
    assert tree_files(tree) == before


def test_a_refused_token_is_exit_3_naming_the_problem_never_the_token(
        x: FakeService, run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    other = "BBBBBBBBBBBBBBBBBBBBBBotherbearer0123456789"
    monkeypatch.setenv("X_BEARER_TOKEN", other)
    result = run("seed", "x", "--yes")
    assert result.exit_code == 3
    assert "Unauthorized" in result.stderr and other not in result.output and TOKEN not in result.output


def test_the_token_is_in_no_output_and_no_memory(tree: Path, run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    me = {"data": {**fixture("x/users-me.json")["data"], "description": f"bearer {TOKEN}"}}  # type: ignore[index]
    with FakeService(x_app(TOKEN, me=me)) as fake:
        monkeypatch.setenv("X_BEARER_TOKEN", TOKEN)
        monkeypatch.setenv("BUNDLEKIT_X_API_URL", fake.url)
        shown = run("seed", "x", "--json", "--dry-run")
        written = run("seed", "x", "--yes")
    assert TOKEN not in shown.output and TOKEN not in written.output
    assert "x-twitterdev-profile: not written" in written.stderr
    assert all(TOKEN not in p.read_text() for p in tree.rglob("*") if p.is_file() and p.suffix in (".md", ".jsonl"))
    assert json.loads(shown.stdout)["write"] == []


def test_a_429_with_the_limit_spent_and_a_near_reset_is_waited_out(
        tree: Path, run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    normal = x_app(TOKEN)
    calls = {"n": 0}

    def app(asked: Asked) -> Answer:
        calls["n"] += 1
        if calls["n"] == 1:
            return Answer.json({"title": "Too Many Requests", "detail": "Too Many Requests", "type": "about:blank",
                                "status": 429}, 429, {**X_LIMIT, "x-rate-limit-remaining": "0",
                                                      "x-rate-limit-reset": str(int(time.time()) + 1)},
                               "application/problem+json")
        return normal(asked)

    with FakeService(app) as fake:
        monkeypatch.setenv("X_BEARER_TOKEN", TOKEN)
        monkeypatch.setenv("BUNDLEKIT_X_API_URL", fake.url)
        result = run("seed", "x", "--yes")
    assert result.exit_code == 0, result.output
    assert calls["n"] == 2


def test_posts_is_refused_by_the_other_lanes_and_bounded(x: FakeService, run: Run,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    assert run("seed", "x", "--posts", "101", "--yes").exit_code == 2
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    refused = run("seed", "github", "--posts", "3", "--yes")
    assert refused.exit_code == 2 and "takes no option posts" in refused.stderr
