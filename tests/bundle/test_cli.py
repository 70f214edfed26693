"""The build, load, fork and diff commands: parse, call the library, print."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from bundlekit.car.reader import read_car
from bundlekit.car.writer import CarWriter
from bundlekit.cli import cli
from bundlekit.gateway.server import serve_in_thread
from bundlekit.memory import Memory

from .conftest import BODY_CANARY, CREATED

CREATED_ARG = "2026-04-14T12:00:00Z"


def _run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_build_prints_the_root_cid_only(tree: Path, tmp_path: Path) -> None:
    code, out, _err = _run("build", str(tree), "-o", str(tmp_path / "b.car"), "--created", CREATED_ARG)
    assert code == 0 and out.startswith("bafy") and out.count("\n") == 1
    assert (tmp_path / "b.car").is_file()


def test_build_json_has_root_manifest_uri_files_bytes_manifest_cid_signer(tree: Path, tmp_path: Path) -> None:
    code, out, _err = _run("build", str(tree), "-o", str(tmp_path / "b.car"), "--created", CREATED_ARG, "--json")
    data = json.loads(out)
    assert code == 0 and set(data) == {"root", "manifest_uri", "files", "bytes", "manifest_cid", "signer"}
    assert data["manifest_uri"] == f"ipfs://{data['root']}/manifest.json"
    assert data["files"] == 6 and data["bytes"] == (tmp_path / "b.car").stat().st_size


def test_build_with_created_is_reproducible(tree: Path, tmp_path: Path) -> None:
    a = _run("build", str(tree), "-o", str(tmp_path / "a.car"), "--created", CREATED_ARG)[1]
    b = _run("build", str(tree), "-o", str(tmp_path / "b.car"), "--created", str(int(CREATED.timestamp())))[1]
    assert a == b


def test_build_encrypt_with_key_file(tree: Path, tmp_path: Path) -> None:
    key = tmp_path / "k"
    key.write_bytes(bytes(range(32)))
    code, out, err = _run("build", str(tree), "-o", str(tmp_path / "e.car"), "--encrypt", "--key-file", str(key))
    assert code == 0, err
    assert BODY_CANARY.encode() not in (tmp_path / "e.car").read_bytes()
    code, out, err = _run("load", str(tmp_path / "e.car"), "-o", str(tmp_path / "out"), "--key-file", str(key))
    assert code == 0, err
    assert BODY_CANARY in (tmp_path / "out" / "user_role.md").read_text()


def test_build_encrypt_without_key_is_a_usage_error(tree: Path, tmp_path: Path) -> None:
    code, _out, err = _run("build", str(tree), "-o", str(tmp_path / "e.car"), "--encrypt")
    assert code == 2 and err.startswith("error: --encrypt needs a key option")


def test_build_of_a_missing_directory_fails_cleanly(tmp_path: Path) -> None:
    code, _out, err = _run("build", str(tmp_path / "nope"), "-o", str(tmp_path / "b.car"))
    assert code == 2 and "not a directory" in err


def test_load_over_gateway_json_summary(tree: Path, tmp_path: Path) -> None:
    root = _run("build", str(tree), "-o", str(tmp_path / "b.car"), "--created", CREATED_ARG)[1].strip()
    with serve_in_thread(cars=[tmp_path / "b.car"]) as server:
        code, out, err = _run("load", f"ipfs://{root}", "--gateway", server.url, "-o", str(tmp_path / "out"), "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["root"] == root and summary["manifest_verified"] and summary["warnings"] == []
    assert (tmp_path / "out" / "user_role.md").is_file()


def test_load_of_an_encrypted_bundle_with_the_wrong_key_exits_nonzero(tree: Path, tmp_path: Path) -> None:
    good, bad = tmp_path / "k1", tmp_path / "k2"
    good.write_bytes(bytes(32))
    bad.write_bytes(bytes([1] * 32))
    _run("build", str(tree), "-o", str(tmp_path / "e.car"), "--encrypt", "--key-file", str(good))
    code, _out, err = _run("load", str(tmp_path / "e.car"), "--key-file", str(bad))
    assert code != 0 and err.startswith("error:")
    assert bytes(32).hex() not in err


def test_load_layers_writes_the_effective_view(tree: Path, tmp_path: Path) -> None:
    _run("build", str(tree), "-o", str(tmp_path / "base.car"), "--created", CREATED_ARG)
    Memory(tree, clock=lambda: CREATED).write("user_role", name="Role", description="override", type="user",
                                              body="Top layer body.")
    _run("build", str(tree), "-o", str(tmp_path / "top.car"), "--created", CREATED_ARG)
    code, out, err = _run("load", "--layer", f"user={tmp_path / 'base.car'}", "--layer", f"task={tmp_path / 'top.car'}",
                          "-o", str(tmp_path / "view"), "--json")
    assert code == 0, err
    assert json.loads(out)["memories"] == 4
    assert "Top layer body." in (tmp_path / "view" / "user_role.md").read_text()


def test_load_layer_needs_name_equals_uri(tmp_path: Path) -> None:
    code, _out, err = _run("load", "--layer", "just-a-uri", "-o", str(tmp_path / "o"))
    assert code == 2 and "NAME=URI" in err


def test_fork_command_merges(tree: Path, tmp_path: Path) -> None:
    _run("build", str(tree), "-o", str(tmp_path / "b.car"), "--created", CREATED_ARG)
    code, out, err = _run("fork", str(tmp_path / "b.car"), str(tmp_path / "dest"), "--json")
    assert code == 0, err
    assert json.loads(out)["import"]["added"] == ["feedback_tone", "project_season", "reference_reel", "user_role"]


def test_diff_command_exit_code_and_json(tree: Path, tmp_path: Path) -> None:
    _run("build", str(tree), "-o", str(tmp_path / "b.car"), "--created", CREATED_ARG)
    assert _run("diff", str(tree), str(tmp_path / "b.car"), "--exit-code")[0] == 0
    Memory(tree, clock=lambda: CREATED).forget("reference_reel")
    code, out, _err = _run("diff", str(tmp_path / "b.car"), str(tree), "--json")
    assert code == 0 and json.loads(out)["removed"] == ["reference_reel"]
    code, out, _err = _run("diff", str(tmp_path / "b.car"), str(tree), "--exit-code")
    assert code == 1 and "- reference_reel" in out


def test_build_key_option_without_encrypt_is_a_usage_error(tree: Path, tmp_path: Path) -> None:
    key = tmp_path / "k"
    key.write_bytes(bytes(32))
    code, _out, err = _run("build", str(tree), "-o", str(tmp_path / "e.car"), "--key-file", str(key))
    assert code == 2 and "--encrypt" in err
    assert not (tmp_path / "e.car").exists()


# Bad inputs to build, load and fork: one clear error, the right exit code, nothing written.

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "memory"


@pytest.fixture
def fixture_car(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The committed sample tree (fixtures/memory) built by the command, with its own store."""
    monkeypatch.setenv("BUNDLEKIT_HOME", str(tmp_path / "home"))
    shutil.copytree(FIXTURE, tmp_path / "mem")
    run = CliRunner().invoke(cli, ["build", str(tmp_path / "mem"), "-o", str(tmp_path / "b.car")])
    assert run.exit_code == 0, run.output
    return tmp_path / "b.car"


def test_load_under_a_file_is_one_line_error(fixture_car: Path, tmp_path: Path) -> None:
    (tmp_path / "emptyf").write_bytes(b"")
    run = CliRunner().invoke(cli, ["load", str(fixture_car), "-o", str(tmp_path / "emptyf" / "sub")])
    assert run.exit_code != 0 and "error:" in run.output and "Traceback" not in run.output


def test_fork_under_a_file_is_one_line_error(fixture_car: Path, tmp_path: Path) -> None:
    (tmp_path / "emptyf").write_bytes(b"")
    run = CliRunner().invoke(cli, ["fork", str(fixture_car), str(tmp_path / "emptyf" / "sub")])
    assert run.exit_code == 2 and "file in the way" in run.output


def test_a_car_whose_root_does_not_match_exits_3_and_names_the_car(fixture_car: Path, tmp_path: Path) -> None:
    with open(fixture_car, "rb") as fh:
        roots, it = read_car(fh, verify=False)
        blocks = list(it)
    bad = tmp_path / "bad.car"
    with open(bad, "wb") as out:
        writer = CarWriter(out, roots)
        for cid, data in blocks:
            writer.put(cid, data[:-1] + bytes([data[-1] ^ 1]) if cid == roots[0] else data)
    run = CliRunner().invoke(cli, ["load", str(bad), "-o", str(tmp_path / "out")])
    assert run.exit_code == 3
    assert "bad.car" in run.output and "local store" not in run.output
    assert not (tmp_path / "out").exists()


def test_build_of_a_directory_that_is_not_a_memory_tree_is_refused(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main.py").write_text("print('hi')\n")
    run = CliRunner().invoke(cli, ["build", str(tmp_path / "src"), "-o", str(tmp_path / "b.car")])
    assert run.exit_code == 2 and "not a memory tree" in run.output
    assert not (tmp_path / "b.car").exists()


@pytest.mark.parametrize("namespace", ["", "two\nlines"])
def test_build_with_a_bad_namespace_is_refused(tmp_path: Path, namespace: str) -> None:
    shutil.copytree(FIXTURE, tmp_path / "mem")
    run = CliRunner().invoke(cli, ["build", str(tmp_path / "mem"), "-o", str(tmp_path / "b.car"), "--namespace", namespace])
    assert run.exit_code == 2 and "namespace" in run.output
