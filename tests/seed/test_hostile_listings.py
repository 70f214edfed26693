"""``bundlekit seeders`` and ``bundlekit pinners`` read every registration as foreign code (``bundlekit._plugins``):
a hostile or broken third party's docstring, declarations and ``is_configured`` become a row with its error;
stdout stays the listing's data (valid JSON with ``--json``), no environment value is printed, and an
interrupt is still an interrupt."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from bundlekit import _plugins
from bundlekit.cli import cli
from tests.seed.conftest import Run
from tests.seeding import install_dist, tree_files

SECRET = "ghp_" + "s3cr3t" * 6

HOSTILE = '''
import sys

class Base:
    options = ("a",)
    env_vars = ("A",)

    @classmethod
    def is_configured(cls, env):
        return False

class Escapes(Base):
    """Evil \\x1b[2J\\x1b]0;retitled\\x07 lane\\rOVERWRITE"""

class Huge(Base):
    __doc__ = "x" * 2_000_000

class NotADoc(Base):
    __doc__ = 12345

class Generator(Base):
    options = (o for o in ["a", "b"])

class Number(Base):
    options = 5

class Many(Base):
    options = ["o%d" % n for n in range(100_000)]

class Raw(Base):
    env_vars = [b"TOKEN"]

class Text(Base):
    env_vars = "GITHUB_TOKEN"

class Forged(Base):
    env_vars = ("A\\nforged row", "\\x1b[31mRED")

class NotABool(Base):
    @classmethod
    def is_configured(cls, env):
        return "yes"

class Prints(Base):
    @classmethod
    def is_configured(cls, env):
        print("NOT DATA")
        return True

class Leaks(Base):
    @classmethod
    def is_configured(cls, env):
        raise ValueError("the token is " + env.get("GITHUB_TOKEN", ""))

class Exits(Base):
    @classmethod
    def is_configured(cls, env):
        sys.exit(7)

class Odd(BaseException):
    pass

class OddRaise(Base):
    @classmethod
    def is_configured(cls, env):
        raise Odd("odd")

class Hangs(Base):
    @classmethod
    def is_configured(cls, env):
        import time
        time.sleep(60)
        return True

class Interrupts(Base):
    @classmethod
    def is_configured(cls, env):
        raise KeyboardInterrupt
'''

LANES = {"escapes": "Escapes", "huge": "Huge", "notadoc": "NotADoc", "generator": "Generator", "number": "Number",
         "many": "Many", "raw": "Raw", "text": "Text", "forged": "Forged", "notabool": "NotABool",
         "prints": "Prints", "leaks": "Leaks", "exits": "Exits", "oddraise": "OddRaise", "hangs": "Hangs",
         "na\x1b[31mme": "Escapes"}


def _install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lanes: dict[str, str], group: str) -> Path:
    site = install_dist(tmp_path / "hostile", "hostile_plugin", {})
    entries = "".join(f"{name} = hostile_plugin:{target}\n" for name, target in lanes.items())
    (site / "hostile_plugin-1.0.dist-info" / "entry_points.txt").write_text(f"[{group}]\n{entries}", encoding="utf-8")
    (site / "hostile_plugin.py").write_text(HOSTILE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delitem(sys.modules, "hostile_plugin", raising=False)
    monkeypatch.setattr(_plugins, "PROBE_SECONDS", 0.5)
    return site


@pytest.fixture
def hostile_seeders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return _install(tmp_path, monkeypatch, LANES, "bundlekit.seeders")


def _rows(*args: str) -> tuple[dict[str, dict[str, object]], str]:
    result = CliRunner(env={"GITHUB_TOKEN": SECRET}).invoke(cli, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return {str(row["name"]): row for row in json.loads(result.stdout)}, result.stdout + result.stderr


def test_seeders_json_stays_valid_data_whatever_a_third_party_does(hostile_seeders: Path) -> None:
    rows, everything = _rows("seeders")
    assert {"github", "x"} <= set(rows) and SECRET not in everything and "s3cr3t" not in everything
    assert rows["github"]["configured"] is True and "error" not in rows["github"]


def test_a_seeder_printing_on_stdout_is_kept_off_the_data(hostile_seeders: Path) -> None:
    result = CliRunner(env={}).invoke(cli, ["seeders", "--json"])
    assert "NOT DATA" not in result.stdout and "NOT DATA" in result.stderr
    assert json.loads(result.stdout)


@pytest.mark.parametrize(("lane", "error"), [
    ("generator", "options are a generator, not a tuple of names"),
    ("number", "options are a int, not a tuple of names"),
    ("many", "declares 100000 options; at most 32"),
    ("raw", "env_vars are not all names (a bytes among them)"),
    ("text", "env_vars are a str, not a tuple of names"),
    ("forged", "env_vars are not all names"),
    ("notabool", "is_configured answered a str, not True or False"),
    ("leaks", "is_configured failed (ValueError)"),
    ("exits", "is_configured tried to end the program (sys.exit)"),
    ("oddraise", "is_configured failed (Odd)"),
    ("hangs", "is_configured did not answer within 0.5 s"),
])
def test_a_seeder_breaking_its_contract_is_a_row_with_its_error(hostile_seeders: Path, lane: str, error: str) -> None:
    rows, _ = _rows("seeders")
    assert rows[lane]["configured"] is False and error in str(rows[lane]["error"])


def test_a_seeders_description_is_bounded_and_a_non_text_docstring_is_none(hostile_seeders: Path) -> None:
    rows, _ = _rows("seeders")
    assert rows["huge"]["description"] == "x" * 300 and rows["notadoc"]["description"] == ""


def test_the_seeders_table_never_carries_a_terminal_escape_nor_a_forged_row(hostile_seeders: Path) -> None:
    result = CliRunner(env={}).invoke(cli, ["seeders"])
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout and "\r" not in result.stdout
    assert "\\x1b]0;retitled" in result.stdout
    assert not any(line.startswith("forged row") for line in result.stdout.splitlines())


def test_a_seeder_raising_keyboard_interrupt_is_still_an_interrupt(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    site = _install(tmp_path, monkeypatch, {"interrupts": "Interrupts"}, "bundlekit.seeders")
    path = os.pathsep.join([str(site), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))])
    done = subprocess.run([sys.executable, "-m", "bundlekit", "seeders"], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "PYTHONPATH": path}, check=False)
    assert done.returncode == 130 and "Traceback" not in done.stderr


@pytest.mark.parametrize(("pinner", "error"), [
    ("notabool", "is_configured answered a str, not True or False"),
    ("hangs", "is_configured did not answer within 0.5 s"),
    ("exits", "is_configured tried to end the program (sys.exit)"),
    ("raw", "env_vars are not all names (a bytes among them)"),
])
def test_pinners_reads_a_third_party_the_same_guarded_way(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          pinner: str, error: str) -> None:
    _install(tmp_path, monkeypatch, {pinner: LANES[pinner]}, "bundlekit.pinners")
    rows, everything = _rows("pinners")
    assert rows[pinner]["configured"] is False and error in str(rows[pinner]["error"]) and SECRET not in everything


def test_a_pinner_whose_check_raises_a_foreign_error_is_a_failed_check(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    site = _install(tmp_path, monkeypatch, {"checks": "Checks"}, "bundlekit.pinners")
    (site / "hostile_plugin.py").write_text(
        "class Checks:\n    env_vars = ()\n    @classmethod\n    def is_configured(cls, env):\n        return True\n"
        "    @classmethod\n    def from_env(cls, env):\n        return cls()\n    def __enter__(self):\n"
        "        return self\n    def __exit__(self, *exc):\n        pass\n    def check(self):\n"
        "        raise RuntimeError('no')\n", encoding="utf-8")
    result = CliRunner(env={}).invoke(cli, ["pinners", "--check", "--json"])
    row = next(row for row in json.loads(result.stdout) if row["name"] == "checks")
    assert result.exit_code == 4 and row["check"] == "failed" and "its check failed (RuntimeError)" in row["error"]


@pytest.mark.parametrize(("lane", "error"), [
    ("generator", "its options are a generator, not a tuple of names"),
    ("text", "its env_vars are a str, not a tuple of names"),
    ("raw", "its env_vars are not all names"),
    ("number", "its options are a int"),
])
def test_seeding_from_a_lane_whose_declarations_break_the_contract_names_the_lane(
        hostile_seeders: Path, tree: Path, run: Run, lane: str, error: str) -> None:
    """`memory seed` read a str env_vars letter by letter and met bytes with "internal error ... please report
    it", blaming bundlekit; the lane is named now, as the listing names it, before anything runs."""
    before = tree_files(tree)
    result = run("seed", lane, "--yes")
    assert result.exit_code == 1 and f"seeder {lane!r} breaks the seeder contract: {error}" in result.stderr
    assert "internal error" not in result.stderr and tree_files(tree) == before
