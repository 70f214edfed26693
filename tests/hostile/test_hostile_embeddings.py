"""Hostile inputs on the surfaces of recall by meaning: a foreign bundle's embeddings (its manifest entry and
its vectors file: wrong length, NaN, huge, odd model ids), an OpenAI-compatible endpoint's answers, and
vectors planted in a tree's derived index. Each is refused with a clear error or left out with a warning;
the memories themselves always load and recall."""

from __future__ import annotations

import copy
import subprocess
import sys
import time
import sqlite3
from collections.abc import Callable, Sequence
from contextlib import closing
from importlib import metadata
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bundlekit.bundle import embeddings as bundle_embeddings
from bundlekit.bundle.build import BuildOptions, build_bundle
from bundlekit.bundle.load import load_bundle
from bundlekit.bundle.manifest import parse_created, validate_manifest
from bundlekit.embed import registry
from bundlekit.embed.openai import OpenAIEmbedder
from bundlekit.embed.protocol import EmbedderSettings
from bundlekit.errors import EmbedderError, ManifestError
from bundlekit.memory import Memory
from bundlekit.net.http import HttpOptions, RetryPolicy
from tests.embed.counting import CountingEmbedder
from tests.embed.fake_openai import fake_endpoint, send_json
from tests.embed.trees import memory_tree


@pytest.fixture
def source(tmp_path: Path) -> Path:
    return memory_tree(tmp_path / "agent", ("reel", "drinks"))


@pytest.fixture
def manifest(source: Path, tmp_path: Path) -> dict[str, Any]:
    built = build_bundle(Memory(source, embedder=CountingEmbedder()), tmp_path / "b.car",
                         options=BuildOptions(created=parse_created("2026-04-14T12:00:00Z"), embeddings=True))
    return built.manifest


def _doctored(manifest: dict[str, Any], **changes: Any) -> dict[str, Any]:
    forged = copy.deepcopy(manifest)
    forged["embeddings"].update(changes)
    return forged


@pytest.mark.parametrize("model", [
    "model\nwith a line break", "quote'd", "back\\slash", "x" * 201, "", "\u202eevil", 42, None, ["a"],
])
def test_a_model_id_that_is_not_printable_ascii_is_refused(manifest: dict[str, Any], model: Any) -> None:
    with pytest.raises(ManifestError, match="model"):
        validate_manifest(_doctored(manifest, model=model))


@pytest.mark.parametrize("dimension", [0, -1, 8193, 2**63, True, 256.0, "256", None])
def test_a_dimension_out_of_range_or_of_another_type_is_refused(manifest: dict[str, Any], dimension: Any) -> None:
    with pytest.raises(ManifestError, match="dimension"):
        validate_manifest(_doctored(manifest, dimension=dimension))


@pytest.mark.parametrize("keys", [
    ["drinks", "drinks"], ["drinks", 7], "drinks reel", [""], ["k" * 201], ["k"] * 10_000, None,
])
def test_keys_that_are_not_distinct_strings_one_per_file_at_most_are_refused(
    manifest: dict[str, Any], keys: Any
) -> None:
    with pytest.raises(ManifestError, match="keys|vectors"):
        validate_manifest(_doctored(manifest, keys=keys))


def test_a_vectors_file_whose_size_is_not_the_listed_vectors_is_refused(manifest: dict[str, Any]) -> None:
    with pytest.raises(ManifestError, match="not the .* bytes"):
        validate_manifest(_doctored(manifest, keys=["reel"]))  # 2 vectors' bytes listed for one key


@pytest.mark.parametrize("path", ["memory/reel.md", "memory/embeddings.f16.enc", "../embeddings.f16", None])
def test_an_embeddings_path_other_than_the_one_file_is_refused(manifest: dict[str, Any], path: Any) -> None:
    with pytest.raises(ManifestError, match="path"):
        validate_manifest(_doctored(manifest, path=path))


def test_an_embeddings_entry_of_another_type_or_dtype_is_refused(manifest: dict[str, Any]) -> None:
    with pytest.raises(ManifestError, match="dtype"):
        validate_manifest(_doctored(manifest, dtype="float64"))
    forged = copy.deepcopy(manifest)
    forged["embeddings"] = ["not", "an", "object"]
    with pytest.raises(ManifestError, match="not an object"):
        validate_manifest(forged)


def _bundle_with_vectors(source: Path, car: Path, monkeypatch: pytest.MonkeyPatch, vectors: bytes,
                         keys: list[str] | None = None) -> None:
    """A bundle whose vectors file holds ``vectors`` (the publisher's choice), listed for ``keys``."""
    real = bundle_embeddings.embeddings_file

    def forged(mem: Memory, tree_files: Any) -> Any:
        (name, _blob), fields = real(mem, tree_files)
        return (name, vectors), {**fields, "keys": keys if keys is not None else fields["keys"]}

    monkeypatch.setattr("bundlekit.bundle.build.embeddings_file", forged)
    build_bundle(Memory(source, embedder=CountingEmbedder()), car,
                 options=BuildOptions(created=parse_created("2026-04-14T12:00:00Z"), embeddings=True))


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_vectors_holding_nan_or_infinity_are_left_out_and_the_memories_load(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: float
) -> None:
    _bundle_with_vectors(source, tmp_path / "b.car", monkeypatch, np.full(2 * 256, value, dtype="<f2").tobytes())
    loaded = load_bundle(str(tmp_path / "b.car"), out_dir=tmp_path / "out")
    assert len(loaded.warnings) == 1 and "NaN or infinity" in loaded.warnings[0]
    assert {"reel.md", "drinks.md"} <= set(loaded.files)
    hits = Memory(tmp_path / "out", embedder=CountingEmbedder()).recall("where are the videos", rank="semantic")
    assert hits[0].key == "reel"  # computed here, from the files


def test_huge_finite_vectors_are_scaled_not_trusted(source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _bundle_with_vectors(source, tmp_path / "b.car", monkeypatch, np.full(2 * 256, 65504, dtype="<f2").tobytes())
    assert load_bundle(str(tmp_path / "b.car"), out_dir=tmp_path / "out").warnings == []
    hits = Memory(tmp_path / "out", embedder=CountingEmbedder()).recall("x", rank="semantic", limit=5)
    assert all(abs(hit.similarity) <= 1.0 + 1e-3 for hit in hits)  # unit length: cosines stay cosines


def test_keys_naming_memories_the_bundle_lacks_are_ignored(source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blob = np.ones(2 * 256, dtype="<f2").tobytes()
    _bundle_with_vectors(source, tmp_path / "b.car", monkeypatch, blob, keys=["ghost", "reel"])
    assert load_bundle(str(tmp_path / "b.car"), out_dir=tmp_path / "out").warnings == []
    with sqlite3.connect(tmp_path / "out" / ".bundlekit" / "index.sqlite") as conn:
        keys = [r[0] for r in conn.execute("SELECT m.key FROM vector v JOIN memory m ON m.id = v.id")]
    assert keys == ["reel"]


def test_vectors_planted_in_the_index_cannot_break_recall(source: Path) -> None:
    mem = Memory(source, embedder=CountingEmbedder())
    mem.recall("x", rank="semantic")
    mem.close()
    with sqlite3.connect(source / ".bundlekit" / "index.sqlite") as conn:
        conn.execute("UPDATE vector SET vec = ? WHERE id = (SELECT min(id) FROM vector)", (b"\xff" * 7,))
        conn.execute("UPDATE vector SET vec = ? WHERE id = (SELECT max(id) FROM vector)",
                     (np.full(256, np.nan, dtype="<f2").tobytes(),))
    # The vector file of that index state (memory/vecfile) holds the vectors as the first recall read them: a
    # hand edit of the index moves no generation, so it goes too, and the planted rows are read.
    (source / ".bundlekit" / "vectors.bin").unlink()
    embedder = CountingEmbedder()
    hits = Memory(source, embedder=embedder).recall("where are the videos", rank="hybrid")
    assert all(np.isfinite(hit.score) for hit in hits)
    assert embedder.texts == 3  # the vectors of the one of the wrong length computed again, then the query


def test_a_huge_query_is_embedded_and_searched_from_its_start(source: Path) -> None:
    mem = Memory(source, embedder=CountingEmbedder())
    hits = mem.recall("where are the match videos " + "x" * 1_000_000 + " clip" * 100_000, rank="hybrid")
    assert hits and hits[0].key == "reel"


def test_a_huge_memory_is_embedded_from_its_start_within_bounds(tmp_path: Path) -> None:
    mem = Memory(tmp_path / "big", embedder=CountingEmbedder())
    mem.write("huge", name="Huge", description="a very long note", type="project",
              body="football practice notes " * 170_000)  # 4.1 MB, just under the 4 MiB bound: ~800,000 tokens
    mem.write("small", name="Small", description="tea", type="project", body="The user drinks green tea.")
    assert mem.recall("soccer training", rank="semantic")[0].key == "huge"


# -- an OpenAI-compatible endpoint's answers -----------------------------------------------------------------

Answer = Callable[[BaseHTTPRequestHandler, dict[str, Any]], None]


def _answer(body: Any) -> Answer:
    return lambda handler, _request: send_json(handler, 200, body)


def _one(vector: Any, index: Any = 0) -> dict[str, Any]:
    return {"object": "list", "data": [{"object": "embedding", "embedding": vector, "index": index}]}


@pytest.mark.parametrize("body", [
    b'{"object": "list", "data": [{"embedding": [NaN, 1.0], "index": 0}]}',
    b'{"object": "list", "data": [{"embedding": [Infinity, 1.0], "index": 0}]}',
    _one([1e308, 1.0]), _one([True, 0.5]), _one(["0.5", 0.5]), _one([]), _one([0.1] * 8193), _one({"0": 0.1}),
    _one([0.1, 0.2], index=1), _one([0.1, 0.2], index=-1), _one([0.1, 0.2], index=True), _one([0.1, 0.2], index="0"),
    {"object": "list", "data": [{"embedding": [0.1], "index": 0}, {"embedding": [0.1], "index": 0}]},
    {"object": "list", "data": "everything"}, {"data": None}, [], "a string", 42,
    b"[" * 100_000 + b"]" * 100_000,
    b"\xff\xfe garbage",
])
def test_an_endpoint_answer_that_is_not_one_finite_vector_per_text_is_an_embedder_error(body: Any) -> None:
    with fake_endpoint() as fake:
        fake.answers.append(_answer(body))
        with OpenAIEmbedder(fake.url, "m", http=HttpOptions(retry=RetryPolicy(attempts=1))) as embedder:
            with pytest.raises(EmbedderError):
                embedder.embed(["alpha"])


def test_an_endpoint_error_message_is_cut_short_and_shown_printable() -> None:
    message = "\x1b[31mred\x1b[0m " + "x" * 10_000

    def bad(handler: BaseHTTPRequestHandler, _request: dict[str, Any]) -> None:
        send_json(handler, 400, {"error": {"message": message, "type": "invalid_request_error"}})

    with fake_endpoint() as fake:
        fake.answers.append(bad)
        with OpenAIEmbedder(fake.url, "m", http=HttpOptions(retry=RetryPolicy(attempts=1))) as embedder:
            with pytest.raises(EmbedderError) as info:
                embedder.embed(["alpha"])
    assert "\x1b" not in str(info.value) and len(str(info.value)) < 600


def test_an_endpoint_url_with_a_query_keeps_the_embeddings_path_out_of_it() -> None:
    with fake_endpoint() as fake:
        with OpenAIEmbedder(f"{fake.url}/?api-version=2024-02-01#part", "m") as embedder:
            embedder.embed(["alpha"])
    assert fake.targets == ["/v1/embeddings?api-version=2024-02-01"]


def test_an_endpoint_that_trickles_its_answer_is_cut_off_at_the_default_deadline() -> None:
    ticks = iter(range(0, 10**9, 100))  # each look at the clock: 100 s later

    def trickle(handler: BaseHTTPRequestHandler, _request: dict[str, Any]) -> None:
        handler.send_response(200)
        handler.send_header("Content-Length", "100000")
        handler.end_headers()
        try:
            for _ in range(200):  # one byte at a time, each well within the read timeout
                handler.wfile.write(b" ")
                handler.wfile.flush()
                time.sleep(0.01)
        except OSError:
            pass  # the client gave up: what the test wants

    with fake_endpoint() as fake:
        fake.answers.append(trickle)
        options = HttpOptions(retry=RetryPolicy(attempts=1), monotonic=lambda: float(next(ticks)))
        with OpenAIEmbedder(fake.url, "m", http=options) as embedder:
            with pytest.raises(EmbedderError, match="deadline"):
                embedder.embed(["alpha"])


# -- a third-party embedder (foreign code behind an entry point) --------------------------------------------


class Misbehaving:
    """An embedder whose ``embed`` does one wrong thing: ``how`` names it."""

    name = "misbehaving"
    model_id = "misbehaving-1"

    def __init__(self, how: str, dimension: Any = 4) -> None:
        self.how = how
        self.dimension = dimension

    def embed(self, texts: Sequence[str]) -> Any:
        n = len(texts)
        answers: dict[str, Callable[[], Any]] = {
            "fine": lambda: np.ones((n, 4), dtype=np.float32),
            "raises": lambda: 1 / 0,
            "objects": lambda: np.array([object()] * n * 4, dtype=object).reshape(n, 4),
            "strings": lambda: [["a"] * 4 for _ in texts],
            "none": lambda: None,
            "no rows for one text": lambda: np.ones((0 if n == 1 else n, 4), dtype=np.float32),
            "one row too many": lambda: np.ones((n + 1, 4), dtype=np.float32),
        }
        return answers[self.how]()

    def close(self) -> None:
        pass


@pytest.mark.parametrize("how", ["raises", "objects", "strings", "none", "no rows for one text", "one row too many"])
def test_an_embedder_that_raises_or_answers_wrongly_is_an_embedder_error_naming_it(source: Path, how: str) -> None:
    with closing(Memory(source, embedder=Misbehaving(how))) as mem, pytest.raises(EmbedderError, match="misbehaving"):
        mem.recall("reel", rank="semantic")


@pytest.mark.parametrize("dimension", ["4", -1, 0, True, 10**12, 4.0])
def test_an_embedder_claiming_an_impossible_dimension_is_an_embedder_error(source: Path, dimension: Any) -> None:
    with closing(Memory(source, embedder=Misbehaving("fine", dimension))) as mem, pytest.raises(EmbedderError, match="dimension"):
        mem.recall("reel", rank="semantic")


class RaisingFactory:
    @classmethod
    def from_settings(cls, settings: EmbedderSettings) -> Any:
        raise RuntimeError("cannot start")


class NotAnEmbedderFactory:
    @classmethod
    def from_settings(cls, settings: EmbedderSettings) -> Any:
        return "an embedder, honest"


@pytest.mark.parametrize("factory", ["RaisingFactory", "NotAnEmbedderFactory"])
def test_a_registered_factory_that_fails_is_an_embedder_error_naming_the_embedder(
    monkeypatch: pytest.MonkeyPatch, factory: str,
) -> None:
    ep = metadata.EntryPoint("thirdparty", f"{__name__}:{factory}", registry.ENTRY_POINT_GROUP)
    monkeypatch.setattr(registry, "available_embedders", lambda: {"thirdparty": ep})
    with pytest.raises(EmbedderError, match="thirdparty"):
        registry.create_embedder(EmbedderSettings(name="thirdparty"))


def test_vectors_of_another_model_put_in_by_another_process_meanwhile_are_never_compared(
    source: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    mine, theirs = Memory(source, embedder=CountingEmbedder()), Memory(source, embedder=CountingEmbedder("theirs-1"))
    own_fill = mine.meaning.embed_tree

    def then_the_other_process(*args: Any) -> int:
        computed = own_fill()
        theirs.meaning.embed_tree()  # between this recall's fill and its ranking read, the index changes model
        return computed

    monkeypatch.setattr(mine.meaning, "embed_tree", then_the_other_process)
    with closing(mine), closing(theirs), pytest.raises(EmbedderError, match="another process"):
        mine.recall("soccer", rank="semantic")


@pytest.mark.parametrize("query", ["\ud800 highlight reel", "highlight reel \udcff\udcfe"])
def test_a_query_holding_lone_surrogates_is_embedded_with_replacement_characters(source: Path, query: str) -> None:
    with closing(Memory(source, embedder=CountingEmbedder())) as mem:
        assert mem.recall(query, rank="hybrid")[0].key == "reel"


def test_a_query_of_undecodable_argv_bytes_recalls_by_meaning(source: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "bundlekit", "memory", "-d", str(source), "recall", "--rank",
                           "semantic", b"\xff\xfe highlight reel"], capture_output=True, timeout=120)
    assert (done.returncode, done.stdout.split(b"\t")[1]) == (0, b"reel"), done.stderr


def test_a_refused_context_query_says_only_why_not_a_ranking_it_never_used(source: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "bundlekit", "memory", "-d", str(source), "context", "--query", " ",
                           "--rank", "semantic"], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout, "ranked by" in done.stderr) == (2, "", False), done.stderr


@pytest.mark.parametrize("rank", ["semantic", "hybrid"])
def test_a_long_vector_planted_in_the_index_neither_scores_past_a_match_nor_displaces_the_named_memory(
    tmp_path: Path, rank: str
) -> None:
    """A vector put into the index by hand at 60,000 times unit length scores as a perfect match at most: the
    memory named as the query still comes first at limit 1, and every similarity stays a cosine."""
    tree = tmp_path / "m"
    mem = Memory(tree, embedder=CountingEmbedder())
    mem.write("deploy", name="Deploy runbook", description="how to ship the api", type="project", body="Run make deploy.")
    mem.write("distract", name="Deploy runbook notes", description="deploy runbook", type="project", body="deploy runbook")
    for key in "abcd":
        mem.write(key, name=f"{key} thing", description="other", type="user", body=f"unrelated {key}")
    mem.recall("x", rank=rank)
    mem.close()
    query = CountingEmbedder().embed(["deploy runbook"])[0]
    planted = (query * (60_000 / np.abs(query).max())).astype("<f2").tobytes()
    with closing(sqlite3.connect(tree / ".bundlekit" / "index.sqlite")) as conn:
        conn.execute("UPDATE vector SET vec = ?, head = ? WHERE id = (SELECT id FROM memory WHERE key = 'distract')",
                     (planted, planted))
        conn.commit()
    mem = Memory(tree, embedder=CountingEmbedder())
    assert [hit.key for hit in mem.recall("Deploy runbook", limit=1, rank=rank, usage=True)] == ["deploy"]
    hits = mem.recall("deploy runbook", limit=6, rank=rank)
    assert all(-1.0 <= hit.similarity <= 1.0 and hit.score <= 1.1 for hit in hits)
