"""The registry: built-ins and third-party pinners through the same entry-point group."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from bundlekit import pinning
from bundlekit.pinning import registry
from bundlekit.errors import PinnerNotConfigured, PinnerNotFound

from .conftest import CANARY

ROOT = Path(__file__).resolve().parents[2]
BUILTINS = {"local", "memory", "pinata", "web3-storage", "filebase", "kubo", "psa"}


def test_builtins_are_found_through_the_entry_point_group() -> None:
    assert BUILTINS <= set(pinning.available_pinners())


def test_the_built_ins_are_the_entry_points_pyproject_registers() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["entry-points"][registry.ENTRY_POINT_GROUP] == registry.BUILT_IN


def test_a_built_in_pinner_is_made_without_reading_entry_points_or_importing_httpx(tmp_path: Path) -> None:
    """A writer's ``sync --name-key`` names ``local``: neither the entry-point scan nor httpx (issue 37)."""
    code = ("import sys\n"
            "from bundlekit.pinning.registry import create_pinner\n"
            "pinner = create_pinner('local', {'BUNDLEKIT_HOME': sys.argv[1]})\n"
            "print(pinner.name, 'importlib.metadata' in sys.modules, 'httpx' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "home")], capture_output=True, text=True,
                         check=True).stdout
    assert out.split() == ["local", "False", "False"]


def test_every_builtin_loads_to_a_class_with_from_env_and_is_configured() -> None:
    for name in BUILTINS:
        factory = pinning.pinner_factory(name)
        assert callable(factory.from_env) and callable(factory.is_configured)


def test_unknown_pinner_raises_pinner_not_found_listing_the_known_ones() -> None:
    with pytest.raises(PinnerNotFound, match="available: .*memory"):
        pinning.create_pinner("nope")


def test_missing_settings_raise_not_configured_naming_the_variables() -> None:
    with pytest.raises(PinnerNotConfigured, match="PINATA_JWT"):
        pinning.create_pinner("pinata", {})


def test_not_configured_error_names_only_missing_variables() -> None:
    with pytest.raises(PinnerNotConfigured) as info:
        pinning.create_pinner("filebase", {"FILEBASE_ACCESS_KEY_ID": "AKIAVALUE1234", "FILEBASE_BUCKET": "b"})
    assert "FILEBASE_SECRET_ACCESS_KEY" in str(info.value)
    assert "AKIAVALUE1234" not in str(info.value)


def _install_dist(tmp_path: Path) -> Path:
    """A tiny installed distribution (dist-info + module) registering pinner 'thirdparty'."""
    site = tmp_path / "site"
    (site / "thirdparty_pinner-1.0.dist-info").mkdir(parents=True)
    (site / "thirdparty_pinner-1.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: thirdparty-pinner\nVersion: 1.0\n"
    )
    (site / "thirdparty_pinner-1.0.dist-info" / "entry_points.txt").write_text(
        "[bundlekit.pinners]\nthirdparty = thirdparty_pinner:ThirdParty\n"
    )
    (site / "thirdparty_pinner.py").write_text(
        "from bundlekit.pinning import BasePinner, PinResult, PINNED\n"
        "from bundlekit import cid_to_str\n"
        "class ThirdParty(BasePinner):\n"
        "    name = 'thirdparty'\n"
        "    env_vars = ('THIRDPARTY_TOKEN',)\n"
        "    @classmethod\n"
        "    def from_env(cls, env):\n"
        "        return cls()\n"
        "    def pin(self, car, root, *, name=None, size=None):\n"
        "        car.read()\n"
        "        return PinResult(self.name, cid_to_str(root), PINNED)\n"
        "    def status(self, cid):\n"
        "        return PinResult(self.name, cid_to_str(cid), PINNED)\n"
        "    def unpin(self, cid):\n"
        "        pass\n"
    )
    return site


def test_a_third_party_distribution_registers_through_the_same_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = _install_dist(tmp_path)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delitem(sys.modules, "thirdparty_pinner", raising=False)
    assert "thirdparty" in pinning.available_pinners()
    pinner = pinning.create_pinner("thirdparty", {})
    assert isinstance(pinner, pinning.Pinner)
    assert pinning.pinner_factory("thirdparty").is_configured({"THIRDPARTY_TOKEN": "x"})


def test_a_registered_pinner_that_cannot_import_is_reported_not_crashed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = _install_dist(tmp_path)
    (site / "thirdparty_pinner.py").write_text("raise ImportError('broken dependency')\n")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delitem(sys.modules, "thirdparty_pinner", raising=False)
    with pytest.raises(PinnerNotFound, match="cannot be loaded"):
        pinning.create_pinner("thirdparty", {})


# Credentials go into HTTP headers, which carry one line of ASCII: a value that cannot is a configuration
# error naming the variable, never echoing the value (issue 12, item 5). Before, a token with a
# typographic quote or a non-breaking space failed inside httpx with a ``UnicodeEncodeError`` traceback.


@pytest.mark.parametrize(
    ("name", "env", "variable"),
    [
        ("pinata", {"PINATA_JWT": f"{CANARY}\u201d"}, "PINATA_JWT"),
        ("psa", {"BUNDLEKIT_PSA_URL": "https://psa.example", "PSA_TOKEN": f"\u00a0{CANARY}"}, "PSA_TOKEN"),
    ],
)
def test_a_non_ascii_token_is_not_configured(name: str, env: dict[str, str], variable: str) -> None:
    with pytest.raises(PinnerNotConfigured, match=f"{variable} holds a non-ASCII character") as caught:
        pinning.create_pinner(name, env)
    assert CANARY not in str(caught.value)


def test_an_international_service_url_is_still_accepted() -> None:
    env = {"BUNDLEKIT_PSA_URL": "https://épingle.example", "PSA_TOKEN": "t0ken"}
    with pinning.create_pinner("psa", env):
        pass


@pytest.mark.parametrize("value", [f"{CANARY}\n", f"{CANARY}\r\nX-Injected: 1"])
def test_a_token_with_a_line_break_is_a_configuration_error_naming_only_the_variable(value: str) -> None:
    with pytest.raises(PinnerNotConfigured, match="PINATA_JWT holds a line break") as caught:
        pinning.create_pinner("pinata", {"PINATA_JWT": value})
    assert CANARY not in str(caught.value)


def test_a_blank_token_is_not_configured() -> None:
    with pytest.raises(PinnerNotConfigured, match="set PINATA_JWT"):
        pinning.create_pinner("pinata", {"PINATA_JWT": "   "})


def test_pinners_lists_a_blank_token_as_not_configured() -> None:
    assert not pinning.pinner_factory("pinata").is_configured({"PINATA_JWT": "  "})  # type: ignore[attr-defined]


def test_the_listing_names_a_pinners_variables_never_their_values() -> None:
    rows = pinning.pinner_listing({"PINATA_JWT": "jwt-value-never-shown"})
    pinata = next(row for row in rows if row["name"] == "pinata")
    assert pinata["configured"] and "PINATA_JWT" in pinata["env"]
    assert "jwt-value-never-shown" not in repr(rows)


def test_a_listing_check_skips_the_pinners_that_are_not_configured() -> None:
    rows = pinning.pinner_listing({}, check=True)
    assert {row["check"] for row in rows if row["name"] in {"pinata", "web3-storage", "filebase"}} == {"skipped"}


def test_a_third_party_registering_a_built_in_name_is_passed_over_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A distribution registering ``local`` (found before ours on the path): the listing names the built-in that
    ``create_pinner`` uses (no listing of a pinner a publish does not use), and a warning names the other."""
    site = _install_dist(tmp_path)
    (site / "thirdparty_pinner-1.0.dist-info" / "entry_points.txt").write_text(
        "[bundlekit.pinners]\nlocal = thirdparty_pinner:ThirdParty\n"
    )
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delitem(sys.modules, "thirdparty_pinner", raising=False)
    with caplog.at_level("WARNING", logger="bundlekit.pinning"):
        listed = {row["name"]: row["entry_point"] for row in pinning.pinner_listing({})}
    assert listed["local"] == registry.BUILT_IN["local"]
    assert pinning.available_pinners()["local"].value == registry.BUILT_IN["local"]
    assert pinning.pinner_factory("local").__name__ == "LocalPinner"
    assert "thirdparty_pinner:ThirdParty" in caplog.text and "built in" in caplog.text
