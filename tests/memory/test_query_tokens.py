"""The query's token ids cached per word (``memory/query_tokens``), with the real wordllama tokenizer: the
vector from cached ids is the vector of the whole text, a hit tokenizes nothing, another model or a hostile
cache file is a miss, and a fresh recall whose words were seen never loads the tokenizer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from bundlekit.embed import wordllama
from bundlekit.embed.wordllama import WordLlamaEmbedder, joinable
from bundlekit.memory import Memory
from bundlekit.memory.query_tokens import CACHE_FILE, MAX_BYTES, _read, query_ids, query_vector
from tests.embed.trees import write_memories

# Texts the tokenizer's merges could join across a word: accents, CJK, emoji (byte fallback), apostrophes,
# punctuation runs, digits, a tab inside a word, a zero-width space, ligatures.
TEXTS = (
    "which drills help a tired striker",
    "naïve café 東京 🚀 emoji",
    "don't won’t it's",
    "C++ & Rust !! ?? ...",
    "1,000.5 $$ 3.14159",
    "a\tb c",
    "\u200b zero width",
    "ÄÖÜ ß ﬁ ligature",
    "x",
)


class Counting(WordLlamaEmbedder):
    """The real embedder, recording the words it tokenizes."""

    def __init__(self) -> None:
        super().__init__()
        self.tokenized: list[str] = []

    def word_ids(self, words: Sequence[str]) -> list[list[int]]:
        self.tokenized.extend(words)
        return super().word_ids(words)


@pytest.fixture
def embedder() -> Counting:
    return Counting()


@pytest.mark.parametrize("text", TEXTS)
def test_word_by_word_ids_are_the_whole_texts_ids(embedder: Counting, text: str) -> None:
    _table, tokenizer = embedder._load()
    words = joinable(text)
    assert words is not None
    assert [i for ids in embedder.word_ids(words) for i in ids] == tokenizer.encode(text, add_special_tokens=False).ids


@pytest.mark.parametrize("text", ["two  spaces", " leading", "trailing ", "", "an <s> added token", "a\u2581 b"])
def test_texts_whose_words_could_tokenize_otherwise_are_not_joinable(text: str) -> None:
    assert joinable(text) is None


@pytest.mark.parametrize("text", TEXTS)
def test_the_cached_vector_is_the_embedded_vector(embedder: Counting, tmp_path: Path, text: str) -> None:
    miss = query_vector(embedder, tmp_path, text)
    hit = query_vector(embedder, tmp_path, text)
    assert miss is not None and hit is not None
    assert np.array_equal(np.asarray([miss], dtype=np.float32), embedder.embed([text])) and hit == miss


def test_a_long_questions_vector_is_the_embedded_vector_summed_by_numpy_or_in_python(
    embedder: Counting, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # past wordllama._NUMPY_ROWS tokens numpy sums the rows read; the floats are those of the row-by-row sum in
    # Python and of embed, to the bit
    text = " ".join(f"drill{n} striker tired" for n in range(400))
    ids = query_ids(embedder, tmp_path, text)
    assert ids is not None and wordllama._NUMPY_ROWS < len(ids) <= wordllama.MAX_TOKENS
    by_numpy = query_vector(embedder, tmp_path, text)
    monkeypatch.setattr(wordllama, "_NUMPY_ROWS", len(ids))
    in_python = query_vector(embedder, tmp_path, text)
    assert by_numpy is not None and by_numpy == in_python
    assert np.array_equal(np.asarray([by_numpy], dtype=np.float32), embedder.embed([text]))


def test_a_hit_tokenizes_nothing_and_a_new_word_only_itself(embedder: Counting, tmp_path: Path) -> None:
    query_ids(embedder, tmp_path, "tired striker drills")
    assert sorted(embedder.tokenized) == ["drills", "striker", "tired"]
    embedder.tokenized.clear()
    query_ids(embedder, tmp_path, "drills for a striker")
    assert sorted(embedder.tokenized) == ["a", "for"]
    embedder.tokenized.clear()
    query_ids(embedder, tmp_path, "striker drills")
    assert embedder.tokenized == []


def test_ids_of_another_model_or_tokenizer_are_not_used(embedder: Counting, tmp_path: Path) -> None:
    query_ids(embedder, tmp_path, "tired striker")
    cached = json.loads((tmp_path / CACHE_FILE).read_text())
    cached["key"] = cached["key"].replace("wordllama-", "wordllama-other-")
    cached["words"] = {"tired": [5], "striker": [6]}
    (tmp_path / CACHE_FILE).write_text(json.dumps(cached))
    embedder.tokenized.clear()
    assert query_ids(embedder, tmp_path, "tired striker") == embedder.word_ids(["tired"])[0] + embedder.word_ids(["striker"])[0]
    assert sorted(embedder.tokenized) == ["striker", "striker", "tired", "tired"]


@pytest.mark.parametrize(
    "content",
    [b"not json", b"[1, 2]", b'{"key": 1}', b" " * (MAX_BYTES + 1), None],
    ids=["garbage", "a list", "no words", "too big", "negative ids"],
)
def test_a_hostile_cache_file_is_a_miss(embedder: Counting, tmp_path: Path, content: bytes | None) -> None:
    if content is None:
        content = json.dumps({"key": embedder.tokens_key, "words": {"striker": [-1, 7]}}).encode()
    (tmp_path / CACHE_FILE).write_bytes(content)
    vector = query_vector(embedder, tmp_path, "striker")
    assert vector is not None and np.array_equal(np.asarray([vector], dtype=np.float32), embedder.embed(["striker"]))
    assert embedder.tokenized == ["striker"]


def test_a_fifo_or_a_symlink_in_place_of_the_cache_is_a_miss_without_a_hang(embedder: Counting, tmp_path: Path) -> None:
    os.mkfifo(tmp_path / CACHE_FILE)
    assert _read_words(embedder, tmp_path) == {}
    assert query_ids(embedder, tmp_path, "striker") == embedder.word_ids(["striker"])[0]
    (tmp_path / CACHE_FILE).unlink()
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(json.dumps({"key": embedder.tokens_key, "words": {"striker": [7]}}))
    (tmp_path / CACHE_FILE).symlink_to(elsewhere)
    assert _read_words(embedder, tmp_path) == {}


def _read_words(embedder: Counting, directory: Path) -> dict[str, list[int]]:
    return _read(directory / CACHE_FILE, embedder.tokens_key)


def test_a_fresh_recall_of_seen_words_never_loads_the_tokenizer(tmp_path: Path) -> None:
    tree = tmp_path / "memory"
    write_memories(Memory(tree))
    script = (
        "import sys; from pathlib import Path; from bundlekit.memory import Memory\n"
        f"m = Memory(Path({str(tree)!r})); hits = m.recall('tired striker', rank='hybrid')\n"
        "print(hits[0].key, 'tokenizers' in sys.modules)"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(Path.cwd()), os.environ.get("PYTHONPATH")]))}
    first = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    second = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    assert first.stdout.split()[1] == "True" and second.stdout.split()[1] == "False"
    assert first.stdout.split()[0] == second.stdout.split()[0]
