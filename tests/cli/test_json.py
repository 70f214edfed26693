"""``--json`` on every command that produces a result: exactly one line on stdout, compact, key-sorted.

Each case builds its own arguments from the fixtures; the test runs the real
command table and checks stdout is one line that ``json.loads`` reads, in the
one canonical form (``separators=(",", ":")``, sorted keys), and that nothing
JSON-like leaked to stderr.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bundlekit.cli import COMMANDS
from bundlekit.cli import serve as serve_cli
from bundlekit.crypto.signing import Ed25519Signer
from bundlekit.ipld.cid import parse_cid
from bundlekit.memory import Memory
from bundlekit.names import publish

from .conftest import Run

Fixtures = dict[str, Any]
Case = Callable[[Fixtures], list[str | Path]]


def _written_tree(f: Fixtures) -> Path:
    """The sample tree with one extra memory written through the library."""
    tree: Path = f["tree"]
    Memory(tree).write("user_shoes", name="Shoes", description="wears size 44", type="user", body="Size 44.")
    return tree


def _export_blob(f: Fixtures) -> Path:
    blob = f["tmp"] / "blob.json"
    blob.write_text(json.dumps(Memory(f["tree"]).export()), encoding="utf-8")
    Memory(f["tmp"] / "other").init()  # the tree it is imported into (`memory import` needs one)
    return blob


def _name_key(f: Fixtures) -> Path:
    """A new Ed25519 key file for the IPNS commands."""
    path: Path = f["tmp"] / "name.pem"
    Ed25519Signer.generate().write(path)
    return path


def _published_name(f: Fixtures) -> str:
    """An IPNS name with a record kept in the (per-test) local store."""
    return publish(_name_key(f), parse_cid("bafkqaaa")).name


CASES: dict[str, Case] = {
    "pack": lambda f: ["pack", f["files"], "-o", f["tmp"] / "out.car", "--json"],
    "cid": lambda f: ["cid", f["files"], "--json"],
    "verify": lambda f: ["verify", f["plain_car"], "--json"],
    "unpack": lambda f: ["unpack", f["plain_car"], "-o", f["tmp"] / "unpacked", "--json"],
    "ls": lambda f: ["ls", f["plain_car"], "--json"],
    "build": lambda f: ["build", f["tree"], "-o", f["tmp"] / "built.car", "--json"],
    "load": lambda f: ["load", f["bundle"], "--json"],
    "load -o": lambda f: ["load", f["bundle"], "-o", f["tmp"] / "loaded", "--json"],
    "fork": lambda f: ["fork", f["bundle"], f["tmp"] / "forked", "--json"],
    "diff": lambda f: ["diff", _written_tree(f), f["bundle"], "--json"],
    "pin": lambda f: ["pin", f["plain_car"], "--pinner", "memory", "--json"],
    "pinners": lambda f: ["pinners", "--json"],
    "seeders": lambda f: ["seeders", "--json"],
    "unpin": lambda f: ["unpin", "--pinner", "local", "--name-prefix", "memory-", "--keep", "1", "--json"],
    "store ls": lambda f: ["store", "--store", f["store"][0], "ls", "--json"],
    "store gc": lambda f: ["store", "--store", f["store"][0], "gc", "--json"],
    "store import": lambda f: ["store", "--store", f["tmp"] / "s2", "import", f["plain_car"], "--json"],
    "store export": lambda f: ["store", "--store", f["store"][0], "export", f["store"][1],
                               "-o", f["tmp"] / "exported.car", "--json"],
    "store unpin": lambda f: ["store", "--store", f["store"][0], "unpin", f["store"][1], "--json"],
    "memory init": lambda f: ["memory", "-d", f["tmp"] / "fresh", "init", "--json"],
    "memory write": lambda f: ["memory", "-d", f["tree"], "write", "k1", "--name", "N", "--description", "d",
                               "--type", "user", "--body", "b", "--json"],
    "memory show": lambda f: ["memory", "-d", f["tree"], "show", "user_role", "--json"],
    "memory list": lambda f: ["memory", "-d", f["tree"], "list", "--json"],
    "memory forget": lambda f: ["memory", "-d", f["tree"], "forget", "user_role", "--json"],
    "memory note": lambda f: ["memory", "-d", f["tree"], "note", "played", "clip=kick", "--json"],
    "memory recall": lambda f: ["memory", "-d", f["tree"], "recall", "a", "--json"],
    "memory context": lambda f: ["memory", "-d", f["tree"], "context", "--json"],
    "memory export": lambda f: ["memory", "-d", f["tree"], "export", "--json"],
    "memory export -o": lambda f: ["memory", "-d", f["tree"], "export", "-o", f["tmp"] / "e.json", "--json"],
    "memory import": lambda f: ["memory", "-d", f["tmp"] / "other", "import", _export_blob(f), "--json"],
    "key message": lambda f: ["key", "message", "--namespace", "coach", "--json"],
    "convert": lambda f: ["convert", "--to", "massgen", f["tree"], "-o", f["tmp"] / "massgen", "--json"],
    "name create": lambda f: ["name", "create", "--key-file", f["tmp"] / "new.pem", "--json"],
    "name publish": lambda f: ["name", "publish", "--key-file", _name_key(f), "bafkqaaa", "--json"],
    "name resolve": lambda f: ["name", "resolve", _published_name(f), "--json"],
    "log": lambda f: ["log", f["bundle"], "--json"],
    "merge": lambda f: ["merge", f["bundle"], "--into", _written_tree(f), "--json"],
    "sync": lambda f: ["sync", _written_tree(f), "--name-key", _name_key(f), "--json"],
}


@pytest.fixture
def fixtures(
    tree: Path, bundle: Path, files: Path, plain_car: Path, store: tuple[Path, str], tmp_path: Path
) -> Fixtures:
    return {"tree": tree, "bundle": bundle, "files": files, "plain_car": plain_car, "store": store,
            "tmp": tmp_path}


@pytest.mark.parametrize("name", sorted(CASES))
def test_json_output_is_exactly_one_compact_line_on_stdout(name: str, run: Run, fixtures: Fixtures) -> None:
    result = run(*CASES[name](fixtures))
    assert result.exit_code == 0, result.stderr
    assert result.stdout.endswith("\n") and result.stdout.count("\n") == 1, result.stdout
    line = result.stdout[:-1]
    value = json.loads(line)
    assert line == json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    assert not any(text.startswith(("{", "[")) for text in result.stderr.splitlines()), result.stderr


class _InstantServer:
    """Stands in for the gateway server: serve_forever returns at once, so serve's output can be read."""

    url = "http://127.0.0.1:1"

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        return None

    def shutdown(self) -> None:
        return None

    def server_close(self) -> None:
        return None


def test_serve_json_is_one_compact_line_on_stdout(
    run: Run, plain_car: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(serve_cli, "create_server", lambda source, host, port, **_options: _InstantServer())
    result = run("serve", plain_car, "--json")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.count("\n") == 1
    value = json.loads(result.stdout)
    assert result.stdout[:-1] == json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    assert value["url"] == _InstantServer.url
    assert result.stderr == f"serving on {_InstantServer.url}\nstopped\n"


def test_every_command_with_a_result_is_covered() -> None:
    """A command added to the table without a --json case fails here.

    The servers run until stopped and print no result: serve (its --json announcement has its own
    test above), open (its --json announcement is tested in tests/ui/test_cli.py) and mcp (speaks
    the protocol on stdout).
    """
    covered = {name.split()[0] for name in CASES}
    assert set(COMMANDS) - covered == {"serve", "open", "mcp"}
