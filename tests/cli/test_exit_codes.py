"""Exit codes exactly as README promises: 0 ok, 1 general, 2 usage, 3 integrity or wrong key, 4 publishing, 130 Ctrl-C.

Every failure is one ``error: ...`` line on stderr (``interrupted`` for Ctrl-C) and nothing on stdout.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
import respx

from bundlekit.cli import car as car_cli

from .conftest import Run

PINATA_API = "https://api.pinata.test"


def _failed(result_stdout: str, result_stderr: str, code: int, actual: int) -> None:
    assert actual == code, result_stderr
    assert result_stdout == ""
    assert result_stderr.startswith("error: "), result_stderr
    assert result_stderr.count("\n") == 1, result_stderr


@pytest.mark.parametrize(
    "args",
    [
        ["pack"],  # missing argument (click)
        ["unpack", "{car}"],  # missing -o (click)
        ["verify", "{car}", "--max-depth", "0"],  # out of range (click)
        ["build", "{tree}", "--encrypt"],  # a bundlekit UsageError: --encrypt without a key
        ["key", "message"],  # no --namespace
    ],
    ids=["missing-argument", "missing-option", "bad-value", "encrypt-without-key", "key-without-namespace"],
)
def test_usage_errors_exit_2(args: list[str], run: Run, plain_car: Path, tree: Path) -> None:
    result = run(*[a.format(car=plain_car, tree=tree) for a in args])
    _failed(result.stdout, result.stderr, 2, result.exit_code)


@pytest.mark.parametrize(
    "args",
    [
        ["name", "publish", "--key-file", "{tree}/k.key", "notacid"],
        ["name", "publish", "--key-file", "{tree}/k.key", "ipfs://notacid/x"],
        ["store", "unpin", "notacid"],
        ["store", "export", "notacid", "-o", "{tree}/x.car"],
        ["ls", "{car}", "--root", "notacid"],
        ["unpack", "{car}", "-o", "{tree}/out", "--root", "notacid"],
    ],
    ids=["name-publish", "name-publish-uri", "store-unpin", "store-export", "ls-root", "unpack-root"],
)
def test_a_malformed_cid_on_the_command_line_exits_2_naming_the_parameter(
    args: list[str], run: Run, plain_car: Path, tree: Path
) -> None:
    result = run(*[a.format(car=plain_car, tree=tree) for a in args])
    _failed(result.stdout, result.stderr, 2, result.exit_code)
    assert "Invalid value for" in result.stderr and "not a valid CID: 'notacid'" in result.stderr


def test_a_mistyped_command_is_one_error_line(run: Run) -> None:
    result = run("buld")
    _failed(result.stdout, result.stderr, 2, result.exit_code)
    assert result.stderr == "error: no such command 'buld'; did you mean 'build'?\n"


def test_a_bare_command_group_still_prints_its_help(run: Run) -> None:
    result = run("memory")
    assert result.exit_code == 2
    assert "Usage:" in result.stderr and "Commands:" in result.stderr


@pytest.mark.parametrize("command", ["verify", "unpack", "ls"])
def test_a_truncated_car_exits_3(
    command: str, run: Run, plain_car: Path, truncated: Callable[[Path], Path], tmp_path: Path
) -> None:
    extra = ["-o", str(tmp_path / "out")] if command == "unpack" else []
    result = run(command, truncated(plain_car), *extra)
    _failed(result.stdout, result.stderr, 3, result.exit_code)
    assert "truncated" in result.stderr


def test_load_of_a_truncated_bundle_exits_3(run: Run, bundle: Path, truncated: Callable[[Path], Path]) -> None:
    result = run("load", truncated(bundle))
    _failed(result.stdout, result.stderr, 3, result.exit_code)


def test_a_wrong_passphrase_exits_3(run: Run, tree: Path, tmp_path: Path) -> None:
    car = tmp_path / "secret.car"
    env = {"RIGHT": "correct horse battery staple", "WRONG": "incorrect mule battery staple"}
    built = run("build", tree, "-o", car, "--encrypt", "--passphrase-env", "RIGHT", env=env)
    assert built.exit_code == 0, built.stderr
    result = run("load", car, "--passphrase-env", "WRONG", env=env)
    _failed(result.stdout, result.stderr, 3, result.exit_code)


def test_a_missing_key_env_var_exits_2(run: Run, tree: Path) -> None:
    result = run("build", tree, "--encrypt", "--passphrase-env", "NOT_SET_ANYWHERE")
    _failed(result.stdout, result.stderr, 2, result.exit_code)


def test_an_unknown_pinner_exits_2(run: Run, plain_car: Path) -> None:
    result = run("pin", plain_car, "--pinner", "no-such-pinner")
    _failed(result.stdout, result.stderr, 2, result.exit_code)
    assert "no-such-pinner" in result.stderr


def test_an_unconfigured_pinner_exits_2(run: Run, plain_car: Path) -> None:
    result = run("pin", plain_car, "--pinner", "pinata")
    _failed(result.stdout, result.stderr, 2, result.exit_code)


@respx.mock
def test_a_failed_pin_exits_4(run: Run, plain_car: Path) -> None:
    env = {"PINATA_JWT": "jwt-for-tests", "BUNDLEKIT_PINATA_API_URL": PINATA_API,
           "BUNDLEKIT_PINATA_UPLOAD_URL": "https://uploads.pinata.test"}
    respx.get(f"{PINATA_API}/v3/files/public").mock(return_value=httpx.Response(401))
    result = run("pin", plain_car, "--pinner", "pinata", env=env)
    assert result.exit_code == 4, result.stderr
    assert result.stdout.strip()  # the root is still printed: it was computed
    assert result.stderr.splitlines()[-1].startswith("error: --require all not met")


def test_a_general_error_exits_1(run: Run, tree: Path) -> None:
    result = run("memory", "-d", tree, "show", "nobody")  # MemoryNotFoundError: a general error
    _failed(result.stdout, result.stderr, 1, result.exit_code)


def _verify_raising(exc: type[BaseException], monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``bundlekit verify`` raise ``exc`` from inside the library call."""

    def raising(*args: object, **kwargs: object) -> None:
        raise exc

    monkeypatch.setattr(car_cli, "verify_car", raising)


def test_ctrl_c_exits_130_with_interrupted_on_stderr(
    run: Run, plain_car: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _verify_raising(KeyboardInterrupt, monkeypatch)
    result = run("verify", plain_car)
    assert result.exit_code == 130
    assert result.stdout == ""
    assert result.stderr == "interrupted\n"


def test_running_out_of_memory_is_one_error_line_and_exit_1(
    run: Run, plain_car: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Review of issue 12: `memory import` of a 300 MB blob under a 512 MB cap ended in a MemoryError traceback.
    _verify_raising(MemoryError, monkeypatch)
    result = run("verify", plain_car)
    _failed(result.stdout, result.stderr, 1, result.exit_code)
    assert "out of memory" in result.stderr


def test_a_car_that_cannot_be_written_is_a_general_error_not_an_integrity_one(
    run: Run, files: Path, tmp_path: Path
) -> None:
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    result = run("pack", files, "-o", blocker / "out.car")
    _failed(result.stdout, result.stderr, 1, result.exit_code)


# A URI or ``--gateway`` that httpx cannot parse is a usage error, not a traceback (issue 12, item 5).

URL_CID = "bafybeibaxstr6kbnpp45puzgkdmtnx37yjoeqccpcp4qg27mzip2hxq7fy"


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["load", "https://bafy.ipfs.localhost:X/"], "URI 'https://bafy.ipfs.localhost:X/'"),
        (["load", URL_CID, "--gateway", "http://[::1"], "--gateway 'http://[::1'"),
        (["fork", f"https://h:X/ipfs/{URL_CID}", "{dest}"], "URI"),
        (["diff", "https://h:X/manifest.json", "{dest}"], "URI"),
        (["load", URL_CID, "--gateway", "http://127.0.0.1:99999"], "--gateway 'http://127.0.0.1:99999'"),
        (["name", "resolve", "k51qzi5uqu5dlvj2baxnqndepeb86cbk3ng7n3i46uzyxzyqj2xjonzllnv0v8", "--routing",
          "http://127.0.0.1:65536"], "routing endpoint 'http://127.0.0.1:65536'"),
    ],
    ids=["load-uri", "load-gateway", "fork-uri", "diff-uri", "load-gateway-port", "routing-port"],
)
def test_an_unparseable_url_exits_2_naming_it(args: list[str], named: str, run: Run, tmp_path: Path) -> None:
    result = run(*[a.format(dest=tmp_path / "dest") for a in args])
    assert result.exit_code == 2, result.stderr
    assert result.stderr.startswith(f"error: {named}")
    assert "is not a valid URL" in result.stderr
    assert result.stdout == ""
