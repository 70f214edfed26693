"""Waiting for a service that finishes a pin later: the poll interval, the deadline, the clock.

``psa``, ``pinata`` (a CID still ``pending``) and ``cluster`` poll until the
service reports the pin done or the deadline passes. Each reads
``BUNDLEKIT_<SERVICE>_POLL_INTERVAL`` and ``BUNDLEKIT_<SERVICE>_DEADLINE``
(seconds; a value that is not a finite non-negative number, ``nan`` and ``inf``
included, is a ``UsageError``). The clock is injectable, so tests never wait.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from bundlekit.errors import UsageError

__all__ = ["DEFAULT_DEADLINE", "Polling", "seconds_env"]

DEFAULT_DEADLINE = 600.0


def seconds_env(env: Mapping[str, str], name: str, default: float) -> float:
    """A finite, non-negative number of seconds from ``env[name]`` (``default`` when unset); UsageError otherwise."""
    raw = env.get(name)
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError as exc:
        raise UsageError(f"{name} must be a number of seconds, not {raw!r}") from exc
    if not math.isfinite(value):
        # float() takes "nan" and "inf"; as a deadline nan never passes, as an interval sleep() refuses both.
        raise UsageError(f"{name} must be a number of seconds, not {raw!r}")
    if value < 0:
        raise UsageError(f"{name} must not be negative")
    return value


@dataclass
class Polling:
    """How often to ask (``interval`` seconds) and for how long (``deadline`` seconds), by ``clock``."""

    interval: float
    deadline: float = DEFAULT_DEADLINE
    clock: Callable[[], float] = field(default=time.monotonic)

    @classmethod
    def from_env(cls, env: Mapping[str, str], service: str, interval: float) -> Polling:
        """``BUNDLEKIT_<service>_POLL_INTERVAL`` and ``BUNDLEKIT_<service>_DEADLINE``, with the defaults."""
        return cls(seconds_env(env, f"BUNDLEKIT_{service}_POLL_INTERVAL", interval),
                   seconds_env(env, f"BUNDLEKIT_{service}_DEADLINE", DEFAULT_DEADLINE))

    def give_up_at(self) -> float:
        """The clock reading at which waiting stops, counted from now."""
        return self.clock() + self.deadline

    def passed(self, give_up: float) -> bool:
        """True once the clock reaches ``give_up``."""
        return self.clock() >= give_up
