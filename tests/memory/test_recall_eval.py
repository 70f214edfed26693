"""The retrieval evaluation of issue 29: a corpus asked in other words, and what recall must find in it.

The corpus (``fixtures/recall-eval/``) and the scoring live in ``retrieval_eval``,
which ``bench/recall_eval.py`` prints; here the corpus is checked to be what it
claims, and the rankings to do what they must: substring recall finds almost
nothing (the questions really are in other words), and recall by meaning is
well ahead. A ranking the installed code does not offer (``semantic`` and
``hybrid`` without the ``semantic`` extra) skips its tests, saying why.
"""

from __future__ import annotations

import shutil
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest

from bundlekit.memory import Memory, MemoryRecord

from . import retrieval_eval as ev

# Floors measured on this corpus with wordllama l2_supercat 256, the model issue 29 names: a scratch
# prototype (cosine over name, description and body, times salience) finds 0.43 first and 0.82 within
# five; weighting cosine 0.9 and BM25 over the query's words 0.1 keeps 0.46 and 0.76. Substring finds
# none. The floors leave room for another fair way of combining scores, not for one where the words
# a paraphrase shares with other memories outweigh what its meaning finds.
SUBSTRING_AT_5_CEILING = 0.10
AHEAD_OF_SUBSTRING_AT_5 = 0.40
MEANING_AT_1_FLOOR = 0.28  # issue 38's corpus of 179 memories (a third of them added then) is harder
HYBRID_BEHIND_SEMANTIC_AT_5 = 0.10  # combining with BM25 may cost recall by meaning this much at most
UNANSWERED = 10  # questions whose answer is in no memory of the tree
OTHER_WORDS_SHARE = 0.75  # of the questions share no word (stopwords aside) with their memory


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the corpus tree: opening a tree builds its derived index beside the files."""
    copy = tmp_path_factory.mktemp("recall-eval") / "tree"
    shutil.copytree(ev.TREE, copy, ignore=shutil.ignore_patterns(".*"))
    return copy


@pytest.fixture(scope="module")
def records(corpus: Path) -> dict[str, MemoryRecord]:
    return {r.key: r for r in Memory(corpus).list()}


@pytest.fixture(scope="module")
def questions() -> list[ev.Question]:
    return ev.load_questions()


@pytest.fixture(scope="module")
def every_score() -> list[ev.Score]:
    return ev.evaluate()


@pytest.fixture(scope="module")
def scores(every_score: list[ev.Score]) -> dict[str, ev.Score]:
    """The held-out split's scores by ranking: what a ranking is judged by (it is tuned on the training split)."""
    return {s.ranking: s for s in every_score if s.split == "held-out"}


def _available(score: ev.Score) -> ev.Score:
    if not score.available:
        pytest.skip(f"{score.ranking} ranking unavailable in the installed code: {score.unavailable}")
    return score


def test_corpus_has_at_least_160_memories_and_180_questions(
    records: dict[str, MemoryRecord], questions: list[ev.Question]
) -> None:
    assert len(records) >= 160
    assert len(questions) >= 180


def test_corpus_holds_questions_no_memory_answers_in_both_splits(questions: list[ev.Question]) -> None:
    unanswered = [q for q in questions if q.expected is None]
    assert len(unanswered) >= UNANSWERED and {q.split for q in unanswered} == set(ev.SPLITS)


def test_each_split_holds_answered_questions_of_every_memory_type(
    records: dict[str, MemoryRecord], questions: list[ev.Question]
) -> None:
    for split in ev.SPLITS:
        types = {records[q.expected].type for q in questions if q.split == split and q.expected is not None}
        assert types == {"user", "feedback", "project", "reference"}, split


def test_every_expected_key_is_a_memory_of_the_corpus(
    records: dict[str, MemoryRecord], questions: list[ev.Question]
) -> None:
    assert sorted({q.expected for q in questions if q.expected is not None} - records.keys()) == []


def test_corpus_tree_passes_check_and_its_index_is_current(corpus: Path) -> None:
    memory = Memory(corpus)
    memory.check()
    assert (corpus / "MEMORY.md").read_text(encoding="utf-8") == memory.index_text()


def test_corpus_holds_every_memory_type(records: dict[str, MemoryRecord]) -> None:
    assert {r.type for r in records.values()} == {"user", "feedback", "project", "reference"}


def test_corpus_holds_distractors_no_question_expects(
    records: dict[str, MemoryRecord], questions: list[ev.Question]
) -> None:
    assert len(records.keys() - {q.expected for q in questions}) >= 5


def test_each_question_is_asked_once(questions: list[ev.Question]) -> None:
    repeated = [text for text, n in Counter(q.text.casefold() for q in questions).items() if n > 1]
    assert repeated == []


def test_questions_are_in_other_words_than_their_memories(
    records: dict[str, MemoryRecord], questions: list[ev.Question]
) -> None:
    answered = [q for q in questions if q.expected is not None]
    sharing = {q.text: ev.shared_words(q.text, records[q.expected]) for q in answered}
    sharing = {text: words for text, words in sharing.items() if words}
    assert 1 - len(sharing) / len(answered) >= OTHER_WORDS_SHARE, sharing


def test_substring_recall_finds_almost_none_of_the_questions(scores: dict[str, ev.Score]) -> None:
    assert scores["substring"].at_depth <= SUBSTRING_AT_5_CEILING


@pytest.mark.parametrize("by_meaning", ["semantic", "hybrid"])
def test_recall_by_meaning_at_5_is_well_ahead_of_substring(
    by_meaning: str, scores: dict[str, ev.Score]
) -> None:
    ahead = scores["substring"].at_depth + AHEAD_OF_SUBSTRING_AT_5
    assert _available(scores[by_meaning]).at_depth >= ahead, ev.table(scores.values())


def test_hybrid_recall_at_1_reaches_its_floor(scores: dict[str, ev.Score]) -> None:
    hybrid = _available(scores["hybrid"])
    assert hybrid.at_1 >= MEANING_AT_1_FLOOR, ev.table(scores.values())


def test_hybrid_recall_at_5_keeps_what_semantic_recall_finds(scores: dict[str, ev.Score]) -> None:
    semantic, hybrid = _available(scores["semantic"]), _available(scores["hybrid"])
    assert hybrid.at_depth >= semantic.at_depth - HYBRID_BEHIND_SEMANTIC_AT_5, ev.table(scores.values())


def test_hybrid_on_the_held_out_split_matches_the_better_of_semantic_and_bm25(scores: dict[str, ev.Score]) -> None:
    hybrid, semantic, bm25 = (_available(scores[name]) for name in ("hybrid", "semantic", "bm25"))
    assert hybrid.at_1 >= max(semantic.at_1, bm25.at_1), ev.table(scores.values())
    assert hybrid.at_depth >= max(semantic.at_depth, bm25.at_depth), ev.table(scores.values())


def test_a_ranking_recall_does_not_offer_is_reported_unavailable_not_scored(
    questions: list[ev.Question],
) -> None:
    [score] = ev.evaluate(questions=questions[:1], rankings={"nonsense": "no-such-rank"})
    assert not score.available
    assert "no-such-rank" in (score.unavailable or "")
    assert (score.first, score.within) == (0, 0)


def test_corpus_memories_were_all_updated_the_day_it_is_asked(records: dict[str, MemoryRecord]) -> None:
    ages = {key: ev.NOW - r.updated for key, r in records.items()}
    assert {key: age for key, age in ages.items() if not timedelta(0) <= age <= timedelta(hours=12)} == {}


def test_an_aged_copy_spreads_the_memories_over_the_days_given(tmp_path: Path) -> None:
    copy = tmp_path / "tree"
    shutil.copytree(ev.TREE, copy, ignore=shutil.ignore_patterns(".*"))
    ev.age(copy, 60)
    ages = [ev.NOW - r.updated for r in Memory(copy).list()]
    assert all(timedelta(0) <= age <= timedelta(days=60) for age in ages)
    assert max(ages) - min(ages) > timedelta(days=30)


NOT_QUESTIONS = [
    '{"question": "Where?"}', '["Where?", "user_role"]', '{"question": 1, "expected": "x"}',
    '{"question": "Where?", "expected": 3}', '{"question": "Where?", "expected": "x", "split": "test"}',
]


@pytest.mark.parametrize("line", NOT_QUESTIONS)
def test_a_questions_line_without_question_and_key_strings_is_refused(tmp_path: Path, line: str) -> None:
    path = tmp_path / "questions.jsonl"
    path.write_text('{"question": "Where?", "expected": "user_role"}\n' + line + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="questions.jsonl line 2"):
        ev.load_questions(path)
