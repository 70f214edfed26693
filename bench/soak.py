"""Fault soak: SIGKILL and a full disk at random points, then restart, and nothing acknowledged is lost.

    python bench/soak.py                  # about three minutes
    python bench/soak.py --quick          # about one minute
    python bench/soak.py --seed 7 --rounds 40 --seconds 600

Two agents (trees ``a/memory`` and ``b/memory``) share one name key and one block store,
the team's store that ``bundlekit serve --port 0`` serves on loopback (its gateway and its
Delegated Routing API are where the agents' ``sync --routing URL --gateway URL`` meet).
Everything runs as the CLI a person types, each command a fresh process in a temporary
home of its own (``BUNDLEKIT_HOME``, ``HOME``, ``XDG_*``: never the user's).

Each round picks one of ``memory write``, ``build``, ``pin``, ``merge``, ``sync`` and
``serve`` and faults it: a SIGKILL to its process group after a random delay (half of the
delays fall in the last part of the command's usual run time, where it writes), and/or a
low ``RLIMIT_FSIZE`` set in the child (``preexec_fn``), which makes every write past the
limit fail with EFBIG: a full disk, without root. A ``serve`` is killed while it starts or
while an agent syncs through it. Then the "restart": the same command again, unfaulted,
which must succeed (no stale lock, temp file or half-written store in its way), then
``store verify``, which must exit 0.

A ledger keeps every acknowledged write: a ``memory write`` that exited 0, each with a body
of its own, to a new key or (a quarter of them) updating one the agent wrote before. After
every acknowledged write, and for both trees at the end, the memory is checked to be there
exactly once with its body (or the body of a write to it killed since, which may have landed). At the end both agents sync
until their trees converge (the same memory files, the same timeline). A faulted command
may fail, but only with a documented exit code and a clear error (no traceback).

Prints the seed (``--seed`` reproduces the run's choices), kills per command, disk-full
runs, acknowledged writes, losses, next-command failures, untidy failures, convergence,
``store verify``, elapsed time and the load average; exits 1 when any check failed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bundlekit._fs import DEAD_TEMP_AGE, is_temp_name

COMMANDS = ("memory write", "build", "pin", "merge", "sync", "serve")
WEIGHTS = (30, 12, 12, 16, 18, 12)
DOCUMENTED_EXITS = frozenset({1, 2, 3, 4})  # what a failed command may exit with (no 130: nobody pressed Ctrl-C)
FSIZE_LIMITS = (0, 512, 4096, 65536)  # bytes a faulted child may write to one file
COMMAND_TIMEOUT = 180.0
SERVE_START_TIMEOUT = 60.0
AGENTS = ("a", "b")
#: Seconds a command is guessed to take before an unfaulted run of it was timed (a fresh process each).
FIRST_GUESS = {"memory write": 0.5, "build": 0.8, "pin": 1.0, "merge": 1.0, "sync": 2.0, "serve": 0.8}


@dataclass
class Run:
    """One finished child: its exit code (None when we killed it), output and time."""

    code: int | None
    out: str
    err: str
    seconds: float


@dataclass
class Tally:
    """What the soak counts and the checks that failed, named."""

    kills: Counter[str] = field(default_factory=Counter)
    disk_full: Counter[str] = field(default_factory=Counter)
    refused: Counter[str] = field(default_factory=Counter)
    acknowledged: int = 0
    losses: int = 0
    next_failures: int = 0
    untidy: int = 0
    half_written: int = 0
    killed_written: int = 0
    verify_runs: int = 0
    verify_failures: int = 0
    leftover_temps: int = 0
    problems: list[str] = field(default_factory=list)

    def problem(self, what: str) -> None:
        self.problems.append(what)
        print(f"  PROBLEM: {what}", flush=True)


def _limit_file_size(limit: int) -> Callable[[], None]:
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def soak_env(work: Path) -> dict[str, str]:
    """The children's environment: every home and config under ``work``, no endpoint of the user's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BUNDLEKIT_", "XDG_"))}
    env.pop("SOURCE_DATE_EPOCH", None)
    env.update(
        HOME=str(work / "home"),
        BUNDLEKIT_HOME=str(work / "store"),
        XDG_DATA_HOME=str(work / "home" / "data"),
        XDG_CONFIG_HOME=str(work / "home" / "config"),
        XDG_CACHE_HOME=str(work / "home" / "cache"),
        XDG_STATE_HOME=str(work / "home" / "state"),
    )
    keep = os.environ.get("BUNDLEKIT_LETTA_VENV")
    if keep:
        env["BUNDLEKIT_LETTA_VENV"] = keep
    return env


class Soak:
    """The two agents, the served store, the ledger, and the faults."""

    def __init__(self, work: Path, rng: random.Random, tally: Tally) -> None:
        self.work, self.rng, self.tally = work, rng, tally
        self.env = soak_env(work)
        self.trees = {agent: work / agent / "memory" for agent in AGENTS}
        self.key = work / "name.pem"
        # key -> (agent, bodies): the body of its last acknowledged write, and of any write to it killed since
        # (which may or may not have landed)
        self.ledger: dict[str, tuple[str, set[str]]] = {}
        self.writes = 0
        self.usual: dict[str, float] = {}  # seconds an unfaulted run of each command took
        self.serve: subprocess.Popen[bytes] | None = None
        self.url = ""
        self.serves = 0
        for path in (work / "home", work / "logs"):
            path.mkdir(parents=True)

    # -- children -------------------------------------------------------------------------

    def spawn(self, args: Sequence[str], *, fsize: int | None = None) -> subprocess.Popen[str]:
        """Start ``bundlekit ARGS`` in a session of its own (so a kill reaches all of it), output piped."""
        return subprocess.Popen(
            [sys.executable, "-m", "bundlekit", *args], env=self.env, cwd=self.work, start_new_session=True,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            preexec_fn=None if fsize is None else _limit_file_size(fsize),
        )

    def finish(self, proc: subprocess.Popen[str], what: str, *, kill_after: float | None = None) -> Run:
        """Wait for ``proc``; SIGKILL its process group after ``kill_after`` seconds (a fault) or when it hangs."""
        start = time.monotonic()
        try:
            out, err = proc.communicate(timeout=COMMAND_TIMEOUT if kill_after is None else kill_after)
            code: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            out, err = proc.communicate()
            code = None
            if kill_after is None:
                self.tally.problem(f"{what} hung for {COMMAND_TIMEOUT:g}s")
        return Run(code, out, err, time.monotonic() - start)

    def cli(self, args: Sequence[str], *, kill_after: float | None = None, fsize: int | None = None) -> Run:
        """Run ``bundlekit ARGS``; SIGKILL its process group after ``kill_after`` seconds if still running."""
        return self.finish(self.spawn(args, fsize=fsize), f"bundlekit {' '.join(args)}", kill_after=kill_after)

    def start_serve(self, *, fsize: int | None = None) -> subprocess.Popen[bytes]:
        """``bundlekit serve --port 0 --store STORE`` in the background (stderr to a log file)."""
        self.serves += 1
        log = self.work / "logs" / f"serve-{self.serves}.err"
        with open(log, "wb") as err:
            return subprocess.Popen(
                [sys.executable, "-m", "bundlekit", "serve", "--port", "0", "--store", self.env["BUNDLEKIT_HOME"]],
                env=self.env, cwd=self.work, start_new_session=True, stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=err,
                preexec_fn=None if fsize is None else _limit_file_size(fsize),
            )

    def serve_url(self, proc: subprocess.Popen[bytes]) -> str | None:
        """The URL a starting serve announces on stderr, or None when it exits or takes too long."""
        log = self.work / "logs" / f"serve-{self.serves}.err"
        deadline = time.monotonic() + SERVE_START_TIMEOUT
        while time.monotonic() < deadline:
            for line in log.read_text("utf-8", "replace").splitlines():
                if line.startswith("serving on "):
                    return line.split()[-1]
            if proc.poll() is not None:
                return None
            time.sleep(0.05)
        return None

    def restart_serve(self) -> bool:
        """Kill any running serve, start a new one, and check it answers; the "next command" of a serve."""
        self.stop_serve()
        proc = self.start_serve()
        url = self.serve_url(proc)
        if url is None:
            self.tally.problem(f"serve did not start: {self._serve_log()[-400:]}")
            return False
        try:
            with urllib.request.urlopen(f"{url}/routing/v1/ipns/{self.name}", timeout=30) as reply:
                reply.read()
        except urllib.error.HTTPError as exc:
            if exc.code != 404:  # no record yet is an answer too
                self.tally.problem(f"serve answered {exc.code} after a restart")
                return False
        except OSError as exc:
            self.tally.problem(f"serve did not answer after a restart: {exc}")
            return False
        self.serve, self.url = proc, url
        return True

    def stop_serve(self) -> None:
        if self.serve is not None:
            _kill_group(self.serve)
            self.serve.wait()
            self.serve = None

    def _serve_log(self) -> str:
        return (self.work / "logs" / f"serve-{self.serves}.err").read_text("utf-8", "replace")

    # -- commands as a person types them ----------------------------------------------------

    def args_for(self, command: str, agent: str) -> list[str]:
        """The command line of ``command`` for ``agent``.

        A memory write has a body of its own; its key is new, or a quarter of the time one the agent wrote
        before (an update, which must replace that body: the old one is then no longer the memory).
        """
        tree = str(self.trees[agent])
        other = "b" if agent == "a" else "a"
        if command == "memory write":
            self.writes += 1
            own = sorted(k for k, (writer, _bodies) in self.ledger.items() if writer == agent)
            key = self.rng.choice(own) if own and self.rng.random() < 0.25 else f"project_w{self.writes:05d}"
            return ["memory", "write", key, "-d", tree, "--type", "project", "--name", f"write {self.writes}",
                    "--description", f"soak write {self.writes}", "--body", self.body(self.writes)]
        if command == "build":
            return ["build", tree, "-o", str(self.work / f"{agent}.car")]
        if command == "pin":
            return ["pin", tree, "--name", f"soak-{agent}"]
        if command == "merge":
            return ["merge", str(self.work / f"{other}.car"), "--into", tree]
        if command == "sync":
            return ["sync", tree, "--name-key", str(self.key), "--routing", self.url, "--gateway", self.url]
        raise ValueError(command)

    def body(self, n: int) -> str:
        return f"Soak write {n} of seed {self.seed}: what was acknowledged stays."

    # -- checks -----------------------------------------------------------------------------

    def acknowledge(self, args: Sequence[str], agent: str, run: Run) -> None:
        """A memory write that exited 0 goes in the ledger and must be there, once, at once."""
        key, body = args[2], args[-1]
        self.ledger[key] = (agent, {body})
        self.tally.acknowledged += 1
        self.check_present(self.trees[agent], key, {body})

    def killed_write(self, args: Sequence[str], agent: str) -> None:
        """A killed write to a key acknowledged before: its body may have landed or not; both are right."""
        key, body = args[2], args[-1]
        if key in self.ledger:
            self.ledger[key][1].add(body)
        if (self.trees[agent] / f"{key}.md").exists() and body in (self.trees[agent] / f"{key}.md").read_text():
            self.tally.killed_written += 1  # the kill landed after the file was in place: at the very end

    def check_present(self, tree: Path, key: str, bodies: set[str]) -> bool:
        """``key``'s file holds one of ``bodies`` (its acknowledged write), and no other memory file any."""
        holding = [p for p in _memory_files(tree) if any(b in p.read_text("utf-8", "replace") for b in bodies)]
        if [p.name for p in holding] != [f"{key}.md"]:
            self.tally.losses += 1
            self.tally.problem(f"acknowledged write {key} in {tree}: found in {[p.name for p in holding]}")
            return False
        return True

    def check_absent(self, tree: Path, key: str, run: Run) -> None:
        """A memory write that refused wrote nothing: a new key is not in the tree, an old one holds its body."""
        if key in self.ledger:
            self.check_present(tree, key, self.ledger[key][1])
        elif (tree / f"{key}.md").exists():
            self.tally.half_written += 1
            self.tally.problem(f"memory write {key} refused (exit {run.code}: {run.err.strip()[-300:]}), "
                               f"yet {key}.md is in {tree}")

    def check_index(self, agent: str) -> bool:
        """``memory list`` names exactly the memory files of the tree (the derived index kept up)."""
        run = self.cli(["memory", "list", "-d", str(self.trees[agent]), "--json"])
        if run.code != 0:
            self.tally.problem(f"memory list for {agent} exit {run.code}: {run.err.strip()[-400:]}")
            return False
        listed = sorted(entry["key"] for entry in json.loads(run.out))
        on_disk = sorted(p.stem for p in _memory_files(self.trees[agent]))
        if listed != on_disk:
            self.tally.problem(f"memory list for {agent} names {set(listed) ^ set(on_disk)} unlike the files")
            return False
        return True

    def verify_store(self) -> None:
        run = self.cli(["store", "verify"])
        self.tally.verify_runs += 1
        if run.code != 0:
            self.tally.verify_failures += 1
            self.tally.problem(f"store verify exit {run.code}: {run.out.strip()[-400:]} {run.err.strip()[-400:]}")

    def tidy(self, command: str, run: Run, fault: str) -> None:
        """A faulted command that ran to its end failed, if at all, with a documented exit and no traceback."""
        if run.code is None or run.code == 0:
            return
        self.tally.refused[command] += 1
        if run.code not in DOCUMENTED_EXITS or "Traceback" in run.err or not run.err.strip():
            self.tally.untidy += 1
            self.tally.problem(f"{command} ({fault}) exit {run.code}: {run.err.strip()[-600:]}")

    def next_command(self, command: str, agent: str) -> None:
        """The restart: the same command, unfaulted, must succeed; then the store must verify."""
        if command == "serve":
            ok = self.restart_serve()
            ok = ok and self._plain("sync", agent)
        elif command == "build":  # the CAR a faulted build left is merged, then built again
            other = "b" if agent == "a" else "a"
            ok = self._plain("build", agent) if not (self.work / f"{agent}.car").exists() else True
            ok = ok and self._merge_from(agent, other) and self._plain("build", agent)
        else:
            ok = self._plain(command, agent)
        if command == "memory write":
            ok = self.check_index(agent) and ok
        if not ok:
            self.tally.next_failures += 1
        self.verify_store()

    def _merge_from(self, built: str, into: str) -> bool:
        run = self.cli(["merge", str(self.work / f"{built}.car"), "--into", str(self.trees[into])])
        if run.code != 0:
            self.tally.problem(f"merge of {built}.car after a faulted build exit {run.code}: {run.err.strip()[-600:]}")
        return run.code == 0

    def _plain(self, command: str, agent: str) -> bool:
        if command == "merge":
            self._plain("build", "b" if agent == "a" else "a")
        args = self.args_for(command, agent)
        run = self.cli(args)
        if run.code != 0:
            self.tally.problem(f"next {command} for {agent} exit {run.code}: {run.err.strip()[-600:]}")
            return False
        self.usual[command] = run.seconds
        if command == "memory write":
            self.acknowledge(args, agent, run)
        return True

    # -- faults -----------------------------------------------------------------------------

    def kill_delay(self, command: str) -> float:
        """A random point of the command's usual run time: half in its second half, where it writes."""
        usual = self.usual.get(command, FIRST_GUESS[command])
        if self.rng.random() < 0.5:
            return self.rng.uniform(0.5, 0.95) * usual
        return self.rng.uniform(0.0, 0.95) * usual

    def faulted(self, command: str, agent: str) -> None:
        """Run ``command`` for ``agent`` killed at a random point and/or on a "full disk"."""
        kill = self.rng.random() < 0.7
        fsize = self.rng.choice(FSIZE_LIMITS) if (not kill or self.rng.random() < 0.3) else None
        delay = self.kill_delay(command) if kill else None
        fault = " and ".join(f for f in ((f"kill after {delay:.2f}s" if kill else ""),
                                          (f"RLIMIT_FSIZE={fsize}" if fsize is not None else "")) if f)
        print(f"  {command} ({agent}): {fault}", flush=True)
        if command == "serve":
            self.faulted_serve(agent, delay if kill else None, fsize)
            return
        if command == "merge" and not (self.work / f"{'b' if agent == 'a' else 'a'}.car").exists():
            self._plain("build", "b" if agent == "a" else "a")
        args = self.args_for(command, agent)
        beside = self.beside(command, agent)
        before = self.refusable(command, agent) if beside is None else None
        run = self.cli(args, kill_after=delay, fsize=fsize)
        if beside is not None:
            self.settle(beside)
        if before is not None and run.code not in (None, 0) and self.refusable(command, agent) != before:
            self.tally.half_written += 1
            self.tally.problem(f"{command} ({agent}) refused (exit {run.code}: {run.err.strip()[-300:]}), "
                               "yet changed what it writes")
        if run.code is None:
            self.tally.kills[command] += 1
        if fsize is not None:
            self.tally.disk_full[command] += 1
        self.tidy(command, run, fault)
        if command == "memory write" and run.code == 0:
            self.acknowledge(args, agent, run)
        elif command == "memory write" and run.code is not None:
            self.check_absent(self.trees[agent], args[2], run)
        elif command == "memory write":
            self.killed_write(args, agent)

    def refusable(self, command: str, agent: str) -> dict[str, bytes] | None:
        """What a refused ``merge`` (the tree) or ``build`` (its CAR) must leave as it was; None for the rest."""
        if command == "merge":
            return _snapshot(self.trees[agent])
        car = self.work / f"{agent}.car"
        if command == "build":
            return {car.name: car.read_bytes()} if car.exists() else {}
        return None

    def beside(self, command: str, agent: str) -> tuple[str, str, list[str], subprocess.Popen[str]] | None:
        """Half the time a sync or merge is faulted, something runs meanwhile: the agent writes a memory into
        its tree, or (beside a sync) the other agent syncs too, a writer racing the one that is killed."""
        if command not in ("sync", "merge") or self.rng.random() < 0.5:
            return None
        if command == "sync" and self.rng.random() < 0.5:
            other = "b" if agent == "a" else "a"
            args = self.args_for("sync", other)
            return "sync", other, args, self.spawn(args)
        args = self.args_for("memory write", agent)
        return "memory write", agent, args, self.spawn(args)

    def settle(self, beside: tuple[str, str, list[str], subprocess.Popen[str]]) -> None:
        """The concurrent command's outcome: a write acknowledged (and present) or refused tidily; a sync
        succeeded (a writer killed beside it must not stop it)."""
        command, agent, args, proc = beside
        run = self.finish(proc, f"a {command} beside a faulted command")
        if run.code == 0 and command == "memory write":
            self.acknowledge(args, agent, run)
        elif command == "memory write":
            self.tidy(command, run, "beside a faulted command")
        elif run.code != 0:
            self.tally.next_failures += 1
            self.tally.problem(f"a sync of {agent} beside a killed one exit {run.code}: {run.err.strip()[-600:]}")

    def faulted_serve(self, agent: str, delay: float | None, fsize: int | None) -> None:
        """Kill the serve while it starts, or while ``agent`` syncs through it; or start one on a full disk."""
        victim: subprocess.Popen[str] | None = None
        if self.serve is not None and self.rng.random() < 0.5:
            victim = self.spawn(self.args_for("sync", agent))
            target = self.serve
        else:
            self.stop_serve()
            target = self.start_serve(fsize=fsize)
            if fsize is not None:
                self.tally.disk_full["serve"] += 1
        if delay is not None:
            time.sleep(delay)
            if target.poll() is None:
                _kill_group(target)
                self.tally.kills["serve"] += 1
            target.wait()
            self.serve = None if target is self.serve else self.serve
        if victim is not None:
            self.tidy("sync", self.finish(victim, "a sync whose serve was killed"), "its serve killed")
        if target is not self.serve:
            _kill_group(target)
            target.wait()

    # -- the run ------------------------------------------------------------------------------

    def setup(self, seed: int, *, quick: bool = False) -> None:
        self.seed, self.quick = seed, quick
        for agent, tree in self.trees.items():
            if self.cli(["memory", "init", "-d", str(tree)]).code != 0:
                raise SystemExit(f"soak: memory init of {tree} failed")
        made = self.cli(["name", "create", "--key-file", str(self.key)])
        if made.code != 0:
            raise SystemExit(f"soak: name create failed: {made.err}")
        self.name = made.out.strip()
        if not self.restart_serve():
            raise SystemExit("soak: the first serve did not start")
        if not self.quick:  # a first write, build and sync each: usual times, and CARs to merge
            for agent in AGENTS:
                for command in ("memory write", "build", "sync"):
                    self._plain(command, agent)

    def converge(self, rounds: int = 4) -> bool:
        """Sync the agents in turn until their trees hold the same memories and timeline."""
        if self.serve is None or self.serve.poll() is not None:
            self.restart_serve()
        for _ in range(rounds):
            for agent in AGENTS:
                if not self._plain("sync", agent):
                    self.tally.next_failures += 1
                if _snapshot(self.trees["a"]) == _snapshot(self.trees["b"]):
                    return True
        self.tally.problem("the trees did not converge")
        return False

    def check_ledger(self) -> None:
        for tree in self.trees.values():
            for key, (_agent, bodies) in sorted(self.ledger.items()):
                self.check_present(tree, key, bodies)


def _kill_group(proc: subprocess.Popen[bytes] | subprocess.Popen[str]) -> None:
    """SIGKILL the process group of a child we started (its own session), if it still runs."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _memory_files(tree: Path) -> list[Path]:
    return sorted(p for p in tree.rglob("*.md")
                  if p.name != "MEMORY.md" and not any(part.startswith(".") for part in p.relative_to(tree).parts))


def _snapshot(tree: Path) -> dict[str, bytes]:
    """The memory files and timeline days of a tree, by relative path (no index, no hidden state)."""
    files = _memory_files(tree) + sorted((tree / "timeline").glob("*.jsonl"))
    return {str(p.relative_to(tree)): p.read_bytes() for p in files}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=None, help="reproduce a run's choices")
    parser.add_argument("--seconds", type=float, default=180.0, help="stop starting rounds after this long")
    parser.add_argument("--rounds", type=int, default=10_000, help="at most this many faulted commands")
    parser.add_argument("--quick", action="store_true", help="about a minute (--seconds 50)")
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 32)
    seconds = min(args.seconds, 50.0) if args.quick else args.seconds
    print(f"soak: seed {seed} (python bench/soak.py --seed {seed}), up to {args.rounds} rounds in {seconds:g}s",
          flush=True)
    rng, tally = random.Random(seed), Tally()
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bundlekit-soak-") as tmp:
        soak = Soak(Path(tmp), rng, tally)
        try:
            soak.setup(seed, quick=args.quick)
            rounds = 0
            while rounds < args.rounds and time.monotonic() - start < seconds:
                rounds += 1
                command = rng.choices(COMMANDS, WEIGHTS)[0]
                agent = rng.choice(AGENTS)
                soak.faulted(command, agent)
                soak.next_command(command, agent)
            converged = soak.converge()
            soak.check_ledger()
            soak.verify_store()
            tally.leftover_temps = sum(is_temp_name(p.name) for p in Path(tmp).rglob("*"))
        finally:
            soak.stop_serve()
    return report(tally, seed, rounds, converged, time.monotonic() - start)


def report(tally: Tally, seed: int, rounds: int, converged: bool, elapsed: float) -> int:
    load1, load5, _ = os.getloadavg()
    kills = ", ".join(f"{c} {tally.kills[c]}" for c in COMMANDS)
    full = ", ".join(f"{c} {tally.disk_full[c]}" for c in COMMANDS if tally.disk_full[c])
    print(f"seed {seed}: {rounds} rounds in {elapsed:.0f}s")
    print(f"kills: {sum(tally.kills.values())} ({kills})")
    print(f"disk-full runs: {sum(tally.disk_full.values())} ({full or 'none'}); "
          f"faulted runs that refused cleanly: {sum(tally.refused.values())}")
    print(f"acknowledged writes: {tally.acknowledged}; losses: {tally.losses}; killed writes whose file was "
          f"already in place (unacknowledged, kept): {tally.killed_written}")
    print(f"next-command failures: {tally.next_failures}; untidy failures: {tally.untidy}; "
          f"refused commands that changed something: {tally.half_written}")
    print(f"temp files the killed commands left (swept once their writer is gone {DEAD_TEMP_AGE:g}s): "
          f"{tally.leftover_temps}")
    print(f"trees converged: {converged}; store verify: {tally.verify_runs - tally.verify_failures}/"
          f"{tally.verify_runs} passed")
    print(f"elapsed {elapsed:.0f}s; load average {load1:.2f} {load5:.2f} (1, 5 min); python {sys.version.split()[0]}")
    failed = tally.losses or tally.next_failures or tally.untidy or tally.half_written or tally.verify_failures or not converged
    if tally.problems:
        print(f"{len(tally.problems)} problems (first: {tally.problems[0]})")
    return 1 if failed or tally.problems else 0


if __name__ == "__main__":
    sys.exit(main())
