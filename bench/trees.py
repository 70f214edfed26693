"""Realistic memory trees for the benchmarks, at any size (issue 37: 1,000 to 100,000 memories).

What an agent's long-lived tree looks like, not a template repeated: keys made of topic words
(``user_prefers_short_answers_3f2a``), all four types in agents' proportions, bodies of 200 to 2,000
bytes of prose drawn from a vocabulary of a few hundred words (so recall and compression see varied
text), optional tags, decay and importance, created/updated times spread over a year, and a timeline
of one JSONL file per day with a few dozen entries each. Deterministic for a seed: the same call
writes the same bytes, so two runs (or bundlekit and git side by side) see the same tree.

    from bench.trees import generate_tree, edit_tree
    keys = generate_tree(Path("memory"), 10_000)          # files, timeline days, MEMORY.md and the index
    changed = edit_tree(Path("memory"), keys, 10, seed=1)  # k memories rewritten as `memory write` would

Files are written directly (a 100,000-memory tree in seconds); ``index=True`` (the default) then opens
the tree once, which writes ``MEMORY.md`` and builds the derived index (``.bundlekit/``), so the tree
is "warm" as an agent's is after its first command. ``python bench/trees.py DIR COUNT`` writes one.
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bundlekit.memory import Memory  # noqa: E402 - after the repository is on the path
from bundlekit.memory.timefmt import format_timestamp, format_timestamp_ms  # noqa: E402

__all__ = ["NOW", "edit_tree", "generate_tree", "memory_text"]

NOW = datetime(2026, 4, 14, 12, 0, 0, tzinfo=UTC)
#: Types in the proportions agents' trees show: feedback and project notes dominate.
TYPES = ("user", "feedback", "feedback", "project", "project", "project", "reference", "reference")
TOPICS = (
    "prefers answers deploy staging release tests review style naming coffee standup oncall budget roadmap "
    "migration database schema latency cache queue retries timeout invoice customer onboarding pricing "
    "design tokens colors fonts accessibility keyboard shortcuts editor terminal shell python rust typescript "
    "docker kubernetes terraform backups secrets rotation vacation timezone meeting notes sprint goals kickoff "
    "football drills striker rondo pacing knee recovery tournament saturday coach parents schedule travel"
).split()
WORDS = (
    "the a to of and in that is for it on with as was at by this be from or have an they which one you were "
    "all we when your can said there use each she do how their if will up other about out many then them "
    "these so some her would make like him into time has look two more write go see number no way could "
    "people my than first water been call who oil its now find long down day did get come made may part "
    "agent memory user asked prefers always never remember project deadline friday release branch merge "
    "review build failing flaky test suite cache warm cold index query latency budget costs team lead "
    "customer ticket escalated priority bug fix patch version pinned upgrade notes decision because since "
    "until after before meeting agreed follow up owner blocked waiting design doc draft feedback approved "
    "rejected short concise verbose tone formal casual examples bullet points code snippets links sources"
).split()
TAGS = ("work", "home", "urgent", "later", "infra", "people", "sport", "health", "finance", "writing")
EVENTS = ("user_said", "tool_call", "decision", "wrote", "recalled", "note")


def _key(rng: random.Random, i: int) -> str:
    """A varied, valid, unique key: a type-ish prefix, two to four topic words, a short suffix."""
    prefix = rng.choice(("user", "feedback", "project", "ref", "note", "team", "pref"))
    words = "_".join(rng.sample(TOPICS, k=rng.randint(2, 4)))
    return f"{prefix}_{words}_{i:x}"


def _prose(rng: random.Random, size: int) -> str:
    """About ``size`` bytes of sentences, in paragraphs, some as bullet lists."""
    parts: list[str] = []
    total = 0
    while total < size:
        sentence = " ".join(rng.choices(WORDS, k=rng.randint(6, 18))).capitalize() + "."
        if rng.random() < 0.15:
            sentence = "- " + sentence
        parts.append(sentence)
        total += len(sentence) + 1
        if rng.random() < 0.2:
            parts.append("")
    return "\n".join(parts).strip()


def memory_text(rng: random.Random, key: str, *, updated: datetime, revision: int = 1) -> str:
    """One memory file's text (frontmatter and a 200-2,000-byte body) for ``key``, drawn from ``rng``."""
    created = updated - timedelta(days=rng.randrange(0, 60))
    lines = [
        "---",
        f"name: {key.split('_', 1)[1].replace('_', ' ').capitalize()[:80]}",
        f"description: {' '.join(rng.choices(WORDS, k=rng.randint(5, 14)))}",
        f"type: {rng.choice(TYPES)}",
        f"created: '{format_timestamp(created)}'",
        f"updated: '{format_timestamp(updated)}'",
        f"revision: {revision}",
    ]
    if rng.random() < 0.12:
        lines.append(f"decay: {rng.choice(('30d', '90d', 'never'))}")
    if rng.random() < 0.05:
        lines.append("important: true")
    tags = rng.sample(TAGS, k=rng.choice((0, 0, 1, 2, 3)))
    if tags:
        lines.append("tags:")
        lines.extend(f"- {tag}" for tag in tags)
    body = _prose(rng, rng.randint(200, 2_000))
    return "\n".join(lines) + f"\n---\n\n{body}\n"


def _timeline(root: Path, rng: random.Random, days: int, per_day: int) -> None:
    """``days`` day files ending at ``NOW``, ``per_day`` entries each on average, sorted by time."""
    timeline = root / "timeline"
    timeline.mkdir(parents=True, exist_ok=True)
    for back in range(days):
        day = (NOW - timedelta(days=back)).replace(hour=0, minute=0, second=0)
        stamps = sorted(day + timedelta(seconds=rng.randrange(0, 86_400)) for _ in range(rng.randint(1, 2 * per_day)))
        with open(timeline / f"{day:%Y-%m-%d}.jsonl", "w", encoding="utf-8") as fh:
            for ts in stamps:
                entry = {"ts": format_timestamp_ms(ts), "type": rng.choice(EVENTS),
                         "text": " ".join(rng.choices(WORDS, k=rng.randint(3, 12)))}
                fh.write(json.dumps(entry, separators=(",", ":")) + "\n")


def generate_tree(
    root: Path, count: int, *, seed: int = 7, days: int = 90, per_day: int = 20, index: bool = True
) -> list[str]:
    """Write ``count`` memories and ``days`` timeline days under ``root`` (created when missing); the keys, sorted.

    With ``index`` the tree is then opened once: ``MEMORY.md`` written and the derived index built.
    """
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    keys: list[str] = []
    for i in range(count):
        key = _key(rng, i)
        updated = NOW - timedelta(minutes=rng.randrange(0, 60 * 24 * 365))
        (root / f"{key}.md").write_text(memory_text(rng, key, updated=updated, revision=1 + rng.randrange(4)),
                                        encoding="utf-8")
        keys.append(key)
    _timeline(root, rng, days, per_day)
    if index:
        Memory(root, clock=lambda: NOW).init()
    return sorted(keys)


def edit_tree(root: Path, keys: Sequence[str], k: int, *, seed: int = 1, when: datetime | None = None) -> list[str]:
    """Rewrite ``k`` of ``keys`` in place (new body, later ``updated``, next revision), as an agent's
    ``memory write`` of an existing key would; the keys changed, sorted. The index is left to notice."""
    rng = random.Random(seed)
    stamp = when or NOW + timedelta(minutes=seed)
    chosen = sorted(rng.sample(list(keys), k=k))
    for key in chosen:
        path = root / f"{key}.md"
        revision = 1
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.startswith("revision: "):
                revision = int(line.split(": ", 1)[1]) + 1
                break
        path.write_text(memory_text(rng, key, updated=stamp, revision=revision), encoding="utf-8")
    return chosen


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python bench/trees.py DIR COUNT")
    made = generate_tree(Path(sys.argv[1]), int(sys.argv[2]))
    print(f"{len(made)} memories in {sys.argv[1]}")
