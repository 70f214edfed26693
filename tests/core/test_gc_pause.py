"""Issue 37: a build runs with the cyclic garbage collector paused (``bundlekit._gcpause``) and leaves it as
it found it: on again after the outermost pause, off when it was off, after an error too, with nested and
concurrent pauses."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

import bundlekit.cli as cli
from bundlekit._gcpause import gc_paused
from bundlekit.bundle.build import BuildOptions, build_bundle
from bundlekit.memory import Memory


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
