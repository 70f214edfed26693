"""Ctrl-C during a pin: uploads cancelled, no local pin left from the aborted run, exit 130 (issue 13)."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import BinaryIO

import pytest
from click.testing import CliRunner

from bundlekit.blockstore import BlockStore
from bundlekit.cli import cli
from bundlekit.errors import BundlekitError
from bundlekit.pinning.orchestrate import pin_all
from bundlekit.pinning.protocol import BasePinner, PinResult
from pinners.local import LocalPinner

from .conftest import Car


class InterruptingUpload(BasePinner):
    """Uploads slowly; once the local pin exists it presses Ctrl-C, then keeps reading until cancelled."""

    name = "slow"

    def __init__(self, store: BlockStore) -> None:
        self.store = store
        self.stopped_by: str = ""
        self.closed = threading.Event()

    def pin(self, car: BinaryIO, root: bytes, *, name: str | None = None, size: int | None = None) -> PinResult:
        give_up = time.monotonic() + 10
        while not self.store.pins() and time.monotonic() < give_up:
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGINT)
        give_up = time.monotonic() + 60  # a bound of its own: a slow start must not shorten the wait for the cancel
        try:
            while time.monotonic() < give_up:
                car.seek(0)
                car.read(16)
                time.sleep(0.01)
        except BundlekitError as exc:
            self.stopped_by = type(exc).__name__
            raise
        raise AssertionError("the upload was never cancelled")

    def status(self, cid: bytes) -> PinResult:
        raise AssertionError("not used")

    def unpin(self, cid: bytes) -> None:
        raise AssertionError("not used")

    def close(self) -> None:
        self.closed.set()


def test_ctrl_c_cancels_uploads_and_removes_the_runs_local_pin(car: Car, tmp_path: Path) -> None:
    store = BlockStore(tmp_path / "home", fsync=False)
    slow = InterruptingUpload(store)
    with pytest.raises(KeyboardInterrupt):
        pin_all(car.path, car.root, [LocalPinner(store), slow])
    assert slow.stopped_by == "Cancelled" and slow.closed.is_set()
    assert store.pins() == {}


def test_a_pin_made_before_the_run_survives_the_interrupt(car: Car, tmp_path: Path) -> None:
    store = BlockStore(tmp_path / "home", fsync=False)
    with car.open() as fh:
        LocalPinner(store).pin(fh, car.root, name="earlier")
    slow = InterruptingUpload(store)
    with pytest.raises(KeyboardInterrupt):
        pin_all(car.path, car.root, [LocalPinner(store), slow])
    assert [m["name"] for m in store.pins().values()] == ["earlier"]


def test_the_cli_exits_130_and_says_interrupted(car: Car, store_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("bundlekit.flows.publish.pin_all", interrupted)
    result = CliRunner().invoke(cli, ["pin", str(car.path)])
    assert result.exit_code == 130 and "interrupted" in result.stderr
