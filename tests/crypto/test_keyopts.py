"""The shared CLI key options: one source at a time, secrets only from env vars and files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from bundlekit.cli import LazyGroup
from bundlekit.cli._keyopts import key_options, resolve_key_spec
from bundlekit.crypto._keys import (
    PassphraseKey,
    PrivateKeySigner,
    RawKeyFile,
    SignatureKey,
    signature_message,
)
from bundlekit.errors import KeySourceError, UsageError

TEST_KEY = "0x" + "46" * 32


@pytest.fixture(scope="module")
def sig_hex() -> str:
    return "0x" + PrivateKeySigner(TEST_KEY).sign(signature_message("demo")).hex()


class ProbeGroup(LazyGroup):
    """The real error handling of the bundlekit CLI, over an ordinary command table."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return click.Group.list_commands(self, ctx)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return click.Group.get_command(self, ctx, cmd_name)


@click.group(cls=ProbeGroup)
def app() -> None:
    pass


@app.command()
@key_options
@click.option("--namespace", default="demo")
def probe(namespace: str, **params: Any) -> None:
    spec = resolve_key_spec(**params)
    if spec is None:
        click.echo("no key")
        return
    _, manifest = spec.new_bundle_key(namespace)
    click.echo(f"{type(spec).__name__} {manifest['key_source']}")


def run(*args: str, env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(app, ["probe", *args], env=env, catch_exceptions=False)


def test_no_key_option_gives_no_key() -> None:
    assert run().output == "no key\n"


def test_two_key_options_are_refused_with_exit_code_2(tmp_path: Path) -> None:
    (tmp_path / "k").write_bytes(b"k" * 32)
    result = run("--key-file", str(tmp_path / "k"), "--passphrase-env", "PW", env={"PW": "x"})
    assert result.exit_code == 2
    assert "--passphrase-env and --key-file cannot be combined" in result.output


def test_signature_env_gives_a_signature_key(sig_hex: str) -> None:
    assert resolve_key_spec(signature_env="SIG", environ={"SIG": sig_hex}).__class__ is SignatureKey


def test_signature_file_gives_a_signature_key(tmp_path: Path, sig_hex: str) -> None:
    (tmp_path / "sig.txt").write_text(sig_hex.removeprefix("0x") + "\n")
    assert isinstance(resolve_key_spec(signature_file=tmp_path / "sig.txt"), SignatureKey)


def test_passphrase_env_gives_a_passphrase_key() -> None:
    assert isinstance(resolve_key_spec(passphrase_env="PW", environ={"PW": "pw"}), PassphraseKey)


def test_key_file_gives_a_raw_key(tmp_path: Path) -> None:
    (tmp_path / "k").write_bytes(b"k" * 32)
    assert isinstance(resolve_key_spec(key_file=str(tmp_path / "k")), RawKeyFile)


def test_private_key_env_signs_and_matches_the_signature(sig_hex: str) -> None:
    signer = resolve_key_spec(private_key_env="PK", environ={"PK": TEST_KEY + "\n"})
    assert isinstance(signer, PrivateKeySigner)
    _, manifest = signer.new_bundle_key("demo")
    resolved = resolve_key_spec(signature_env="SIG", environ={"SIG": sig_hex})
    assert resolved is not None
    resolved.open_bundle_key(manifest, "demo")


def test_unrelated_command_parameters_are_ignored() -> None:
    assert resolve_key_spec(out="x.car", namespace="demo", redact_index=True) is None


def test_a_missing_env_var_is_named_and_exits_2() -> None:
    result = run("--passphrase-env", "NOPE_NOT_SET", env={"NOPE_NOT_SET": ""})
    assert result.exit_code == 2  # a setting the user must supply: a usage error
    assert "NOPE_NOT_SET is not set" in result.output


def test_a_bad_signature_never_reaches_the_output() -> None:
    result = run("--signature-env", "SIG", env={"SIG": "0xdeadbeefcafe"})
    assert result.exit_code == 2 and "65" in result.output
    assert "deadbeef" not in result.output


def test_an_oversized_signature_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "big").write_bytes(b"0" * 10_000)
    with pytest.raises(KeySourceError, match="too large"):
        resolve_key_spec(signature_file=tmp_path / "big")


def test_the_options_take_names_not_secrets() -> None:
    help_text = CliRunner().invoke(app, ["probe", "--help"]).output
    for option in ("--signature-env VAR", "--signature-file FILE", "--passphrase-env VAR", "--key-file FILE",
                   "--private-key-env VAR"):
        assert option in help_text


def test_resolve_raises_usage_error_for_two_sources() -> None:
    with pytest.raises(UsageError):
        resolve_key_spec(signature_env="A", private_key_env="B", environ={"A": "x", "B": "y"})
