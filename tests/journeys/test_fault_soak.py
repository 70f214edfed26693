"""Journey: commands killed (SIGKILL) or run on a full disk at random points, then restarted.

``bench/soak.py`` (issue 35 item 9) at its quickest, so CI exercises it: a few rounds of
``memory write``, ``build``, ``pin``, ``merge``, ``sync`` or ``serve`` faulted, each followed by
the same command unfaulted and ``store verify``; then both agents sync until they converge.
The soak exits 0 only when no acknowledged write was lost, no next command failed, every
faulted command that failed did so tidily, every ``store verify`` passed and the trees converged.
The longer runs and their figures are the bench's, not the suite's.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SOAK = Path(__file__).resolve().parents[2] / "bench" / "soak.py"


def test_a_short_fault_soak_loses_no_acknowledged_write_and_every_next_command_works(tmp_path: Path) -> None:
    env = {**os.environ, "TMPDIR": str(tmp_path)}  # the soak's temporary homes land under the test's directory
    done = subprocess.run([sys.executable, str(SOAK), "--quick", "--rounds", "3", "--seed", "1"],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    summary = done.stdout
    assert "losses: 0" in summary and "next-command failures: 0; untidy failures: 0;" in summary, summary
    assert "refused commands that changed something: 0" in summary, summary
    assert "trees converged: True" in summary, summary
    # Every round faults its command: killed at a random point, on a full disk, or both. How many kills land
    # before the command ends is the machine's speed to decide (and with it which keys a later write updates).
    assert "seed 1: 3 rounds" in summary and "store verify: 4/4 passed" in summary, summary
