"""Seams for deadline tests: a clock that moves on its own, and a body that arrives in many pieces."""

from __future__ import annotations

from collections.abc import Iterator


class Ticks:
    """A ``monotonic`` clock that advances one second per reading."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def chunks(n: int) -> Iterator[bytes]:
    """A body of ``n`` one-byte pieces (each one a reading of the deadline's clock)."""
    for _ in range(n):
        yield b"x"
