"""`bundlekit verify`, `unpack` and `ls`: exit codes, output shape, errors on stderr."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path

from click.testing import CliRunner

from bundlekit.car.writer import CarWriter
from bundlekit.cli import cli
from bundlekit.ipld.cid import RAW, cid_to_str, make_cid

from .conftest import Blocks

Tree = tuple[Blocks, bytes, dict[str, bytes]]


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_verify_good_car_exits_zero_with_one_line(sample_tree: Tree, write_car: Callable[[bytes], Path]) -> None:
    blocks, root, _ = sample_tree
    code, out, err = _run("verify", str(write_car(blocks.car([root]))))
    assert code == 0, err
    assert out == ""  # the summary is status, not data: stderr
    assert err.count("\n") == 1
    assert err.startswith(f"ok {cid_to_str(root)}: {len(blocks.blocks)} blocks")


def test_verify_json_reports_roots_and_counts(sample_tree: Tree, write_car: Callable[[bytes], Path]) -> None:
    blocks, root, _ = sample_tree
    code, out, _ = _run("verify", "--json", str(write_car(blocks.car([root]))))
    assert code == 0
    assert json.loads(out) == {
        "ok": True,
        "roots": [cid_to_str(root)],
        "blocks": len(blocks.blocks),
        "bytes": sum(map(len, blocks.blocks.values())),
    }


def test_verify_flipped_byte_exits_3_naming_the_block(blocks: Blocks, write_car: Callable[[bytes], Path]) -> None:
    leaf = blocks.raw(b"original")
    root = blocks.directory({"f": leaf})
    blocks.blocks[leaf] = b"originaL"
    code, out, err = _run("verify", str(write_car(blocks.car([root]))))
    assert code == 3
    assert out == ""
    assert err.startswith("error: ") and cid_to_str(leaf) in err


def test_verify_missing_block_exits_3_naming_it(sample_tree: Tree, write_car: Callable[[bytes], Path]) -> None:
    blocks, root, files = sample_tree
    missing = blocks.file(files["a.md"])
    code, _, err = _run("verify", str(write_car(blocks.car([root], skip=frozenset({missing})))))
    assert code == 3
    assert cid_to_str(missing) in err and "a.md" in err


def test_verify_truncated_car_fails_naming_the_offset(sample_tree: Tree, write_car: Callable[[bytes], Path]) -> None:
    blocks, root, _ = sample_tree
    code, _, err = _run("verify", str(write_car(blocks.car([root])[:-9])))
    assert code != 0
    assert "truncated at offset" in err


def test_unpack_extracts_and_summarises(sample_tree: Tree, write_car: Callable[[bytes], Path]) -> None:
    blocks, root, files = sample_tree
    car = write_car(blocks.car([root]))
    out_dir = car.parent / "out"
    code, out, err = _run("unpack", str(car), "-o", str(out_dir))
    assert code == 0, err
    assert out == ""  # the summary is status, not data: stderr
    assert err.startswith(f"unpacked {cid_to_str(root)} into {out_dir}: 5 files, 4 directories")
    for path, data in files.items():
        assert (out_dir / path).read_bytes() == data


def test_unpack_refuses_unsafe_name_with_error(blocks: Blocks, write_car: Callable[[bytes], Path]) -> None:
    root = blocks.directory([(b"..", blocks.raw(b"x"))])
    car = write_car(blocks.car([root]))
    code, _, err = _run("unpack", str(car), "-o", str(car.parent / "out"))
    assert code == 1
    assert "unsafe link name '..'" in err
    assert not (car.parent / "out").exists()


def test_unpack_into_non_empty_dir_is_a_usage_error(sample_tree: Tree, write_car: Callable[[bytes], Path]) -> None:
    blocks, root, _ = sample_tree
    car = write_car(blocks.car([root]))
    (car.parent / "out").mkdir()
    (car.parent / "out" / "x").write_text("x")
    code, _, err = _run("unpack", str(car), "-o", str(car.parent / "out"))
    assert code == 2
    assert "--force" in err


def test_ls_lists_path_cid_size_tab_separated(sample_tree: Tree, write_car: Callable[[bytes], Path]) -> None:
    blocks, root, files = sample_tree
    code, out, _ = _run("ls", str(write_car(blocks.car([root]))))
    assert code == 0
    rows = [line.split("\t") for line in out.splitlines()]
    assert rows[0] == [".", cid_to_str(root), str(sum(map(len, files.values())))]
    by_path = {r[0]: r for r in rows}
    assert by_path["sub/b.txt"][2] == str(len(files["sub/b.txt"]))
    assert [r[0] for r in rows] == [
        ".", "a.md", "big.bin", "empty.txt", "sub", "sub/b.txt", "sub/deeper", "sub/deeper/c.txt", "void"
    ]


def test_ls_json_is_an_array_of_entries(sample_tree: Tree, write_car: Callable[[bytes], Path]) -> None:
    blocks, root, files = sample_tree
    code, out, _ = _run("ls", "--json", str(write_car(blocks.car([root]))))
    assert code == 0
    entries = json.loads(out)
    total = sum(map(len, files.values()))
    assert entries[0] == {"root": cid_to_str(root), "path": "", "cid": cid_to_str(root), "kind": "directory", "size": total}
    assert {e["path"]: e["size"] for e in entries if e["kind"] == "file"} == {p: len(d) for p, d in files.items()}


def test_ls_with_several_roots_prefixes_paths(blocks: Blocks, write_car: Callable[[bytes], Path]) -> None:
    one, two = blocks.directory({"a": blocks.raw(b"1")}), blocks.directory({"b": blocks.raw(b"2")})
    code, out, _ = _run("ls", str(write_car(blocks.car([one, two]))))
    assert code == 0
    assert [line.split("\t")[0] for line in out.splitlines()] == [
        cid_to_str(one), f"{cid_to_str(one)}/a", cid_to_str(two), f"{cid_to_str(two)}/b"
    ]


def test_ls_of_missing_root_block_fails(blocks: Blocks, write_car: Callable[[bytes], Path]) -> None:
    root = blocks.directory({"a": blocks.raw(b"1")})
    code, _, err = _run("ls", str(write_car(blocks.car([root], skip=frozenset({root})))))
    assert code == 3
    assert cid_to_str(root) in err


def _car_with_one_3mib_block(tmp_path: Path) -> tuple[Path, bytes]:
    data = b"y" * (3 * 1024 * 1024)
    cid = make_cid(1, RAW, data)
    out = io.BytesIO()
    writer = CarWriter(out, [cid])
    writer.put(cid, data)
    writer.close()
    path = tmp_path / "big.car"
    path.write_bytes(out.getvalue())
    return path, data


def test_unpack_and_ls_honour_a_raised_max_block_size(tmp_path: Path) -> None:
    car, data = _car_with_one_3mib_block(tmp_path)
    code, out, err = _run("ls", str(car), "--max-block-size", "4000000")
    assert code == 0, err
    assert out.endswith(f"\t{len(data)}\n")
    code, _out, err = _run("unpack", str(car), "-o", str(tmp_path / "out"), "--max-block-size", "4000000")
    assert code == 0, err
    assert (tmp_path / "out").read_bytes() == data


def test_unpack_keeps_the_default_block_size_limit(tmp_path: Path) -> None:
    car, _data = _car_with_one_3mib_block(tmp_path)
    code, _out, err = _run("unpack", str(car), "-o", str(tmp_path / "out"))
    assert code == 3
    assert "over the 2097152-byte limit" in err
    assert not (tmp_path / "out").exists()
