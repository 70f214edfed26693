"""Bundles three.ws's runtime can read: the link patterns of its loader (``_loadIPFS`` in src/memory/index.js of
nirholas/three.ws, commit 2071392c) find every memory, and ``build --encrypt --compat three.ws`` writes its
encrypted file form, keyed by the signature bytes as given (src/memory/crypto.js ``deriveEncryptionKey``)."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from bundlekit.bundle.build import BuildOptions, BundleResult, build_bundle
from bundlekit.bundle.load import load_bundle
from bundlekit.car.index import CarIndex
from bundlekit.cli import cli
from bundlekit.crypto._keys import PassphraseKey, RawKeyFile, SignatureKey
from bundlekit.crypto.threews import threews_decrypt, threews_key
from bundlekit.errors import DecryptionError, KeySourceError, UsageError
from bundlekit.memory import Memory
from bundlekit.unixfs.reader import UnixFSReader

SAMPLE = Path(__file__).resolve().parents[2] / "fixtures" / "memory"
MEMORIES = sorted(p.name for p in SAMPLE.glob("*.md") if p.name != "MEMORY.md")
PLAIN_LINK = re.compile(r"\[([^\]]+)\]\(([^)]+\.md)\)")  # the runtime's ipfs-mode pattern
ENCRYPTED_LINK = re.compile(r"\[([^\]]*\.md)\]\((ipfs:\/\/[^)]+)\)")  # its encrypted-ipfs pattern
# A well-formed signature (r, s in range, v = 28); which message it signs does not matter to the key.
SIGNATURE = bytes.fromhex("11" * 32 + "22" * 32 + "1c")


def stored(bundle: BundleResult, path: str) -> bytes:
    with CarIndex(bundle.car) as car:
        reader = UnixFSReader(car.get)
        return b"".join(reader.iter_file(reader.resolve(bundle.root, path)))


def rng(size: int) -> bytes:
    return b"\x07" * size


@pytest.fixture(scope="module")
def compat(tmp_path_factory: pytest.TempPathFactory) -> BundleResult:
    out = tmp_path_factory.mktemp("compat") / "b.car"
    return build_bundle(SAMPLE, out, key=SignatureKey(SIGNATURE),
                        options=BuildOptions(namespace="agent-7", compat="three.ws", rng=rng))


def test_the_plain_pattern_finds_every_memory_of_a_plain_bundle(tmp_path: Path) -> None:
    bundle = build_bundle(SAMPLE, tmp_path / "b.car")
    index = stored(bundle, "memory/MEMORY.md").decode()
    assert sorted(target for _name, target in PLAIN_LINK.findall(index)) == MEMORIES


def test_the_encrypted_pattern_finds_every_memory_of_a_bundlekit_encrypted_bundle(tmp_path: Path) -> None:
    bundle = build_bundle(SAMPLE, tmp_path / "b.car", key=RawKeyFile(b"k" * 32),
                          options=BuildOptions(rng=rng))
    links = ENCRYPTED_LINK.findall(stored(bundle, "memory/MEMORY.md").decode())
    assert sorted(name for name, _href in links) == MEMORIES
    files = bundle.manifest["memory"]["files"]
    assert all(href == f"ipfs://{files[f'memory/{name}.enc']['cid']}" for name, href in links)


def test_the_encrypted_pattern_finds_every_memory_of_a_compat_bundle(compat: BundleResult) -> None:
    links = ENCRYPTED_LINK.findall(stored(compat, "memory/MEMORY.md").decode())
    files = compat.manifest["memory"]["files"]
    assert sorted(name for name, _href in links) == MEMORIES
    assert all(href == f"ipfs://{files[f'memory/{name}.enc']['cid']}" for name, href in links)


def test_compat_files_are_the_runtimes_base64_of_iv_and_ciphertext(compat: BundleResult) -> None:
    text = stored(compat, "memory/user_role.md.enc")
    raw = base64.b64decode(text, validate=True)
    assert raw[:12] == b"\x07" * 12
    assert threews_decrypt(text, threews_key(SIGNATURE)) == (SAMPLE / "user_role.md").read_bytes()
    assert compat.manifest["encryption"] == {"scheme": "three.ws", "key_source": "signature", "agent_id": "agent-7"}


def test_compat_bundle_loads_back_with_the_same_wallet(compat: BundleResult, tmp_path: Path) -> None:
    result = load_bundle(str(compat.car), key=SignatureKey(SIGNATURE), out_dir=tmp_path / "out")
    assert {r.filename for r in Memory(tmp_path / "out").list()} == set(MEMORIES)
    assert result.files


def test_compat_key_hashes_the_signature_as_given_so_v_0_is_another_key(compat: BundleResult) -> None:
    as_v1 = SIGNATURE[:64] + bytes([SIGNATURE[64] - 27])
    with pytest.raises(DecryptionError):
        load_bundle(str(compat.car), key=SignatureKey(as_v1))


def test_compat_needs_a_wallet_key(tmp_path: Path) -> None:
    with pytest.raises(KeySourceError, match="wallet signature"):
        build_bundle(SAMPLE, tmp_path / "b.car", key=PassphraseKey("correct horse battery staple"),
                     options=BuildOptions(compat="three.ws"))


def test_compat_without_a_key_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="--encrypt"):
        build_bundle(SAMPLE, tmp_path / "b.car", options=BuildOptions(compat="three.ws"))


def test_compat_is_refused_when_the_index_cannot_list_every_memory(tmp_path: Path) -> None:
    mem = Memory(None, namespace="big")
    for i in range(200):
        mem.write(f"m{i:03d}", name=f"M{i}", description="d", type="user", body="b")
    with pytest.raises(UsageError, match="200 lines"):
        build_bundle(mem, tmp_path / "b.car", key=SignatureKey(SIGNATURE),
                     options=BuildOptions(compat="three.ws"))


def test_cli_compat_without_encrypt_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["build", str(SAMPLE), "-o", str(tmp_path / "b.car"), "--compat", "three.ws"])
    assert result.exit_code == 2 and "--encrypt" in result.output


def test_cli_builds_a_compat_bundle(tmp_path: Path) -> None:
    env = {"SIG": "0x" + SIGNATURE.hex()}
    args = ["build", str(SAMPLE), "-o", str(tmp_path / "b.car"), "--namespace", "agent-7", "--encrypt",
            "--compat", "three.ws", "--signature-env", "SIG"]
    result = CliRunner().invoke(cli, args, env=env)
    assert result.exit_code == 0, result.output
    loaded = load_bundle(str(tmp_path / "b.car"), key=SignatureKey(SIGNATURE))
    assert sorted(name for name in loaded.files if name != "MEMORY.md" and "/" not in name) == MEMORIES
