"""One account service read as JSON through the one HTTP layer (``net/http``), within bounds.

Every seeder's answers are foreign input: each body is read with ``read_capped`` (at most
:data:`MAX_BODY_BYTES`), parsed with a nesting bound (:data:`MAX_DEPTH`, checked before ``json.loads``
can recurse), and every call made with one :class:`~bundlekit.net.http.HttpOptions` whose ``until`` bounds
the whole seeding (:data:`SEED_DEADLINE`) and whose ``deadline`` bounds each answer (a slow body is cut
off there). Redirects are followed within the service's origin only (``net/http``'s rule). A rate limit is
waited out through the layer's one retry loop when the service says how long (``Retry-After``, or the
reset time its rate-limit headers give, :func:`reset_wait`), else it is a :class:`SeedError` naming when
to try again. The token is sent in a header and removed from every message (``redact_known``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import httpx

from bundlekit._closing import Closing
from bundlekit._terminal import printable
from bundlekit.errors import SeedError, SignatureError, UsageError
from bundlekit.net.http import (
    Failure,
    HttpOptions,
    HttpRequest,
    RetryPolicy,
    check_http_url,
    open_client,
    parse_retry_after,
    read_capped,
    send,
)
from bundlekit.net.http import redact as redact_known
from bundlekit.net.loopback import is_loopback
from bundlekit.pinning.polling import seconds_env
from bundlekit.seed import facts

__all__ = ["MAX_BODY_BYTES", "MAX_DEPTH", "SEED_DEADLINE", "JsonService", "bounded_options", "check_base", "parse_json", "seed_http",
           "RateLimit", "retry_time"]

MAX_BODY_BYTES = 4 * 1024 * 1024  # one answer: a page of 100 repositories is about 0.5 MB
MAX_DEPTH = 64  # nesting of one answer: the documented shapes need fewer than 10 levels
SEED_DEADLINE = 120.0  # seconds for everything one seeding reads
ANSWER_DEADLINE = 30.0  # seconds for one answer, body included
# A rate limit is waited out up to this long (the loop's cap on Retry-After and on a reset time).
MAX_RATE_LIMIT_WAIT = 60.0


def seed_http(env: Mapping[str, str]) -> HttpOptions:
    """The HTTP options of one seeding: ``$BUNDLEKIT_SEED_DEADLINE`` seconds for everything it reads (default
    :data:`SEED_DEADLINE`; a test sets a fraction of a second), each answer within the same or 30 s."""
    total = seconds_env(env, "BUNDLEKIT_SEED_DEADLINE", SEED_DEADLINE)
    return HttpOptions(deadline=min(total, ANSWER_DEADLINE), until=time.monotonic() + total)


def bounded_options(http: HttpOptions) -> HttpOptions:
    """``http`` with the seeding's bounds: a deadline per answer, one for the whole seeding (kept when the
    caller set a sooner one), three attempts, a rate-limit wait of at most :data:`MAX_RATE_LIMIT_WAIT`."""
    until = http.monotonic() + SEED_DEADLINE
    return replace(
        http,
        deadline=ANSWER_DEADLINE if http.deadline is None else min(http.deadline, ANSWER_DEADLINE),
        until=until if http.until is None else min(http.until, until),
        retry=RetryPolicy(attempts=3, max_retry_after=MAX_RATE_LIMIT_WAIT),
        follow_redirects=False,
    )


def _depth_ok(text: bytes, limit: int) -> bool:
    """True when no array or object nests deeper than ``limit`` (strings skipped): checked before parsing,
    so a hostile body of a million brackets costs one pass, never a recursion."""
    depth = 0
    in_string = False
    escaped = False
    for byte in text:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):
            depth += 1
            if depth > limit:
                return False
        elif byte in (0x5D, 0x7D):
            depth -= 1
    return True


def parse_json(body: bytes, what: str) -> Any:
    """The JSON value of ``body``; ``SeedError`` naming ``what`` when it is not JSON or nests too deep."""
    if not _depth_ok(body, MAX_DEPTH):
        raise SeedError(f"{what} nests deeper than {MAX_DEPTH} levels, which the service never documents; refused")
    try:
        return json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise SeedError(f"{what} is not JSON; refused") from exc


@dataclass(frozen=True)
class RateLimit:
    """How a service says "wait, then retry": the statuses it answers so (GitHub: 403 and 429; X: 429) and its
    remaining and reset headers (``x-ratelimit-remaining``/``x-ratelimit-reset``, the reset in epoch seconds)."""

    statuses: tuple[int, ...]
    remaining: str
    reset: str

    def wait(self, response: httpx.Response, now: Callable[[], datetime]) -> float | None:
        """Seconds to wait before retrying ``response`` (its ``retry-after``, else until a spent limit resets),
        or ``None`` when it is not a rate limit."""
        if response.status_code not in self.statuses:
            return None
        after = parse_retry_after(response.headers.get("retry-after"), now)  # seconds or an HTTP date: one parser
        if after is not None:
            return after
        remaining, reset = (response.headers.get(h, "").strip() for h in (self.remaining, self.reset))
        if remaining != "0" or not reset.isdigit() or len(reset) > 12:
            return None
        return max(0.0, int(reset) - now().timestamp())


def retry_time(wait: float, now: float) -> str:
    """When to try again, ``wait`` seconds after ``now`` (epoch seconds), as a UTC time; a service's wait that no
    calendar holds (a reset header of year 33658, an infinite ``Retry-After``) is named as such, never a crash."""
    try:
        return datetime.fromtimestamp(now + wait, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (OverflowError, ValueError, OSError):
        return "a time the service named past any calendar"


def check_base(base: str, what: str, *, credential: bool) -> str:
    """``base`` when it is an ``http(s)://`` URL a credential may travel to; ``UsageError`` (exit 2) naming
    ``what`` (the variable) for any other scheme, a malformed URL, or plain http to a host that is not
    loopback while a credential is sent (anyone on the way could read it; a local fake or hub may take http)."""
    text = check_http_url(base.strip(), what=what)
    try:
        url = httpx.URL(text)
    except httpx.InvalidURL as exc:
        raise UsageError(f"{what} is not a valid URL; check it") from exc
    if url.scheme not in ("http", "https") or not url.host:
        raise UsageError(f"{what} must be an http(s):// URL")
    if credential and url.scheme == "http" and not is_loopback(url.host):
        raise UsageError(f"refusing to send a credential over plain http to {printable(url.host)[:120]}: anyone on "
                         f"the way could read it; give {what} as https://, or a loopback one")
    return text


class JsonService(Closing):
    """GET calls to one service: its base URL, its headers (the token), the bounded options, one client.

    ``limit`` is how the service rate-limits: an answer it documents as "wait, then retry" is waited out by
    the one retry loop (``HttpRequest.again``) when the wait is at most :data:`MAX_RATE_LIMIT_WAIT` and ends
    before the seeding's deadline; a longer one fails at once, naming when to try again.
    ``error_fields`` are the fields of the service's documented error body that say what went wrong (GitHub's
    ``message``, a hub's ``errCode`` and ``details``, X's ``title`` and ``detail``), named in a failure.
    A 401 is a ``SignatureError`` (the credential proves no account); any other failure a ``SeedError``.
    """

    def __init__(self, name: str, base: str, headers: Mapping[str, str], http: HttpOptions, *,
                 secrets: tuple[str, ...] = (), limit: RateLimit | None = None,
                 error_fields: tuple[str, ...] = ()) -> None:
        self.name = name
        self._base = base.rstrip("/")
        self._headers = dict(headers)
        self._options = bounded_options(http)
        self._secrets = secrets
        self._limit = limit
        self._error_fields = error_fields
        self._client, self._owned = open_client(self._options)

    def get(self, path: str, params: Mapping[str, str] | None = None, *, what: str) -> Any:
        """The JSON answer of ``GET base + path``; raises ``SignatureError`` (401) or ``SeedError``."""
        request = HttpRequest("GET", self._base + path, params=params, headers=self._headers, again=self._again,
                              final=self._final)
        outcome = send(self._client, request, self._options,
                       read=lambda response: read_capped(response, MAX_BODY_BYTES))
        if isinstance(outcome, Failure):
            raise self._failed(outcome, what)
        return parse_json(outcome, f"{self.name}'s answer to {what}")

    def _again(self, response: httpx.Response) -> float | None:
        """A rate limit this run waits out: at most ``MAX_RATE_LIMIT_WAIT`` seconds (longer: final)."""
        wait = self._limit.wait(response, self._options.clock) if self._limit is not None else None
        return wait if wait is not None and wait <= MAX_RATE_LIMIT_WAIT else None

    def _final(self, response: httpx.Response) -> bool:
        """A rate limit whose stated wait is longer than this run waits (``Retry-After: 1000000000000``): final at
        once, never retried after the loop's capped wait (the failure names when to try again)."""
        wait = self._limit.wait(response, self._options.clock) if self._limit is not None else None
        return wait is not None and wait > MAX_RATE_LIMIT_WAIT

    def _failed(self, failure: Failure, what: str) -> Exception:
        detail = self._error_text(failure)
        reason = redact_known(f"{failure.reason}{': ' + detail if detail else ''}", self._secrets)
        if failure.status == 401:
            return SignatureError(f"{self.name} refused the credential ({reason}) reading {what}: it proves no "
                                  "account; check the token (nothing was written)")
        if failure.too_large:
            return SeedError(f"{self.name}'s answer to {what} is over {MAX_BODY_BYTES} bytes; refused")
        if failure.deadline:
            return SeedError(f"{self.name} did not answer {what} in time (gave up at the seeding's deadline)")
        wait = self._limit.wait(failure.response, self._options.clock) \
            if self._limit is not None and failure.response is not None else None
        if wait is not None or failure.status == 429:
            when = retry_time(wait or 0.0, time.time())
            return SeedError(f"{self.name} rate-limited {what} ({reason}); nothing was written, try again after "
                             f"{when}")
        return SeedError(f"{self.name} could not be read ({what}: {reason}); nothing was written")

    def _error_text(self, failure: Failure) -> str:
        """The documented error body's ``error_fields``, each one line, joined; nothing for another body."""
        if failure.response is None or not self._error_fields:
            return ""
        try:
            body = parse_json(failure.response.content, f"{self.name}'s error")
        except SeedError:
            return ""
        if not isinstance(body, dict):
            return ""
        return ": ".join(part for part in (facts.line(body.get(f), 120) for f in self._error_fields) if part)

    def close(self) -> None:
        """Close the client this service opened (a caller's own client is left open)."""
        if self._owned:
            self._client.close()
