"""Issue 37: a lone writer syncing through a routing endpoint publishes in one round and says so.

Before, every ``sync --routing`` through a ``bundlekit serve`` hub over the writer's own store took two
rounds: the hub kept the writer's record in the shared store before the writer's store step, which then
took that very record for another writer's (``moved past sequence N ... another writer published``); the
second round re-merged the writer's own root and reported ``"published": null, "up_to_date": true``
although the name had moved.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bundlekit.crypto.signing import Ed25519Signer
from bundlekit.errors import NameMovedError
from bundlekit.memory import Memory
from bundlekit.names.publish import publish
from bundlekit.names.routing import RoutingEndpoint, parse_routing
from bundlekit.syncer import SyncOptions, sync

from .conftest import HookedPinner

SIGNER = Ed25519Signer.from_seed(bytes([37]) * 32)
NOW = datetime(2026, 4, 14, 12, 0, 0, tzinfo=UTC)


@pytest.fixture
def hub_on_own_store() -> Iterator[RoutingEndpoint]:
    """``bundlekit serve --port 0`` over this test's ``$BUNDLEKIT_HOME``: the writer's own store."""
    proc = subprocess.Popen([sys.executable, "-m", "bundlekit", "serve", "--port", "0",
                             "--store", os.environ["BUNDLEKIT_HOME"]],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert line.startswith("serving on http://127.0.0.1:"), line
        yield parse_routing(line.split()[-1])
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        if proc.stderr is not None:
            proc.stderr.close()


def _write(tree: Path, key: str, minutes: int) -> None:
    Memory(tree, namespace="agent", clock=lambda: NOW + timedelta(minutes=minutes)).write(
        key, name=key, description=f"about {key}", type="project", body=f"{key} body")


def test_a_lone_writer_through_a_hub_on_its_own_store_publishes_in_one_round(
    hub_on_own_store: RoutingEndpoint, tmp_path: Path
) -> None:
    tree = tmp_path / "memory"
    Memory(tree, namespace="agent").init()
    options = SyncOptions(routing=(hub_on_own_store,))
    for sequence, key in enumerate(("alpha", "beta")):
        _write(tree, key, sequence)
        report = sync(tree, name_key=SIGNER, pinners=[HookedPinner()], options=options)
        assert report.attempts == 1, report.notes
        assert report.published is not None and report.published.sequence == sequence
        assert not report.up_to_date and report.merge is None  # its own root is never merged back
        assert not any("another writer" in note for note in report.notes)


def test_a_later_record_in_the_store_still_refuses_a_publish_that_follows_an_older_one(tmp_path: Path) -> None:
    publish(SIGNER, bytes.fromhex("01701220") + bytes(32))
    publish(SIGNER, bytes.fromhex("01701220") + bytes([1]) * 32)  # sequence 1 now kept
    with pytest.raises(NameMovedError, match="moved to sequence 1 after 0"):
        publish(SIGNER, bytes.fromhex("01701220") + bytes([2]) * 32, follows=0)


def test_a_writer_round_with_the_local_pinner_imports_neither_httpx_nor_the_entry_point_scan(tmp_path: Path) -> None:
    """A writer's ``sync --name-key`` with the local pinner makes no HTTP request: it imports no httpx (~35 ms of
    its CPU) and finds ``local`` without reading the installed distributions' entry points (~25 ms)."""
    tree, key = tmp_path / "memory", tmp_path / "name.key"
    _write(tree, "alpha", 0)
    subprocess.run([sys.executable, "-m", "bundlekit", "name", "create", "--name-key", str(key)], check=True,
                   capture_output=True)
    script = ("import atexit, runpy, sys\n"
              "atexit.register(lambda: print(sorted(m for m in ('httpx', 'importlib.metadata') if m in sys.modules),"
              " file=sys.stderr))\n"
              f"sys.argv = ['bundlekit', 'sync', '-d', {str(tree)!r}, '--name-key', {str(key)!r}]\n"
              "runpy.run_module('bundlekit', run_name='__main__')\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip().splitlines()[-1] == "[]"


def test_a_writer_round_over_its_own_last_publish_never_imports_the_loader(tmp_path: Path) -> None:
    """A writer's round whose name points at its own last root loads and merges nothing: it never imports the
    loader (``bundle.load``, with the fetch-ahead and the bounded reader: ~6 to 10 ms of its CPU, DEVELOPERS.md
    "Lazy imports"), nor the publish flow, whose error only a failed pin needs (~2.4 ms), nor, for a plaintext tree,
    cryptography's AES-GCM and scrypt (the name key is read without its serialization package: ~7 ms together), nor
    the merge command's flow or a first follow's loaded files (``flows.merge``, ``memory.files``, ``memory.transfer``),
    nor what ``store verify`` reports (``storereport``), yet publishes the change."""
    tree, key = tmp_path / "memory", tmp_path / "name.key"
    _write(tree, "alpha", 0)
    bundlekit = [sys.executable, "-m", "bundlekit"]
    subprocess.run([*bundlekit, "name", "create", "--name-key", str(key)], check=True, capture_output=True)
    subprocess.run([*bundlekit, "sync", "-d", str(tree), "--name-key", str(key)], check=True, capture_output=True)
    _write(tree, "beta", 1)
    loader = ("bundlekit.bundle.load", "bundlekit.bundle.ahead", "bundlekit.bundle._bounded", "bundlekit.flows.publish",
              "cryptography.hazmat.primitives.serialization", "cryptography.hazmat.primitives.ciphers.aead",
              "cryptography.hazmat.primitives.kdf.scrypt", "bundlekit.flows.merge", "bundlekit.memory.files",
              "bundlekit.memory.transfer", "bundlekit.storereport")
    script = ("import atexit, runpy, sys\n"
              f"atexit.register(lambda: print(sorted(m for m in {loader!r} if m in sys.modules), file=sys.stderr))\n"
              f"sys.argv = ['bundlekit', 'sync', '-d', {str(tree)!r}, '--name-key', {str(key)!r}, '--json']\n"
              "runpy.run_module('bundlekit', run_name='__main__')\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip().splitlines()[-1] == "[]"
    assert json.loads(done.stdout)["published"]["sequence"] == 1


def test_an_encrypted_writer_round_still_encrypts_what_it_publishes(tmp_path: Path) -> None:
    """The cipher is imported at the first seal (DEVELOPERS.md "Lazy imports"): a round of a tree with a key still
    publishes ciphertext, which a load without the key refuses and a load with it reads back."""
    tree, key, secret = tmp_path / "memory", tmp_path / "name.key", tmp_path / "tree.key"
    _write(tree, "alpha", 0)
    secret.write_bytes(bytes(range(32)))
    bundlekit = [sys.executable, "-m", "bundlekit"]
    subprocess.run([*bundlekit, "name", "create", "--name-key", str(key)], check=True, capture_output=True)
    done = subprocess.run([*bundlekit, "sync", "-d", str(tree), "--name-key", str(key), "--key-file", str(secret)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    root = done.stdout.strip()
    refused = subprocess.run([*bundlekit, "load", f"ipfs://{root}", "-o", str(tmp_path / "nokey")],
                             capture_output=True, text=True)
    assert refused.returncode == 2 and "this bundle is encrypted" in refused.stderr, refused.stderr
    loaded = subprocess.run([*bundlekit, "load", f"ipfs://{root}", "-o", str(tmp_path / "back"), "--key-file",
                             str(secret)], capture_output=True, text=True)
    assert loaded.returncode == 0, loaded.stderr
    assert (tmp_path / "back" / "alpha.md").read_bytes() == (tree / "alpha.md").read_bytes()
