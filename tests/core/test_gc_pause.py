"""Issue 37: a build runs with the cyclic garbage collector paused (``bundlekit._gcpause``) and leaves it as
it found it: on again after the outermost pause, off when it was off, after an error too, with nested and
concurrent pauses."""

from __future__ import annotations

import gc
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import bundlekit.cli as cli
from bundlekit._gcpause import gc_paused
from bundlekit.bundle.build import BuildOptions, build_bundle
from bundlekit.memory import Memory
from bundlekit.unixfs.importer import NullSink, import_tree
from bundlekit.unixfs.profiles import DEFAULT_PROFILE, get_profile


@pytest.fixture(autouse=True)
def _collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if was:
        gc.enable()
    else:
        gc.disable()


def test_the_collector_is_off_inside_and_on_again_after() -> None:
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_nested_pause_keeps_it_off_until_the_outermost_ends() -> None:
    with gc_paused():
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_collector_off_before_stays_off_after() -> None:
    gc.disable()
    with gc_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_an_error_inside_still_turns_it_back_on() -> None:
    with pytest.raises(RuntimeError, match="boom"), gc_paused():
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_a_pause_on_another_thread_keeps_it_off_until_both_end() -> None:
    entered, release = threading.Event(), threading.Event()

    def other() -> None:
        with gc_paused():
            entered.set()
            release.wait(10)

    thread = threading.Thread(target=other)
    thread.start()
    assert entered.wait(10)
    with gc_paused():
        pass
    assert not gc.isenabled()  # the other thread's pause still holds
    release.set()
    thread.join(10)
    assert gc.isenabled()


def test_a_build_runs_with_the_collector_paused_and_restores_it(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    mem = Memory(tree, namespace="agent")
    mem.init()
    mem.write("user_prefers_tea", name="tea", description="prefers tea", type="user", body="Tea, not coffee.")
    seen: list[bool] = []
    build_bundle(tree, tmp_path / "b.car", options=BuildOptions(progress=lambda _done, _total: seen.append(
        gc.isenabled())))
    assert seen and not any(seen)
    assert gc.isenabled()


def test_a_command_module_is_imported_with_the_collector_paused(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bool] = []
    real = cli.importlib.import_module

    def spying(name: str) -> object:
        seen.append(gc.isenabled())
        return real(name)

    monkeypatch.setattr(cli.importlib, "import_module", spying)
    group = cli.cli
    assert isinstance(group, click.Group)
    assert group.get_command(click.Context(group), "sync") is not None
    assert seen and not any(seen)
    assert gc.isenabled()


def test_a_process_that_runs_one_command_keeps_its_modules_out_of_every_later_collection(tmp_path: Path) -> None:
    # the console script's main(): the command's modules are imported, then frozen (gc.freeze), so no collection
    # walks the ~200,000 objects they made again (issue 37: ~7 ms of a writer's sync round)
    script = ("import gc, sys\nfrom bundlekit.cli import main\nsys.argv = ['bundlekit', 'sync', '--help']\n"
              "try:\n    main()\nexcept SystemExit:\n    pass\n"
              "print(gc.get_freeze_count(), 'bundlekit.cli.sync' in sys.modules, gc.isenabled(), file=sys.stderr)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    frozen, imported, enabled = done.stderr.split()
    assert int(frozen) > 10_000 and imported == "True" and enabled == "True"


def test_a_host_that_invokes_the_cli_again_and_again_freezes_nothing() -> None:
    before = gc.get_freeze_count()
    result = CliRunner().invoke(cli.cli, ["sync", "--help"])
    assert result.exit_code == 0 and "sync" in result.output
    assert gc.get_freeze_count() <= before  # nothing frozen: a test run's garbage stays collectable


def test_an_import_of_a_tree_leaves_nothing_for_the_cyclic_collector() -> None:
    # import_tree's recursive helper referred to itself through its closure: every entry of the import stayed
    # alive until a collection found the cycle (issue 37: 10,000 entries, ~3 ms after a sync round)
    files = [(f"memory/k{i}.md", f"body {i}".encode()) for i in range(50)] + [("manifest.json", b"{}")]
    gc.collect()
    with gc_paused():
        result = import_tree(files, NullSink(), get_profile(DEFAULT_PROFILE))
        del result
        assert gc.collect() == 0
