"""Benchmark: ``bundlekit serve`` beside nginx serving the same blocks and the same CAR as static files.

    python bench/gateway.py                          # 2,000 memories, 5 s per run
    python bench/gateway.py --memories 500 --seconds 3
    python bench/gateway.py --pythonpath /tmp/main   # the gateway of another checkout ("before")
    python bench/gateway.py --rounds 5               # each figure the median of 5 runs

A bundle is built into a CAR; its blocks are written one file per CID and the CAR is kept whole, and
Debian's ``nginx`` (``nginx-light``, one worker, ``sendfile on``) serves both from loopback. ``wrk``
(2 threads; 1 for one connection) then asks each server, for ``--seconds`` each, with 1, 4 and 16
keep-alive connections:

1. ``raw blocks``: ``GET /ipfs/{cid}?format=raw`` over every block of the bundle in turn (a wrk
   Lua script cycles the paths; nginx answers the same path from the block's file);
2. ``whole CAR``: ``GET /ipfs/{root}?format=car&dag-scope=all`` (nginx: the CAR file).

``bundlekit serve CAR --no-store`` runs in a child process as a user starts it: one process (its event loop,
uvloop's or asyncio's, is printed), beside nginx's one worker. Both run at once, and each figure is the
median of ``--rounds`` runs taken in turn, nginx then serve, so a machine whose load changes (other
processes on shared cores) weighs on both alike; each raw-block row also gives each server's CPU time a request
(from /proc: on busy shared cores the rates tend to the ratio of these). It prints one table: requests/s and MB/s for each, the ratio nginx/serve,
the targets of issue 35 item 5 (16 connections: raw blocks within 4x nginx's requests per second,
the whole CAR within 8x its bytes per second; 16 connections never slower than one) and the load
average. Without nginx or wrk it says so on one line and exits 0 (``.ci/run`` installs them). It
asserts nothing: timing targets live here, never in tests.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from load import CREATED, make_tree  # noqa: E402  (bench/load.py: the same deterministic memory tree)

from bundlekit.bundle.build import BuildOptions, build_bundle  # noqa: E402
from bundlekit.car.reader import read_car  # noqa: E402
from bundlekit.ipld.cid import cid_to_str  # noqa: E402
from _home import own_home  # noqa: E402  # bench/_home.py: never the user's data directory

CONNECTIONS = (1, 4, 16)
_NGINX_CONF = """\
worker_processes 1;
daemon off;
pid {tmp}/nginx.pid;
error_log {tmp}/nginx-error.log;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 1000000;
    client_body_temp_path {tmp}/nginx-body;
    default_type application/octet-stream;
    server {{
        listen 127.0.0.1:{port};
        location /ipfs/ {{ alias {www}/blocks/; }}
        location /car/ {{ alias {www}/car/; }}
    }}
}}
"""
_PATHS_LUA = """\
local paths = {{}}
for line in io.lines("{paths}") do paths[#paths + 1] = line end
local i = 0
request = function()
  i = i % #paths + 1
  return wrk.format("GET", paths[i])
end
"""


@dataclass(frozen=True)
class Run:
    """One wrk run: requests per second, bytes per second, errors (socket errors and non-2xx answers), and the
    server's CPU time (user and system, its worker processes included) per request, in microseconds: unlike
    the rates, this hardly moves with the load other processes put on shared cores."""

    requests: float
    bytes: float
    errors: int
    cpu_us: float = 0.0


def _cpu_seconds(pid: int) -> float:
    """CPU time (user + system) of process ``pid`` and its children (nginx's worker), from /proc; 0 elsewhere."""
    total = 0.0
    with contextlib.suppress(OSError):
        for task in (pid, *(int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split())):
            fields = Path(f"/proc/{task}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_listening(port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with {proc.returncode} before listening")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on port {port} after 30 s")


@contextlib.contextmanager
def _running(argv: list[str], port: int, env: dict[str, str] | None = None, cwd: Path | None = None) -> Iterator[int]:
    # Started in ``cwd`` (the temp directory): ``python -m`` puts its working directory first on sys.path, which
    # would make a checkout run from serve in place of the one ``--pythonpath`` names.
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=cwd)
    try:
        _wait_listening(port, proc)
        yield proc.pid
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _wrk(url: str, connections: int, seconds: float, script: Path | None) -> Run:
    threads = min(2, connections)
    argv = ["wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds:g}s", "--timeout", "10s"]
    if script is not None:
        argv += ["-s", str(script)]
    out = subprocess.run([*argv, url], capture_output=True, text=True, timeout=seconds + 60, check=True).stdout
    requests = float(re.search(r"Requests/sec:\s*([\d.]+)", out).group(1))  # type: ignore[union-attr]
    rate = re.search(r"Transfer/sec:\s*([\d.]+)([KMG]?B)", out)
    scale = {"B": 1, "KB": 1024, "MB": 1024**2, "GB": 1024**3}
    transfer = float(rate.group(1)) * scale[rate.group(2)] if rate else 0.0
    errors = sum(int(n) for n in re.findall(r"(?:connect|read|write|timeout) (\d+)", out))
    non2xx = re.search(r"Non-2xx or 3xx responses:\s*(\d+)", out)
    return Run(requests, transfer, errors + (int(non2xx.group(1)) if non2xx else 0))


def _prepare(tmp: Path, memories: int) -> tuple[Path, str, list[str]]:
    """The bundle's CAR, its root, and its block CIDs; the static copy nginx serves (www/blocks, www/car)."""
    tree = tmp / "tree"
    make_tree(tree, memories)
    built = build_bundle(tree, tmp / "bundle.car", options=BuildOptions(created=CREATED))
    root = cid_to_str(built.root)
    (tmp / "www" / "blocks").mkdir(parents=True)
    (tmp / "www" / "car").mkdir()
    cids = []
    with built.car.open("rb") as fh:
        for cid, data in read_car(fh, verify=False)[1]:
            text = cid_to_str(cid)
            cids.append(text)
            (tmp / "www" / "blocks" / text).write_bytes(data)
    shutil.copyfile(built.car, tmp / "www" / "car" / f"{root}.car")
    print(f"bundle: {memories} memories, {len(cids)} blocks, CAR {built.car.stat().st_size:,} bytes, root {root}")
    return built.car, root, cids


def _median(runs: list[Run]) -> Run:
    """The run of median requests per second (of bytes per second for a CAR: the same order)."""
    return sorted(runs, key=lambda run: run.requests)[len(runs) // 2]


def _measure(servers: dict[str, tuple[str, str, int]], raw_script: Path, seconds: float,
             rounds: int) -> dict[str, dict[tuple[str, int], Run]]:
    """For each server ({name: (base URL, CAR path, pid)}), each kind and number of connections: the median of
    ``rounds`` runs, the servers asked in turn within each round."""
    runs: dict[str, dict[tuple[str, int], Run]] = {name: {} for name in servers}
    for kind in ("raw", "car"):
        for connections in CONNECTIONS:
            taken: dict[str, list[Run]] = {name: [] for name in servers}
            for _round in range(rounds):
                for name, (base, car_path, pid) in servers.items():
                    url, script = (base + "/", raw_script) if kind == "raw" else (base + car_path, None)
                    before = _cpu_seconds(pid)
                    run = _wrk(url, connections, seconds, script)
                    used = (_cpu_seconds(pid) - before) * 1e6 / max(run.requests * seconds, 1)
                    taken[name].append(dataclasses.replace(run, cpu_us=used))
            for name in servers:
                runs[name][kind, connections] = _median(taken[name])
    return runs


def _event_loop(env: dict[str, str], cwd: Path) -> str:
    """The event loop the serving checkout runs (``server.LOOP_FACTORY``; asyncio's before it existed)."""
    probe = ("import bundlekit.gateway.server as s; f = getattr(s, 'LOOP_FACTORY', None); "
             "print(f.__module__.split('.')[0] if f is not None else 'asyncio')")
    done = subprocess.run([sys.executable, "-c", probe], env=env, cwd=cwd, capture_output=True, text=True, timeout=60)
    return done.stdout.strip() or "unknown"


def _row(label: str, serve: Run, nginx: Run, kind: str) -> str:
    if kind == "raw":
        ratio = nginx.requests / serve.requests if serve.requests else float("inf")
        return (f"{label:<22} {serve.requests:>10,.0f} req/s {nginx.requests:>10,.0f} req/s {ratio:>7.1f}x"
                f"   errors {serve.errors}/{nginx.errors}   CPU {serve.cpu_us:,.0f}/{nginx.cpu_us:,.0f} us a request")
    ratio = nginx.bytes / serve.bytes if serve.bytes else float("inf")
    return (f"{label:<22} {serve.bytes / 1e6:>10,.1f} MB/s  {nginx.bytes / 1e6:>10,.1f} MB/s  {ratio:>7.1f}x"
            f"   errors {serve.errors}/{nginx.errors}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--pythonpath", default=None, help="the checkout whose bundlekit serves (default: this one)")
    parser.add_argument("--rounds", type=int, default=3, help="runs per figure, its median printed")
    args = parser.parse_args(argv)
    missing = [tool for tool in ("nginx", "wrk") if shutil.which(tool) is None]
    if missing:
        print(f"bench/gateway.py skipped: {' and '.join(missing)} not installed (apt-get install nginx-light wrk)")
        return 0

    with tempfile.TemporaryDirectory(prefix="bundlekit-bench-gateway-") as name:
        tmp = Path(name)
        tmp.chmod(0o755)  # nginx started as root serves from a worker running as another user
        own_home(tmp)
        car, root, cids = _prepare(tmp, args.memories)
        (tmp / "paths.txt").write_text("".join(f"/ipfs/{cid}?format=raw\n" for cid in cids))
        raw_script = tmp / "paths.lua"
        raw_script.write_text(_PATHS_LUA.format(paths=tmp / "paths.txt"))
        nginx_port, serve_port = _free_port(), _free_port()
        (tmp / "nginx.conf").write_text(_NGINX_CONF.format(tmp=tmp, port=nginx_port, www=tmp / "www"))
        env = dict(os.environ)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        # The checkout named (default: this one) first, then what PYTHONPATH held (an extra site directory).
        checkout = args.pythonpath or str(Path(__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (checkout, env.get("PYTHONPATH", "")) if p)
        serve_argv = [sys.executable, "-m", "bundlekit", "serve", "--no-store", "--port", str(serve_port), str(car)]
        with _running(["nginx", "-c", str(tmp / "nginx.conf"), "-p", str(tmp)], nginx_port) as nginx_pid, \
                _running(serve_argv, serve_port, env, tmp) as serve_pid:
            servers = {"nginx": (f"http://127.0.0.1:{nginx_port}", f"/car/{root}.car", nginx_pid),
                       "serve": (f"http://127.0.0.1:{serve_port}", f"/ipfs/{root}?format=car&dag-scope=all", serve_pid)}
            runs = _measure(servers, raw_script, args.seconds, max(1, args.rounds))
        nginx, serve = runs["nginx"], runs["serve"]
        loop = _event_loop(env, tmp)

    print(f"gateway: bundlekit serve from {args.pythonpath or 'this checkout'}: 1 process, event loop "
          f"{loop}; nginx: 1 worker; each figure the median of {max(1, args.rounds)} runs")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'':<22} {'bundlekit serve':>16} {'nginx':>16} {'nginx/serve':>8}")
    for connections in CONNECTIONS:
        print(_row(f"raw blocks, {connections:>2} conn", serve["raw", connections], nginx["raw", connections], "raw"))
    for connections in CONNECTIONS:
        print(_row(f"whole CAR,  {connections:>2} conn", serve["car", connections], nginx["car", connections], "car"))
    raw16 = nginx["raw", 16].requests / max(serve["raw", 16].requests, 1e-9)
    car16 = nginx["car", 16].bytes / max(serve["car", 16].bytes, 1e-9)
    print(f"targets (16 connections): raw blocks {raw16:.1f}x nginx (target <= 4), whole CAR {car16:.1f}x (target <= 8)")
    print(f"16 connections against 1: raw blocks {serve['raw', 16].requests / max(serve['raw', 1].requests, 1e-9):.2f}, "
          f"whole CAR {serve['car', 16].bytes / max(serve['car', 1].bytes, 1e-9):.2f} (target >= 1)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
