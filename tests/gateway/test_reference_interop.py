"""Interop with the reference tool (npm ipfs-car 3.1.0): its CARs served, our CARs unpacked by it.

The tool is the one ``tests/package.json`` pins (``npm ci`` in ``tests/``); skipped when it is
not installed.
"""

from __future__ import annotations

import io
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bundlekit.car.reader import read_car
from bundlekit.gateway.server import serve_in_thread
from bundlekit.ipld.cid import cid_to_str, parse_cid
from tests import reference_tools

IPFS_CAR = reference_tools.ipfs_car()

pytestmark = pytest.mark.skipif(
    isinstance(IPFS_CAR, str), reason=f"reference ipfs-car unavailable: {IPFS_CAR}"
)

FILES = {
    "memory/MEMORY.md": b"# Memory\n- [a](a.md)\n",
    "memory/a.md": b"---\nname: a\n---\nalpha\n",
    "big.bin": bytes(range(256)) * 9000,  # 2.3 MB: several 1 MiB chunks
}


def ipfs_car(*args: str, cwd: Path) -> str:
    proc = subprocess.run(
        [*IPFS_CAR, *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.fixture(scope="module")
def reference_car(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes]:
    base = tmp_path_factory.mktemp("ref")
    tree = base / "tree"
    for rel, data in FILES.items():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_bytes(data)
    car = base / "tree.car"
    ipfs_car("pack", str(tree), "--no-wrap", "--output", str(car), cwd=base)
    with car.open("rb") as fh:
        roots, _blocks = read_car(fh)
    return car, roots[0]


@pytest.fixture
def served(reference_car: tuple[Path, bytes]) -> Iterator[tuple[httpx.Client, str]]:
    car, root = reference_car
    with serve_in_thread(cars=[car]) as server, httpx.Client(base_url=server.url, timeout=30) as client:
        yield client, cid_to_str(root)


def test_files_of_a_reference_car_are_served_by_path(served) -> None:  # type: ignore[no-untyped-def]
    client, root = served
    for rel, data in FILES.items():
        assert client.get(f"/ipfs/{root}/{rel}").content == data


def test_our_car_response_unpacks_with_the_reference_tool(served, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    client, root = served
    car = tmp_path / "response.car"
    car.write_bytes(client.get(f"/ipfs/{root}?format=car").content)
    out = tmp_path / "out"
    ipfs_car("unpack", str(car), "--output", str(out), cwd=tmp_path)
    for rel, data in FILES.items():
        assert (out / rel).read_bytes() == data


def test_our_car_response_holds_exactly_the_reference_blocks(served, reference_car, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    client, root = served
    car = tmp_path / "response.car"
    car.write_bytes(client.get(f"/ipfs/{root}?format=car").content)
    theirs = {parse_cid(line) for line in ipfs_car("blocks", str(reference_car[0]), cwd=tmp_path).split()}
    ours = {parse_cid(line) for line in ipfs_car("blocks", str(car), cwd=tmp_path).split()}
    assert ours == theirs
    assert ipfs_car("roots", str(car), cwd=tmp_path).split() == [root]


def test_an_entity_car_for_a_path_holds_that_file_and_nothing_else(served) -> None:  # type: ignore[no-untyped-def]
    from bundlekit.unixfs.reader import UnixFSReader

    client, root = served
    r = client.get(f"/ipfs/{root}/big.bin?format=car&dag-scope=entity")
    _roots, blocks = read_car(io.BytesIO(r.content), verify=True)
    have = dict(blocks)
    reader = UnixFSReader(have.__getitem__)
    assert b"".join(reader.iter_file(reader.resolve(parse_cid(root), "big.bin"))) == FILES["big.bin"]
    memory = reader.resolve(parse_cid(root), "memory")
    with pytest.raises(KeyError):  # the memory/ directory node was not sent
        reader.list_dir(memory)
