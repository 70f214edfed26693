"""One exit code per kind of mistake, on every command, as README's exit-code table says.

Each kind of mistake a new user makes (a path that does not exist, an unknown choice,
a malformed CID, URI, IPNS name or memory key, a setting not supplied) is looked up in
README's table, and every command that can meet it is run with it: all must give the
code the table names, with one ``error: ...`` line and nothing on stdout.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bundlekit.bundle.build import build_bundle
from bundlekit.cli import COMMANDS
from bundlekit.crypto import RawKeyFile

from .conftest import Run

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")

#: kind of mistake -> the words README's table uses for it
KINDS = {
    "missing path": "a path that does not exist",
    "unknown choice": "an unknown choice",
    "malformed value": "a malformed CID, URI, IPNS name or memory key",
    "missing setting": "a setting to supply",
}

CID = "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy"  # b"hello world\n" as raw
NOSUCH = "{tmp}/nosuch"

CASES: dict[str, list[list[str]]] = {
    "missing path": [
        ["pack", NOSUCH, "-o", "{tmp}/x.car"],
        ["cid", NOSUCH],
        ["verify", NOSUCH + ".car"],
        ["unpack", NOSUCH + ".car", "-o", "{tmp}/out"],
        ["ls", NOSUCH + ".car"],
        ["build", NOSUCH],
        ["serve", NOSUCH + ".car", "--port", "0"],
        ["open", NOSUCH + ".car"],
        ["store", "import", NOSUCH + ".car"],
        ["load", NOSUCH + ".car", "-o", "{tmp}/out"],
        ["fork", NOSUCH + ".car", "{tmp}/dest"],
        ["diff", NOSUCH + ".car", "{tree}"],
        ["pin", NOSUCH],
        ["log", NOSUCH + ".car"],
        ["mcp", "--memory", NOSUCH],
        ["mcp", "--from", NOSUCH + ".car"],
        ["convert", "--from", "claude-code", NOSUCH, "-o", "{tmp}/out"],
        ["convert", "--to", "massgen", NOSUCH, "-o", "{tmp}/out"],
        ["memory", "-d", NOSUCH, "list"],
        ["memory", "-d", NOSUCH, "show", "user_role"],
        ["memory", "-d", NOSUCH, "recall", "football"],
        ["memory", "-d", NOSUCH, "context"],
        ["memory", "-d", "{tree}", "import", NOSUCH + ".json"],
        ["name", "publish", "--key-file", NOSUCH + ".pem", CID],
        ["merge", NOSUCH + ".car", "--into", "{tree}"],
        ["merge", "{bundle}", "--into", NOSUCH],
        ["sync", NOSUCH, "--name-key", "{tmp}/k.pem"],
        ["sync", "{tree}", "--name-key", NOSUCH + ".pem"],
    ],
    "unknown choice": [
        ["pack", "{tree}", "--profile", "nope"],
        ["cid", "{tree}", "--profile", "nope"],
        ["build", "{tree}", "--profile", "nope", "-o", "{tmp}/x.car"],
        ["build", "{tree}", "--encrypt", "--compat", "nope", "-o", "{tmp}/x.car"],
        ["pin", "{tree}", "--profile", "nope"],
        ["pin", "{tree}", "--pinner", "nope"],
        ["pin", "{tree}", "--require", "nope"],
        ["unpin", "--pinner", "nope", "--name-prefix", "memory-", "--keep", "1"],
        ["mcp", "--memory", "{tree}", "--allow-publish", "--pinner", "nope"],
        ["fork", "{bundle}", "{tmp}/dest", "--strategy", "nope"],
        ["convert", "--from", "nope", "{tree}", "-o", "{tmp}/out"],
        ["convert", "--to", "nope", "{tree}", "-o", "{tmp}/out"],
        ["memory", "-d", "{tree}", "write", "k", "--type", "nope", "--name", "n", "--description", "d"],
        ["merge", "{bundle}", "--into", "{tree}", "--on-conflict", "nope"],
        ["sync", "{tree}", "--name-key", "{tmp}/k.pem", "--pinner", "nope"],
    ],
    "malformed value": [
        ["unpack", "{bundle}", "-o", "{tmp}/out", "--root", "notacid"],
        ["ls", "{bundle}", "--root", "notacid"],
        ["load", "ipfs://notacid/manifest.json", "-o", "{tmp}/out"],
        ["load", "notauri", "-o", "{tmp}/out"],
        ["load", "ipns://notaname/manifest.json", "-o", "{tmp}/out"],
        ["load", "{bundle}", "-o", "{tmp}/out", "--publisher", "nobody"],
        ["fork", "ipfs://notacid", "{tmp}/dest"],
        ["diff", "ipfs://notacid", "{tree}"],
        ["log", "ipfs://notacid"],
        ["open", "ipfs://notacid"],
        ["mcp", "--from", "ipfs://notacid"],
        ["name", "resolve", "notaname"],
        ["name", "publish", "--key-file", "{tmp}/k.pem", "notacid"],
        ["store", "unpin", "notacid"],
        ["key", "message", "--manifest", "notacid"],
        ["memory", "-d", "{tree}", "write", "bad key", "--type", "user", "--name", "n", "--description", "d"],
        ["memory", "-d", "{tree}", "show", "bad key"],
        ["memory", "-d", "{tree}", "forget", "bad/key"],
        ["merge", "ipfs://notacid", "--into", "{tree}"],
        ["sync", "{tree}", "--name", "notaname"],
    ],
    "missing setting": [
        ["build", "{tree}", "--encrypt", "-o", "{tmp}/x.car"],
        ["build", "{tree}", "--encrypt", "--passphrase-env", "UNSET_VAR", "-o", "{tmp}/x.car"],
        ["build", "{tree}", "--sign", "-o", "{tmp}/x.car"],
        ["load", "{encrypted}", "-o", "{tmp}/out"],
        ["load", "{encrypted}", "-o", "{tmp}/out", "--passphrase-env", "UNSET_VAR"],
        ["fork", "{encrypted}", "{tmp}/dest"],
        ["diff", "{encrypted}", "{tree}", "--passphrase-env", "UNSET_VAR"],
        ["log", "{encrypted}", "--passphrase-env", "UNSET_VAR"],
        ["pin", "{tree}", "--pinner", "pinata"],
        ["pin", "{tree}", "--passphrase-env", "UNSET_VAR"],
        ["unpin", "--pinner", "pinata", "--name-prefix", "memory-", "--keep", "1"],
        ["mcp", "--from", "{encrypted}"],
        ["mcp", "--memory", "{tree}", "--allow-publish", "--pinner", "pinata"],
        ["convert", "--to", "three.ws", "{tree}", "-o", "{tmp}/tw", "--passphrase-env", "UNSET_VAR"],
        ["key", "message"],
        ["name", "create"],
        ["merge", "{encrypted}", "--into", "{tree}"],
    ],
}

#: commands none of the four kinds applies to: they take no path, choice, value or setting
NO_SUCH_MISTAKE = {"pinners", "seeders"}


def _code_for(kind: str) -> int:
    """The exit code README's table gives the words of ``kind``."""
    table = README[README.index("| exit | meaning |") :]
    rows = re.findall(r"^\| (\d+) \| (.*) \|$", table[: table.index("\n\n")], flags=re.MULTILINE)
    codes = [int(code) for code, meaning in rows if KINDS[kind] in meaning]
    assert len(codes) == 1, f"README's table names {KINDS[kind]!r} in {len(codes)} rows"
    return codes[0]


@pytest.fixture
def encrypted(tree: Path, tmp_path: Path) -> Path:
    out = tmp_path / "encrypted.car"
    build_bundle(tree, out, key=RawKeyFile(bytes(32)))
    return out


def test_every_command_meets_the_mistakes_that_apply_to_it() -> None:
    covered = {case[0] for cases in CASES.values() for case in cases}
    assert covered | NO_SUCH_MISTAKE == set(COMMANDS)


@pytest.mark.parametrize(
    ("kind", "args"),
    [(kind, args) for kind, cases in CASES.items() for args in cases],
    ids=[f"{kind}: {' '.join(args)}" for kind, cases in CASES.items() for args in cases],
)
def test_a_mistake_exits_with_the_code_readme_gives_its_kind(
    kind: str, args: list[str], run: Run, tree: Path, bundle: Path, encrypted: Path, tmp_path: Path,
) -> None:
    result = run(*[a.format(tmp=tmp_path, tree=tree, bundle=bundle, encrypted=encrypted) for a in args])
    assert result.exit_code == _code_for(kind), result.stderr
    assert result.stdout == ""
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr
    assert "No such option" not in result.stderr  # the mistake under test, not a typo in the case
