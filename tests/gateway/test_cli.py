"""`bundlekit store ...` and `bundlekit serve` from the command line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from bundlekit._fs import is_temp_name
from bundlekit.blockstore import BlockStore
from bundlekit.car.reader import read_car
from bundlekit.cli import cli
from bundlekit.ipld.cid import RAW, cid_to_str, make_cid


def run(*args: str) -> object:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_store_import_prints_the_root_and_pins_it(tmp_path: Path, sample_car: Path, sample_dag) -> None:  # type: ignore[no-untyped-def]
    result = run("store", "--store", str(tmp_path / "s"), "import", str(sample_car), "--name", "agent")
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    assert result.stdout.strip() == cid_to_str(sample_dag.root)  # type: ignore[attr-defined]
    assert BlockStore(tmp_path / "s").pins()[sample_dag.root]["name"] == "agent"


def test_store_ls_lists_cid_name_date_and_size(tmp_path: Path, sample_car: Path, sample_dag) -> None:  # type: ignore[no-untyped-def]
    run("store", "--store", str(tmp_path / "s"), "import", str(sample_car), "--name", "agent")
    result = run("store", "--store", str(tmp_path / "s"), "ls")
    cid, name, created, size = result.stdout.strip().split("\t")  # type: ignore[attr-defined]
    assert (cid, name, size) == (
        cid_to_str(sample_dag.root),
        "agent",
        str(sum(map(len, sample_dag.blocks.values()))),
    )
    assert created.endswith("Z")


def test_store_ls_json_is_machine_readable(tmp_path: Path, sample_car: Path, sample_dag) -> None:  # type: ignore[no-untyped-def]
    run("store", "--store", str(tmp_path / "s"), "import", str(sample_car))
    rows = json.loads(run("store", "--store", str(tmp_path / "s"), "ls", "--json").stdout)  # type: ignore[attr-defined]
    assert [r["cid"] for r in rows] == [cid_to_str(sample_dag.root)]


def test_store_gc_reports_removed_blocks_on_stderr(tmp_path: Path, sample_car: Path) -> None:
    run("store", "--store", str(tmp_path / "s"), "import", str(sample_car))
    BlockStore(tmp_path / "s").put(make_cid(1, RAW, b"stray"), b"stray")
    result = run("store", "--store", str(tmp_path / "s"), "gc")
    assert result.exit_code == 0  # type: ignore[attr-defined]
    assert "removed 1 block" in result.stderr  # type: ignore[attr-defined]


def test_store_export_writes_a_verifiable_car(tmp_path: Path, sample_car: Path, sample_dag) -> None:  # type: ignore[no-untyped-def]
    run("store", "--store", str(tmp_path / "s"), "import", str(sample_car))
    out = tmp_path / "out.car"
    result = run(
        "store", "--store", str(tmp_path / "s"), "export", cid_to_str(sample_dag.root), "-o", str(out)
    )
    assert result.exit_code == 0  # type: ignore[attr-defined]
    with out.open("rb") as fh:
        roots, blocks = read_car(fh)
        assert roots == [sample_dag.root]
        assert sorted(cid for cid, _ in blocks) == sorted(sample_dag.blocks)


def test_store_export_of_an_unknown_root_fails_with_exit_3_and_no_file(tmp_path: Path) -> None:
    out = tmp_path / "out.car"
    result = run(
        "store", "--store", str(tmp_path / "s"), "export", cid_to_str(make_cid(1, RAW, b"x")), "-o", str(out)
    )
    assert result.exit_code == 3  # type: ignore[attr-defined]
    assert result.stderr.startswith("error: ")  # type: ignore[attr-defined]
    assert list(tmp_path.glob("*.car")) == [] and [p for p in os.listdir(tmp_path) if is_temp_name(p)] == []


def test_serve_prints_its_url_serves_and_stops_on_ctrl_c_with_exit_130(sample_car: Path, sample_dag) -> None:  # type: ignore[no-untyped-def]
    proc = subprocess.Popen(
        [sys.executable, "-m", "bundlekit", "serve", "--port", "0", str(sample_car)],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert line.startswith("serving on http://127.0.0.1:")
        base = line.split()[-1]
        r = httpx.get(f"{base}/ipfs/{cid_to_str(sample_dag.root)}?format=raw", timeout=10)
        assert r.content == sample_dag.blocks[sample_dag.root]
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=10) == 130  # an interrupt, as everywhere in the CLI
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()


def test_store_unpin_then_gc_empties_the_store(tmp_path: Path, sample_car: Path, sample_dag) -> None:  # type: ignore[no-untyped-def]
    run("store", "--store", str(tmp_path / "s"), "import", str(sample_car))
    assert run("store", "--store", str(tmp_path / "s"), "unpin", cid_to_str(sample_dag.root)).exit_code == 0  # type: ignore[attr-defined]
    run("store", "--store", str(tmp_path / "s"), "gc")
    assert list(BlockStore(tmp_path / "s").iter_blocks()) == []


def test_store_unpin_of_an_unpinned_cid_is_a_usage_error(tmp_path: Path) -> None:
    result = run("store", "--store", str(tmp_path / "s"), "unpin", cid_to_str(make_cid(1, RAW, b"x")))
    assert result.exit_code == 2  # type: ignore[attr-defined]
    assert "is not pinned" in result.stderr  # type: ignore[attr-defined]


def test_serve_stops_cleanly_on_sigterm(sample_car: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "bundlekit", "serve", "--port", "0", str(sample_car)],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        assert proc.stderr.readline().startswith("serving on http://127.0.0.1:")
        proc.terminate()
        assert proc.wait(timeout=10) == 143
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()


def test_serve_on_a_busy_port_is_a_usage_error(sample_car: Path) -> None:
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = run("serve", "--port", str(port), str(sample_car))
    assert result.exit_code == 2  # type: ignore[attr-defined]
    assert "cannot listen on 127.0.0.1" in result.stderr  # type: ignore[attr-defined]


def test_store_unpin_of_garbage_is_a_one_line_usage_error(tmp_path: object) -> None:
    result = CliRunner().invoke(cli, ["store", "--store", str(tmp_path), "unpin", "garbage"])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and "give a CID string" in result.stderr


# `store export`: output problems are one-line errors, nothing half-written.


def _imported_store(tmp_path: Path, sample_car: Path) -> Path:
    """A store at tmp_path/s holding sample_car, imported by the command."""
    store = tmp_path / "s"
    result = CliRunner().invoke(cli, ["store", "--store", str(store), "import", str(sample_car)])
    assert result.exit_code == 0, result.output
    return store


def test_store_export_under_a_file_is_a_one_line_error(tmp_path: Path, sample_car: Path, sample_dag) -> None:  # type: ignore[no-untyped-def]
    store = _imported_store(tmp_path, sample_car)
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    result = CliRunner().invoke(
        cli,
        ["store", "--store", str(store), "export", cid_to_str(sample_dag.root), "-o", str(blocker / "x.car")],
    )
    assert result.exit_code == 1
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert result.stderr.startswith(f"error: cannot write {blocker / 'x.car'}: a file is in the way")
    assert "Traceback" not in result.output


def test_store_export_of_a_missing_root_leaves_no_temp_file(tmp_path: Path, sample_car: Path) -> None:
    store = _imported_store(tmp_path, sample_car)
    out = tmp_path / "out"
    out.mkdir()
    missing = "bafkreiey5jxe6ilpf62lnh77tm5ejbbmhbugzjuf6p2v3remlu73ced34q"
    result = CliRunner().invoke(
        cli, ["store", "--store", str(store), "export", missing, "-o", str(out / "x.car")]
    )
    assert result.exit_code != 0
    assert result.stderr.startswith("error: ")
    assert os.listdir(out) == []


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o077, 0o600)])
def test_store_export_car_mode_follows_the_umask_like_pack_output(
    tmp_path: Path, sample_car: Path, sample_dag, umask: int, mode: int
) -> None:  # type: ignore[no-untyped-def]
    store = _imported_store(tmp_path, sample_car)
    dest = tmp_path / "x.car"
    old = os.umask(umask)
    try:
        result = CliRunner().invoke(
            cli, ["store", "--store", str(store), "export", cid_to_str(sample_dag.root), "-o", str(dest)]
        )
    finally:
        os.umask(old)
    assert result.exit_code == 0, result.output
    assert dest.stat().st_mode & 0o777 == mode


@pytest.mark.parametrize("token", ["short-token", "has a space inside it ok", "line\nbreak-token-0123456"],
                         ids=["short", "space", "line-break"])
def test_serve_with_an_unusable_token_is_a_usage_error_that_never_shows_it(tmp_path: Path, token: str,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BUNDLEKIT_SERVE_TOKEN", token)
    result = CliRunner().invoke(cli, ["serve", "--store", str(tmp_path / "s"), "--port", "0"])
    assert result.exit_code == 2, result.output
    assert "$BUNDLEKIT_SERVE_TOKEN must be one word of at least 16" in result.output
    assert token.strip() not in result.output


def test_serve_with_a_token_and_no_store_is_a_usage_error(sample_car: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BUNDLEKIT_SERVE_TOKEN", "a-long-enough-token-0123")
    result = CliRunner().invoke(cli, ["serve", "--no-store", str(sample_car), "--port", "0"])
    assert result.exit_code == 2 and "--no-store serves none" in result.output
