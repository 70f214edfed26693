"""The provenance commands: build --sign, load --publisher, key message --manifest, name, log, pin --name-key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from bundlekit.blockstore import BlockStore
from bundlekit.bundle.signature import manifest_message
from bundlekit.cli import cli
from bundlekit.crypto.signing import Ed25519Signer, EthSigner
from bundlekit.errors import PinUnavailable

from .conftest import ETH_ADDRESS, ETH_KEY

CREATED = "2026-04-14T12:00:00Z"


def _run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def _build(tree: Path, car: Path, *extra: str, env: dict[str, str] | None = None) -> dict[str, object]:
    code, out, err = _run("build", str(tree), "-o", str(car), "--created", CREATED, "--json", *extra, env=env)
    assert code == 0, err
    doc: dict[str, object] = json.loads(out)
    return doc


def test_build_sign_with_an_ed25519_key_file_reports_the_did_key(tree: Path, tmp_path: Path,
                                                                 ed_key: tuple[Path, Ed25519Signer]) -> None:
    doc = _build(tree, tmp_path / "b.car", "--sign", "--key-file", str(ed_key[0]))
    assert doc["signer"] == ed_key[1].identity


def test_load_with_another_publisher_exits_3_and_writes_nothing(tree: Path, tmp_path: Path,
                                                                ed_key: tuple[Path, Ed25519Signer]) -> None:
    _build(tree, tmp_path / "b.car", "--sign", "--key-file", str(ed_key[0]))
    code, _out, err = _run("load", str(tmp_path / "b.car"), "-o", str(tmp_path / "out"), "--publisher", ETH_ADDRESS)
    assert code == 3 and "not by" in err and not (tmp_path / "out").exists()


def test_load_reports_the_verified_signer(tree: Path, tmp_path: Path) -> None:
    _build(tree, tmp_path / "b.car", "--sign", "--private-key-env", "PK", env={"PK": ETH_KEY})
    code, _out, err = _run("load", str(tmp_path / "b.car"), "--publisher", ETH_ADDRESS)
    assert code == 0 and f"signed by {ETH_ADDRESS}" in err


def test_key_message_manifest_prints_the_signed_text() -> None:
    code, out, _err = _run("key", "message", "--manifest", "bafkqaaa")
    assert code == 0 and out == manifest_message("bafkqaaa") + "\n"


def test_build_sign_accepts_a_signature_file_over_the_printed_message(tree: Path, tmp_path: Path) -> None:
    probe = _build(tree, tmp_path / "probe.car")
    _code, message, _err = _run("key", "message", "--manifest", str(probe["manifest_cid"]))
    sig = tmp_path / "sig.hex"
    sig.write_text("0x" + EthSigner(ETH_KEY).sign(message.removesuffix("\n").encode()).hex())
    doc = _build(tree, tmp_path / "b.car", "--sign", "--signature-file", str(sig), "--signer", ETH_ADDRESS)
    assert doc["signer"] == ETH_ADDRESS and doc["manifest_cid"] == probe["manifest_cid"]


def test_name_create_then_publish_keeps_the_record_in_the_store(tmp_path: Path) -> None:
    key = tmp_path / "name.pem"
    _code, name, _err = _run("name", "create", "--key-file", str(key))
    code, out, err = _run("name", "publish", "--key-file", str(key), "bafkqaaa", "--json")
    assert code == 0 and json.loads(out)["sequence"] == 0 and "to store" in err
    assert BlockStore().get_record(name.strip()) is not None
    code, out, _err = _run("name", "resolve", name.strip())
    assert code == 0 and out.strip() == "bafkqaaa"


def test_pin_with_name_key_publishes_after_the_pins_hold(tree: Path, tmp_path: Path,
                                                         ed_key: tuple[Path, Ed25519Signer]) -> None:
    code, out, err = _run("pin", str(tree), "--pinner", "local", "--name-key", str(ed_key[0]), "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["name"]["value"] == f"/ipfs/{doc['root']}" and doc["name"]["sequence"] == 0


def test_pin_sign_signs_the_manifest_the_name_then_points_at(tree: Path, tmp_path: Path,
                                                              ed_key: tuple[Path, Ed25519Signer]) -> None:
    key = str(ed_key[0])
    code, out, err = _run("pin", str(tree), "--sign", "--key-file", key, "--name-key", key, "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["signer"] == ed_key[1].identity and doc["name"]["value"] == f"/ipfs/{doc['root']}"
    code, _out, err = _run("load", f"ipfs://{doc['root']}/manifest.json", "--publisher", ed_key[1].identity)
    assert code == 0 and f"signed by {ed_key[1].identity}" in err


def test_pin_sign_of_a_car_is_a_usage_error(tree: Path, tmp_path: Path, ed_key: tuple[Path, Ed25519Signer]) -> None:
    _build(tree, tmp_path / "b.car")
    code, out, err = _run("pin", str(tmp_path / "b.car"), "--sign", "--key-file", str(ed_key[0]))
    assert code == 2 and out == "" and "--sign" in err


def test_pin_whose_name_publication_fails_still_prints_the_pins(tree: Path, tmp_path: Path,
                                                               ed_key: tuple[Path, Ed25519Signer],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    def kubo_down(*args: object, **kwargs: object) -> None:
        raise PinUnavailable("kubo: routing/put failed (connection refused)")

    monkeypatch.setattr("bundlekit.flows.publish.publish_name", kubo_down)
    code, out, err = _run("pin", str(tree), "--pinner", "local", "--name-key", str(ed_key[0]), "--json")
    doc = json.loads(out)
    assert code == 4 and "routing/put failed" in err
    assert [(p["pinner"], p["status"]) for p in doc["pins"]] == [("local", "pinned")] and "name" not in doc


def test_log_prints_one_line_per_step(tree: Path, tmp_path: Path) -> None:
    a = _build(tree, tmp_path / "a.car")
    _run("load", str(tmp_path / "a.car"), "-o", str(tmp_path / "copy"))
    b = _build(tmp_path / "copy", tmp_path / "b.car")
    for car in ("a.car", "b.car"):
        with open(tmp_path / car, "rb") as fh:
            BlockStore().import_car(fh)
    code, out, _err = _run("log", f"ipfs://{b['root']}", "--json")
    assert code == 0 and [s["root"] for s in json.loads(out)["steps"]] == [b["root"], a["root"]]
