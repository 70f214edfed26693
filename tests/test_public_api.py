"""The package surface: every public name resolves, and start-up stays light."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import bundlekit
from bundlekit.cli import COMMANDS


@pytest.mark.parametrize("name", sorted(bundlekit._LAZY))
def test_every_lazy_public_name_resolves(name: str) -> None:
    assert getattr(bundlekit, name) is not None


def test_unknown_attribute_raises_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_thing"):
        bundlekit.no_such_thing  # noqa: B018


def test_importing_the_cli_loads_no_heavy_module() -> None:
    code = (
        "import sys, bundlekit.cli\n"
        "heavy = [m for m in ('boto3', 'httpx', 'yaml', 'cryptography', 'eth_account', 'multiformats', 'mcp')"
        " if m in sys.modules]\n"
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert out.stdout.strip() == ""


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_loads_and_has_help(command: str) -> None:
    from click.testing import CliRunner

    result = CliRunner().invoke(bundlekit.cli.cli, [command, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output


def test_all_is_the_error_tree_plus_the_lazy_names() -> None:
    assert bundlekit.__all__ == ["errors", "__version__", *bundlekit.errors.__all__, *bundlekit._LAZY]


def test_a_result_names_its_binary_root_apart_from_its_text(tmp_path: Path) -> None:
    from bundlekit import Memory, build_bundle, load_bundle
    from bundlekit.ipld.cid import cid_to_str

    mem = Memory(tmp_path / "memory")
    mem.write("k", name="K", description="d", type="user", body="b")
    built = build_bundle(mem, tmp_path / "b.car")
    loaded = load_bundle(str(tmp_path / "b.car"))
    for result in (built, loaded):
        assert isinstance(result.root_bytes, bytes) and cid_to_str(result.root_bytes) == result.root_cid
        assert result.root == result.root_bytes  # the old name, kept


def test_the_sync_keeps_its_names_after_moving_into_the_flows() -> None:
    import bundlekit.flows.sync as flow
    import bundlekit.syncer as syncer

    assert bundlekit.sync is flow.sync and bundlekit.SyncReport is flow.SyncReport
    for name in syncer.__all__:
        assert getattr(syncer, name) is getattr(flow, name)
