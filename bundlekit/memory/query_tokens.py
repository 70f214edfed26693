"""The query's token ids, kept per word in the derived index's directory, so a fresh recall skips the tokenizer.

Loading WordLlama's tokenizer costs a fresh process some 80 ms of CPU and 24 MB; a query's vector needs only
its words' token ids and the memory-mapped token table. The ids of a text of words joined by single spaces
are each word's ids concatenated (``embed.wordllama.joinable`` says when, and why), so they are kept per
word in ``query-tokens.json`` beside the index (derived data: it ranks, never decides bytes), under the
model and tokenizer file they came from (``WordLlamaEmbedder.tokens_key``): another key reads as empty.
The file is read bounded (:data:`MAX_BYTES`, a regular file only, never through a symlink or a FIFO), anything unexpected in it is a miss, and it holds at most
:data:`MAX_WORDS` words (a full file starts again). A miss tokenizes the missing words and writes the file;
a file that cannot be written is left as it is (the vector is the same either way).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from bundlekit._fs import atomic_write_bytes, open_regular, read_up_to
from bundlekit.embed.wordllama import WordLlamaEmbedder, joinable
from bundlekit.errors import BundlekitError, MemoryStoreError

__all__ = ["CACHE_FILE", "MAX_BYTES", "MAX_WORDS", "query_ids", "query_vector"]

CACHE_FILE = "query-tokens.json"
MAX_BYTES = 1 << 20
MAX_WORDS = 4096


def query_vector(embedder: WordLlamaEmbedder, directory: Path | None, text: str) -> list[float] | None:
    """The vector of ``text`` (``WordLlamaEmbedder.mean_vector``: no numpy) from cached token ids
    (:func:`query_ids`), or None when ``text`` is not made of joinable words (the caller embeds it whole)."""
    ids = query_ids(embedder, directory, text)
    return None if ids is None else embedder.mean_vector(ids)


def query_ids(embedder: WordLlamaEmbedder, directory: Path | None, text: str) -> list[int] | None:
    """The token ids of ``text``, word by word from the cache in ``directory`` (None: no file, tokenize the
    missing words only), or None when ``text`` is not joinable."""
    words = joinable(text)
    if words is None:
        return None
    key = embedder.tokens_key
    path = None if directory is None else directory / CACHE_FILE
    known = _read(path, key) if path is not None else {}
    missing = sorted({w for w in words if w not in known})
    if missing:
        if len(known) + len(missing) > MAX_WORDS:
            known = {}
        known.update(zip(missing, embedder.word_ids(missing)))
        if path is not None:
            _write(path, key, known)
    return [i for w in words for i in known[w]]


def _read(path: Path, key: str) -> dict[str, list[int]]:
    """The cached words of ``key`` in ``path``; empty when it is absent, too big, of another key or not ours."""
    try:  # not blocking on a FIFO put in its place, never following a symlink, a regular file only
        fd = open_regular(path)
        try:
            raw = read_up_to(fd, MAX_BYTES + 1)
        finally:
            os.close(fd)
        data = json.loads(raw) if 0 < len(raw) <= MAX_BYTES else None
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("key") != key or not isinstance(data.get("words"), dict):
        return {}
    words = data["words"]
    if len(words) > MAX_WORDS or not all(
        isinstance(ids, list) and all(type(i) is int and i >= 0 for i in ids) for ids in words.values()
    ):
        return {}
    return {str(w): ids for w, ids in words.items()}


def _write(path: Path, key: str, words: dict[str, list[int]]) -> None:
    data = json.dumps({"key": key, "words": words}, ensure_ascii=True, separators=(",", ":")).encode()
    if len(data) > MAX_BYTES or not path.parent.is_dir():
        return
    try:
        atomic_write_bytes(path, data, error=MemoryStoreError, sync_dir=False)
    except BundlekitError:
        return  # a cache: the vector is the same without it
