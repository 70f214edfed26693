"""QA regression: a CAR given to `bundlekit pin` is verified (blocks and completeness) before any upload."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from click.testing import CliRunner

from bundlekit.car.writer import CarWriter
from bundlekit.cli import cli
from bundlekit.errors import CodecError, MissingBlock
from bundlekit.ipld.cid import DAG_PB, RAW, make_cid
from bundlekit.ipld.dagpb import DIRECTORY, PBLink, UnixFSData, encode_node
from bundlekit.pinning.source import prepare_source


def _write_car(path: Path, root: bytes, blocks: list[tuple[bytes, bytes]]) -> Path:
    out = io.BytesIO()
    writer = CarWriter(out, [root])
    for cid, data in blocks:
        writer.put(cid, data)
    writer.close()
    path.write_bytes(out.getvalue())
    return path


def _incomplete_car(path: Path) -> Path:
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
