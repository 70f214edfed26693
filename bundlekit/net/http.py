"""The one shared HTTP layer every HTTP pinner goes through.

Why one layer: release pipelines lose uploads to hung connections, 429s and
tokens echoed into CI logs. Timeouts, retries and redaction are decided here
once, so every pinner behaves the same way and none can forget.

Behaviour (each point is tested in ``tests/pinners/test_http.py``):

* Every call has a timeout (``DEFAULT_TIMEOUT`` unless the caller passes one).
* Connection errors, timeouts, 408, 429 and 5xx are retried with exponential
  backoff and jitter: attempt ``n`` (0-based) waits
  ``min(cap, base * 2**n) * (0.5 + jitter() / 2)``. A ``Retry-After`` header
  (delta-seconds or an HTTP date) replaces that wait, capped at
  ``RetryPolicy.max_retry_after``.
* 401/403 (``PinAuthError``) and other 4xx (``PinRejected``) are never
  retried. A sunset answer (HTTP 410, or a body the caller's ``sunset``
  predicate recognises) raises ``PinServiceSunset`` at once.
* After the last attempt: 429 -> ``PinRateLimited``; 5xx, connection errors
  and timeouts -> ``PinUnavailable``.
* Every message, log line and exception text passes through ``redact`` with
  the client's secrets, so a token never leaves this module in clear.

``sleep``, ``jitter`` and ``now`` are injectable so tests never really sleep.
"""

from __future__ import annotations

import email.utils
import logging
import random
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Self

import httpx

from bundlekit.errors import (
    PinAuthError,
    PinError,
    PinnerNotConfigured,
    PinRateLimited,
    PinRejected,
    PinServiceSunset,
    PinUnavailable,
)

__all__ = [
    "DEFAULT_TIMEOUT",
    "HttpClient",
    "RetryPolicy",
    "parse_retry_after",
    "redact",
    "redact_library_logs",
]

log = logging.getLogger("bundlekit.http")

# Connect fast, but allow slow reads/writes: a 100 MB CAR on a CI runner's uplink
# can take minutes, and the service may take a while to answer after the last byte.
DEFAULT_TIMEOUT = httpx.Timeout(connect=15.0, read=120.0, write=120.0, pool=15.0)

REDACTED = "***"
# Secrets shorter than this are not redacted: replacing "a" everywhere would
# mangle every message and protects nothing.
_MIN_SECRET_LEN = 4
_BODY_SNIPPET = 300


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to retry a retryable failure.

    ``attempts`` counts every try, the first included (so 1 means no retry).
    """

    attempts: int = 5
    base: float = 0.5
    cap: float = 30.0
    max_retry_after: float = 300.0

    def backoff(self, attempt: int, jitter: float) -> float:
        """The wait before retry number ``attempt`` (0-based) given a jitter sample in [0, 1)."""
        growth: float = self.base * float(2**attempt)
        return min(self.cap, growth) * (0.5 + jitter / 2)


def _secret_forms(secret: str) -> set[str]:
    """The ways a secret shows up in messages: as is, escaped (as ``repr`` or an
    ``Illegal header value b'...'`` error prints it), and each piece between
    whitespace or control characters (a pasted token with a line break in it)."""
    forms = {secret, repr(secret)[1:-1], repr(secret.encode("utf-8", "backslashreplace"))[2:-1]}
    forms.add(secret.encode("unicode_escape").decode("ascii"))
    forms.update(re.split(r"[\s\x00-\x1f\x7f]+", secret))
    return {f for f in forms if len(f) >= _MIN_SECRET_LEN}


def redact(text: str, secrets: Iterable[str]) -> str:
    """Return ``text`` with every secret (of 4+ characters) replaced by ``***``.

    Escaped spellings and the pieces of a secret holding whitespace or control
    characters are replaced too: an HTTP library quoting a bad header prints
    ``\\n`` where the secret has a line break.
    """
    forms: set[str] = set()
    for secret in secrets:
        if secret and len(secret) >= _MIN_SECRET_LEN:
            forms |= _secret_forms(secret)
    for form in sorted(forms, key=len, reverse=True):
        text = text.replace(form, REDACTED)
    return text


# Credentials a library may print in its own debug logs (botocore logs whole
# requests, Authorization header included).
_LOG_PATTERNS = (
    re.compile(r"(Signature=)[0-9a-fA-F]+"),
    re.compile(r"(Credential=)[^/\s,'\"]+"),
    re.compile(r"((?:Bearer|Basic)\s+)[A-Za-z0-9._~+/=-]+"),
    re.compile(r"((?:X-Auth-Secret|x-auth-secret)['\"]?:\s*b?['\"]?)[^'\",\s]+"),
)


class _RedactingFilter(logging.Filter):
    """Rewrites a library's log record with every known secret and credential pattern removed."""

    def __init__(self) -> None:
        super().__init__()
        self.secrets: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a malformed record must not break logging
            return True
        clean = redact(message, self.secrets)
        for pattern in _LOG_PATTERNS:
            clean = pattern.sub(lambda m: m.group(1) + REDACTED, clean)
        if clean != message:
            record.msg, record.args = clean, None
        return True


_LIBRARY_FILTER = _RedactingFilter()
_HTTPX_LOGGERS = ("httpx", "httpcore.http11", "httpcore.http2", "httpcore.connection", "httpcore.proxy")
_FILTERED_LOGGERS: set[str] = set()


def redact_library_logs(secrets: Iterable[str], loggers: Iterable[str]) -> None:
    """Redact ``secrets`` (and credential patterns) from the named libraries' log records.

    A filter sits on each named logger (filters do not inherit, so list the
    ones that log requests, e.g. ``botocore.endpoint``); it is installed once
    and the secrets accumulate for the life of the process.
    """
    _LIBRARY_FILTER.secrets.update(s for s in secrets if s and len(s) >= _MIN_SECRET_LEN)
    for name in loggers:
        if name not in _FILTERED_LOGGERS:
            logging.getLogger(name).addFilter(_LIBRARY_FILTER)
            _FILTERED_LOGGERS.add(name)


def parse_retry_after(value: str | None, now: Callable[[], datetime]) -> float | None:
    """Seconds to wait from a ``Retry-After`` value (delta-seconds or HTTP date); None if absent or invalid."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - now()).total_seconds())


def _utcnow() -> datetime:
    return datetime.now(UTC)


BodyFactory = Callable[[], Mapping[str, Any]]


class HttpClient:
    """An ``httpx.Client`` wrapper with timeouts, retries, error translation and redaction.

    ``service`` names the service in messages ("Pinata", "kubo", ...).
    ``secrets`` are redacted from every message and log line. ``sunset`` is
    an optional predicate over a failed response that recognises the
    service's "this API is gone" answer. ``transport`` lets tests plug in
    ``httpx.MockTransport``; respx patches the default transport instead.
    """

    def __init__(
        self,
        service: str,
        *,
        headers: Mapping[str, str] | None = None,
        auth: httpx.Auth | tuple[str, str] | None = None,
        secrets: Sequence[str] = (),
        timeout: httpx.Timeout | float = DEFAULT_TIMEOUT,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
        jitter: Callable[[], float] = random.random,
        now: Callable[[], datetime] = _utcnow,
        sunset: Callable[[httpx.Response], bool] | None = None,
        sunset_hint: str = "",
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.service = service
        self.secrets = tuple(secrets)
        self.retry = retry or RetryPolicy()
        self.sleep = sleep
        self.jitter = jitter
        self.now = now
        self._sunset = sunset
        self._sunset_hint = sunset_hint
        redact_library_logs(self.secrets, _HTTPX_LOGGERS)
        self._client = httpx.Client(
            headers=dict(headers or {}),
            auth=auth,
            timeout=timeout,
            transport=transport,
            follow_redirects=False,
        )

    def close(self) -> None:
        """Close the connection pool."""
        self._client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def redact(self, text: str) -> str:
        """``text`` with this client's secrets removed."""
        return redact(text, self.secrets)

    def request(
        self,
        method: str,
        url: str,
        *,
        params: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        json: Any = None,
        body: BodyFactory | None = None,
        retry: bool = True,
        ok: Callable[[httpx.Response], bool] | None = None,
        what: str = "",
    ) -> httpx.Response:
        """Send one request, retrying per the policy; return the successful response.

        ``body`` is called before *each* attempt and returns the httpx keyword
        arguments carrying the payload (``content=``, ``files=``, ``data=``),
        so a file body can be rewound and re-sent. ``ok`` decides which
        responses count as success (default: 2xx). ``retry=False`` makes a
        single attempt (non-idempotent calls the caller cannot safely repeat).
        ``what`` describes the call for messages ("upload CAR").

        Raises PinAuthError, PinRejected, PinServiceSunset (never retried),
        PinRateLimited or PinUnavailable (after the last attempt).
        """
        is_ok = ok or (lambda r: r.is_success)
        label = what or method
        attempts = self.retry.attempts if retry else 1
        last_error: PinError | None = None
        last_exc: BaseException | None = None
        for attempt in range(attempts):
            extra = dict(body()) if body is not None else {}
            try:
                response = self._client.request(
                    method, url, params=params, headers=headers, json=json, **extra
                )
            except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
                # A settings mistake, not an outage: retrying cannot help.
                raise PinnerNotConfigured(
                    self.redact(
                        f"{self.service}: {url!r} is not a usable http(s) URL; "
                        "fix the service's *_URL setting (it must start with http:// or https://)"
                    )
                ) from exc
            except httpx.TimeoutException as exc:
                last_error = PinUnavailable(
                    self.redact(
                        f"{self.service}: {label} to {_host(url)} timed out ({type(exc).__name__}); "
                        "the service may be overloaded: retry later or raise the timeout"
                    )
                )
                last_exc = exc
                wait = self.retry.backoff(attempt, self.jitter())
            except httpx.TransportError as exc:
                last_error = PinUnavailable(
                    self.redact(
                        f"{self.service}: {label} to {_host(url)} failed ({type(exc).__name__}: {exc}); "
                        "check the service URL and your network, then retry"
                    )
                )
                last_exc = exc
                wait = self.retry.backoff(attempt, self.jitter())
            else:
                if is_ok(response):
                    log.debug(self.redact(f"{self.service}: {method} {url} -> {response.status_code}"))
                    return response
                error, retryable = self._classify(response, label)
                if not retryable:
                    raise error
                last_error = error
                last_exc = None
                after = parse_retry_after(response.headers.get("Retry-After"), self.now)
                if after is not None:
                    wait = min(after, self.retry.max_retry_after)
                else:
                    wait = self.retry.backoff(attempt, self.jitter())
            if attempt + 1 < attempts:
                log.info(self.redact(f"{self.service}: {label}: {last_error}; retrying in {wait:.2f}s"))
                self.sleep(wait)
        assert last_error is not None
        raise last_error from last_exc

    def _classify(self, response: httpx.Response, label: str) -> tuple[PinError, bool]:
        """Map a failed response to (error, retryable)."""
        status = response.status_code
        snippet = self.redact(_snippet(response))
        where = f"{self.service}: {label} answered HTTP {status}"
        detail = f": {snippet}" if snippet else ""
        if status == 410 or (self._sunset is not None and self._sunset(response)):
            hint = self._sunset_hint or "use another pinner (Pinata, Filebase or a kubo node)"
            return PinServiceSunset(f"{where}{detail}; this API no longer accepts uploads: {hint}"), False
        if status in (401, 403):
            return PinAuthError(
                f"{where}: the credentials were refused; check the token's value and permissions"
            ), False
        if status == 429:
            return PinRateLimited(f"{where}: rate limited after every retry; wait and run again"), True
        if status >= 500 or status == 408:
            return PinUnavailable(f"{where}{detail}; the service is failing: retry later"), True
        return PinRejected(f"{where}{detail}; the request was refused: check the input and settings"), False


def _host(url: str) -> str:
    try:
        return httpx.URL(url).host or url
    except httpx.InvalidURL:
        return "the service"


def _snippet(response: httpx.Response) -> str:
    """The start of a response body, on one line, for an error message."""
    try:
        text = response.read().decode("utf-8", errors="replace")
    except httpx.HTTPError:
        return ""
    text = " ".join(text.split())
    return text[:_BODY_SNIPPET] + ("..." if len(text) > _BODY_SNIPPET else "")
