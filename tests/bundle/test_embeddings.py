"""Embeddings in bundles (bundle/embeddings, specs/bundle.md "Embeddings"): the index's vectors as one file
listed in the manifest with model id, dimension and keys; a load keeps them in the new tree's index, so it
recalls by meaning without computing any; encrypted like the files; left out for another model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bundlekit.bundle.build import BuildOptions, BundleResult, build_bundle
from bundlekit.bundle.load import load_bundle
from bundlekit.crypto._keys import RawKeyFile
from bundlekit.errors import KeySourceError, UsageError
from bundlekit.memory import Memory
from tests.embed.counting import CountingEmbedder
from tests.embed.trees import memory_tree

CREATED = "2026-04-14T12:00:00Z"
KEY = RawKeyFile(bytes(range(32)))
KEYS = ("reel", "drinks", "deploy")


@pytest.fixture
def source(tmp_path: Path) -> Path:
    return memory_tree(tmp_path / "agent", KEYS)


def build(source: Path, car: Path, *, key: Any = None, compat: str | None = None) -> BundleResult:
    from bundlekit.bundle.manifest import parse_created

    return build_bundle(Memory(source, embedder=CountingEmbedder()), car, key=key,
                        options=BuildOptions(created=parse_created(CREATED), embeddings=True, compat=compat))


def test_the_manifest_lists_the_model_dimension_and_keys_of_the_vectors_file(source: Path, tmp_path: Path) -> None:
    result = build(source, tmp_path / "b.car")
    entry = result.manifest["embeddings"]
    assert entry == {"path": "memory/embeddings.f16", "model": "wordllama-0.4.0.post1/l2_supercat_256",
                     "dimension": 256, "dtype": "float16", "keys": ["deploy", "drinks", "reel"]}
    assert result.manifest["memory"]["files"]["memory/embeddings.f16"]["size"] == 3 * 256 * 2


def test_a_loaded_bundle_recalls_by_meaning_without_computing_a_vector(source: Path, tmp_path: Path) -> None:
    loaded = load_bundle(str(build(source, tmp_path / "b.car").car), out_dir=tmp_path / "out")
    assert loaded.warnings == [] and "embeddings.f16" not in loaded.files
    assert not (tmp_path / "out" / "embeddings.f16").exists()  # into the index, never a file of the tree
    embedder = CountingEmbedder()
    hits = Memory(tmp_path / "out", embedder=embedder).recall("where are the videos", rank="semantic")
    assert hits[0].key == "reel" and embedder.batches == [["videos"]]  # the query only (its vector: no stop words)


def test_the_loaded_vectors_are_the_built_ones(source: Path, tmp_path: Path) -> None:
    Memory(source, embedder=CountingEmbedder()).recall("x", rank="semantic")
    build(source, tmp_path / "b.car")
    load_bundle(str(tmp_path / "b.car"), out_dir=tmp_path / "out")
    vectors = [Memory(t).meaning.export_vectors(Memory(t).bundle_files())[3] for t in (source, tmp_path / "out")]
    assert vectors[0] == vectors[1]


def test_an_encrypted_bundles_vectors_are_encrypted_and_unreadable_without_the_key(source: Path, tmp_path: Path) -> None:
    plain = build(source, tmp_path / "plain.car")
    blob = Memory(source, embedder=CountingEmbedder()).meaning.export_vectors(Memory(source).bundle_files())[3]
    enc = build(source, tmp_path / "enc.car", key=KEY)
    assert enc.manifest["embeddings"]["path"] == "memory/embeddings.f16.enc"
    assert "memory/embeddings.f16" not in enc.manifest["memory"]["files"]
    car = (tmp_path / "enc.car").read_bytes()
    assert all(blob[i : i + 32] not in car for i in range(0, len(blob), 512))  # no vector in plaintext
    assert blob[:32] in (tmp_path / "plain.car").read_bytes() and plain.manifest["embeddings"]["keys"]
    with pytest.raises(KeySourceError):
        load_bundle(str(enc.car), out_dir=tmp_path / "nokey")


def test_an_encrypted_bundle_loaded_with_its_key_recalls_without_computing(source: Path, tmp_path: Path) -> None:
    load_bundle(str(build(source, tmp_path / "enc.car", key=KEY).car), key=KEY, out_dir=tmp_path / "out")
    embedder = CountingEmbedder()
    assert Memory(tmp_path / "out", embedder=embedder).recall("what does the user drink", rank="hybrid")[0].key == "drinks"
    assert embedder.texts == 1


def test_vectors_of_another_model_are_left_out_and_computed_at_the_first_recall(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = build(source, tmp_path / "b.car")
    monkeypatch.setattr("bundlekit.embed.wordllama.WordLlamaEmbedder.model_id", property(lambda _s: "wordllama-9/other"))
    loaded = load_bundle(str(result.car), out_dir=tmp_path / "out")
    assert len(loaded.warnings) == 1 and "computed at the first recall by meaning" in loaded.warnings[0]
    embedder = CountingEmbedder()
    Memory(tmp_path / "out", embedder=embedder).recall("videos", rank="semantic")
    assert embedder.texts == 2 * len(KEYS) + 1  # each memory's text and head, then the query


def test_embeddings_cannot_go_into_a_three_ws_bundle(source: Path, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="--embeddings cannot be combined with --compat"):
        build(source, tmp_path / "b.car", key=KEY, compat="three.ws")


def test_a_bundle_without_embeddings_keeps_its_manifest(source: Path, tmp_path: Path) -> None:
    result = build_bundle(source, tmp_path / "b.car")
    assert "embeddings" not in json.dumps(result.manifest)  # other manifests keep their bytes


def test_build_embeddings_on_the_command_line_then_load_then_recall(source: Path, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from bundlekit.cli import cli

    runner = CliRunner()
    built = runner.invoke(cli, ["build", str(source), "-o", str(tmp_path / "b.car"), "--embeddings", "--json"])
    assert built.exit_code == 0, built.output
    assert runner.invoke(cli, ["load", str(tmp_path / "b.car"), "-o", str(tmp_path / "out")]).exit_code == 0
    recalled = runner.invoke(cli, ["memory", "-d", str(tmp_path / "out"), "recall", "where are the videos",
                                   "--rank", "semantic", "--json"])
    assert json.loads(recalled.stdout)[0]["key"] == "reel"


def test_the_browsing_interface_shows_the_memories_not_the_vectors_file(source: Path, tmp_path: Path) -> None:
    from bundlekit.car.index import CarIndex
    from bundlekit.ui import model

    result = build(source, tmp_path / "b.car")
    with CarIndex(result.car) as index:
        view = model.read_bundle(index.get, index.roots[0])
    assert sorted(m.key for m in view.memories) == sorted(KEYS) and view.problems == []
