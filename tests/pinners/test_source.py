"""What `bundlekit pin SRC` publishes: a CAR as is, a memory directory built, any directory packed."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from bundlekit.car.reader import read_car
from bundlekit.car.writer import CarWriter
from bundlekit.cli import cli
from bundlekit.errors import CodecError, MissingBlock, UsageError
from bundlekit.ipld.cid import DAG_PB, RAW, make_cid
from bundlekit.ipld.dagpb import DIRECTORY, PBLink, UnixFSData, encode_node
from bundlekit.bundle.build import BuildOptions
from bundlekit.flows.source import is_memory_dir, prepare_source
from bundlekit.unixfs.importer import NullSink, import_path
from bundlekit.unixfs.profiles import get_profile

from .conftest import Car, build_car

FIXTURE_MEMORY = Path(__file__).resolve().parents[2] / "fixtures" / "memory"


def car_root(path: Path) -> bytes:
    with open(path, "rb") as fh:
        roots, _ = read_car(fh, verify=False)
    return roots[0]


def test_a_directory_with_memory_md_is_a_memory_directory(tmp_path: Path) -> None:
    (tmp_path / "MEMORY.md").write_text("# Memory\n")
    assert is_memory_dir(tmp_path)


def test_a_top_level_markdown_file_with_frontmatter_makes_a_memory_directory(tmp_path: Path) -> None:
    (tmp_path / "user_x.md").write_text("---\nname: x\ntype: user\n---\nbody\n")
    assert is_memory_dir(tmp_path)


def test_markdown_without_frontmatter_or_nested_memory_is_a_plain_directory(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("# readme\n---\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "MEMORY.md").write_text("# Memory\n")
    assert not is_memory_dir(tmp_path)


def test_a_car_is_published_as_is(car: Car, tmp_path: Path) -> None:
    prepared = prepare_source(car.path, tmp_path)
    assert (prepared.kind, prepared.root, prepared.car) == ("car", car.root, car.path)


def test_a_car_with_two_roots_is_refused(tmp_path: Path, car: Car, other_car: Car) -> None:
    two = build_car(tmp_path / "two.car", [b"a"], roots=[car.root, other_car.root])
    with pytest.raises(UsageError, match="2 roots"):
        prepare_source(two.path, tmp_path)


def test_a_plain_directory_is_packed_with_the_default_profile(tmp_path: Path) -> None:
    src = tmp_path / "site"
    src.mkdir()
    (src / "index.html").write_text("<h1>hi</h1>")
    (src / "notes.md").write_text("no frontmatter here\n")
    work = tmp_path / "work"
    work.mkdir()
    prepared = prepare_source(src, work)
    expected = import_path(src, NullSink(), get_profile(None)).root
    assert prepared.kind == "directory"
    assert prepared.root == expected == car_root(prepared.car)


def test_a_key_for_a_plain_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a")
    with pytest.raises(UsageError, match="not a memory directory"):
        prepare_source(tmp_path, tmp_path, key=object())


def test_a_memory_directory_is_built_into_a_bundle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    src = tmp_path / "memory"
    shutil.copytree(FIXTURE_MEMORY, src)
    work = tmp_path / "work"
    work.mkdir()
    prepared = prepare_source(src, work)
    assert prepared.kind == "memory"
    assert prepared.root == car_root(prepared.car)


def test_pin_with_a_key_option_encrypts_the_memory_bundle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, store_home: Path
) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    monkeypatch.setenv("BUNDLE_PASS", "correct horse battery staple")
    src = tmp_path / "memory"
    shutil.copytree(FIXTURE_MEMORY, src)
    runner = CliRunner()

    def root(*extra: str) -> str:
        result = runner.invoke(cli, ["pin", str(src), "--pinner", "memory", "--json", *extra])
        assert result.exit_code == 0, result.output
        return str(json.loads(result.stdout)["root"])

    plain = root()
    assert root() == plain  # deterministic without a key
    encrypted = root("--passphrase-env", "BUNDLE_PASS")
    assert encrypted != plain
    assert "correct horse" not in encrypted


def test_build_options_for_a_car_are_refused(car: Car, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="published as is"):
        prepare_source(car.path, tmp_path, options=BuildOptions(profile="kubo-legacy"))


# A CAR given to `bundlekit pin` is verified (blocks and completeness) before any upload.


def _write_car(path: Path, root: bytes, blocks: list[tuple[bytes, bytes]]) -> Path:
    out = io.BytesIO()
    writer = CarWriter(out, [root])
    for cid, data in blocks:
        writer.put(cid, data)
    writer.close()
    path.write_bytes(out.getvalue())
    return path


def _incomplete_car(path: Path) -> Path:
    """A CAR of a directory whose one file's block is not in it."""
    leaf = b"a leaf that is not in the CAR"
    leaf_cid = make_cid(1, RAW, leaf)
    node = encode_node([PBLink(leaf_cid, b"a.txt", len(leaf))], UnixFSData(type=DIRECTORY).encode())
    root = make_cid(1, DAG_PB, node)
    return _write_car(path, root, [(root, node)])


def test_an_incomplete_car_is_refused_before_publishing(tmp_path: Path) -> None:
    car = _incomplete_car(tmp_path / "partial.car")
    with pytest.raises(MissingBlock):
        prepare_source(car, tmp_path / "work")


def test_an_undecodable_root_is_refused_before_publishing(tmp_path: Path) -> None:
    junk = b"\xff\xff\xff"
    root = make_cid(1, DAG_PB, junk)
    car = _write_car(tmp_path / "junk.car", root, [(root, junk)])
    with pytest.raises(CodecError):
        prepare_source(car, tmp_path / "work")


def test_pin_of_an_incomplete_car_exits_3_and_pins_nothing(tmp_path: Path) -> None:
    car = _incomplete_car(tmp_path / "partial.car")
    result = CliRunner().invoke(cli, ["pin", str(car), "--pinner", "memory"])
    assert result.exit_code == 3
    assert result.stdout == ""
    assert result.stderr.startswith("error: ") and "is missing" in result.stderr
