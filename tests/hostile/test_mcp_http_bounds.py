"""``bundlekit mcp --http`` against hostile clients: bounded connections, heads and bodies, no traceback.

The server runs as a memory-capped child (``bounded``), driven with raw sockets on 127.0.0.1. Each wait
is a bound far above the deadline it checks (the deadline plus ``SLACK``), never a timing assertion: a
server without the deadline keeps the connection past the bound and the test fails. The bounds are
``bundlekit.mcp_server.http_server``'s (specs/mcp.md, "Limits"); uvicorn 0.54.0 alone has none for a
head (``uvicorn/protocols/http/h11_impl.py``: only an idle keep-alive connection is timed out) and
the SDK (``mcp`` 2.3.0, ``MCPServer.run_streamable_http_async``) sets no ``limit_concurrency``.

Each deadline is checked twice: once set to a fraction of a second through its environment variable
(``BUNDLEKIT_MCP_*_DEADLINE``, the ``deadlines`` a test is parametrized with), and end to end at its
default (one test, marked ``slow``, attacks the three bounds at once on one server and waits the longest default
out), so a default that stopped reaching the server fails too.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from bundlekit.memory import Memory
from bundlekit.errors import UsageError
from tests.hostile.conftest import TIMEOUT, bounded, child_env
from tests.mcp.conftest import make_tree, skip_without_the_sdk, wait_listening
from tests.net.loopback import answer_head, free_port, port_report, socket_inodes, tcp_table

# The server's module (its limits) is imported by the tests that use them: it brings the SDK, uvicorn and starlette.
skip_without_the_sdk()

#: Seconds allowed past a deadline before the test says the server never enforced it.
SLACK = 15.0
#: A deadline the fast tests set (seconds): far below each default, far above a loopback round trip.
FAST = 0.5
#: How long a fast test waits for it (seconds): still below every default, so a server that kept its
#: default instead of the deadline it was given fails the test too.
FAST_BOUND = FAST + 5.0
INITIALIZE = json.dumps({
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"},
    },
}).encode()


class Served:
    """A running ``bundlekit mcp --http`` child: its port and its stderr (a file, read once it stopped, or for a
    failure's :meth:`report`)."""

    def __init__(self, port: int, proc: subprocess.Popen[bytes], stderr: Path) -> None:
        self.port, self.proc, self.stderr_path = port, proc, stderr

    def connect(self) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=10)

    def head(self, method: str = "POST", extra: str = "", length: int = len(INITIALIZE)) -> bytes:
        return (
            f"{method} /mcp HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\nContent-Length: {length}\r\n{extra}\r\n"
        ).encode()

    def call(self, sock: socket.socket, message: dict[str, object], session: str = "") -> None:
        body = json.dumps(message).encode()
        extra = f"mcp-session-id: {session}\r\nmcp-protocol-version: 2025-06-18\r\n" if session else ""
        sock.sendall(self.head(extra=extra, length=len(body)) + body)

    def session(self) -> str:
        """A new initialized MCP session's id."""
        with self.connect() as sock:
            sock.sendall(self.head() + INITIALIZE)
            answer = _answer(sock).decode("latin-1")
            session = next(line.split(":", 1)[1].strip() for line in answer.split("\r\n")
                           if line.lower().startswith("mcp-session-id:"))
        with self.connect() as sock:
            self.call(sock, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
            assert _answer(sock).startswith(b"HTTP/1.1 202 ")
        return session

    def held(self) -> set[int] | None:
        """The client ports of the connections the server holds open now (its end of each is one of its
        descriptors: ``/proc/net/tcp``, ``/proc/PID/fd``); None where ``/proc`` cannot tell."""
        table = tcp_table()
        if table is None:
            return None
        mine = socket_inodes(self.proc.pid)
        return {entry.remote_port for entry in table
                if entry.local_port == self.port and entry.state != "LISTEN" and entry.inode in mine}

    def report(self, *socks: socket.socket) -> str:
        """The server's state for a failure message: alive or its exit status, what the kernel holds on its port
        (``socks``' client ports named, to find their rows), and its stderr so far."""
        state = "running" if self.proc.poll() is None else f"exited {self.proc.returncode}"
        ports = [sock.getsockname()[1] for sock in socks if sock.fileno() != -1]
        return (f"server pid {self.proc.pid} {state}; the client ports in question (<--): {ports or '-'}\n"
                f"{port_report(self.port, self.proc.pid, ports)}\n"
                f"its stderr:\n{self.stderr_path.read_text(encoding='utf-8', errors='replace')}")

    def stop(self) -> str:
        """Stop the server as Ctrl-C does; its stderr."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return make_tree(tmp_path / "coach")


@pytest.fixture
def deadlines() -> dict[str, str]:
    """The server's deadline variables; none by default (its default deadlines). A test sets them by parametrizing."""
    return {}


def fast(bound: str) -> pytest.MarkDecorator:
    """Run the test's server with the deadline ``bound`` (``HEAD``, ``BODY``, ``WRITE_STALL``) at :data:`FAST` seconds."""
    return pytest.mark.parametrize("deadlines", [{f"BUNDLEKIT_MCP_{bound}_DEADLINE": str(FAST)}], ids=["fast"])


@pytest.fixture
def served(tmp_path: Path, tree: Path, deadlines: dict[str, str]) -> Iterator[Served]:
    """A server of the test's own: most tests here hold its connections, wait out its deadlines or stop it."""
    yield from _serving(tmp_path, tree, deadlines)


@pytest.fixture(scope="module")
def shared_served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One server with the default deadlines for the tests that send it one request each and hold nothing."""
    work = tmp_path_factory.mktemp("shared")
    yield from _serving(work, make_tree(work / "coach"), {})


@pytest.fixture(scope="module")
def head_served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One server with only the head deadline at :data:`FAST` for the two head-deadline tests: each attacks a
    connection of its own and holds nothing once the deadline closed it."""
    work = tmp_path_factory.mktemp("head")
    yield from _serving(work, make_tree(work / "coach"), {"BUNDLEKIT_MCP_HEAD_DEADLINE": str(FAST)})


def _serving(tmp_path: Path, tree: Path, deadlines: dict[str, str]) -> Iterator[Served]:
    port = free_port()
    env = child_env()
    env.update({"BUNDLEKIT_HOME": str(tmp_path / "home"), "CI": "true", **deadlines})
    stderr = tmp_path / "stderr.txt"
    with stderr.open("wb") as err:
        proc = subprocess.Popen(
            bounded("mcp", "--memory", str(tree), "--http", f"127.0.0.1:{port}"),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, env=env,
        )
    wait_listening(proc, "127.0.0.1", port, stderr.read_text)
    server = Served(port, proc, stderr)
    try:
        yield server
    finally:
        server.stop()


def _closed_within(sock: socket.socket, seconds: float, trickle: bytes = b"") -> bool:
    """Send ``trickle`` a byte at a time (a slowloris) while waiting; True once the server closed ``sock``."""
    end = time.monotonic() + seconds
    sock.settimeout(0.2)
    pending = iter(trickle)
    while time.monotonic() < end:
        byte = next(pending, None)
        try:
            if byte is not None:
                sock.send(bytes([byte]))
            if sock.recv(4096) == b"":
                return True
        except TimeoutError:
            continue
        except OSError:  # reset, or a send after the close
            return True
    return False


def _answer(sock: socket.socket) -> bytes:
    sock.settimeout(TIMEOUT)
    return answer_head(sock)


def test_a_request_head_trickled_a_byte_at_a_time_is_closed_at_the_head_deadline(
    head_served: Served,
) -> None:
    with head_served.connect() as sock:
        never_ending = head_served.head(extra="X-Pad: " + "a" * 10_000)[:-2]  # the blank line never comes
        assert _closed_within(sock, FAST_BOUND, trickle=never_ending)


def test_a_connection_that_never_sends_is_closed_at_the_head_deadline(head_served: Served) -> None:
    with head_served.connect() as sock:
        assert _closed_within(sock, FAST_BOUND)


@fast("BODY")
def test_a_request_body_trickled_a_byte_at_a_time_is_closed_at_the_body_deadline(served: Served) -> None:
    with served.connect() as sock:
        sock.sendall(served.head(length=100_000))
        assert _closed_within(sock, FAST_BOUND, trickle=b" " * 100_000)


# The admitted connections send nothing, and their head deadline here outlasts the test: no deadline frees a
# slot while it runs. They are opened once the server holds no connection, and the extras once it holds them all:
# a connection whose close the server has not yet read is still one of its 64 (the readiness probe's was, once),
# so the last admitted one was refused in its place and an extra admitted when that close was read. From then on,
# an extra connection that is not answered 503 was admitted past the limit.
@pytest.mark.parametrize("deadlines", [{"BUNDLEKIT_MCP_HEAD_DEADLINE": str(TIMEOUT * 4)}], ids=["held"])
def test_connections_past_the_limit_are_answered_503_while_earlier_ones_still_work(served: Served) -> None:
    from bundlekit.mcp_server.http_server import MAX_CONNECTIONS

    _await_serving_only(served, [])
    admitted = [served.connect() for _ in range(MAX_CONNECTIONS)]
    extra: list[socket.socket] = []
    try:
        _await_serving_only(served, admitted)
        extra += [served.connect() for _ in range(5)]
        for sock in extra:
            answer = _answer_or_report(served, sock)
            assert answer.startswith(b"HTTP/1.1 503 "), f"{answer!r}\n{served.report(sock, *extra)}"
            assert b"connection: close" in answer.lower() and b"retry-after:" in answer.lower()
        first = admitted[0]
        first.sendall(served.head() + INITIALIZE)
        answer = _answer_or_report(served, first)
        assert answer.startswith(b"HTTP/1.1 200 "), f"{answer!r}\n{served.report(first)}"
    finally:
        for sock in admitted + extra:
            sock.close()


def _await_serving_only(served: Served, socks: list[socket.socket]) -> None:
    """Wait (``TIMEOUT`` at most) until the connections the server holds are exactly ``socks``: every earlier
    one's close read, each of ``socks`` accepted (so a connection opened next reaches the server after them). Where
    ``/proc`` cannot tell, return at once."""
    wanted = {sock.getsockname()[1] for sock in socks}
    end = time.monotonic() + TIMEOUT
    while (held := served.held()) is not None and held != wanted:
        if time.monotonic() > end:
            pytest.fail(f"the server never held just the test's {len(socks)} connections\n{served.report(*socks)}")
        time.sleep(0.05)


def _answer_or_report(served: Served, sock: socket.socket) -> bytes:
    """:func:`_answer`, a timeout or reset failing the test with the server's state instead of the bare error."""
    try:
        return _answer(sock)
    except OSError as exc:
        pytest.fail(f"{exc!r}\n{served.report(sock)}")


def test_the_limit_frees_up_once_connections_close(shared_served: Served) -> None:
    from bundlekit.mcp_server.http_server import MAX_CONNECTIONS

    # the shared server: the connections that fill its limit are closed before the test asks, nothing is held after
    held = [shared_served.connect() for _ in range(MAX_CONNECTIONS)]
    for sock in held:
        sock.close()
    # The server sees the closes when its loop next runs: on a loaded machine that is later than any fixed pause, so
    # a 503 (still full) is asked again until the bound; a limit that never frees up fails.
    end = time.monotonic() + TIMEOUT
    while True:
        with shared_served.connect() as sock:
            sock.sendall(shared_served.head() + INITIALIZE)
            answer = _answer(sock)
        if not answer.startswith(b"HTTP/1.1 503 ") or time.monotonic() > end:
            break
        time.sleep(0.1)
    assert answer.startswith(b"HTTP/1.1 200 "), answer


@pytest.fixture
def big_tree(tree: Path) -> Path:
    """The tree plus 4 memories of about 2 MB each: one recall answers far more than socket buffers hold."""
    memory = Memory(tree)
    for n in range(4):
        memory.write(f"big{n}", name="Big", description="a big body", type="project",
                     body=f"line {n} of a big body\n" * 100_000)
    return tree


def _server_end_open(server: Served, sock: socket.socket) -> bool:
    """Whether the server still holds its end of ``sock``'s connection open (Linux's ``/proc/net/tcp``: the entry
    from the server's port to ``sock``'s is ``ESTABLISHED``); read without reading ``sock``, whose answer the test
    must leave unread."""
    remote = sock.getsockname()[1]
    return any(entry.local_port == server.port and entry.remote_port == remote and entry.state == "ESTABLISHED"
               for entry in tcp_table() or [])


def _leave_unread(server: Served, sock: socket.socket, seconds: float) -> None:
    """Read nothing of ``sock`` until the server closed its end, for ``seconds`` at most (all of them where
    ``/proc/net/tcp`` cannot tell)."""
    end = time.monotonic() + seconds
    if not Path("/proc/net/tcp").is_file():
        time.sleep(seconds)
        return
    while time.monotonic() < end and _server_end_open(server, sock):
        time.sleep(0.1)


def _await_body(sock: socket.socket) -> None:
    """Wait (``TIMEOUT`` at most) until the answer's body has begun to arrive, reading none of it (peeking): the
    body is written at once, so from then on the server's writes are paused and its write-stall timer runs."""
    end = time.monotonic() + TIMEOUT
    sock.settimeout(TIMEOUT)
    while len(sock.recv(4096, socket.MSG_PEEK)) < 2048 and time.monotonic() < end:  # past the head's few hundred
        time.sleep(0.05)


def _stalled_answer_is_cut(served: Served, seconds: float) -> None:
    """Ask for an answer far larger than socket buffers, read none of it for ``seconds`` from the moment it began
    (or until the server closes the connection), then read it quickly: the server must have cut it, never finishing
    the chunked answer."""
    session = served.session()
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(("127.0.0.1", served.port))
        recall = {"name": "memory_recall", "arguments": {"query": "big", "limit": 4}}
        served.call(sock, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": recall}, session)
        _await_body(sock)
        _leave_unread(served, sock, seconds)  # not reading: the server's writes stall
        # A small window read slowly keeps the server's writes paused: read with a large one, so an answer the
        # server did not cut is read whole well before any default deadline.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
        received = b""
        sock.settimeout(TIMEOUT)
        try:
            while chunk := sock.recv(1 << 20):
                received += chunk
        except ConnectionResetError:
            pass
        assert not received.endswith(b"\r\n0\r\n\r\n")  # the answer never finished: the server cut it


@fast("WRITE_STALL")
@pytest.mark.usefixtures("big_tree")
def test_an_answer_the_client_stops_reading_is_cut_at_the_write_stall_timeout(served: Served) -> None:
    _stalled_answer_is_cut(served, FAST_BOUND)


def _never_sending_is_closed(served: Served, seconds: float) -> bool:
    with served.connect() as sock:
        return _closed_within(sock, seconds)


def _trickled_body_is_closed(served: Served, seconds: float) -> bool:
    with served.connect() as sock:
        sock.sendall(served.head(length=100_000))
        return _closed_within(sock, seconds, trickle=b" " * 100_000)


@pytest.mark.slow
@pytest.mark.usefixtures("big_tree")
def test_by_default_each_deadline_cuts_its_connection_at_its_default(served: Served) -> None:
    """The three defaults end to end on one server started without a deadline variable, each bound attacked on a
    connection of its own at once (the run waits out the longest default once, not their sum): a connection that
    never sends (the head deadline), a body trickled a byte at a time (the body deadline), an answer left unread
    (the write-stall deadline). A default that stopped reaching the server keeps its connection past the bound."""
    from bundlekit.mcp_server.http_server import BODY_TIMEOUT, HEAD_TIMEOUT, WRITE_STALL_TIMEOUT

    with ThreadPoolExecutor(3) as pool:
        head = pool.submit(_never_sending_is_closed, served, HEAD_TIMEOUT + SLACK)
        body = pool.submit(_trickled_body_is_closed, served, BODY_TIMEOUT + SLACK)
        write_stall = pool.submit(_stalled_answer_is_cut, served, WRITE_STALL_TIMEOUT + SLACK)
        assert head.result(), "a connection that never sent outlived the default head deadline"
        assert body.result(), "a trickled body outlived the default body deadline"
        write_stall.result()  # raises if the unread answer was finished instead of cut


def test_a_client_gone_in_the_middle_of_an_expect_100_continue_body_leaves_no_traceback(
    served: Served,
) -> None:
    with served.connect() as sock:
        sock.sendall(served.head(extra="Expect: 100-continue\r\n"))
        assert _answer(sock).startswith(b"HTTP/1.1 100 ")
        sock.sendall(INITIALIZE[:20])
    with served.connect() as sock:  # the server answers on
        sock.sendall(served.head() + INITIALIZE)
        assert _answer(sock).startswith(b"HTTP/1.1 200 ")
    err = served.stop()
    assert "Traceback" not in err, err
    lines = err.splitlines()
    assert lines[0].startswith("serving ") and lines[-1] == "interrupted", err
    assert all(line.startswith(("warning: ", "error: ")) for line in lines[1:-1]), err


@pytest.mark.parametrize(
    ("header", "status"),
    [("Host: evil.example", b"421"), ("Origin: http://evil.example", b"403")],
    ids=["foreign-host", "foreign-origin"],
)
def test_the_loopback_host_and_origin_rules_still_hold(shared_served: Served, header: str, status: bytes) -> None:
    request = shared_served.head() + INITIALIZE
    if header.startswith("Host:"):
        request = request.replace(f"Host: 127.0.0.1:{shared_served.port}".encode(), header.encode())
    else:
        request = request.replace(b"\r\n\r\n", f"\r\n{header}\r\n\r\n".encode(), 1)
    with shared_served.connect() as sock:
        sock.sendall(request)
        assert _answer(sock).startswith(b"HTTP/1.1 " + status + b" ")


def test_the_deadlines_are_read_from_the_environment_in_seconds() -> None:
    from bundlekit.mcp_server.http_server import BODY_TIMEOUT, HEAD_TIMEOUT, WRITE_STALL_TIMEOUT, Deadlines

    env = {"BUNDLEKIT_MCP_HEAD_DEADLINE": "0.25", "BUNDLEKIT_MCP_WRITE_STALL_DEADLINE": "90"}
    assert Deadlines.from_env(env) == Deadlines(head=0.25, body=BODY_TIMEOUT, write_stall=90.0)
    assert Deadlines.from_env({}) == Deadlines(HEAD_TIMEOUT, BODY_TIMEOUT, WRITE_STALL_TIMEOUT)


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "soon"])
def test_a_deadline_that_is_not_a_positive_number_of_seconds_is_a_usage_error_naming_it(value: str) -> None:
    from bundlekit.mcp_server.http_server import Deadlines

    with pytest.raises(UsageError, match="BUNDLEKIT_MCP_BODY_DEADLINE"):
        Deadlines.from_env({"BUNDLEKIT_MCP_BODY_DEADLINE": value})


def test_mcp_http_with_a_bad_deadline_exits_2_naming_it_before_serving(tmp_path: Path, tree: Path) -> None:
    env = {**child_env(), "CI": "true", "BUNDLEKIT_MCP_HEAD_DEADLINE": "never"}
    done = subprocess.run(bounded("mcp", "--memory", str(tree), "--http", f"127.0.0.1:{free_port()}"),
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, timeout=TIMEOUT, check=False)
    assert done.returncode == 2, done.stderr
    assert "BUNDLEKIT_MCP_HEAD_DEADLINE" in done.stderr and "Traceback" not in done.stderr
    assert "serving" not in done.stderr
