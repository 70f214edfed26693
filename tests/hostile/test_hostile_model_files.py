"""A hostile or broken wordllama model file (issue 38's attack on the memory-mapped table read from the
safetensors header directly): a header or byte range that is not the tensor's, a dtype or shape that is not a
table's, a truncated file, a FIFO or device where a file should be. Each is an ``EmbedderError`` naming the
model files, at once: never a hang, a crash of the mapping, or an internal error. The format:
huggingface/safetensors ``README.md``, "Format" (8-byte little-endian header length, JSON header, data)."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bundlekit.embed import wordllama
from bundlekit.errors import EmbedderError

TENSOR = wordllama.TENSOR


def _safetensors(entry: Any, data: bytes = b"\0" * 1024) -> bytes:
    header = json.dumps({TENSOR: entry}).encode()
    return struct.pack("<Q", len(header)) + header + data


def _model_root(tmp_path: Path, weights: bytes | None = None) -> Path:
    """Model files as the wheel lays them out: the real tokenizer, and ``weights`` (when given) as the table."""
    root = tmp_path / "wordllama"
    (root / "weights").mkdir(parents=True)
    (root / "tokenizers").mkdir()
    shutil.copy(wordllama.package_dir() / wordllama.TOKENIZER, root / wordllama.TOKENIZER)
    if weights is not None:
        (root / wordllama.WEIGHTS).write_bytes(weights)
    return root


def _embed(root: Path) -> None:
    wordllama.WordLlamaEmbedder(root=root).embed(["deploy the api"])


HOSTILE = {
    "a huge header length": struct.pack("<Q", 2**63) + b"{}",
    "a header past the file's end": struct.pack("<Q", 100) + b"{}",
    "bytes starting inside the header": _safetensors({"dtype": "F16", "shape": [1, 256], "data_offsets": [-50, 462]}),
    "an end before the start": _safetensors({"dtype": "F16", "shape": [1, 256], "data_offsets": [512, 0]}),
    "a negative shape": _safetensors({"dtype": "F16", "shape": [-2, -256], "data_offsets": [0, 1024]}),
    "a boolean shape": _safetensors({"dtype": "F16", "shape": [True, 256], "data_offsets": [0, 512]}),
    "a table of no rows": _safetensors({"dtype": "F16", "shape": [0, 256], "data_offsets": [0, 0]}),
    "an integer dtype": _safetensors({"dtype": "I64", "shape": [1, 256], "data_offsets": [0, 2048]}, b"\0" * 2048),
    "a shape of three": _safetensors({"dtype": "F16", "shape": [2, 2, 64], "data_offsets": [0, 512]}),
    "a table of another width": _safetensors({"dtype": "F16", "shape": [2, 128], "data_offsets": [0, 512]}),
    "a shape too big for its bytes": _safetensors({"dtype": "F16", "shape": [2**62, 2**62], "data_offsets": [0, 512]}),
    "a header that is not JSON": struct.pack("<Q", 4) + b"\xff\xfe\x00\x01",
    "a header nested past recursion": struct.pack("<Q", 200_000) + b"[" * 100_000 + b"]" * 100_000,
    "an empty file": b"",
}


@pytest.mark.parametrize("weights", HOSTILE.values(), ids=HOSTILE.keys())
def test_a_hostile_weights_file_is_an_embedder_error(tmp_path: Path, weights: bytes) -> None:
    with pytest.raises(EmbedderError, match="reinstall the 'semantic' extra"):
        _embed(_model_root(tmp_path, weights))


def test_a_truncated_weights_file_is_an_embedder_error(tmp_path: Path) -> None:
    whole = (wordllama.package_dir() / wordllama.WEIGHTS).read_bytes()
    with pytest.raises(EmbedderError, match="cannot be read"):
        _embed(_model_root(tmp_path, whole[: len(whole) // 2]))


@pytest.mark.parametrize("which", [wordllama.WEIGHTS, wordllama.TOKENIZER])
def test_a_fifo_in_place_of_a_model_file_is_refused_without_waiting(tmp_path: Path, which: str) -> None:
    root = _model_root(tmp_path)
    if which == wordllama.WEIGHTS:
        os.mkfifo(root / which)
    else:
        shutil.copy(wordllama.package_dir() / wordllama.WEIGHTS, root / wordllama.WEIGHTS)
        (root / which).unlink()
        os.mkfifo(root / which)
    with pytest.raises(EmbedderError, match="cannot be read"):
        _embed(root)  # opening a FIFO for reading waits for a writer: never here


@pytest.mark.parametrize("target", ["/dev/zero", "/dev/null", "directory"])
def test_a_link_to_a_device_or_directory_is_refused(tmp_path: Path, target: str) -> None:
    root = _model_root(tmp_path)
    os.symlink(tmp_path if target == "directory" else target, root / wordllama.WEIGHTS)
    with pytest.raises(EmbedderError, match="cannot be read"):
        _embed(root)


def test_a_link_to_the_real_weights_still_reads(tmp_path: Path) -> None:
    root = _model_root(tmp_path)
    os.symlink(wordllama.package_dir() / wordllama.WEIGHTS, root / wordllama.WEIGHTS)
    vectors = wordllama.WordLlamaEmbedder(root=root).embed(["deploy the api"])
    assert vectors.shape == (1, wordllama.DIMENSION) and vectors.any()


def test_a_weights_file_cut_short_in_place_after_mapping_is_refused_not_a_bus_error(tmp_path: Path) -> None:
    """An embedder that mapped the table checks the files again before each use: a file truncated in place
    since (a hostile or broken reinstall) is an ``EmbedderError``, never a touch past its end (SIGBUS). In a
    subprocess: were it a bus error, it would end the process."""
    root = _model_root(tmp_path, (wordllama.package_dir() / wordllama.WEIGHTS).read_bytes())
    script = (
        "import os, sys\n"
        "from pathlib import Path\n"
        "from bundlekit.embed import wordllama\n"
        "from bundlekit.errors import EmbedderError\n"
        "root = Path(sys.argv[1])\n"
        "embedder = wordllama.WordLlamaEmbedder(root=root)\n"
        "embedder.embed(['hello'])\n"
        "os.truncate(root / wordllama.WEIGHTS, 4096)\n"
        "try:\n"
        "    embedder.embed(['zebra quantum'])\n"
        "except EmbedderError:\n"
        "    print('refused')\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(root)], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout.strip()) == (0, "refused"), done.stderr[-2000:]
