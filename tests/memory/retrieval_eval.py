"""The retrieval evaluation (issue 29): does ``recall`` find a memory asked for in other words?

The corpus is ``fixtures/recall-eval/``: ``tree/``, a memory tree of one
agent's memories (every type, several domains, with distractors on nearby
topics that no question expects), and ``questions.jsonl``, one question a line
with the key of the memory that answers it (``{"question": ..., "expected":
...}``). The questions are written in other words than the memories, as a user
asks (synonyms, paraphrases); :func:`shared_words` measures how far.

For each ranking, :func:`evaluate` asks every question through the public API
(``Memory.recall(question, limit=5, rank=...)``) on a copy of the tree and
counts recall@1 (the expected memory is the first hit) and recall@5 (it is
among the first five). A ranking the installed code does not offer (a rank
``recall`` does not list, or one it refuses with a ``UsageError``, as
``semantic`` is refused without its extra) is reported unavailable with the
reason, never scored.

Shared by ``tests/memory/test_recall_eval.py`` (which asserts) and
``bench/recall_eval.py`` (which prints); it imports only ``bundlekit`` and the
standard library, so the bench loads it by its path.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bundlekit.errors import UsageError
from bundlekit.memory import Memory, MemoryRecord, ranking

__all__ = [
    "CORPUS",
    "DEPTH",
    "NOW",
    "QUESTIONS",
    "MRR_DEPTH",
    "RANKINGS",
    "SPLITS",
    "TREE",
    "Question",
    "Score",
    "age",
    "evaluate",
    "load_questions",
    "shared_words",
    "table",
]

CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "recall-eval"
TREE = CORPUS / "tree"
QUESTIONS = CORPUS / "questions.jsonl"

# Every memory of the corpus was written on 2026-05-04 between 09:00 and 12:36 UTC; the evaluation
# asks at 18:00 that day, so recency (a 7-day half-life) differs by under 2 % between memories and
# the order is decided by what each ranking matches, times salience, not by the age of the files.
NOW = datetime(2026, 5, 4, 18, 0, tzinfo=UTC)

DEPTH = 5  # recall@DEPTH; recall@1 is the first of the same hits

# The evaluation's name for each ranking -> the ``rank`` that ``Memory.recall`` takes for it.
# "substring" is the default ranking of today: the folded query as one substring, salience x recency.
# "bm25" is ``rank="relevance"``: the same candidates, times the BM25 term of the derived index.
RANKINGS: Mapping[str, str] = {
    "substring": "salience",
    "bm25": "relevance",
    "semantic": "semantic",
    "hybrid": "hybrid",
}

# Words that carry no topic: a question sharing only these with its memory is in other words.
_STOPWORDS = frozenset(
    """a about after all am an and any anyone are as at be before but by can could did do does for from get
    gets getting go going good had has have he her hers him his how i if in into is it its i'm it's me my
    next of on or our out she should so some something that the their them there they this to up us was
    way we what what's when where where's which while who why will with would you your""".split()
)


SPLITS = ("train", "held-out")  # rankings are tuned on "train" only; "held-out" is what they are judged by
MRR_DEPTH = 10  # the mean reciprocal rank counts the expected memory's place among this many hits


@dataclass(frozen=True)
class Question:
    """One question of the corpus, the key of the memory that answers it (None: nothing in the tree does, and
    the right answer is the weakest score) and its split (:data:`SPLITS`)."""

    text: str
    expected: str | None
    split: str = "train"


@dataclass(frozen=True)
class Score:
    """One ranking's result: recall@1 and recall@DEPTH, or why the ranking could not be asked."""

    ranking: str
    rank: str
    questions: int  # questions with an answer in the tree
    first: int = 0  # questions whose expected memory was the first hit
    within: int = 0  # questions whose expected memory was among the first DEPTH hits
    unavailable: str | None = None  # the reason, when the installed code does not offer the ranking
    split: str = "train"
    reciprocal: float = 0.0  # the sum over questions of 1 / the expected memory's place (0 past MRR_DEPTH)
    weakest: float | None = None  # of (answered, unanswered) pairs, the share where the unanswered one's best
    # hit scores lower (None without unanswered questions): 1.0 when a threshold can cut every one of them

    @property
    def mrr(self) -> float:
        return self.reciprocal / self.questions

    @property
    def available(self) -> bool:
        return self.unavailable is None

    @property
    def at_1(self) -> float:
        return self.first / self.questions

    @property
    def at_depth(self) -> float:
        return self.within / self.questions


def load_questions(path: Path = QUESTIONS) -> list[Question]:
    """The questions of ``path`` (JSON Lines: ``question`` and ``expected`` strings), in file order."""
    questions = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        row = json.loads(line)
        if not (isinstance(row, dict) and isinstance(row.get("question"), str) and "expected" in row
                and (row["expected"] is None or isinstance(row["expected"], str))
                and row.get("split", "train") in SPLITS):
            raise ValueError(f"{path.name} line {number}: not an object of a 'question' string, an 'expected' "
                             f"key or null and a 'split' of {', '.join(SPLITS)}")
        questions.append(Question(row["question"], row["expected"], row.get("split", "train")))
    return questions


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[^\W_]+(?:'[^\W_]+)?", text.casefold()) if w not in _STOPWORDS}


def shared_words(question: str, record: MemoryRecord) -> set[str]:
    """The words (whole, case-folded, stopwords left out) ``question`` shares with the memory's
    name, description and body: empty when the question is in other words."""
    return _words(question) & _words(f"{record.name}\n{record.description}\n{record.body}")


def _unavailable(memory: Memory, rank: str, probe: str) -> str | None:
    """Why ``recall`` cannot rank by ``rank`` here, or None when it can."""
    if rank not in ranking.RANKS:
        return f"recall offers no rank {rank!r} here (ranks: {', '.join(ranking.RANKS)})"
    try:
        memory.recall(probe, limit=DEPTH, rank=rank)
    except UsageError as refused:
        return str(refused)
    return None


def _score(memory: Memory, name: str, rank: str, questions: Sequence[Question], split: str) -> Score:
    answered = [q for q in questions if q.expected is not None]
    reason = _unavailable(memory, rank, questions[0].text)
    if reason is not None:
        return Score(name, rank, len(answered), unavailable=reason, split=split)
    first = within = 0
    reciprocal = 0.0
    best: dict[bool, list[float]] = {True: [], False: []}  # the best hit's score, by "has an answer"
    for question in questions:
        hits = memory.recall(question.text, limit=MRR_DEPTH, rank=rank)
        best[question.expected is not None].append(hits[0].score if hits else 0.0)
        keys = [hit.key for hit in hits]
        if question.expected is None:
            continue
        first += keys[:1] == [question.expected]
        within += question.expected in keys[:DEPTH]
        reciprocal += 1 / (keys.index(question.expected) + 1) if question.expected in keys else 0.0
    pairs = [(a, u) for a in best[True] for u in best[False]]
    weakest = sum(1.0 if u < a else 0.5 if u == a else 0.0 for a, u in pairs) / len(pairs) if pairs else None
    return Score(name, rank, len(answered), first, within, split=split, reciprocal=reciprocal, weakest=weakest)


_TIMES = re.compile(r"^(created|updated): .*$", re.MULTILINE)


def age(tree: Path, days: float) -> None:
    """Date the memories of ``tree`` over the ``days`` before :data:`NOW` instead of the same day.

    Each memory's ``created`` and ``updated`` become ``NOW`` minus a fraction of ``days`` drawn from
    the SHA-256 of its key (the same for every run, unrelated to its type or topic), as a tree used
    for months holds memories of every age. Only the frontmatter's time lines change.
    """
    for path in sorted(tree.glob("*.md")):
        if path.name == "MEMORY.md":
            continue
        fraction = int.from_bytes(hashlib.sha256(path.stem.encode()).digest()[:8], "big") / 2**64
        when = (NOW - timedelta(days=days * fraction)).strftime("%Y-%m-%dT%H:%M:%SZ")
        text = path.read_text(encoding="utf-8")
        path.write_text(_TIMES.sub(lambda m: f"{m.group(1)}: {when}", text, count=2), encoding="utf-8")


def evaluate(
    tree: Path = TREE,
    questions: Sequence[Question] | None = None,
    rankings: Mapping[str, str] = RANKINGS,
    *,
    aged_days: float = 0.0,
) -> list[Score]:
    """Score every ranking of ``rankings`` on ``questions`` (default: the corpus's) over ``tree``.

    The tree is copied to a temporary directory first: recall builds its derived index (and, where
    a ranking embeds, its vectors) beside the files, and the committed corpus stays as committed.
    With ``aged_days``, the copy's memories are dated over that many days before :data:`NOW`
    (:func:`age`): what recency does to each ranking in a tree kept for months.
    """
    asked = load_questions() if questions is None else list(questions)
    if not asked:
        raise ValueError("the evaluation needs at least one question")
    with tempfile.TemporaryDirectory(prefix="recall-eval-") as scratch:
        copy = Path(scratch) / "tree"
        shutil.copytree(tree, copy, ignore=shutil.ignore_patterns(".*"))
        if aged_days:
            age(copy, aged_days)
        memory = Memory(copy, clock=lambda: NOW)
        splits = [split for split in SPLITS if any(q.split == split for q in asked)]
        return [_score(memory, name, rank, [q for q in asked if q.split == split], split)
                for split in splits for name, rank in rankings.items()]


def table(scores: Iterable[Score]) -> str:
    """The scores as a plain-text table: one line a split and ranking, recall@1 and recall@DEPTH as fractions,
    the MRR, and how often an unanswered question's best hit scores below an answered one's."""
    lines = [f"{'split':<9} {'ranking':<10} {'rank=':<10} {'recall@1':>14} {f'recall@{DEPTH}':>14} "
             f"{f'MRR@{MRR_DEPTH}':>7} {'no-answer weakest':>17}"]
    for s in scores:
        if s.available:
            weakest = "-" if s.weakest is None else f"{s.weakest:.2f}"
            lines.append(
                f"{s.split:<9} {s.ranking:<10} {s.rank:<10} {s.at_1:>6.2f} ({s.first:>3}/{s.questions})"
                f" {s.at_depth:>6.2f} ({s.within:>3}/{s.questions}) {s.mrr:>7.3f} {weakest:>17}"
            )
        else:
            lines.append(f"{s.split:<9} {s.ranking:<10} {s.rank:<10} unavailable: {s.unavailable}")
    return "\n".join(lines)
