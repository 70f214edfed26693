"""``bundlekit convert`` through click's CliRunner."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from bundlekit._fs import is_temp_name
from bundlekit.cli import cli
from bundlekit.memory import Memory

from .conftest import PROJECT, tree_files


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_import_then_export_round_trips_massgen(massgen_workspace: Path, tmp_path: Path) -> None:
    code, _, err = run("convert", "--from", "massgen", str(massgen_workspace), "-o", str(tmp_path / "mem"))
    assert code == 0 and "converted 2 memories from massgen" in err
    code, _, _ = run("convert", "--to", "massgen", str(tmp_path / "mem"), "-o", str(tmp_path / "back"))
    assert code == 0
    assert tree_files(tmp_path / "back") == tree_files(massgen_workspace)


def test_json_summary(claude_dir: Path, tmp_path: Path) -> None:
    code, out, _ = run(
        "convert", "--from", "claude-code", str(claude_dir), "-o", str(tmp_path / "m"), "--json"
    )
    assert code == 0
    summary = json.loads(out)
    assert (summary["format"], summary["direction"], summary["memories"]) == ("claude-code", "import", 2)


def test_from_and_to_together_is_a_usage_error(claude_dir: Path, tmp_path: Path) -> None:
    code, _, err = run(
        "convert", "--from", "claude-code", "--to", "massgen", str(claude_dir), "-o", str(tmp_path)
    )
    assert code == 2 and "exactly one of --from" in err


def test_option_of_another_format_is_a_usage_error(claude_dir: Path, tmp_path: Path) -> None:
    code, _, err = run(
        "convert", "--from", "claude-code", str(claude_dir), "-o", str(tmp_path / "m"), "--project", PROJECT
    )
    assert code == 2 and "--project does not apply to --from claude-code" in err


def test_device_memory_is_refused_with_exit_1(magicfrog_with_device: Path, tmp_path: Path) -> None:
    code, _, err = run(
        "convert", "--from", "magicfrog", str(magicfrog_with_device), "-o", str(tmp_path / "m")
    )
    assert code == 1 and err.startswith("error: refusing to convert 1 device memories")
    assert not (tmp_path / "m").exists()


def test_device_memory_local_only_copy(magicfrog_with_device: Path, tmp_path: Path) -> None:
    code, _, _ = run(
        "convert",
        "--from",
        "magicfrog",
        str(magicfrog_with_device),
        "-o",
        str(tmp_path / "m"),
        "--include-device",
        "--local-only",
    )
    assert code == 0
    assert Memory(tmp_path / "m").read("device.paths") is not None


def test_device_memory_left_out_with_a_warning(magicfrog_with_device: Path, tmp_path: Path) -> None:
    code, _, err = run(
        "convert",
        "--from",
        "magicfrog",
        str(magicfrog_with_device),
        "-o",
        str(tmp_path / "m"),
        "--exclude-device",
    )
    assert code == 0 and "warning: left out 1 device memories" in err
    assert "converted 5 memories" in err


def test_magic_context_import_with_project(mc_db: Path, tmp_path: Path) -> None:
    code, _, _ = run(
        "convert", "--from", "magic-context", str(mc_db), "-o", str(tmp_path / "m"), "--project", PROJECT
    )
    assert code == 0
    keys = sorted(r.key for r in Memory(tmp_path / "m").list())
    assert keys == ["architecture-1", "config_values-6", "project_rules-2"]


def test_threews_local_storage_export(threews_file: Path, tmp_path: Path) -> None:
    run("convert", "--from", "three.ws", str(threews_file), "-o", str(tmp_path / "m"))
    code, _, _ = run(
        "convert",
        "--to",
        "three.ws",
        str(tmp_path / "m"),
        "-o",
        str(tmp_path / "ls.json"),
        "--namespace",
        "agent-7",
        "--local-storage",
    )
    assert code == 0
    assert list(json.loads((tmp_path / "ls.json").read_text())) == ["agent:agent-7:memory"]


def test_key_option_on_another_format_is_refused(claude_dir: Path, tmp_path: Path) -> None:
    code, _, err = run(
        "convert",
        "--from",
        "claude-code",
        str(claude_dir),
        "-o",
        str(tmp_path / "m"),
        "--signature-env",
        "SIG",
    )
    assert code == 2 and "only applies to three.ws" in err


def test_threews_encrypted_round_trip_with_a_wallet_key(threews_file: Path, tmp_path: Path) -> None:
    env = {"TEST_WALLET": "0x" + "4c" * 32}
    runner = CliRunner()
    run("convert", "--from", "three.ws", str(threews_file), "-o", str(tmp_path / "m"))
    out = runner.invoke(
        cli,
        [
            "convert",
            "--to",
            "three.ws",
            str(tmp_path / "m"),
            "-o",
            str(tmp_path / "e.json"),
            "--namespace",
            "agent-7",
            "--private-key-env",
            "TEST_WALLET",
        ],
        env=env,
    )
    assert out.exit_code == 0, out.output
    blob = json.loads((tmp_path / "e.json").read_text())
    assert blob["mode"] == "encrypted-ipfs" and "Tone" not in json.dumps(blob["files"])
    back = runner.invoke(
        cli,
        [
            "convert",
            "--from",
            "three.ws",
            str(tmp_path / "e.json"),
            "-o",
            str(tmp_path / "m2"),
            "--agent-id",
            "agent-7",
            "--private-key-env",
            "TEST_WALLET",
        ],
        env=env,
    )
    assert back.exit_code == 0, back.output
    assert blob["timeline"] == [] and "direct critique" not in blob["index"]
    memories = {k: v for k, v in tree_files(tmp_path / "m").items() if not k.startswith("timeline/")}
    assert tree_files(tmp_path / "m2") == memories


def test_massgen_timezone_option_reads_naive_times_in_that_zone(massgen_workspace: Path, tmp_path: Path) -> None:
    code, _out, err = run(
        "convert", "--from", "massgen", str(massgen_workspace), "-o", str(tmp_path / "m"), "--timezone", "Asia/Tokyo"
    )
    assert code == 0, err
    record = Memory(tmp_path / "m").read("project_history")
    assert record is not None and record.meta["updated"] == "2025-01-12T23:00:00Z"


def test_magicfrog_agent_option_chooses_whose_view(magicfrog_tree: Path, tmp_path: Path) -> None:
    code, _out, err = run(
        "convert", "--from", "magicfrog", str(magicfrog_tree), "-o", str(tmp_path / "v"), "--effective",
        "--agent", "reviewer",
    )
    assert code == 0, err
    record = Memory(tmp_path / "v").read("notes.style")
    assert record is not None and record.body == "Prefer functional array methods over for loops."


def _tree_with_tone(path: Path) -> Memory:
    mem = Memory(path)
    mem.write("feedback_tone", name="Mine", description="kept or replaced", type="feedback", body="mine")
    mem.write("local_only", name="Local", description="untouched", type="user", body="local")
    return mem


def test_an_import_into_a_tree_with_memories_needs_a_strategy(claude_dir: Path, tmp_path: Path) -> None:
    _tree_with_tone(tmp_path / "m")
    before = tree_files(tmp_path / "m")
    code, out, err = run("convert", "--from", "claude-code", str(claude_dir), "-o", str(tmp_path / "m"))
    assert code == 2 and out == "" and "already holds 2 memories: say --strategy merge" in err
    assert tree_files(tmp_path / "m") == before


def test_a_merge_into_a_tree_says_what_it_changed(claude_dir: Path, tmp_path: Path) -> None:
    mem = _tree_with_tone(tmp_path / "m")
    code, _out, err = run("convert", "--from", "claude-code", str(claude_dir), "-o", str(tmp_path / "m"),
                          "--strategy", "merge")
    assert code == 0 and "1 added, 1 kept as they were (merge), 1 untouched" in err
    kept = mem.read("feedback_tone")
    assert kept is not None and kept.name == "Mine"


def test_an_import_into_an_empty_folder_needs_no_strategy(claude_dir: Path, tmp_path: Path) -> None:
    code, _out, err = run("convert", "--from", "claude-code", str(claude_dir), "-o", str(tmp_path / "new"))
    assert code == 0 and "added" not in err


# Refusals: converting a store onto itself is refused before anything is read or written; unreadable
# inputs and unwritable outputs are one-line errors, nothing left behind.

FORMATS_TO_DIRS = ["massgen", "claude-code", "magicfrog"]


def run_failing(*args: str) -> tuple[int, str, object]:
    """Exit code, stderr and the exception the command ended with (None, or the SystemExit of an exit)."""
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stderr, result.exception


def _one_line_error(code: int, err: str, exc: object) -> None:
    assert code == 1
    assert exc is None or isinstance(exc, SystemExit), exc
    assert err.startswith("error: ") and err.count("\n") == 1


@pytest.fixture
def massgen_tree(massgen_workspace: Path, tmp_path: Path) -> Path:
    """A bundlekit tree converted from the MassGen workspace."""
    dest = tmp_path / "mem"
    code, _, err = run("convert", "--from", "massgen", str(massgen_workspace), "-o", str(dest))
    assert code == 0, err
    return dest


@pytest.fixture
def blocker(tmp_path: Path) -> Path:
    """A plain file where a directory is needed."""
    path = tmp_path / "afile"
    path.write_text("x")
    return path


@pytest.mark.parametrize("fmt", ["claude-code", "massgen", "magicfrog"])
def test_export_onto_the_source_tree_is_refused(fmt: str, massgen_tree: Path) -> None:
    before = tree_files(massgen_tree)
    result = CliRunner().invoke(cli, ["convert", "--to", fmt, str(massgen_tree), "-o", str(massgen_tree)])
    assert result.exit_code == 2
    assert "is the source itself" in result.stderr
    assert tree_files(massgen_tree) == before


def test_import_onto_the_foreign_store_is_refused(claude_dir: Path) -> None:
    before = tree_files(claude_dir)
    result = CliRunner().invoke(
        cli, ["convert", "--from", "claude-code", str(claude_dir), "-o", str(claude_dir)]
    )
    assert result.exit_code == 2
    assert tree_files(claude_dir) == before


@pytest.mark.parametrize("fmt", FORMATS_TO_DIRS)
def test_export_into_a_file_is_a_one_line_error(fmt: str, massgen_tree: Path, blocker: Path) -> None:
    code, err, exc = run_failing("convert", "--to", fmt, str(massgen_tree), "-o", str(blocker))
    _one_line_error(code, err, exc)
    assert "a file is in the way" in err


def test_threews_export_over_a_directory_is_a_one_line_error(massgen_tree: Path, tmp_path: Path) -> None:
    target = tmp_path / "adir"
    target.mkdir()
    code, err, exc = run_failing("convert", "--to", "three.ws", str(massgen_tree), "-o", str(target))
    _one_line_error(code, err, exc)
    assert os.listdir(target) == []
    assert not [n for n in os.listdir(tmp_path) if is_temp_name(n)]


def test_magic_context_export_under_a_file_is_a_one_line_error(massgen_tree: Path, blocker: Path) -> None:
    code, err, exc = run_failing(
        "convert", "--to", "magic-context", str(massgen_tree), "-o", str(blocker / "db"), "--project", PROJECT
    )
    _one_line_error(code, err, exc)


def test_import_under_a_file_is_a_one_line_error(massgen_workspace: Path, blocker: Path) -> None:
    code, err, exc = run_failing(
        "convert", "--from", "massgen", str(massgen_workspace), "-o", str(blocker / "sub")
    )
    _one_line_error(code, err, exc)


def test_threews_import_of_a_directory_is_a_one_line_error(tmp_path: Path) -> None:
    code, err, exc = run_failing("convert", "--from", "three.ws", str(tmp_path), "-o", str(tmp_path / "m"))
    _one_line_error(code, err, exc)
    assert "JSON file" in err


def test_a_refused_import_leaves_no_output_directory(tmp_path: Path) -> None:
    # Review of issue 12: a credential refused by the secret guard left an empty DEST behind.
    src = tmp_path / "claude"
    src.mkdir()
    escaped = "".join(f"\\x{ord(c):02x}" for c in "ghp_" + "a1B2" * 9)
    (src / "a.md").write_text(f'---\nname: n\ndescription: "{escaped}"\ntype: user\n---\nbody\n', encoding="utf-8")
    code, err, _ = run_failing("convert", "--from", "claude-code", str(src), "-o", str(tmp_path / "out"))
    assert code == 1, err
    assert "looks like a GitHub token" in err
    assert not (tmp_path / "out").exists()


def test_an_import_goes_into_the_tree_named_by_the_environment(
    claude_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BUNDLEKIT_MEMORY_DIR", str(tmp_path / "mine"))
    code, _, err = run("convert", "--from", "claude-code", str(claude_dir))
    assert code == 0, err
    assert len(Memory(tmp_path / "mine").list()) == 2


def test_an_export_reads_the_tree_named_by_dir(claude_dir: Path, tmp_path: Path) -> None:
    assert run("convert", "--from", "claude-code", str(claude_dir), "-d", str(tmp_path / "mine"))[0] == 0
    code, _, err = run("convert", "--to", "massgen", "-d", str(tmp_path / "mine"), "-o", str(tmp_path / "ws"))
    assert code == 0 and "converted 2 memories as massgen" in err


def test_the_old_spellings_win_over_the_environment(
    claude_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BUNDLEKIT_MEMORY_DIR", str(tmp_path / "elsewhere"))
    assert run("convert", "--from", "claude-code", str(claude_dir), "-o", str(tmp_path / "m"))[0] == 0
    assert run("convert", "--to", "massgen", str(tmp_path / "m"), "-o", str(tmp_path / "ws"))[0] == 0
    assert not (tmp_path / "elsewhere").exists()


def test_naming_the_tree_twice_differently_is_a_usage_error(claude_dir: Path, tmp_path: Path) -> None:
    code, _, err = run("convert", "--from", "claude-code", str(claude_dir), "-o", str(tmp_path / "a"),
                       "-d", str(tmp_path / "b"))
    assert code == 2 and "two memory trees named" in err
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_an_export_without_output_or_tree_says_what_is_missing(tmp_path: Path) -> None:
    code, _, err = run("convert", "--to", "massgen", "-d", str(tmp_path / "mine"))
    assert code == 2 and "--to needs -o DEST" in err
    code, _, err = run("convert", "--to", "massgen", "-d", str(tmp_path / "none"), "-o", str(tmp_path / "ws"))
    assert code == 2 and "no memory tree at" in err and not (tmp_path / "ws").exists()
    code, _, err = run("convert", "--from", "massgen")
    assert code == 2 and "--from needs SRC" in err


def test_the_tree_named_twice_as_one_directory_is_that_one_tree(claude_dir: Path, tmp_path: Path) -> None:
    tree = tmp_path / "mine"
    (tmp_path / "link").symlink_to(tree, target_is_directory=True)
    (tmp_path / "x").mkdir()
    code, _, err = run("convert", "--from", "claude-code", str(claude_dir), "-o", f"{tree}/", "-d", str(tree))
    assert code == 0, err
    for spelling in (tmp_path / "link", tmp_path / "x" / ".." / "mine"):
        code, _, err = run("convert", "--to", "massgen", str(spelling), "-d", str(tree), "-o",
                           str(tmp_path / f"ws-{spelling.name}"))
        assert code == 0 and "converted 2 memories as massgen" in err, err


def test_an_old_spelling_of_the_tree_naming_a_file_is_a_usage_error_as_dir_is(claude_dir: Path,
                                                                             tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("not a tree", encoding="utf-8")
    code, _, err = run("convert", "--from", "claude-code", str(claude_dir), "-o", str(tmp_path / "afile"))
    assert code == 2 and "is a file, not a directory" in err
    code, _, err = run("convert", "--to", "massgen", str(tmp_path / "afile"), "-o", str(tmp_path / "ws"))
    assert code == 2 and "is a file, not a directory" in err and not (tmp_path / "ws").exists()
    assert (tmp_path / "afile").read_text(encoding="utf-8") == "not a tree"


def test_a_tree_path_with_terminal_escapes_is_shown_escaped(tmp_path: Path) -> None:
    code, _, err = run("convert", "--to", "massgen", "-d", str(tmp_path / "a\x1b]0;title\x07b"), "-o",
                       str(tmp_path / "ws"))
    assert code == 2 and "\x1b" not in err and "\x07" not in err and "\\x1b]0;title\\x07b" in err
