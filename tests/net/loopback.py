"""Small hostile HTTP servers on loopback for the network rules (redirects, deadlines), raw answers read, and
Linux's TCP table read (which process listens on a port, what state each connection to it is in)."""

from __future__ import annotations

import os
import random
import socket
import threading
import time
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

Answer = Callable[[BaseHTTPRequestHandler], None]


@contextmanager
def serve(answer: Answer) -> Iterator[str]:
    """A server on 127.0.0.1 whose every GET and POST is ``answer(handler)``; yields its base URL."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            try:
                answer(self)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up: that is what these servers test

        do_POST = do_GET  # an RPC API (kubo's) is POST only

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def send(handler: BaseHTTPRequestHandler, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
    handler.send_response(status)
    for name, value in {"Content-Length": str(len(body)), **(headers or {})}.items():
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(body)


def redirect_to(target: Callable[[str], str]) -> Answer:
    """Answer every request with a 302 to ``target(path)``."""
    return lambda handler: send(handler, 302, headers={"Location": target(handler.path)})


def drip(every: float = 2.0, length: int = 1 << 20) -> Answer:
    """A 200 announcing ``length`` bytes, then one byte every ``every`` seconds (until the client leaves)."""

    def answer(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Length", str(length))
        handler.send_header("Content-Type", "application/vnd.ipld.car")
        handler.end_headers()
        for _ in range(length):
            handler.wfile.write(b"\x00")
            handler.wfile.flush()
            time.sleep(every)

    return answer


def _ephemeral_low() -> int:
    """The lowest port the kernel hands out on its own (``bind`` to port 0, ``connect``): Linux's default 32768."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range", encoding="ascii") as fh:
            return int(fh.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now, for a child process to listen on once it has started.

    Drawn below the kernel's ephemeral range: a port the kernel gave (``bind`` to port 0) is free again from the
    moment it is closed until the child binds it, a second or two later, and in that window the kernel may give it
    to any other test's server or client on the machine (CI runs three workers beside other suites). A port below
    the range is one the kernel never hands out; only another test drawing the same one of ~12,000 could take it.
    """
    low = _ephemeral_low()
    draw = random.SystemRandom()
    for _attempt in range(50):
        port = draw.randrange(20000, low) if low > 21000 else 0
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue  # in use: draw again
            found: int = sock.getsockname()[1]
            return found
    raise OSError("no free TCP port on 127.0.0.1 after 50 draws")


def answer_head(sock: socket.socket) -> bytes:
    """What a server sends on ``sock`` until the end of its answer's head (or it closes): the status
    line and headers, perhaps with the start of the body."""
    received = b""
    while b"\r\n\r\n" not in received:
        chunk = sock.recv(4096)
        if not chunk:
            break
        received += chunk
    return received


#: Linux's TCP states as ``/proc/net/tcp`` numbers them (``include/net/tcp_states.h``).
TCP_STATES = {
    "01": "ESTABLISHED", "02": "SYN_SENT", "03": "SYN_RECV", "04": "FIN_WAIT1", "05": "FIN_WAIT2",
    "06": "TIME_WAIT", "07": "CLOSE", "08": "CLOSE_WAIT", "09": "LAST_ACK", "0A": "LISTEN", "0B": "CLOSING",
}


@dataclass(frozen=True)
class TcpEntry:
    """One row of ``/proc/net/tcp`` or ``tcp6``: ports, state, queued bytes and the socket's inode.

    For a ``LISTEN`` row, ``rx_queue`` is the number of connections waiting in its accept queue
    (handshaken by the kernel, not yet accepted by the process)."""

    local_port: int
    remote_port: int
    state: str
    tx_queue: int
    rx_queue: int
    inode: int

    def __str__(self) -> str:
        return (f"{self.local_port}->{self.remote_port} {self.state} tx={self.tx_queue} rx={self.rx_queue} "
                f"inode={self.inode}")


def tcp_table() -> list[TcpEntry] | None:
    """Every TCP socket of the machine's network namespace (IPv4 and IPv6); None where ``/proc/net/tcp`` is missing."""
    if not os.path.isfile("/proc/net/tcp"):
        return None
    entries = []
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(name, encoding="ascii") as table:
                next(table)  # the column names
                rows = [row.split() for row in table]
        except OSError:
            continue
        for fields in rows:
            tx_queue, rx_queue = fields[4].split(":")
            entries.append(TcpEntry(int(fields[1].rsplit(":", 1)[1], 16), int(fields[2].rsplit(":", 1)[1], 16),
                                    TCP_STATES.get(fields[3], fields[3]), int(tx_queue, 16), int(rx_queue, 16),
                                    int(fields[9])))
    return entries


def socket_inodes(pid: int) -> set[int]:
    """The inodes of the sockets process ``pid`` holds open (``/proc/PID/fd``); empty once it is gone."""
    found: set[int] = set()
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return found
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue  # closed since the listing
        if target.startswith("socket:["):
            found.add(int(target[len("socket:["):-1]))
    return found


def listeners(port: int, table: list[TcpEntry] | None = None) -> list[TcpEntry]:
    """The ``LISTEN`` rows of TCP port ``port`` (empty where ``/proc/net/tcp`` is missing)."""
    return [entry for entry in (table if table is not None else tcp_table()) or []
            if entry.state == "LISTEN" and entry.local_port == port]


def owner_of(inode: int) -> str:
    """Which process holds socket ``inode`` (``PID cmdline``), or ``no process`` (read from every ``/proc/PID/fd``)."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        if inode in socket_inodes(int(pid)):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as fh:
                    command = fh.read().replace(b"\0", b" ").decode(errors="replace").strip()
            except OSError:
                command = "?"
            return f"pid {pid} {command[:200]}"
    return "no process"


def port_report(port: int, pid: int, marked: Collection[int] = ()) -> str:
    """What the kernel says of TCP port ``port`` served by process ``pid``: its listeners (and who holds them, the
    accept queue waiting in each), and every connection to it by state, each marked whether ``pid`` holds it, those
    from the client ports ``marked`` flagged; for a failure message to name its cause."""
    table = tcp_table()
    if table is None:
        return "(no /proc/net/tcp here)"
    mine = socket_inodes(pid)
    lines = [f"listener {entry} held by {'the server' if entry.inode in mine else owner_of(entry.inode)}"
             for entry in listeners(port, table)] or [f"nothing listens on port {port}"]
    served = sorted((entry for entry in table if entry.local_port == port and entry.state != "LISTEN"),
                    key=lambda entry: entry.remote_port)
    lines += [f"  {entry} {'held by the server' if entry.inode in mine else 'not held by the server'}"
              f"{'  <--' if entry.remote_port in marked else ''}" for entry in served]
    return "\n".join(lines)
