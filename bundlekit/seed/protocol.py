"""The seeder contract: given a verified account, propose memories; never write.

A seeder is as small as a :class:`~bundlekit.pinning.protocol.Pinner`: it proves whose account it reads
(:meth:`Seeder.account`, ownership: a token's own user, a wallet signature), then proposes memories
(:meth:`Seeder.propose`), each a :class:`Proposal` naming the key, type, name, description, body and where
its facts came from. What a seeding writes, and whether, is decided by ``seed/plan`` and ``seed/apply``
(the user's consent, the secret guard, the cap), never by the seeder: it holds no tree.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import TracebackType
from typing import Protocol, Self, runtime_checkable

from bundlekit.net.http import HttpOptions

__all__ = [
    "DEFAULT_MAX_MEMORIES",
    "MAX_MEMORIES",
    "Account",
    "Proposal",
    "SeedRequest",
    "Seeder",
    "SeederFactory",
]

# The cap on memories one seeding writes (specs/memory.md, "Seeding"): ``--max`` lowers or raises it up to
# MAX_MEMORIES; a seeder is asked for at most this many, and what it proposes past it is dropped, named.
DEFAULT_MAX_MEMORIES = 25
MAX_MEMORIES = 200


def _utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Account:
    """A verified account: its lane (``github``), its handle on that service (a login, a fid, a username),
    and how ownership was proven (``"token"``, ``"eip191:0x..."``): the seed is ``lane:handle``."""

    lane: str
    handle: str
    proof: str

    @property
    def seed(self) -> str:
        """What every memory this account seeds records (``seed: github:octocat``)."""
        return f"{self.lane}:{self.handle}"


@dataclass(frozen=True)
class Proposal:
    """One memory a seeder proposes: ``key`` (a memory key), ``type`` (``user``, ``feedback``, ``project``,
    ``reference``), ``name``, ``description`` (one line each), ``body`` (Markdown) and ``origin``: the URL or
    API call its facts came from (stored as the memory's ``source``)."""

    key: str
    type: str
    name: str
    description: str
    body: str
    origin: str


@dataclass(frozen=True)
class SeedRequest:
    """Everything a seeder is built from, as one value (extend with defaulted fields, never parameters).

    ``env``: the environment (tokens, service URLs); ``options``: the lane's options as text (``fid``,
    ``posts``, ``message``, ``signature``: what the command line gave); ``namespace``: the agent's (the tree's)
    namespace, which an ownership message names; ``limit``: at most this many proposals; ``http``: the one
    HTTP layer's options (deadlines, retries, a test's client); ``clock``: now, timezone-aware.
    """

    env: Mapping[str, str]
    options: Mapping[str, str] = field(default_factory=dict)
    namespace: str = "default"
    limit: int = DEFAULT_MAX_MEMORIES
    http: HttpOptions = HttpOptions()
    clock: Callable[[], datetime] = _utcnow


@runtime_checkable
class Seeder(Protocol):
    """Reads one account and proposes memories from it; never writes.

    ``account()`` proves ownership and returns the verified :class:`Account`: a failed proof raises
    ``SignatureError`` (exit 3), a service that cannot be read ``SeedError``. ``propose(account)`` returns at
    most the request's ``limit`` proposals, each key unique. ``close()`` releases connections. Errors carry
    no secret (no token, no signature).
    """

    name: str

    def account(self) -> Account: ...

    def propose(self, account: Account) -> Sequence[Proposal]: ...

    def close(self) -> None: ...

    def __enter__(self) -> Self: ...

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...


class SeederFactory(Protocol):
    """What an entry point in ``bundlekit.seeders`` loads to: ``from_request`` builds the seeder (``UsageError``
    naming a missing variable or option, never a value); ``is_configured`` says whether ``env`` has what it needs;
    ``options`` names the lane options it takes (any other is refused before anything is read)."""

    options: tuple[str, ...]

    def from_request(self, request: SeedRequest) -> Seeder: ...

    def is_configured(self, env: Mapping[str, str]) -> bool: ...
