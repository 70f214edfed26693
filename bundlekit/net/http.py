"""The one HTTP layer: an options object, one retry policy, one retry loop, redaction.

Why one layer: loaders lose bundles to dead gateways, release pipelines lose
uploads to hung connections and 429s, and tokens get echoed into CI logs.
Timeouts, retries and redaction are decided here once, so retrieval
(``bundlekit.net.fetch``) and every pinner (through ``bundlekit.pinning.http``)
follow the same rules and none can forget one.

The rules (tested in ``tests/net/``):

* Every request has a timeout (``HttpOptions.timeout``).
* A *retryable* failure is a connection error, a timeout, or an answer with
  HTTP 408, 429 or 5xx. Any other status (401, 403, 404, other 4xx) is final:
  retrying cannot change the answer.
* Attempt ``n`` (0-based) that failed retryably waits ``Retry-After`` when the
  answer carries one (delta-seconds or an HTTP date), capped at
  ``RetryPolicy.max_retry_after``; otherwise the backoff
  ``min(cap, base * 2**n) * (0.5 + jitter / 2)``.
* Every request asks for ``Accept-Encoding: gzip, deflate``; an answer in
  ``br`` or ``zstd`` (which one chunk can expand without bound) is a final
  ``Failure``, and so is a body that does not decode as its
  ``Content-Encoding`` says (corrupt gzip or deflate), never an exception.
* After ``RetryPolicy.attempts`` tries the last failure is returned; the
  caller decides what it means ("not here" for a gateway, ``PinUnavailable``
  for a pinning service).

A call is two values, what to send (``HttpRequest``) and how (``HttpOptions``),
and one of two verbs, shaped as httpx's own (httpx 0.28.1,
``httpx/_client.py``: ``Client.send`` and the ``Client.stream`` context
manager): ``send(client, request, options)`` returns the result read from the
successful answer (its whole body by default, ``read_capped`` for a bounded
one), and ``with stream(client, request, options) as answer`` yields the
successful answer open and closes it after the block. Both run the one retry
loop (``_retrying``), in the steps the rules name: an attempt sends and reads
one answer, ``classify`` turns a failed answer into a ``Failure``, the
``Failure`` says whether it is retryable, and ``RetryPolicy.wait`` says how
long to wait. ``sleep``, ``jitter`` and ``clock`` come in through
``HttpOptions`` so tests never really sleep. Neither raises for HTTP trouble:
the outcome is the result or the ``Failure``.

Two more rules bound what a server can make a caller do (``specs/bundle.md``,
"Retrieval", steps 6 and 7):

* Redirects (clients made by ``open_client``): followed only within the same
  origin (scheme, host and port) unless ``HttpOptions.follow_redirects``; an
  https -> http redirect is never followed. A refused redirect is a final
  ``Failure`` naming both URLs' origins.
* Deadlines: ``HttpOptions.deadline`` bounds one response (connect, headers
  and the whole body, per attempt) and ``HttpOptions.until`` (a ``monotonic``
  time) bounds everything a caller does: a server sending one byte every few
  seconds is cut off there, not kept alive by the per-read timeout. No
  attempt starts and no retry waits past ``until``. A deadline is a final
  ``Failure`` with ``deadline=True``.
"""

from __future__ import annotations

import logging
import os
import random
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar, cast, overload

import certifi

from bundlekit._lazy import lazy_module
from bundlekit._redact import MIN_SECRET_LEN, REDACTED
from bundlekit._redact import redact as redact_output
from bundlekit._redact import redact_known as redact  # re-exported: the pinners redact their own secrets with it
from bundlekit.errors import UsageError

if TYPE_CHECKING:
    import email.utils as email_utils
    import ssl

    import httpx

    from bundlekit.net import _trust
else:  # imported at the first request (DEVELOPERS.md, "Lazy imports": a writer's sync round makes none)
    httpx, ssl, email_utils = lazy_module("httpx"), lazy_module("ssl"), lazy_module("email.utils")
    _trust = lazy_module("bundlekit.net._trust")

__all__ = [
    "DEFAULT_MAX_CAR_BYTES",
    "DEFAULT_TIMEOUT",
    "HTTPX_LOGGERS",
    "MAX_REDIRECTS",
    "BodyFactory",
    "Failure",
    "HttpOptions",
    "HttpRequest",
    "RedirectRefused",
    "RetryPolicy",
    "Timeouts",
    "check_http_url",
    "classify",
    "is_retryable_status",
    "open_client",
    "parse_retry_after",
    "read_body",
    "read_capped",
    "redact",
    "redact_handlers",
    "redact_library_logs",
    "send",
    "stream",
    "tls_context",
]

T = TypeVar("T")



class Timeouts(NamedTuple):
    """The four timeouts of a client, in seconds, as httpx takes them (a 4-tuple is an ``httpx.Timeout``'s
    ``connect, read, write, pool``: httpx 0.28+, ``httpx/_config.py``), held without importing httpx."""

    connect: float | None
    read: float | None
    write: float | None
    pool: float | None


# Short connect timeout so a dead gateway falls through quickly; reads may be slow.
DEFAULT_TIMEOUT = Timeouts(connect=5.0, read=60.0, write=30.0, pool=10.0)
# A loader must not be made to buffer an unbounded CAR: bundles are memory trees.
DEFAULT_MAX_CAR_BYTES = 1024 * 1024 * 1024
# Redirect hops one request may take (httpx's own default is 20).
MAX_REDIRECTS = 10
# How much of a failed answer's body is kept for messages and service-specific checks.
ERROR_BODY_LIMIT = 64 * 1024

# The statuses that say "try again": request timeout, rate limited, and every server error.
_RETRY_STATUSES = frozenset({408, 429})


def is_retryable_status(status: int) -> bool:
    """True for HTTP 408, 429 and 5xx: the answers a later attempt may change."""
    return status in _RETRY_STATUSES or 500 <= status <= 599


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to retry a retryable failure.

    ``attempts`` counts every try, the first included (so 1 means no retry).
    The defaults suit retrieval: a dead gateway is given up quickly so the
    next one is tried (uploads use a more patient policy, see
    ``bundlekit.pinning.http``).
    """

    attempts: int = 3
    base: float = 0.25
    cap: float = 5.0
    max_retry_after: float = 30.0

    def backoff(self, attempt: int, jitter: float) -> float:
        """The wait before retry number ``attempt`` (0-based) given a jitter sample in [0, 1)."""
        growth: float = self.base * float(2**attempt)
        return min(self.cap, growth) * (0.5 + jitter / 2)

    def wait(self, attempt: int, retry_after: float | None, jitter: Callable[[], float]) -> float:
        """The wait after failed attempt ``attempt``: ``Retry-After`` (capped) if given, else the backoff."""
        if retry_after is not None:
            return min(retry_after, self.max_retry_after)
        return self.backoff(attempt, jitter())


def _utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class HttpOptions:
    """Everything a caller may choose about HTTP, in one value passed down instead of loose parameters.

    ``client`` is an ``httpx.Client`` to use as is (its owner closes it);
    without one, a client is made from ``timeout`` for the duration of the
    call. ``retry`` is the policy; ``sleep``, ``jitter`` (a sample in [0, 1))
    and ``clock`` (now, timezone-aware, for ``Retry-After`` dates) are seams
    for tests. ``max_car_bytes`` caps a CAR response a loader reads.
    ``follow_redirects`` lets a client made by ``open_client`` follow
    redirects to other origins (never https -> http). ``deadline`` (seconds)
    bounds each response, body included; ``until`` (a ``monotonic()`` time)
    bounds all requests made with these options; ``monotonic`` is their clock.
    ``HttpOptions()`` is what every public function uses when given nothing.
    """

    client: httpx.Client | None = None
    timeout: httpx.Timeout | Timeouts | float = field(default_factory=lambda: DEFAULT_TIMEOUT)
    retry: RetryPolicy = RetryPolicy()
    sleep: Callable[[float], None] = time.sleep
    jitter: Callable[[], float] = random.random
    clock: Callable[[], datetime] = _utcnow
    max_car_bytes: int = DEFAULT_MAX_CAR_BYTES
    follow_redirects: bool = False
    deadline: float | None = None
    until: float | None = None
    monotonic: Callable[[], float] = time.monotonic

    def ends(self) -> float | None:
        """When a response started now must be over (``monotonic`` time), or None without a deadline."""
        ends = self.until
        if self.deadline is not None:
            own = self.monotonic() + self.deadline
            ends = own if ends is None else min(ends, own)
        return ends


class RedirectRefused(Exception):
    """A redirect the options do not allow (raised inside httpx by the response hook, caught by the attempt)."""


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    default = {"http": 80, "https": 443}.get(url.scheme)
    return url.scheme, url.host, url.port or default


def _redirect_guard(follow_other_origins: bool) -> Callable[[httpx.Response], None]:
    """The response hook that refuses redirects to other origins (unless allowed) and https -> http always."""

    def check(response: httpx.Response) -> None:
        if not response.has_redirect_location:
            return
        here = response.request.url
        there = here.join(response.headers["Location"])
        if here.scheme == "https" and there.scheme != "https":
            raise RedirectRefused(f"refused a redirect from https to {there.scheme} ({there.host})")
        if not follow_other_origins and _origin(there) != _origin(here):
            raise RedirectRefused(
                f"refused a redirect from {here.host} to another origin ({there.scheme}://{there.host}"
                f"{':' + str(there.port) if there.port else ''}): other origins are followed only when allowed "
                "(`bundlekit load --follow-redirects`; the library's HttpOptions(follow_redirects=True))"
            )

    return check


def tls_context() -> ssl.SSLContext:
    """The TLS context every client bundlekit opens verifies servers with: httpx's own default trust
    (``SSL_CERT_FILE``, else ``SSL_CERT_DIR``, else certifi's bundle; httpx 0.28+ ``create_ssl_context``),
    made once per process for each such setting and shared.

    Left to itself httpx makes a new context for every client it opens, reading the whole CA bundle each
    time (tens of milliseconds of CPU, even for a loopback ``http://`` client): a sync, which opens clients
    for every gateway and pinner it meets, paid that dozens of times. A context is safe to share between
    clients and threads (Python's ``ssl`` documentation); nothing changes it after it is made.
    """
    return _tls_context(os.environ.get("SSL_CERT_FILE", ""), os.environ.get("SSL_CERT_DIR", ""))


@lru_cache(maxsize=4)
def _tls_context(cafile: str, capath: str) -> ssl.SSLContext:
    """Read at the first handshake (``net._trust``): an ``http://`` gateway's client never reads the CA bundle."""
    if cafile:
        return _trust.TrustOnUse(cafile=cafile, setting="SSL_CERT_FILE")
    if capath:
        return _trust.TrustOnUse(capath=capath, setting="SSL_CERT_DIR")
    return _trust.TrustOnUse(cafile=certifi.where(), setting="certifi's CA bundle")


def open_client(options: HttpOptions) -> tuple[httpx.Client, bool]:
    """``(client, owned)``: the caller's client, or a new one (``owned``: close it when done).

    A new client follows redirects by the options' rule (same origin only
    unless ``follow_redirects``; never https -> http), at most ``MAX_REDIRECTS`` hops.
    """
    if options.client is not None:
        return options.client, False
    client = httpx.Client(
        verify=tls_context(), timeout=options.timeout, follow_redirects=True, max_redirects=MAX_REDIRECTS,
        event_hooks={"response": [_redirect_guard(options.follow_redirects)]},
    )
    return client, True


@dataclass(frozen=True)
class Failure:
    """Why a request did not succeed: a failed answer, a transport error, or an over-long body.

    ``reason`` is short and safe to show ("HTTP 503", "timed out (ReadTimeout)").
    ``response`` is the failed answer with its body read (at most
    ``ERROR_BODY_LIMIT`` bytes). ``error`` is the transport exception.
    ``too_large`` marks a success whose body passed the caller's limit;
    ``deadline`` an answer cut off at the total deadline.
    """

    reason: str
    retryable: bool
    status: int | None = None
    response: httpx.Response | None = None
    error: Exception | None = None
    retry_after: float | None = None
    too_large: bool = False
    deadline: bool = False

    @property
    def unusable_url(self) -> bool:
        """True when the URL itself is wrong (no http(s) scheme, malformed): a settings mistake."""
        return isinstance(self.error, (httpx.UnsupportedProtocol, httpx.InvalidURL))


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
        when = email_utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - now()).total_seconds())


def _read_prefix(response: httpx.Response, limit: int) -> tuple[bytes, bool]:
    """Up to ``limit`` bytes of the body, streamed, and whether it went on past them (reading stops there)."""
    parts: list[bytes] = []
    seen = 0
    for chunk in response.iter_bytes():
        parts.append(chunk)
        seen += len(chunk)
        if seen > limit:
            return b"".join(parts)[:limit], True
    return b"".join(parts), False


def read_capped(response: httpx.Response, max_bytes: int) -> bytes | Failure:
    """A successful answer's body, or a non-retryable ``Failure`` once it passes ``max_bytes``.

    The body is streamed and cut at the limit: a hostile server cannot make
    the caller buffer more than it expects.
    """
    body, over = _read_prefix(response, max_bytes)
    if over:
        return Failure(f"response is over the {max_bytes}-byte limit", retryable=False,
                       status=response.status_code, too_large=True)
    return body


def _detached(response: httpx.Response) -> httpx.Response:
    """A copy of a failed answer holding at most ``ERROR_BODY_LIMIT`` bytes of its (decoded) body."""
    body, _more = _read_prefix(response, ERROR_BODY_LIMIT)
    skip = {"content-encoding", "content-length", "transfer-encoding"}
    headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() not in skip]
    return httpx.Response(response.status_code, headers=headers, content=body, request=response.request)


def classify(
    response: httpx.Response, clock: Callable[[], datetime], final: Callable[[httpx.Response], bool] | None = None,
    again: Callable[[httpx.Response], float | None] | None = None,
) -> Failure:
    """The ``Failure`` for an answer that is not a success: retryable for 408, 429 and 5xx.

    ``final`` recognises answers the caller knows are final whatever their
    status (a service's shutdown notice); those are never retried. ``again``
    recognises answers the service documents as "wait, then retry" whatever
    their status (GitHub's 403 rate limit) and says how long to wait (seconds;
    ``None``: not such an answer); those are retried after that wait.
    """
    answer = _detached(response)
    status = answer.status_code
    retry_after = parse_retry_after(answer.headers.get("Retry-After"), clock)
    wait = again(answer) if again is not None else None
    retryable = (is_retryable_status(status) or wait is not None) and not (final is not None and final(answer))
    return Failure(f"HTTP {status}", retryable=retryable, status=status, response=answer,
                   retry_after=retry_after if wait is None else wait)


def check_http_url(text: str, *, what: str) -> str:
    """Return ``text``; when it is an ``http(s)://`` URL httpx cannot parse (``https://h:X/``,
    ``http://[::1``) or whose port no socket takes (``:99999``), raise ``UsageError`` naming ``what`` and the reason (never a raw
    ``httpx.InvalidURL``). Anything else passes through for its own parser to judge."""
    if text.strip().lower().startswith(("http://", "https://")):
        try:
            port = httpx.URL(text.strip()).port
        except httpx.InvalidURL as exc:
            raise UsageError(f"{what} {text[:200]!r} is not a valid URL ({exc}); check it") from exc
        if port is not None and not 0 < port <= 65535:  # httpx parses any digits; a socket takes 1-65535
            raise UsageError(f"{what} {text[:200]!r} is not a valid URL (port {port} is not 1-65535); check it")
    return text


# The content codings asked for (every request says so): httpx decodes gzip and deflate a bounded chunk at a time.
# br and zstd, which httpx also decodes when brotli or zstandard happens to be installed, can expand one chunk of a
# few kilobytes to gigabytes before any byte cap sees it: never asked for, and an answer in one is refused.
ACCEPT_ENCODING = "gzip, deflate"
_UNBOUNDED_CODINGS = frozenset({"br", "zstd"})


def _unbounded_coding(response: httpx.Response) -> str | None:
    """The first content coding of ``response`` that this layer never asks for and cannot bound (br, zstd)."""
    header: str = response.headers.get("content-encoding", "")
    for coding in header.split(","):
        name = coding.strip().lower()
        if name in _UNBOUNDED_CODINGS:
            return name
    return None


def _is_success(response: httpx.Response) -> bool:
    return response.is_success


BodyFactory = Callable[[], Mapping[str, Any]]


_DeadlineTypes = tuple[
    type["httpx.TimeoutException"],
    Callable[["httpx.SyncByteStream", float, Callable[[], float]], "httpx.SyncByteStream"],
]
# The one ``_make_deadline_types()`` answer, made under the lock by the first bounded response of any thread.
_DEADLINE_TYPES: list[_DeadlineTypes] = []
_DEADLINE_LOCK = threading.Lock()


def _deadline_types() -> _DeadlineTypes:
    """``(DeadlineExceeded, DeadlineStream)``, made once per process under a lock: two threads' first bounded
    responses at once get the same classes (``lru_cache`` made a pair in each, and ``_failure_of`` then did not
    know the other thread's deadline error for one: tests/net/test_lazy_httpx_threads.py)."""
    if not _DEADLINE_TYPES:
        with _DEADLINE_LOCK:
            if not _DEADLINE_TYPES:
                _DEADLINE_TYPES.append(_make_deadline_types())
    return _DEADLINE_TYPES[0]


def _make_deadline_types() -> _DeadlineTypes:
    """``(DeadlineExceeded, DeadlineStream)``, made at the first bounded response (they subclass httpx's, which is
    imported then): the error a body raises once the total deadline passes, and the stream that raises it."""

    class DeadlineExceeded(httpx.TimeoutException):
        """The total deadline passed while the body was still arriving."""

    class DeadlineStream(httpx.SyncByteStream):
        """A response body that stops with ``DeadlineExceeded`` once ``monotonic()`` passes ``ends``."""

        def __init__(self, inner: httpx.SyncByteStream, ends: float, monotonic: Callable[[], float]) -> None:
            self._inner = inner
            self._ends = ends
            self._monotonic = monotonic

        def __iter__(self) -> Iterator[bytes]:
            for chunk in self._inner:
                if self._monotonic() > self._ends:
                    raise DeadlineExceeded("the total deadline passed while reading the body")
                yield chunk

        def close(self) -> None:
            self._inner.close()

    return DeadlineExceeded, DeadlineStream


def _bounded_timeout(client: httpx.Client, remaining: float) -> httpx.Timeout:
    """The client's timeouts, each cut to ``remaining`` seconds: no single wait outlives the deadline."""
    base = client.timeout

    def cut(value: float | None) -> float:
        return max(0.001, remaining if value is None else min(value, remaining))

    return httpx.Timeout(connect=cut(base.connect), read=cut(base.read), write=cut(base.write), pool=cut(base.pool))


def _deadline_failure(exc: Exception | None = None) -> Failure:
    return Failure("gave up at the total deadline", retryable=False, error=exc, deadline=True)


@dataclass(frozen=True)
class HttpRequest:
    """One call to make through the retry loop: what to send, and what its answers mean.

    ``params``, ``headers`` and ``json`` go to ``httpx.Client.build_request``.
    ``body`` is called before *each* attempt and returns the httpx keyword
    arguments carrying the payload (``content=``, ``files=``, ``data=``), so a
    file body can be rewound and re-sent. ``ok`` says which answers are a
    success (default 2xx); ``final`` recognises failed answers the caller
    knows are final whatever their status (a service's shutdown notice);
    ``again`` those it documents as "wait this long, then retry" (``classify``).
    ``retry=False`` makes a single attempt (a call the caller cannot safely
    repeat). ``on_retry(failure, wait)`` is told before each wait.
    """

    method: str
    url: str
    params: Mapping[str, str] | None = None
    headers: Mapping[str, str] | None = None
    json: Any = None
    body: BodyFactory | None = None
    ok: Callable[[httpx.Response], bool] = _is_success
    final: Callable[[httpx.Response], bool] | None = None
    again: Callable[[httpx.Response], float | None] | None = None
    retry: bool = True
    on_retry: Callable[[Failure, float], None] | None = None

    def build(self, client: httpx.Client, options: HttpOptions, ends: float | None) -> httpx.Request | Failure:
        """This call as an ``httpx.Request`` for one attempt (its body made anew, every timeout cut to ``ends``),
        or the deadline ``Failure`` when ``ends`` has already passed."""
        headers = {"Accept-Encoding": ACCEPT_ENCODING, **(self.headers or {})}
        kwargs: dict[str, Any] = {"params": self.params, "headers": headers, "json": self.json}
        if self.body is not None:
            kwargs.update(self.body())
        if ends is not None:
            remaining = ends - options.monotonic()
            if remaining <= 0:
                return _deadline_failure()
            kwargs["timeout"] = _bounded_timeout(client, remaining)
        return client.build_request(self.method, self.url, **kwargs)


def _send_errors() -> tuple[type[Exception], ...]:
    """What sending and reading one answer may raise that is a ``Failure``, not a bug: translated by
    ``_failure_of`` (named when one is raised: httpx is imported by then)."""
    return (RedirectRefused, httpx.TooManyRedirects, httpx.InvalidURL, httpx.TransportError, httpx.DecodingError)


def _failure_of(exc: Exception, ends: float | None, monotonic: Callable[[], float]) -> Failure:
    """The ``Failure`` for one of ``_send_errors()``: transport errors and timeouts are retryable; an unusable
    URL, a refused redirect, too many redirects, a body that does not decode and the deadline ``ends`` are final."""
    if isinstance(exc, RedirectRefused):
        return Failure(str(exc), retryable=False, error=exc)
    if isinstance(exc, httpx.TooManyRedirects):
        return Failure(f"more than {MAX_REDIRECTS} redirects", retryable=False, error=exc)
    if isinstance(exc, (httpx.UnsupportedProtocol, httpx.InvalidURL)):
        return Failure("not a usable http(s) URL", retryable=False, error=exc)
    if isinstance(exc, httpx.DecodingError):  # a body its Content-Encoding (gzip, deflate) does not decode
        return Failure("the answer's body does not decode as its Content-Encoding says", retryable=False, error=exc)
    if isinstance(exc, httpx.TimeoutException):
        if ends is not None and (isinstance(exc, _deadline_types()[0]) or monotonic() >= ends):
            return _deadline_failure(exc)
        return Failure(f"timed out ({type(exc).__name__})", retryable=True, error=exc)
    return Failure(f"connection failed ({type(exc).__name__})", retryable=True, error=exc)


def _open(
    client: httpx.Client, request: HttpRequest, options: HttpOptions, ends: float | None
) -> httpx.Response | Failure:
    """One attempt up to the answer: the successful response, open, its body bounded by ``ends``; or the
    ``Failure`` (the failed answer ``classify``-ed and closed)."""
    try:
        built = request.build(client, options, ends)
        if isinstance(built, Failure):
            return built
        response = client.send(built, stream=True)
        coding = _unbounded_coding(response)
        if coding is not None:
            response.close()
            return Failure(f"answered in Content-Encoding {coding}, which was not asked for (a chunk of it may "
                           "decode to any size)", retryable=False, status=response.status_code)
        try:
            if ends is not None:
                response.stream = _deadline_types()[1](cast(httpx.SyncByteStream, response.stream), ends,
                                                       options.monotonic)
            if request.ok(response):
                return response
            failure = classify(response, options.clock, request.final, request.again)
        except BaseException:
            response.close()
            raise
        response.close()
        return failure
    except _send_errors() as exc:
        return _failure_of(exc, ends, options.monotonic)


def _send_once(
    client: httpx.Client, request: HttpRequest, options: HttpOptions, read: Callable[[httpx.Response], T | Failure]
) -> T | Failure:
    """One attempt: ``_open``, then ``read`` a success inside the attempt (a body cut off on the way is this
    attempt's failure), then close the answer. Errors ``read`` raises (a malformed body) pass through."""
    ends = options.ends()
    opened = _open(client, request, options, ends)
    if isinstance(opened, Failure):
        return opened
    try:
        return read(opened)
    except _send_errors() as exc:
        return _failure_of(exc, ends, options.monotonic)
    finally:
        opened.close()


def _retrying(request: HttpRequest, options: HttpOptions, attempt: Callable[[], T | Failure]) -> T | Failure:
    """The one retry loop: run ``attempt`` until it succeeds, fails for good, or the attempts run out.

    A retryable failure waits ``options.retry.wait`` (``Retry-After`` or the
    backoff) first; a wait that would end past ``options.until`` is not
    waited: the last failure is returned.
    """
    attempts = options.retry.attempts if request.retry else 1
    attempt_no = 0
    while True:
        outcome = attempt()
        if not isinstance(outcome, Failure) or not outcome.retryable or attempt_no + 1 >= attempts:
            return outcome
        wait = options.retry.wait(attempt_no, outcome.retry_after, options.jitter)
        if options.until is not None and options.monotonic() + wait >= options.until:
            return outcome
        if request.on_retry is not None:
            request.on_retry(outcome, wait)
        options.sleep(wait)
        attempt_no += 1


def read_body(response: httpx.Response) -> httpx.Response:
    """``send``'s default reader: the whole body read into the response (``response.content``), unbounded:
    for answers from a service the caller chose; a gateway's body is read with ``read_capped``."""
    response.read()
    return response


@overload
def send(client: httpx.Client, request: HttpRequest, options: HttpOptions) -> httpx.Response | Failure: ...


@overload
def send(
    client: httpx.Client, request: HttpRequest, options: HttpOptions, *, read: Callable[[httpx.Response], T | Failure]
) -> T | Failure: ...


def send(
    client: httpx.Client, request: HttpRequest, options: HttpOptions, *,
    read: Callable[[httpx.Response], Any] = read_body,
) -> Any:
    """Send ``request`` through the retry loop; ``read`` turns the successful answer into the result.

    Like ``httpx.Client.send`` without ``stream=True`` (httpx 0.28.1,
    ``httpx/_client.py``, ``Client.send``): the body is read before the
    answer is closed, here by ``read`` (default ``read_body``, the whole
    body; ``read_capped`` for a bounded one), inside each attempt, so a body
    cut off on the way is retried like any transport failure. Returns the
    result or the ``Failure`` that ended the loop; never raises for HTTP
    trouble. Each attempt gets ``options.ends()`` as its deadline.
    """
    return _retrying(request, options, lambda: _send_once(client, request, options, read))


@contextmanager
def stream(client: httpx.Client, request: HttpRequest, options: HttpOptions) -> Iterator[httpx.Response | Failure]:
    """Send ``request`` through the retry loop and yield the successful answer open, its body unread; close it
    on leaving the block. Yields the ``Failure`` that ended the loop instead (never raises for HTTP trouble).

    As ``httpx.Client.stream`` (httpx 0.28.1, ``httpx/_client.py``) is a
    context manager over ``send(..., stream=True)``. Retries end once an
    answer succeeds: reading its body is the caller's (errors on the way are
    raised to it), still bounded by the deadline ``options.ends()`` gave the
    attempt. To keep the answer open past the block (a loader reading a CAR
    as it needs blocks), enter it on a ``contextlib.ExitStack`` and hand on
    ``stack.pop_all().close``.
    """
    opened = _retrying(request, options, lambda: _open(client, request, options, options.ends()))
    try:
        yield opened
    finally:
        if not isinstance(opened, Failure):
            opened.close()


# -- redaction of library logs (the redaction itself is bundlekit._redact) ------------------------


# Credentials a library may print in its own debug logs (botocore logs whole
# requests, Authorization header included).
_LOG_PATTERNS = (
    re.compile(r"(Signature=)[0-9a-fA-F]+"),
    re.compile(r"(Credential=)[^/\s,'\"]+"),
    re.compile(r"((?:Bearer|Basic)\s+)[A-Za-z0-9._~+/=-]+"),
    re.compile(r"((?:X-Auth-Secret|x-auth-secret)['\"]?:\s*b?['\"]?)[^'\",\s]+"),
)


class _RedactingFilter(logging.Filter):
    """Rewrites a library's log record with every known secret removed (in every spelling), then as every
    output is (``bundlekit._redact.redact``: credential-looking text), and the credential patterns of
    request logs removed."""

    def __init__(self) -> None:
        super().__init__()
        self.secrets: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a malformed record must not break logging
            return True
        clean = redact_output(redact(message, self.secrets))
        for pattern in _LOG_PATTERNS:
            clean = pattern.sub(lambda m: m.group(1) + REDACTED, clean)
        if clean != message:
            record.msg, record.args = clean, None
        return True


_LIBRARY_FILTER = _RedactingFilter()
# The loggers httpx and httpcore write requests to.
HTTPX_LOGGERS = ("httpx", "httpcore.http11", "httpcore.http2", "httpcore.connection", "httpcore.proxy")
_FILTERED_LOGGERS: set[str] = set()


def redact_library_logs(secrets: Iterable[str], loggers: Iterable[str]) -> None:
    """Redact ``secrets`` (and credential patterns) from the named libraries' log records.

    A filter sits on each named logger (filters do not inherit, so list the
    ones that log requests, e.g. ``botocore.endpoint``); it is installed once
    and the secrets accumulate for the life of the process.
    """
    _LIBRARY_FILTER.secrets.update(s for s in secrets if s and len(s) >= MIN_SECRET_LEN)
    for name in loggers:
        if name not in _FILTERED_LOGGERS:
            logging.getLogger(name).addFilter(_LIBRARY_FILTER)
            _FILTERED_LOGGERS.add(name)


def redact_handlers(handlers: Iterable[logging.Handler]) -> None:
    """Pass every record ``handlers`` write through the same redaction (a handler's filter sees the records
    of every logger that propagates to it: an SDK's ``Invalid Host header: ...`` warning on stderr)."""
    for handler in handlers:
        if _LIBRARY_FILTER not in handler.filters:
            handler.addFilter(_LIBRARY_FILTER)
