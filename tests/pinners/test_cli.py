"""`bundlekit pin` and `bundlekit pinners` through the real command table."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import httpx
import pytest
import respx
from click.testing import CliRunner

from bundlekit.blockstore import BlockStore
from bundlekit.cli import cli

from .conftest import SECRET, Car

API = "https://api.pinata.test"
UP = "https://uploads.pinata.test"


@pytest.fixture
def runner(monkeypatch: pytest.MonkeyPatch, store_home: Path) -> CliRunner:
    for var in ("PINATA_JWT", "PSA_TOKEN", "WEB3_STORAGE_TOKEN", "FILEBASE_ACCESS_KEY_ID", "CI"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("BUNDLEKIT_PINATA_API_URL", API)
    monkeypatch.setenv("BUNDLEKIT_PINATA_UPLOAD_URL", UP)
    return CliRunner()


def test_pin_prints_the_root_alone_on_stdout_and_the_table_on_stderr(runner: CliRunner, car: Car) -> None:
    result = runner.invoke(cli, ["pin", str(car.path), "--pinner", "memory"])
    assert result.exit_code == 0, result.output
    assert result.stdout == car.root_text + "\n"
    assert "memory" in result.stderr and "pinned" in result.stderr


def test_pin_json_reports_root_and_pins(runner: CliRunner, car: Car) -> None:
    result = runner.invoke(cli, ["pin", str(car.path), "--pinner", "memory", "--json"])
    data = json.loads(result.stdout)
    assert data["root"] == car.root_text
    assert [(p["pinner"], p["status"], p["error"]) for p in data["pins"]] == [("memory", "pinned", None)]


def test_default_pinner_is_local_and_pinning_twice_keeps_one_pin(
    runner: CliRunner, car: Car, store_home: Path
) -> None:
    for _ in range(2):
        result = runner.invoke(cli, ["pin", str(car.path), "--name", "v1"])
        assert result.exit_code == 0, result.output
    pins = BlockStore(store_home).pins()
    assert [meta["name"] for meta in pins.values()] == ["v1"]


@respx.mock
def test_require_all_exits_4_when_one_pinner_fails(
    runner: CliRunner, car: Car, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PINATA_JWT", SECRET)
    respx.get(f"{API}/v3/files/public").mock(return_value=httpx.Response(401, text=f"bad token {SECRET}"))
    result = runner.invoke(cli, ["pin", str(car.path), "--pinner", "memory", "--pinner", "pinata"])
    assert result.exit_code == 4
    assert "not met" in result.stderr


@respx.mock
def test_require_any_exits_0_when_one_pinner_succeeds(
    runner: CliRunner, car: Car, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PINATA_JWT", SECRET)
    respx.get(f"{API}/v3/files/public").mock(return_value=httpx.Response(401))
    result = runner.invoke(cli, ["pin", str(car.path), "--pinner", "memory", "--pinner", "pinata",
                                 "--require", "any", "--json"])
    assert result.exit_code == 0
    statuses = {p["pinner"]: p["status"] for p in json.loads(result.stdout)["pins"]}
    assert statuses == {"memory": "pinned", "pinata": "failed"}


@respx.mock
def test_no_secret_appears_in_any_output_or_log(
    runner: CliRunner, car: Car, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("PINATA_JWT", SECRET)
    # The service echoes the token back (in the body of a 400): it must not reach the user.
    respx.get(f"{API}/v3/files/public").mock(
        return_value=httpx.Response(400, json={"error": f"token {SECRET} malformed"}))
    for args in (["--json"], []):
        result = runner.invoke(cli, ["pin", str(car.path), "--pinner", "pinata", *args])
        assert result.exit_code == 4
        assert "malformed" in result.output + result.stderr
        assert SECRET not in result.output and SECRET not in result.stderr
    listing = runner.invoke(cli, ["pinners", "--json"])
    assert SECRET not in listing.output
    assert SECRET not in caplog.text


def test_an_unconfigured_pinner_fails_before_any_upload(runner: CliRunner, car: Car) -> None:
    result = runner.invoke(cli, ["pin", str(car.path), "--pinner", "memory", "--pinner", "pinata"])
    assert result.exit_code == 2  # a missing setting is a usage error; nothing was published
    assert "PINATA_JWT" in result.stderr


def test_an_unknown_pinner_is_reported(runner: CliRunner, car: Car) -> None:
    result = runner.invoke(cli, ["pin", str(car.path), "--pinner", "ipfs-magic"])
    assert result.exit_code == 2 and "ipfs-magic" in result.stderr


def test_a_file_that_is_not_a_car_is_an_error(runner: CliRunner, tmp_path: Path) -> None:
    bogus = tmp_path / "notes.txt"
    bogus.write_text("not a car")
    result = runner.invoke(cli, ["pin", str(bogus), "--pinner", "memory"])
    assert result.exit_code != 0 and result.stderr.startswith("error:")


def test_pinners_lists_every_builtin_with_its_configuration(
    runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PINATA_JWT", SECRET)
    rows = {r["name"]: r for r in json.loads(runner.invoke(cli, ["pinners", "--json"]).stdout)}
    assert {"local", "memory", "pinata", "web3-storage", "filebase", "kubo", "psa"} <= set(rows)
    assert rows["pinata"]["configured"] is True and rows["psa"]["configured"] is False
    assert "PSA_TOKEN" in rows["psa"]["env"]


@respx.mock
def test_pinners_check_reports_a_refused_token(runner: CliRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PINATA_JWT", SECRET)
    monkeypatch.setenv("BUNDLEKIT_KUBO_URL", "http://kubo.test:5001")
    respx.get(f"{API}/data/testAuthentication").mock(return_value=httpx.Response(401))
    respx.post("http://kubo.test:5001/api/v0/version").mock(return_value=httpx.Response(200, json={}))
    result = runner.invoke(cli, ["pinners", "--check"])
    assert result.exit_code == 4  # issue 13: a failed check is a non-zero exit
    line = next(l for l in result.stdout.splitlines() if l.startswith("pinata"))
    assert "check failed" in line
    assert "credentials were refused" in result.stdout
    assert SECRET not in result.stdout


def test_progress_bar_only_on_a_terminal_outside_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from bundlekit.cli import output

    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert output.progress_enabled()
    monkeypatch.setenv("CI", "true")
    assert not output.progress_enabled()
    monkeypatch.delenv("CI")
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)
    assert not output.progress_enabled()
