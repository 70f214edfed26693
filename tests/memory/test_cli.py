from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from bundlekit.cli import cli
from bundlekit.embed.protocol import semantic_installed
from bundlekit.memory import Memory, cosines

from . import fixture_tree


@pytest.fixture
def run(tree: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.delenv("BUNDLEKIT_MEMORY_DIR", raising=False)
    Memory(tree).init()  # as a user's first `bundlekit memory init` (writes need a tree)

    def invoke(*args: str, input: str | None = None) -> Result:
        return CliRunner().invoke(cli, ["memory", "-d", str(tree), *args], input=input)

    return invoke


WRITE = ["write", "user_role", "--name", "Role", "--description", "plays 5-a-side", "--type", "user"]


def test_init_creates_the_tree(run: Any, tree: Path) -> None:
    result = run("init")
    assert result.exit_code == 0
    assert (tree / "MEMORY.md").read_text(encoding="utf-8") == "# Memory\n"
    assert (tree / "timeline").is_dir()


def test_write_prints_file_and_revision(run: Any, tree: Path) -> None:
    result = run(*WRITE, "--body", "Saturdays.", "--tag", "football", "--important", "--decay", "90d")
    assert result.exit_code == 0, result.output
    assert result.stdout == ""  # what was done is status: stderr
    assert result.stderr == "wrote user_role.md revision 1\n"
    record = Memory(tree).read("user_role")
    assert record is not None and record.tags == ["football"] and record.important and record.decay == "90d"


def test_write_reads_body_from_stdin(run: Any, tree: Path) -> None:
    assert run(*WRITE, "--body-file", "-", input="From stdin.\n").exit_code == 0
    assert Memory(tree).read("user_role").body == "From stdin."  # type: ignore[union-attr]


def test_write_reads_body_from_a_file(run: Any, tree: Path, tmp_path: Path) -> None:
    body = tmp_path / "body.md"
    body.write_text("From a file.", encoding="utf-8")
    assert run(*WRITE, "--body-file", str(body)).exit_code == 0
    assert Memory(tree).read("user_role").body == "From a file."  # type: ignore[union-attr]


def test_write_needs_exactly_one_body_source(run: Any) -> None:
    result = run(*WRITE)
    assert result.exit_code == 2 and "error: give exactly one of --body" in result.stderr


def test_stale_expect_revision_fails_with_error_on_stderr(run: Any) -> None:
    run(*WRITE, "--body", "one")
    run(*WRITE, "--body", "two")
    result = run(*WRITE, "--body", "three", "--expect-revision", "1")
    assert result.exit_code == 1
    assert result.stderr.startswith("error: user_role.md is at revision 2")
    assert result.stdout == ""


def test_secret_is_refused_unless_allowed(run: Any) -> None:
    secret = "AKIA" + "IOSFODNN7EXAMPLE"
    refused = run(*WRITE, "--body", secret)
    assert refused.exit_code == 1 and "aws-access-key-id" in refused.stderr and secret not in refused.stderr
    assert run(*WRITE, "--body", secret, "--allow-secrets").exit_code == 0


def test_a_bad_key_on_the_command_line_is_a_usage_error(run: Any) -> None:
    result = run("write", "bad key", "--name", "n", "--description", "d", "--type", "user", "--body", "b")
    assert result.exit_code == 2 and "error: Invalid value for 'KEY': memory key 'bad key'" in result.stderr


def test_show_prints_the_file_and_missing_key_fails(run: Any, tree: Path) -> None:
    run(*WRITE, "--body", "Saturdays.")
    shown = run("show", "user_role")
    assert shown.stdout == (tree / "user_role.md").read_text(encoding="utf-8")
    missing = run("show", "nope")
    assert missing.exit_code == 1 and "no memory nope.md" in missing.stderr


def test_list_json_has_one_object_per_memory(run: Any) -> None:
    run(*WRITE, "--body", "b")
    rows = json.loads(run("list", "--json").stdout)
    assert [(r["key"], r["type"], r["revision"]) for r in rows] == [("user_role", "user", 1)]


def test_list_text_has_one_line_per_memory(run: Any) -> None:
    run(*WRITE, "--body", "b")
    assert run("list").stdout.startswith("user_role\tuser\tr1\t")


def test_forget_removes_the_memory(run: Any, tree: Path) -> None:
    run(*WRITE, "--body", "b")
    assert run("forget", "user_role").exit_code == 0
    assert not (tree / "user_role.md").exists()


def test_note_parses_key_value_pairs(run: Any, tree: Path) -> None:
    result = run("note", "user_said", "text=how's my form?", "mood=keen")
    entry = json.loads(result.stdout)
    assert entry["type"] == "user_said" and entry["text"] == "how's my form?" and entry["mood"] == "keen"
    assert Memory(tree).timeline() == [entry]


def test_note_rejects_a_pair_without_equals(run: Any) -> None:
    result = run("note", "x", "novalue")
    assert result.exit_code == 2 and "KEY=VALUE" in result.stderr


def test_recall_json_lists_hits_best_first(run: Any) -> None:
    run(*WRITE, "--body", "plays on Saturdays")
    hits = json.loads(run("recall", "SATURDAYS", "--json").stdout)
    assert [h["key"] for h in hits] == ["user_role"] and hits[0]["matches"] == 1


def test_context_respects_max_tokens(run: Any) -> None:
    run(*WRITE, "--body", "x" * 4000)
    small = run("context", "--max-tokens", "50").stdout
    assert "xxxx" not in small and small.startswith("# Memory")
    assert "x" * 4000 in run("context").stdout


def test_export_to_file_then_import_into_another_tree(run: Any, tmp_path: Path) -> None:
    run(*WRITE, "--body", "b")
    out = tmp_path / "blob.json"
    assert run("export", "-o", str(out)).exit_code == 0
    other = tmp_path / "other"
    Memory(other).init()
    result = CliRunner().invoke(
        cli, ["memory", "-d", str(other), "import", str(out), "--strategy", "replace"]
    )
    assert result.exit_code == 0 and result.stderr.startswith("added 1,")
    assert Memory(other).read("user_role") is not None


def test_export_to_stdout_is_the_blob(run: Any) -> None:
    run(*WRITE, "--body", "b")
    blob = json.loads(run("export").stdout)
    assert blob["version"] == "memory/0.1" and list(blob["files"]) == ["user_role.md"]


def test_import_of_non_json_fails_cleanly(run: Any, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("not json", encoding="utf-8")
    result = run("import", str(bad))
    assert result.exit_code == 1 and "is not a JSON export blob" in result.stderr


def test_dir_defaults_to_the_environment_variable(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BUNDLEKIT_MEMORY_DIR", str(tree))
    Memory(tree).init()
    CliRunner().invoke(cli, ["memory", *WRITE, "--body", "b"])
    assert (tree / "user_role.md").exists()


def test_dir_defaults_to_memory_in_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("BUNDLEKIT_MEMORY_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    Memory(tmp_path / "memory").init()
    CliRunner().invoke(cli, ["memory", *WRITE, "--body", "b"])
    assert (tmp_path / "memory" / "user_role.md").exists()


def test_fixture_tree_lists_through_the_cli() -> None:
    result = CliRunner().invoke(cli, ["memory", "-d", str(fixture_tree.FIXTURE_DIR), "list", "--json"])
    assert len(json.loads(result.stdout)) == 9


def test_magic_context_style_delegates_with_a_4000_token_default(
    run: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[Any, int]] = []
    fake = types.ModuleType("bundlekit.convert.magic_context")
    fake.render_project_memory = lambda memory, max_tokens: calls.append((memory, max_tokens)) or "MAGIC"  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "bundlekit.convert.magic_context", fake)
    run("init")  # reading a tree that does not exist is an error
    result = run("context", "--style", "magic-context")
    assert result.stdout == "MAGIC\n" and isinstance(calls[0][0], Memory) and calls[0][1] == 4000


def test_layers_delegate_to_render_layered_context(run: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[Any, int]] = []
    fake = types.ModuleType("bundlekit.bundle.layers")
    fake.render_layered_context = (  # type: ignore[attr-defined]
        lambda layers, max_tokens, on_warning: calls.append((layers, max_tokens)) or "LAYERED\n"
    )
    monkeypatch.setitem(sys.modules, "bundlekit.bundle.layers", fake)
    result = run("context", "--layer", "team=/a", "--layer", "me=/b", "--max-tokens", "99")
    assert result.stdout == "LAYERED\n" and calls == [([("team", "/a"), ("me", "/b")], 99)]


def _loaded_after(runs: list[list[str]], modules: tuple[str, ...]) -> list[str]:
    """Which of ``modules`` a fresh process has imported after running each ``bundlekit memory`` argument list
    of ``runs`` (each must succeed): what a per-turn command costs in imports."""
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from bundlekit.cli import cli\n"
        f"for args in {runs!r}:\n"
        "    assert CliRunner().invoke(cli, ['memory', *args]).exit_code == 0, args\n"
        f"print(sorted(m for m in {modules!r} if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return list(ast.literal_eval(out.strip()))


def test_plain_memory_commands_do_not_load_the_network_or_the_converters(tmp_path: Path) -> None:
    # --layer and --style magic-context import their modules on use: the per-turn commands stay light.
    runs = [["-d", str(fixture_tree.FIXTURE_DIR), "context"]]
    assert _loaded_after(runs, ("bundlekit.bundle.layers", "bundlekit.convert", "httpx")) == []


def test_reads_of_an_indexed_unchanged_tree_do_not_import_yaml(tmp_path: Path) -> None:
    # Only a changed file is parsed: recall, list and context, run on every agent turn, skip PyYAML's import.
    memory = Memory(tmp_path / "tree")
    memory.write("k1", name="Knee", description="drill notes", type="project", body="rondo drill")
    memory.write("k2", name="Pace", description="tone", type="user", body="pacing")
    memory.close()
    tree = str(tmp_path / "tree")
    runs = [["recall", "rondo", "-d", tree], ["list", "-d", tree], ["context", "-d", tree]]
    assert _loaded_after(runs, ("yaml", "frontmatter")) == []


def test_list_and_recall_of_a_clean_tree_do_not_import_export_timeline_or_withholding(tmp_path: Path) -> None:
    # A per-turn listing or recall needs none of them (tests/architecture/test_layers.py, LAZY_OWN).
    # The secret rules do load: what is shown is read from the files now and guarded there.
    memory = Memory(tmp_path / "tree")
    memory.write("k1", name="Knee", description="drill notes", type="project", body="rondo drill")
    memory.close()
    lazy = tuple(f"bundlekit.memory.{m}" for m in ("files", "timeline", "transfer", "withhold"))
    tree = str(tmp_path / "tree")
    assert _loaded_after([["recall", "rondo", "-d", tree], ["list", "-d", tree]], lazy) == []


@pytest.mark.skipif(not semantic_installed() or not cosines.compiled(), reason="needs the semantic extra and _cosine built")
def test_recall_and_context_by_meaning_of_an_embedded_tree_do_not_import_numpy_or_scan_entry_points(tmp_path: Path) -> None:
    # Issue 38: the query path ranks with the vector file and the compiled cosines; numpy, the embedding code,
    # the tokenizer (the query's words were seen) and importlib.metadata load only to compute vectors.
    memory = Memory(tmp_path / "tree")
    memory.write("k1", name="Knee", description="drill notes", type="project", body="rondo drill")
    memory.write("k2", name="Pace", description="tone", type="user", body="pacing")
    memory.recall("which drills help", rank="hybrid")
    memory.close()
    tree = str(tmp_path / "tree")
    heavy = ("numpy", "bundlekit.memory.semantic", "tokenizers", "importlib.metadata")
    runs = [["recall", "which drills help", "-d", tree], ["context", "--query", "which drills help", "-d", tree]]
    assert _loaded_after(runs, heavy) == []


def test_bad_layer_spec_is_a_usage_error(run: Any) -> None:
    result = run("context", "--layer", "no-equals")
    assert result.exit_code == 2 and "NAME=DIR" in result.stderr


# -- the tree option after the subcommand, and a missing tree -----------------------


def test_dir_option_is_accepted_after_the_subcommand(tmp_path: Path) -> None:
    target = tmp_path / "after"
    runner = CliRunner()
    assert runner.invoke(cli, ["memory", "init", "-d", str(target)]).exit_code == 0
    wrote = runner.invoke(
        cli, ["memory", "write", "k", "--name", "N", "--description", "D", "--type", "user", "--body", "B", "-d", str(target)]
    )
    assert wrote.exit_code == 0 and (target / "k.md").is_file()
    listed = runner.invoke(cli, ["memory", "-d", str(tmp_path / "ignored"), "list", "--dir", str(target)])
    assert listed.exit_code == 0 and listed.stdout.startswith("k\tuser")


@pytest.mark.parametrize(
    "args", [["list"], ["recall", "x"], ["show", "k"], ["context"], ["export"], ["forget", "k"]]
)
def test_reading_a_tree_that_does_not_exist_is_a_usage_error(tmp_path: Path, args: list[str]) -> None:
    missing = tmp_path / "nowhere"
    result = CliRunner().invoke(cli, ["memory", *args, "-d", str(missing)])
    assert result.exit_code == 2
    assert f"no memory tree at {missing} (no MEMORY.md, no memory files): run `bundlekit memory init`" in result.stderr
    assert not missing.exists()


@pytest.mark.parametrize(
    "args", [["list"], ["recall", "x"], ["show", "k"], ["context"], ["export"], ["forget", "k"]]
)
def test_reading_a_folder_never_initialised_is_the_same_usage_error(tmp_path: Path, args: list[str]) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("not a memory\n", encoding="utf-8")
    result = CliRunner().invoke(cli, ["memory", *args, "-d", str(tmp_path / "empty")])
    assert result.exit_code == 2 and result.stdout == ""
    assert "(no MEMORY.md, no memory files): run `bundlekit memory init`" in result.stderr


def test_a_tree_of_memory_files_without_an_index_is_read(tmp_path: Path) -> None:
    Memory(tmp_path / "hand").write("k", name="K", description="by hand", type="user", body="body")
    (tmp_path / "hand" / "MEMORY.md").unlink()
    result = CliRunner().invoke(cli, ["memory", "list", "-d", str(tmp_path / "hand")])
    assert result.exit_code == 0 and result.stdout.startswith("k\tuser")


def test_recall_that_matches_nothing_says_so_on_stderr(run: Any) -> None:
    run(*WRITE, "--body", "Saturdays.")
    result = run("recall", "zzzqqq", "--rank", "salience")
    assert result.exit_code == 0 and result.stdout == ""
    assert result.stderr == "ranked by salience\nno memory matches 'zzzqqq'\n"


def test_recall_rank_relevance_adds_the_relevance_term(run: Any) -> None:
    run(*WRITE, "--body", "kick kick kick")
    for other in ("other1", "other2"):  # BM25 leaves out a word in more than half the memories
        run("write", other, "--name", other, "--description", "d", "--type", "user", "--body", "pass")
    hits = json.loads(run("recall", "kick", "--rank", "relevance", "--json").stdout)
    assert hits[0]["relevance"] == 1.0
    assert "relevance" not in json.loads(run("recall", "kick", "--rank", "salience", "--json").stdout)[0]


def test_recall_json_carries_the_exact_score_and_the_rank_of_old_memories(tmp_path: Path) -> None:
    tree = tmp_path / "fixture"
    shutil.copytree(Path(__file__).resolve().parents[2] / "fixtures" / "memory", tree)
    result = CliRunner().invoke(cli, ["memory", "-d", str(tree), "recall", "user", "--rank", "salience", "--json"])
    hits = json.loads(result.stdout)
    assert [hit["rank"] for hit in hits] == list(range(1, len(hits) + 1)) and len(hits) > 1
    assert all(0 < hit["score"] < 1e-6 for hit in hits)  # months old: tiny, yet not rounded away
    assert [hit["score"] for hit in hits] == sorted((hit["score"] for hit in hits), reverse=True)


def test_a_body_file_that_is_not_utf8_is_a_usage_error_and_writes_nothing(tmp_path: Path) -> None:
    body = tmp_path / "latin1.txt"
    body.write_bytes(b"caf\xe9\n")
    tree = tmp_path / "mem"
    args = ["memory", "-d", str(tree), "write", "k", "--name", "n", "--description", "d", "--type", "user"]
    result = CliRunner().invoke(cli, [*args, "--body-file", str(body)])
    assert result.exit_code == 2
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.stderr == f"error: --body-file {body} is not UTF-8 text; re-save it as UTF-8\n"
    assert not (tree / "k.md").exists()


@pytest.mark.usefixtures("default_recursion_limit")
def test_import_of_deeply_nested_json_is_a_one_line_error(tmp_path: Path) -> None:
    blob = tmp_path / "deep.json"
    blob.write_text("[" * 5_000 + "]" * 5_000)
    result = CliRunner().invoke(cli, ["memory", "-d", str(tmp_path / "m"), "import", str(blob)])
    assert result.exit_code == 1
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.stderr == f"error: {blob} is not a JSON export blob; export it again\n"
