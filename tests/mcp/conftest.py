"""Fixtures for the MCP tests: a small memory tree, a built bundle, and an SDK client over stdio or HTTP.

The client is the official ``mcp`` SDK's own (``mcp.Client``), talking to
``bundlekit mcp`` started as a subprocess, exactly as an MCP client would.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib.util
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import pytest

from bundlekit.memory import Memory
from tests.net.loopback import free_port, listeners, port_report, socket_inodes, tcp_table

ROOT = Path(__file__).resolve().parents[2]
CREATED = datetime(2026, 4, 14, 12, 0, 0, tzinfo=UTC)
T = TypeVar("T")


def skip_without_the_sdk() -> None:
    """Skip the calling test module where the ``mcp`` extra is not installed: the SDK found, not imported (imported,
    it costs every test process ~0.6 s of CPU while collecting, whether or not it runs an MCP test)."""
    if importlib.util.find_spec("mcp") is None:
        pytest.skip("needs the mcp extra (pip install -e '.[mcp]')", allow_module_level=True)


def make_tree(root: Path) -> Path:
    """Three memories and a timeline entry, with a fixed clock."""
    mem = Memory(root, namespace="coach", clock=lambda: CREATED)
    mem.write("user_role", name="Role", description="plays 5-a-side on Saturdays", type="user",
              body="Plays as a winger; prefers green tea.")
    mem.write("feedback_tone", name="Tone", description="stay warm but direct", type="feedback",
              body="Direct critique, no fluff.", tags=["style"])
    mem.write("project_season", name="Season goal", description="a June tournament", type="project",
              body="Three drills per session.")
    mem.note("session", summary="talked about drills")
    return root


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return make_tree(tmp_path / "coach")


def server_env() -> dict[str, str]:
    """The environment of a ``bundlekit mcp`` subprocess: this checkout first (then the suite's own path: the
    entry points tests/conftest.py registers), no CI progress, no home store."""
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])), "CI": "true"}
    for name in ("HOME", "BUNDLEKIT_HOME", "PATH", "TMPDIR"):
        if name in os.environ:
            env[name] = os.environ[name]
    return env


def stdio_params(*args: str) -> Any:
    from mcp.client.stdio import StdioServerParameters

    return StdioServerParameters(command=sys.executable, args=["-m", "bundlekit", "mcp", *args], env=server_env())


def run_client(server: Any, session: Callable[[Any], Awaitable[T]]) -> T:
    """Connect the SDK's ``Client`` to ``server`` (stdio parameters or a URL) and run ``session(client)``."""
    from mcp import Client

    async def main() -> T:
        async with Client(server, read_timeout_seconds=60) as client:
            return await session(client)

    return asyncio.run(main())


class SharedClient:
    """One SDK client session, and so one ``bundlekit mcp`` process, held open on an event loop of its own.

    For the tests that leave the served state as they found it (reads, and calls the server refuses): they
    share one server start (~1.5 s of CPU, most of it the SDK's import) instead of one each. ``run`` takes
    the same ``session(client)`` coroutine function as :func:`run_client`.
    """

    def __init__(self, server: Any) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._ready: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._holder = asyncio.run_coroutine_threadsafe(self._hold(server), self._loop)
        self._holder.add_done_callback(self._failed_before_ready)
        self._client = self._ready.result(timeout=90)

    async def _hold(self, server: Any) -> None:
        from mcp import Client

        self._stop = asyncio.Event()
        async with Client(server, read_timeout_seconds=60) as client:
            self._ready.set_result(client)
            await self._stop.wait()

    def _failed_before_ready(self, holder: concurrent.futures.Future[None]) -> None:
        if not self._ready.done():
            self._ready.set_exception(holder.exception() or RuntimeError("the MCP client ended before it connected"))

    def run(self, session: Callable[[Any], Awaitable[T]]) -> T:
        return asyncio.run_coroutine_threadsafe(session(self._client), self._loop).result(timeout=120)

    def close(self) -> None:
        """End the session (the stdio server sees its stdin close and exits), then the loop."""
        self._loop.call_soon_threadsafe(self._stop.set)
        try:
            self._holder.result(timeout=60)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=30)
            self._loop.close()


def shared_client(server: Any) -> Iterator[SharedClient]:
    """A :class:`SharedClient` of ``server`` for a fixture to yield, closed after its last test."""
    client = SharedClient(server)
    try:
        yield client
    finally:
        client.close()




def wait_listening(proc: subprocess.Popen[Any], host: str, port: int, why: Callable[[], str]) -> None:
    """Wait (60 s at most) until ``proc`` itself listens on ``host:port``; fail with ``why()`` if it ends first.

    That something accepts on the port proves nothing: another test's server may hold it (a port drawn by two
    workers at once), and then this one fails to bind and exits while the test talks to the other. So the port's
    ``LISTEN`` socket must be one of ``proc``'s own descriptors (``/proc/net/tcp``, ``/proc/PID/fd``: the
    ``bounded.py`` wrapper runs bundlekit in its own process, so its pid is the server's). Nor does it connect: a
    probe's connection is one of the server's own until the server has read its close, so a test filling the
    server's connection limit right after would find one slot taken, then freed (an extra admitted). Only where
    ``/proc`` cannot tell is a connection accepted while ``proc`` is alive the proof.
    """
    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        if _listens(proc.pid, host, port):
            return
        time.sleep(0.1)
    alive = proc.poll() is None
    if alive:
        proc.kill()
    state = "still not listening after 60 s" if alive else f"exited {proc.returncode}"
    pytest.fail(f"bundlekit mcp --http did not start ({state}); port {port}: {port_report(port, proc.pid)}\n{why()}")


def _listens(pid: int, host: str, port: int) -> bool:
    table = tcp_table()
    if table is None:
        try:
            socket.create_connection((host, port), timeout=1).close()
        except OSError:
            return False
        return True
    mine = socket_inodes(pid)
    return any(entry.inode in mine for entry in listeners(port, table))
