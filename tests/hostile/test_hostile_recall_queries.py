"""Hostile recall queries (issue 38's attack on the term-level BM25 and the hybrid): FTS5 query syntax, control
and odd Unicode text, huge and degenerate queries, through every ranking, recall and the context block. Each
is text to look for, never syntax: it answers (a usage error only for a query with nothing in it), from the
memory files, without a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from bundlekit.cli import cli
from bundlekit.errors import UsageError
from bundlekit.memory import Memory

MEMORIES = {
    "deploy": ("Deploy runbook", "how to deploy the api", "Run make deploy, then NEAR the dashboard AND OR NOT."),
    "tone": ("Tone", "user wants direct critique", "Lead with the issue, then the fix."),
    "cats": ("Cats", "the user's cats", "Two cats: Miso and Tofu. Running, runs, ran."),
    "shalom": ("مرحبا", "greeting עברית", "שלום עולם, e\u0301te\u0301 and café 🎉"),
    "kafka": ("Kafka migration", "moving queues to kafka", "Topic name: orders.v2 {name body}: x"),
}

PAYLOADS = [
    '"', '""', '"deploy', 'deploy"', "*", "dep*", "NEAR(deploy api)", "NEAR(", "deploy AND api", "deploy OR", "NOT deploy",
    "AND", "^deploy", "name:deploy", "{name body}:deploy", "{name", "-deploy", "deploy -api", "(deploy", "deploy)",
    "()", "deploy\x00api", "+", ":", "deploy's", "x" * 100_000, " ".join(f"w{i}" for i in range(10_000)),
    "the a of and is", "!!! ??? ...", "🎉", "مرحبا", "שלום", "e\u0301te\u0301", "\u0301\u0301\u0301", "run ran runs running",
    "café", "a" * 65, "orders.v2", "\ufffe", "\ud800", "x\udcff y", "\u202edeploy",
]
RANKS = ["salience", "relevance", "semantic", "hybrid"]


@pytest.fixture(scope="module")
def mem(tmp_path_factory: pytest.TempPathFactory) -> Memory:
    memory = Memory(tmp_path_factory.mktemp("hostile-recall") / "m")
    for key, (name, description, body) in MEMORIES.items():
        memory.write(key, name=name, description=description, type="project", body=body)
    return memory


@pytest.mark.parametrize("rank", RANKS)
@pytest.mark.parametrize("query", PAYLOADS, ids=lambda q: repr(q[:24]))
def test_a_hostile_query_is_text_to_look_for_in_every_ranking(mem: Memory, query: str, rank: str) -> None:
    hits = mem.recall(query, limit=5, rank=rank, usage=True)
    assert {hit.key for hit in hits} <= set(MEMORIES)
    assert all(hit.record.body == mem.read(hit.key).body for hit in hits)  # type: ignore[union-attr]
    block = mem.context_block(500, query=query, rank=rank, usage=True)
    assert isinstance(block, str)


@pytest.mark.parametrize("query", ["\x00", "\x00\x00", " \t\n"])
def test_a_query_of_nothing_to_look_for_is_a_usage_error(mem: Memory, query: str) -> None:
    with pytest.raises(UsageError):
        mem.recall(query, rank="hybrid")


@pytest.mark.parametrize("rank", RANKS)
def test_a_query_of_undecodable_argv_bytes_answers_in_every_ranking(tmp_path: Path, rank: str) -> None:
    """A lone surrogate (argv bytes Python could not decode) is in no memory: no memory holds it, whatever the
    ranking, and the salience search says so instead of failing to hand it to SQLite."""
    tree = tmp_path / "m"
    Memory(tree).write("tone", name="Tone", description="direct critique", type="feedback", body="Lead.")
    runner = CliRunner()
    for args in (["recall", "ab\udcff\udcfe"], ["context", "--query", "ab\udcff"]):
        result = runner.invoke(cli, ["memory", "-d", str(tree), *args, "--rank", rank])
        assert result.exit_code == 0, result.output
        assert "internal error" not in result.output
