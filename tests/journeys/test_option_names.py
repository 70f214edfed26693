"""One name for one thing, across every command (issue 34, item 8).

Two halves. The walk: every click command the CLI lists is visited and each concept README's
"One name for one thing" table names is found by what it is (its help text, its parameter), so a
command that spelled the memory tree, a key file, the signing key, the name key or ``--max-bytes``
another way, or gave ``--strict`` another meaning, fails here; the table itself is checked against the
walk. The journeys: a person with ``$BUNDLEKIT_MEMORY_DIR`` exported types each command that takes the
tree without naming it (in a temporary home), and the old spellings kept as hidden aliases for one release
still do what they did, without showing in ``--help``. Each line goes through the CLI as typed, with exactly
the shell's environment, in this test process (``typed.set_up``): what is checked is which option or variable
names which thing, not a fresh process's start-up (~0.15 s of CPU a line, ~9 s a run); the journeys whose
commands are fresh processes are the other modules of tests/journeys.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import Result

from bundlekit.cli import cli
from bundlekit.cli._params import AliasOption, LegacyArgument
from bundlekit.crypto.signing import Ed25519Signer
from bundlekit.memory import Memory
from tests.journeys.typed import set_up


def _keys(tree: Path) -> set[str]:
    return {record.key for record in Memory(tree).list()}

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
PASSPHRASE = "correct horse battery staple"

# the hidden aliases kept for one release: command -> old spelling -> the spelling that replaced it
LEGACY = {
    "build": {"MEMDIR": "-d"},
    "verify": {"--strict": "--check-expansion"},
    "merge": {"--into": "-d"},
    "fork": {"DEST": "-d"},
    "sync": {"TREE": "-d"},
    "mcp": {"--memory": "-d", "--sync-name-key": "--name-key", "--sync-interval": "--interval"},
    "name create": {"--key-file": "--name-key"},
    "name publish": {"--key-file": "--name-key"},
}


def _commands() -> Iterator[tuple[str, click.Command]]:
    """Every command and subcommand, as typed after ``bundlekit``."""
    ctx = click.Context(cli)

    def walk(group: click.Group, prefix: str) -> Iterator[tuple[str, click.Command]]:
        for name in group.list_commands(ctx):
            command = group.get_command(ctx, name)
            assert command is not None
            path = f"{prefix} {name}".strip()
            yield path, command
            if isinstance(command, click.Group):
                yield from walk(command, path)

    yield from walk(cli, "")


COMMANDS = dict(_commands())


def _shown(option: click.Option) -> list[str]:
    return option.shown_opts() if isinstance(option, AliasOption) else [*option.opts, *option.secondary_opts]


def _options(*, hidden: bool = False) -> Iterator[tuple[str, click.Option]]:
    for path, command in COMMANDS.items():
        for param in command.params:
            if isinstance(param, click.Option) and param.name not in ("help", "version") and param.hidden == hidden:
                yield path, param


def _spellings(found: list[tuple[str, click.Option]]) -> dict[str, set[str]]:
    """Each visible spelling of the concept -> the commands that use it."""
    spellings: dict[str, set[str]] = {}
    for path, option in found:
        spellings.setdefault(" / ".join(_shown(option)), set()).add(path)
    return spellings


def _where(predicate: object) -> list[tuple[str, click.Option]]:
    assert callable(predicate)
    return [(path, option) for path, option in _options() if predicate(option)]


def _help(option: click.Option) -> str:
    return " ".join((option.help or "").split())


# concept -> (its one spelling, how the walk recognises it whatever it is called)
CONCEPTS = {
    "the memory tree": ("-d / --dir", lambda o: "memory tree" in _help(o) and o.name not in ("output_path", "layers")),
    "the encryption key file": ("--key-file", lambda o: "32 raw bytes" in _help(o)),
    "the age identity that opens a recipients bundle": ("--identity-file", lambda o: "age identity" in _help(o)),
    "who can read a new encrypted bundle": ("--recipient", lambda o: "Encrypt for this age recipient" in _help(o)),
    "the manifest's signing key (Ed25519 PEM)": ("--sign-key", lambda o: "Sign the manifest with" in _help(o)),
    "the IPNS name's key (Ed25519 PEM)": ("--name-key", lambda o: o.name in ("name_key", "sync_name_key")),
    "what the input's files may claim": ("--max-bytes", lambda o: "claim more bytes than this" in _help(o)),
    "weak passphrase refused": ("--strong-passphrase", lambda o: "passphrase shorter than" in _help(o)),
    "a DAG's expansion measured": ("--check-expansion", lambda o: "expand to" in _help(o)),
    "what cannot be carried is an error": ("--strict", lambda o: "changed or left out" in _help(o)),
    "seconds between sync rounds": ("--interval", lambda o: o.name in ("interval", "sync_interval")),
    "the memory types a shared bundle carries": ("--share", lambda o: "shared bundle of only these" in _help(o)),
    "a teammate's shared bundle, read-only": ("--workspace", lambda o: "teammate's shared bundle" in _help(o)),
    "usage that ranks": ("--usage-boost / --no-usage-boost", lambda o: "raise their rank" in _help(o)),
}


@pytest.mark.parametrize("concept", sorted(CONCEPTS))
def test_each_concept_has_one_option_name_in_every_command(concept: str) -> None:
    spelling, predicate = CONCEPTS[concept]
    found = _where(predicate)
    assert found, f"no command offers {concept}"
    assert set(_spellings(found)) == {spelling}, _spellings(found)


def test_every_command_that_takes_the_tree_reads_bundlekit_memory_dir() -> None:
    spelling, predicate = CONCEPTS["the memory tree"]
    takers = {path: option for path, option in _where(predicate)}
    assert {"build", "pin", "sync", "merge", "fork", "diff", "mcp", "memory", "convert"} <= set(takers)
    # mcp reads the variable itself (with --from or --layer it serves the bundle, not the tree); a memory
    # subcommand's -d stands in for the group's, which reads it
    assert all(option.envvar == "BUNDLEKIT_MEMORY_DIR" for path, option in takers.items()
               if path != "mcp" and not path.startswith("memory "))


def test_strict_means_only_that_what_cannot_be_carried_is_an_error() -> None:
    visible = [(path, option) for path, option in _options() if "--strict" in _shown(option)]
    assert visible, "no command has --strict"
    for path, option in visible:
        assert "changed or left out" in _help(option), (path, _help(option))
    aliased = {path for path, option in _options()
               if isinstance(option, AliasOption) and "--strict" in option.hidden_aliases}
    assert aliased == {path for path, old in LEGACY.items() if "--strict" in old}


def test_no_visible_spelling_is_the_tree_under_another_name() -> None:
    old_names = {"--into", "--memory", "--memory-dir", "--tree", "--dest"}
    for path, option in _options():
        assert not old_names & set(_shown(option)), (path, _shown(option))
    for path, command in COMMANDS.items():
        usage = command.collect_usage_pieces(click.Context(command, info_name=path))
        assert not {"MEMDIR", "TREE", "DEST", "[TREE_ARG]", "[MEMDIR]", "[DEST]"} & set(usage), (path, usage)


@pytest.mark.parametrize("path", sorted(LEGACY))
def test_old_spellings_are_kept_hidden_and_out_of_help(path: str) -> None:
    command = COMMANDS[path]
    text = command.get_help(click.Context(command, info_name=f"bundlekit {path}"))
    for old, new in LEGACY[path].items():
        if old.startswith("--"):
            holders = [p for p in command.params if isinstance(p, AliasOption) and old in p.hidden_aliases]
            assert len(holders) == 1 and new in holders[0].opts, (old, new)
            assert not re.search(rf"{re.escape(old)}\b(?!-)", text.split("Examples:")[0]), old
        else:
            assert any(isinstance(p, LegacyArgument) and p.human_readable_name == old for p in command.params)
        assert new in text


def test_readme_table_lists_each_concepts_one_name() -> None:
    section = README[README.index("## One name for one thing"):]
    start = section.index("| concept")
    table = section[start: section.index("\n\n", start)]
    rows = {row.split("|")[1].strip(): row.split("|")[2] for row in table.splitlines()[2:]}
    for concept, (spelling, _predicate) in CONCEPTS.items():
        assert concept in rows, concept
        assert all(f"`{s}" in rows[concept] for s in spelling.split(" / ")), (concept, rows[concept])


# --- the journeys: typed as a person types them, with $BUNDLEKIT_MEMORY_DIR exported ----------------


class Shell:
    """A temporary home and working folder; ``run`` types one command line there (through the CLI, in this
    process, with exactly ``env`` as its environment)."""

    def __init__(self, tmp: Path) -> None:
        self.work = tmp / "work"
        self.work.mkdir()
        self.tree = tmp / "agent-memory"
        keep = ("PATH", "PYTHONPATH", "LANG", "LC_ALL", "SYSTEMROOT", "BUNDLEKIT_LETTA_VENV")
        self.env = {k: v for k, v in os.environ.items() if k in keep}
        self.env.update(HOME=str(tmp / "home"), BUNDLEKIT_HOME=str(tmp / "store"), PYTHONPATH=os.pathsep.join(
            filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])), BUNDLEKIT_MEMORY_DIR=str(self.tree),
            MEMORY_PASSPHRASE=PASSPHRASE, WEAK="short")

    def run(self, line: str, code: int = 0) -> Result:
        return set_up(line, cwd=self.work, env=self.env, code=code)

    def prepare(self, line: str) -> None:
        """A set-up line, not what the test checks."""
        self.run(line)

    def write(self, key: str, body: str) -> None:
        self.run(f'bundlekit memory write {key} --type project --name {key} --description "about {key}" '
                 f'--body "{body}"')

    def other_bundle(self, name: str) -> Path:
        """A bundle from another agent's tree, in the working folder."""
        other = Memory(self.work / f"{name}-tree")
        other.write(f"{name}_note", name=name, description=f"from {name}", type="project", body=f"{name} body")
        self.prepare(f"bundlekit build -d {name}-tree -o {name}.car")
        return self.work / f"{name}.car"


@pytest.fixture(scope="session")
def typed_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tree every journey starts from, set up once per test process: ``memory init``, then one memory written."""
    sh = Shell(tmp_path_factory.mktemp("typed"))
    sh.prepare("bundlekit memory init")
    sh.prepare('bundlekit memory write project_alpha --type project --name project_alpha '
               '--description "about project_alpha" --body "Alpha."')
    return sh.tree


@pytest.fixture
def shell(tmp_path: Path, typed_tree: Path) -> Shell:
    """A shell of this test's own, its ``$BUNDLEKIT_MEMORY_DIR`` a copy of the typed tree."""
    sh = Shell(tmp_path)
    shutil.copytree(typed_tree, sh.tree, symlinks=True)
    return sh


def test_build_reads_the_tree_from_the_environment(shell: Shell) -> None:
    built = json.loads(shell.run("bundlekit build -o bundle.car --json").stdout)
    assert built["files"] >= 1 and (shell.work / "bundle.car").is_file()
    named = json.loads(shell.run(f"bundlekit build -d {shell.tree} -o again.car --json").stdout)
    assert named["root"] == built["root"]


def test_diff_compares_a_bundle_with_the_tree_from_the_environment(shell: Shell) -> None:
    shell.run("bundlekit build -o bundle.car")
    shell.run("bundlekit diff bundle.car --exit-code")
    shell.write("project_beta", "Beta.")
    changed = shell.run("bundlekit diff bundle.car --exit-code", code=1)
    assert re.search(r"^\+ project_beta\b", changed.stdout, re.M)


def test_pin_publishes_the_tree_from_the_environment(shell: Shell) -> None:
    built = json.loads(shell.run("bundlekit build -o bundle.car --json").stdout)
    pinned = json.loads(shell.run("bundlekit pin --json").stdout)
    assert pinned["root"] == built["root"] and pinned["pins"][0]["status"] == "pinned"


def test_pin_without_a_tree_names_what_to_give(shell: Shell) -> None:
    shell.env["BUNDLEKIT_MEMORY_DIR"] = str(shell.work / "nowhere")
    refused = shell.run("bundlekit pin", code=2)
    assert "no memory tree at" in refused.stderr and "-d DIR" in refused.stderr


def test_convert_moves_memory_in_and_out_of_the_tree_from_the_environment(shell: Shell) -> None:
    claude = shell.work / "claude"
    claude.mkdir()
    (claude / "user_role.md").write_text("---\nname: role\ndescription: the user's role\ntype: user\n---\n"
                                         "Runs the release pipeline.\n", encoding="utf-8")
    shell.run("bundlekit convert --from claude-code claude --strategy merge")
    assert {"project_alpha", "user_role"} <= _keys(shell.tree)
    shell.run("bundlekit convert --to massgen -o workspace1")
    assert any((shell.work / "workspace1").rglob("*"))


def test_merge_and_fork_write_into_the_tree_from_the_environment(shell: Shell) -> None:
    shell.other_bundle("teammate")
    shell.other_bundle("mentor")
    shell.run("bundlekit merge teammate.car")
    shell.run("bundlekit fork mentor.car")
    assert {"project_alpha", "teammate_note", "mentor_note"} <= _keys(shell.tree)


def test_sync_keeps_the_tree_from_the_environment_in_step(shell: Shell) -> None:
    Ed25519Signer.from_seed(bytes([7]) * 32).write(shell.work / "agent.pem")
    report = json.loads(shell.run("bundlekit sync --name-key agent.pem --json").stdout)
    assert report["role"] == "writer" and report["published"]["sequence"] == 0
    shell.run(f"bundlekit diff ipfs://{report['root']}/manifest.json --exit-code")  # the tree is what was published


def test_mcp_serves_the_tree_from_the_environment(shell: Shell) -> None:
    shell.env["BUNDLEKIT_MEMORY_DIR"] = str(shell.work / "nowhere")
    refused = shell.run("bundlekit mcp", code=2)  # opened before the server starts: the variable was read
    assert f"no memory tree at {shell.work / 'nowhere'}" in refused.stderr


@pytest.fixture
def old_tree(shell: Shell) -> Path:
    """A second tree, named only by the old spellings, and a bundle of it."""
    old = shell.work / "old-tree"
    Memory(old).write("project_old", name="old", description="old", type="project", body="Old.")
    shell.prepare(f"bundlekit build -d {old} -o old.car")
    Ed25519Signer.from_seed(bytes([8]) * 32).write(shell.work / "agent.pem")
    return old


def test_build_memdir_still_builds_that_tree(shell: Shell, old_tree: Path) -> None:
    old = json.loads(shell.run(f"bundlekit build {old_tree} -o again.car --json").stdout)
    new = json.loads(shell.run(f"bundlekit build -d {old_tree} -o new.car --json").stdout)
    assert old["root"] == new["root"]


def test_merge_into_still_merges_into_that_tree(shell: Shell, old_tree: Path) -> None:
    shell.other_bundle("teammate")
    shell.run(f"bundlekit merge teammate.car --into {old_tree}")
    assert "teammate_note" in _keys(old_tree) and "teammate_note" not in _keys(shell.tree)


def test_fork_dest_still_forks_into_that_tree(shell: Shell, old_tree: Path) -> None:
    shell.run(f"bundlekit fork old.car {shell.work / 'forked'}")
    assert "project_old" in _keys(shell.work / "forked") and "project_old" not in _keys(shell.tree)


def test_sync_tree_still_syncs_that_tree(shell: Shell, old_tree: Path) -> None:
    report = json.loads(shell.run(f"bundlekit sync {old_tree} --name-key agent.pem --json").stdout)
    shell.run(f"bundlekit diff ipfs://{report['root']}/manifest.json {old_tree} --exit-code")


def test_verify_strict_still_measures_the_expansion(shell: Shell, old_tree: Path) -> None:
    doc = json.loads(shell.run("bundlekit verify old.car --strict --json").stdout)
    assert "expansion" in doc


def test_build_strong_passphrase_refuses_a_weak_passphrase(shell: Shell) -> None:
    weak = shell.run("bundlekit build --encrypt --passphrase-env WEAK --strong-passphrase -o weak.car", code=2)
    assert "12 characters" in weak.stderr and not (shell.work / "weak.car").exists()


def test_build_strict_only_warns_about_a_weak_passphrase(shell: Shell) -> None:
    # --strict means what cannot be carried; a weak passphrase is --strong-passphrase's to refuse
    weak = shell.run("bundlekit build --encrypt --passphrase-env WEAK --strict -o weak.car")
    assert "12 characters" in weak.stderr and (shell.work / "weak.car").exists()


def test_name_create_key_file_still_names_the_key(shell: Shell, old_tree: Path) -> None:
    old = shell.run("bundlekit name create --key-file agent.pem").stdout
    assert old == shell.run("bundlekit name create --name-key agent.pem").stdout and old.startswith("k51")


def test_mcp_memory_still_names_the_tree(shell: Shell) -> None:
    assert "no memory tree at nowhere" in shell.run("bundlekit mcp --memory nowhere", code=2).stderr


def test_the_tree_named_twice_two_ways_is_a_usage_error(shell: Shell) -> None:
    refused = shell.run(f"bundlekit build {shell.work} -d {shell.tree}", code=2)
    assert "name the tree once" in refused.stderr


def test_the_signing_key_has_its_own_name(shell: Shell) -> None:
    shell.prepare("bundlekit name create --name-key agent.pem")  # the key, set up
    signer = re.findall(r"signed by (did:key:\S+)", shell.run("bundlekit build --sign-key agent.pem -o signed.car").stderr)
    assert signer and signer == re.findall(r"signed by (did:key:\S+)",
                                           shell.run("bundlekit build --sign --key-file agent.pem -o old.car").stderr)
    shell.run(f"bundlekit load signed.car --publisher {signer[0]}")


def test_the_signing_key_with_another_key_option_names_both(shell: Shell) -> None:
    shell.prepare("bundlekit name create --name-key agent.pem")  # the key, set up
    both = shell.run("bundlekit build --sign-key agent.pem --passphrase-env MEMORY_PASSPHRASE -o x.car", code=2)
    assert "--sign-key and --passphrase-env cannot be combined" in both.stderr and not (shell.work / "x.car").exists()


def test_an_old_and_a_new_spelling_with_different_values_is_a_usage_error(shell: Shell, old_tree: Path) -> None:
    # click keeps the last value of one option: `--key-file other.pem --name-key agent.pem` published the name
    # of whichever came last, and `merge --into A -d B` merged into B, without a word
    shell.prepare("bundlekit name create --name-key agent.pem")  # the key, set up
    shell.prepare("bundlekit name create --name-key other.pem")
    refused = shell.run("bundlekit name create --key-file other.pem --name-key agent.pem", code=2)
    assert "--name-key given twice, once as its old spelling --key-file" in refused.stderr
    shell.other_bundle("teammate")
    refused = shell.run(f"bundlekit merge teammate.car --into {old_tree} -d {shell.tree}", code=2)
    assert "--dir given twice" in refused.stderr and "teammate_note" not in _keys(old_tree) | _keys(shell.tree)


def test_an_old_and_a_new_spelling_with_one_value_is_that_value(shell: Shell, old_tree: Path) -> None:
    shell.prepare("bundlekit name create --name-key agent.pem")  # the key, set up
    assert shell.run("bundlekit name create --key-file agent.pem --name-key agent.pem").stdout.startswith("k51")
    shell.run("bundlekit build --encrypt --passphrase-env WEAK --strict --strong-passphrase -o weak.car", code=2)


def test_the_tree_named_twice_as_one_directory_is_that_tree(shell: Shell, old_tree: Path) -> None:
    (shell.work / "link").symlink_to(old_tree, target_is_directory=True)
    once = json.loads(shell.run(f"bundlekit build {old_tree} -o once.car --json").stdout)
    twice = json.loads(shell.run(f"bundlekit build link/ -d ./old-tree -o twice.car --json").stdout)
    assert once["root"] == twice["root"]
    shell.other_bundle("teammate")
    shell.run("bundlekit merge teammate.car --into link -d old-tree")
    assert "teammate_note" in _keys(old_tree) and "teammate_note" not in _keys(shell.tree)
