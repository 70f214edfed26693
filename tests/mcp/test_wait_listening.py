"""The HTTP tests' readiness wait (``conftest.wait_listening``): the child's own listener, proven without a connection.

Both its faults once cost a test its premise: a port held by another process passed for the child's (that
something accepts proves nothing), and the probe connection it opened was still one of the server's 64 while the
connection-limit test filled them, so an extra connection was admitted in the probe's place once its close was read.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.mcp.conftest import wait_listening
from tests.net.loopback import free_port, listeners

pytestmark = pytest.mark.skipif(not os.path.isfile("/proc/net/tcp"), reason="reads the kernel's TCP table")

#: A child that listens on the port given and never accepts (so a connection made to it stays in its accept queue).
LISTENER = ("import socket, sys, time\n"
            "s = socket.socket(); s.bind(('127.0.0.1', int(sys.argv[1]))); s.listen(); time.sleep(120)\n")


@pytest.fixture
def listener_child() -> Iterator[tuple[subprocess.Popen[str], int]]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-c", LISTENER, str(port)], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        yield proc, port
    finally:
        proc.kill()
        proc.communicate()


def test_wait_listening_returns_without_connecting_to_the_child(
    listener_child: tuple[subprocess.Popen[str], int],
) -> None:
    proc, port = listener_child
    wait_listening(proc, "127.0.0.1", port, lambda: "")
    [listening] = listeners(port)
    assert listening.rx_queue == 0  # nothing waits in the child's accept queue: no probe was made


def test_wait_listening_fails_naming_the_holder_when_another_process_listens_on_the_port() -> None:
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        proc = subprocess.Popen([sys.executable, "-c", LISTENER, str(port)], stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        with pytest.raises(pytest.fail.Exception) as failed:
            wait_listening(proc, "127.0.0.1", port, lambda: proc.communicate()[1])
    message = str(failed.value)
    assert "exited 1" in message and f"held by pid {os.getpid()} " in message
    assert "Address already in use" in message  # the child's own stderr
