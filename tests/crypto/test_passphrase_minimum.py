"""A passphrase shorter than the documented minimum: a warning when encrypting, refused with --strong-passphrase."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest
from click.testing import CliRunner

from bundlekit.cli import cli
from bundlekit.crypto._keys import PASSPHRASE_MIN_CHARS, weak_passphrase
from bundlekit.memory import Memory

SHORT = "x"
LONG = "correct horse battery staple"
SPEC = Path(__file__).resolve().parents[2] / "specs" / "encryption.md"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    mem = Memory(tmp_path / "memory")
    mem.write("user_role", name="Role", description="plays 5-a-side", type="user", body="Saturdays.")
    return tmp_path / "memory"


def _run(*args: str, passphrase: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), env={"PP": passphrase}, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_the_minimum_is_twelve_characters() -> None:
    assert PASSPHRASE_MIN_CHARS == 12


def test_a_passphrase_under_the_minimum_is_weak() -> None:
    assert weak_passphrase("a" * (PASSPHRASE_MIN_CHARS - 1)) is not None


def test_a_passphrase_at_the_minimum_is_not_weak() -> None:
    assert weak_passphrase("a" * PASSPHRASE_MIN_CHARS) is None


def test_characters_are_counted_after_nfc() -> None:
    decomposed = unicodedata.normalize("NFD", "é") * 6  # 12 code points, 6 characters once NFC
    assert weak_passphrase(decomposed) is not None


def test_the_weakness_message_names_neither_the_passphrase_nor_its_length() -> None:
    message = weak_passphrase("hunter2") or ""
    assert "hunter2" not in message and " 7 " not in message and "12 characters" in message


def test_build_with_a_short_passphrase_warns_on_stderr_and_still_builds(tree: Path, tmp_path: Path) -> None:
    out_car = tmp_path / "e.car"
    code, out, err = _run("build", str(tree), "-o", str(out_car), "--encrypt", "--passphrase-env", "PP",
                          passphrase=SHORT)
    assert code == 0 and out.startswith("bafy") and out_car.is_file()
    assert "warning: the passphrase is shorter than 12 characters" in err


def test_build_strong_passphrase_refuses_a_short_one_with_exit_2_and_writes_nothing(tree: Path, tmp_path: Path) -> None:
    out_car = tmp_path / "e.car"
    code, _out, err = _run("build", str(tree), "-o", str(out_car), "--encrypt", "--passphrase-env", "PP",
                           "--strong-passphrase", passphrase=SHORT)
    assert code == 2 and "--strong-passphrase refuses it" in err
    assert not out_car.exists()


def test_build_with_a_long_passphrase_says_nothing(tree: Path, tmp_path: Path) -> None:
    code, _out, err = _run("build", str(tree), "-o", str(tmp_path / "e.car"), "--encrypt", "--passphrase-env", "PP",
                           "--strong-passphrase", passphrase=LONG)
    assert code == 0 and "warning" not in err


def test_load_with_a_short_passphrase_does_not_warn(tree: Path, tmp_path: Path) -> None:
    car = tmp_path / "e.car"
    _run("build", str(tree), "-o", str(car), "--encrypt", "--passphrase-env", "PP", passphrase=SHORT)
    code, _out, err = _run("load", str(car), "-o", str(tmp_path / "loaded"), "--passphrase-env", "PP",
                           passphrase=SHORT)
    assert code == 0 and "warning" not in err


def test_pin_strong_passphrase_refuses_a_short_passphrase(tree: Path, tmp_path: Path) -> None:
    code, _out, err = _run("pin", str(tree), "--pinner", "memory", "--passphrase-env", "PP", "--strong-passphrase",
                           passphrase=SHORT)
    assert code == 2 and "--strong-passphrase refuses it" in err


def test_build_help_states_the_minimum() -> None:
    out = CliRunner().invoke(cli, ["build", "--help"]).stdout
    assert "--strong-passphrase" in out and "12 characters" in out


def test_the_spec_states_the_minimum() -> None:
    assert "at least 12 characters" in SPEC.read_text(encoding="utf-8")
