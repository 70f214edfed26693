"""How a load runs and what bounds it (:class:`LoadOptions`), apart from the loader (``bundle.load``), which
re-exports it: what a command passes down is made without importing the loader and what it pulls in (the
gateway sessions, the fetch-ahead, the UnixFS reader), so a writer's ``sync --name-key`` round, which loads
nothing, never imports it (issue 37; DEVELOPERS.md, "Lazy imports")."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from bundlekit.errors import UsageError
from bundlekit.net.http import HttpOptions

__all__ = ["DEFAULT_CONCURRENCY", "DEFAULT_DEADLINE", "DEFAULT_MAX_BYTES", "LoadOptions"]

DEFAULT_CONCURRENCY = 8
# The whole load, and each response in it, must end within this many seconds.
DEFAULT_DEADLINE = 600.0
# The files a manifest lists may claim this many bytes together (decrypted files hold
# slightly less than they claim, so the limit bounds them too).
DEFAULT_MAX_BYTES = 2 * 1024 * 1024 * 1024


@dataclass(frozen=True)
class LoadOptions:
    """How a load runs and what bounds it: one value, passed down unchanged (``fork``, ``diff``, ``layers``,
    ``log``, ``open``, ``mcp --from``); a new choice is a new field with a default.

    ``http`` carries the HTTP client, timeouts, retry policy, limits and
    ``follow_redirects`` (gateways may redirect to other origins, never
    https -> http). ``deadline`` (seconds, None for none) bounds the whole load
    and each response in it: it is folded into ``http`` once, when the load
    starts (``bounded_options``). ``max_bytes`` bounds what the manifest's files
    may claim together. ``concurrency`` is how many blocks the per-block path
    asks for at once (and how many files a plain HTTPS manifest fetches at
    once). ``prefer_car=False`` skips the CAR request for the files (per-block
    only; used by the benchmark). ``progress(done, total)`` is called as each
    file listed in the manifest has been fetched and verified (possibly from
    worker threads). With ``publishers`` (addresses or ``did:key``s) the bundle
    must be signed by one of them.

    Raises ``UsageError`` for a concurrency below 1 or a deadline that is not positive.
    """

    http: HttpOptions = field(default_factory=HttpOptions)
    deadline: float | None = DEFAULT_DEADLINE
    max_bytes: int = DEFAULT_MAX_BYTES
    concurrency: int = DEFAULT_CONCURRENCY
    prefer_car: bool = True
    progress: Callable[[int, int], None] | None = None
    publishers: Sequence[str] = ()

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise UsageError("concurrency must be at least 1")
        if self.deadline is not None and self.deadline <= 0:
            raise UsageError("the deadline must be a positive number of seconds")
        object.__setattr__(self, "publishers", tuple(self.publishers))
