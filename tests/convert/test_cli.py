"""``bundlekit convert`` through click's CliRunner."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

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
