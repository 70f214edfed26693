"""`bundlekit serve`: prints its URL and the roots it serves on stdout, stops at once on SIGTERM/SIGINT."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bundlekit.blockstore import BlockStore
from bundlekit.cli._loglines import MAX_LINES
from bundlekit.gateway.server import STOP_POLL_INTERVAL, create_server, stop_on_signals
from bundlekit.gateway.sources import CarFileSource
from bundlekit.ipld.cid import cid_to_str

from .conftest import Dag, build_tree

HANG_GUARD = 10  # seconds: only so a broken stop fails the test instead of hanging it


@contextmanager
def _serving(*args: str) -> Iterator[tuple[subprocess.Popen[str], list[str]]]:
    """``bundlekit serve --port 0 ARGS`` in a child, once it serves; yields it and its first stdout line."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "bundlekit", "serve", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stderr is not None
        assert proc.stderr.readline().startswith("serving on http://127.0.0.1:")
        yield proc, [proc.stdout.readline().rstrip("\n")]
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def _stdout_lines(proc: subprocess.Popen[str], first: list[str]) -> list[str]:
    """Every stdout line, once the process has ended."""
    assert proc.stdout is not None
    return first + proc.stdout.read().splitlines()


def test_sigterm_stops_serve_with_exit_143_as_the_cli_contract_says(sample_car: Path) -> None:
    with _serving(str(sample_car)) as (proc, _lines):
        proc.terminate()
        assert proc.wait(timeout=HANG_GUARD) == 143


def test_sigint_stops_serve_as_an_interrupt_with_exit_130(sample_car: Path) -> None:
    with _serving(str(sample_car)) as (proc, _lines):
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=HANG_GUARD) == 130


def test_serve_says_interrupted_on_stderr_when_signalled(sample_car: Path) -> None:
    with _serving(str(sample_car)) as (proc, _lines):
        proc.terminate()
        _out, err = proc.communicate(timeout=HANG_GUARD)
    assert err.strip().splitlines()[-1] == "interrupted"


def test_serve_prints_its_url_then_each_car_root_on_stdout(sample_car: Path, sample_dag: Dag) -> None:
    with _serving(str(sample_car)) as (proc, first):
        proc.terminate()
        proc.wait(timeout=HANG_GUARD)
        lines = _stdout_lines(proc, first)
    assert lines[0].startswith("http://127.0.0.1:")
    assert lines[1:] == [f"{cid_to_str(sample_dag.root)}\t{sample_car}\t-"]


def test_serve_lists_the_stores_pins_with_their_names(tmp_path: Path, sample_car: Path, sample_dag: Dag) -> None:
    store = BlockStore(tmp_path / "s", fsync=False)
    with sample_car.open("rb") as fh:
        store.import_car(fh, pin=True, name="agent")
    with _serving("--store", str(tmp_path / "s")) as (proc, first):
        proc.terminate()
        proc.wait(timeout=HANG_GUARD)
        lines = _stdout_lines(proc, first)
    assert lines[1:] == [f"{cid_to_str(sample_dag.root)}\tstore\tagent"]


def test_serve_json_is_one_line_with_the_url_and_roots(sample_car: Path, sample_dag: Dag) -> None:
    with _serving("--json", str(sample_car)) as (proc, first):
        proc.terminate()
        proc.wait(timeout=HANG_GUARD)
        lines = _stdout_lines(proc, first)
    assert len(lines) == 1
    data = json.loads(lines[0])
    assert data["url"].startswith("http://127.0.0.1:")
    assert data["roots"] == [{"cid": cid_to_str(sample_dag.root), "source": str(sample_car), "name": None}]


def test_a_signal_in_the_stop_block_ends_serve_forever(sample_car: Path) -> None:
    source = CarFileSource(sample_car)
    server = create_server(source, "127.0.0.1", 0)
    guard = threading.Timer(HANG_GUARD, server.shutdown)
    guard.start()
    try:
        with stop_on_signals(server) as received:
            threading.Timer(0.1, os.kill, (os.getpid(), signal.SIGTERM)).start()
            server.serve_forever(poll_interval=STOP_POLL_INTERVAL)
    finally:
        guard.cancel()
        server.server_close()
        source.close()
    assert received == [signal.SIGTERM]


def test_the_previous_handler_is_restored_after_the_stop_block(sample_car: Path) -> None:
    source = CarFileSource(sample_car)
    server = create_server(source, "127.0.0.1", 0)
    before = signal.getsignal(signal.SIGTERM)
    try:
        with stop_on_signals(server):
            pass
    finally:
        server.server_close()
        source.close()
    assert signal.getsignal(signal.SIGTERM) is before



def _first_bytes(port: int, payload: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=HANG_GUARD) as sock:
        sock.sendall(payload)
        return sock.recv(12)


def test_a_flood_of_malformed_requests_and_refused_connections_prints_rate_limited_lines(sample_car: Path) -> None:
    # Found attacking the uvicorn transport: every malformed request printed uvicorn's raw "Invalid HTTP
    # request received." (an upgrade: advice to pip install websockets) and every refused connection a raw
    # line, unbounded, on serve's stderr; a logged exception would have printed its traceback there.
    with _serving("--max-connections", "1", str(sample_car)) as (proc, lines):
        port = int(lines[0].rsplit(":", 1)[1])
        for payload in [b"SM\r\n\r\n", b"GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n"] * 30:
            assert _first_bytes(port, payload).startswith(b"HTTP/1.1 ")
        with socket.create_connection(("127.0.0.1", port), timeout=HANG_GUARD):  # the limit's one slot held
            refused = [_first_bytes(port, b"") for _ in range(30)]
        assert all(answer.startswith(b"HTTP/1.1 503") for answer in refused)
        proc.terminate()
        _out, err = proc.communicate(timeout=HANG_GUARD)
    assert proc.returncode == 143 and err.splitlines()[-1] == "interrupted"
    assert "Traceback" not in err and "pip install" not in err
    assert all(line.startswith(("warning: ", "error: ")) for line in err.splitlines()[:-1])
    assert len(err.splitlines()) <= MAX_LINES + 2


def test_a_stop_does_not_wait_for_clients_that_never_read_their_answers(tmp_path: Path) -> None:
    # Found attacking the uvicorn transport: a stop closed such connections gracefully, waiting for answers
    # no one read, so SIGTERM took uvicorn's 5 s grace and printed "error: Cancel N running task(s)".
    dag = build_tree({"big.bin": os.urandom(12 << 20)}, chunk=1024 * 1024)
    store = BlockStore(tmp_path / "store")
    store.put_many(list(dag.blocks.items()))
    with _serving("--store", str(tmp_path / "store")) as (proc, lines):
        port = int(lines[0].rsplit(":", 1)[1])
        sockets = []
        for _ in range(8):
            sock = socket.create_connection(("127.0.0.1", port), timeout=HANG_GUARD)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.sendall(f"GET /ipfs/{cid_to_str(dag.root)}/big.bin HTTP/1.1\r\nHost: a\r\n\r\n".encode())
            sockets.append(sock)
        assert sockets[-1].recv(12) == b"HTTP/1.1 200"  # answers are under way, then nothing more is read
        proc.terminate()
        assert proc.wait(timeout=4) == 143  # within the grace a stop never needed here
        _out, err = proc.communicate(timeout=HANG_GUARD)
        for sock in sockets:
            sock.close()
    assert err.splitlines()[-1] == "interrupted" and "error:" not in err
