"""Retrieval evaluation (issue 29): recall@1 and recall@5 of each ranking on questions asked in other words.

The corpus is ``fixtures/recall-eval/`` (a memory tree and one question a line
with the memory that answers it); the scoring is ``tests/memory/retrieval_eval.py``,
the module ``tests/memory/test_recall_eval.py`` asserts with. Printed, never
asserted: one line a ranking (substring, BM25, semantic, hybrid), or why the
installed code does not offer it (semantic and hybrid need the ``semantic``
extra).

Two runs of the same questions: ``fresh``, the corpus as committed (every
memory written the same day, so the order is decided by what a ranking
matches, times salience), and ``aged``, the same memories dated over the
``--aged-days`` before the question (what recency's 7-day half-life does to a
tree kept for months).

    python bench/recall_eval.py [--aged-days 60]
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def load_evaluation() -> ModuleType:
    """``tests/memory/retrieval_eval.py``, loaded by its path (``tests`` is no package on the path)."""
    path = ROOT / "tests" / "memory" / "retrieval_eval.py"
    spec = importlib.util.spec_from_file_location("retrieval_eval", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--aged-days", type=float, default=60.0, help="aged run's spread (0: none)")
    args = parser.parse_args()
    ev = load_evaluation()
    questions = ev.load_questions()
    memories = sum(1 for p in ev.TREE.glob("*.md") if p.name != "MEMORY.md")
    print(f"corpus: {memories} memories, {len(questions)} questions ({ev.CORPUS.relative_to(ROOT)})")
    print(f"\nfresh: every memory written on {ev.NOW:%Y-%m-%d}, asked at {ev.NOW:%H:%M} UTC")
    print(ev.table(ev.evaluate(questions=questions)))
    if args.aged_days:
        print(f"\naged: memories dated over the {args.aged_days:g} days before the question")
        print(ev.table(ev.evaluate(questions=questions, aged_days=args.aged_days)))


if __name__ == "__main__":
    main()
