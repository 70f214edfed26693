"""The pinning error map over the one HTTP layer: what a service's answer means for a pin.

``bundlekit.net.http`` sends, retries and waits; this module only says what
the final outcome means to a pinner, in one place for every HTTP pinner (the
table ``_ERROR_MAP``, first row that holds; a service's own answers come in as
its :class:`ServiceRules`):

* success (2xx, or the caller's ``ok``)         -> the response, body read
* a URL without http(s)                          -> ``PinnerNotConfigured`` (never sent again)
* HTTP 410, or the service's ``sunset`` answer   -> ``PinServiceSunset`` (never retried)
* the service's ``refused`` answer (kubo's 500 with ``{"Message": ...}``: a command
  error, not an outage)                          -> ``PinRejected`` (never retried)
* HTTP 401 / 403                                 -> ``PinAuthError`` (never retried)
* any other 4xx except 408 / 429                 -> ``PinRejected`` (never retried)
* 429 after the last attempt                     -> ``PinRateLimited``
* 408, 5xx, timeouts, connection errors, after the last attempt -> ``PinUnavailable``

Every message and log line passes through ``redact`` with the client's
secrets, so a token never leaves this module in clear.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from bundlekit._closing import Closing
from bundlekit._lazy import lazy_module
from bundlekit.errors import (
    PinAuthError,
    PinError,
    PinnerNotConfigured,
    PinRateLimited,
    PinRejected,
    PinServiceSunset,
    PinUnavailable,
    UsageError,
)
from bundlekit.net.http import (
    HTTPX_LOGGERS,
    Failure,
    HttpOptions,
    HttpRequest,
    RetryPolicy,
    redact,
    redact_library_logs,
    Timeouts,
    send,
    tls_context,
)

if TYPE_CHECKING:
    import httpx
else:  # imported at a pinner's first request (DEVELOPERS.md, "Lazy imports")
    httpx = lazy_module("httpx")

__all__ = [
    "UPLOAD_OPTIONS",
    "UPLOAD_RETRY",
    "UPLOAD_TIMEOUT",
    "Credentials",
    "HttpClient",
    "ServiceRules",
    "service_url",
    "node_credentials",
    "pin_error",
]

log = logging.getLogger("bundlekit.http")

# Connect fast, but allow slow reads/writes: a 100 MB CAR on a CI runner's uplink
# can take minutes, and the service may take a while to answer after the last byte.
UPLOAD_TIMEOUT = Timeouts(connect=15.0, read=120.0, write=120.0, pool=15.0)
# Uploads are worth waiting for: more attempts and longer waits than retrieval.
UPLOAD_RETRY = RetryPolicy(attempts=5, base=0.5, cap=30.0, max_retry_after=300.0)
UPLOAD_OPTIONS = HttpOptions(timeout=UPLOAD_TIMEOUT, retry=UPLOAD_RETRY)

_BODY_SNIPPET = 300
_DEFAULT_SUNSET_HINT = "use another pinner (Pinata, Filebase or a kubo node)"


@dataclass(frozen=True)
class Credentials:
    """What a node's API behind a proxy needs: headers, HTTP auth, and the secrets to redact."""

    headers: dict[str, str] = field(default_factory=dict)
    auth: tuple[str, str] | None = None
    secrets: tuple[str, ...] = ()


def node_credentials(token: str | None, basic_auth: str | None, basic_var: str) -> Credentials:
    """A bearer ``token``, else HTTP basic from ``basic_auth`` (``user:password``), else none.

    Raises UsageError naming ``basic_var`` for a ``basic_auth`` without a colon (never its value).
    """
    if token:
        return Credentials({"Authorization": f"Bearer {token}"}, None, (token,))
    if basic_auth:
        user, sep, password = basic_auth.partition(":")
        if not sep:
            raise UsageError(f"{basic_var} must be user:password")
        return Credentials({}, (user, password), (basic_auth, password))
    return Credentials()


_NOT_JSON: Any = object()  # HttpClient.json: the body did not parse


def _host(url: str) -> str:
    try:
        return httpx.URL(url).host or url
    except httpx.InvalidURL:
        return "the service"


def _snippet(response: httpx.Response, clean: Callable[[str], str]) -> str:
    """The start of a response body, on one line, for an error message.

    The whole body is cleaned (redacted) before it is cut: a secret echoed across
    the cut would otherwise leave its first characters, which no redaction finds.
    """
    text = clean(" ".join(response.content.decode("utf-8", errors="replace").split()))
    return text[:_BODY_SNIPPET] + ("..." if len(text) > _BODY_SNIPPET else "")


@dataclass(frozen=True)
class ServiceRules:
    """What a service's failed answer means beyond its status code, one value per service.

    ``sunset`` recognises the service's "this API is gone" answer (``sunset_hint`` says where to go
    instead); ``refused`` a 5xx answer that is the service's own refusal of the request rather than an
    outage. Both are final: never retried.
    """

    sunset: Callable[[httpx.Response], bool] | None = None
    sunset_hint: str = ""
    refused: Callable[[httpx.Response], bool] | None = None

    def final(self, response: httpx.Response) -> bool:
        """A failed answer never worth retrying: the sunset or the service's own refusal."""
        return any(p is not None and p(response) for p in (self.sunset, self.refused))


@dataclass(frozen=True)
class _Outcome:
    """What :func:`pin_error`'s table rows look at: the final failure and the service's rules."""

    failure: Failure
    rules: ServiceRules

    @property
    def status(self) -> int | None:
        return None if self.failure.response is None else self.failure.response.status_code

    def answered(self, predicate: Callable[[httpx.Response], bool] | None) -> bool:
        response = self.failure.response
        return response is not None and predicate is not None and predicate(response)


# The pinning error map, in the module docstring's order: the first row whose test holds gives the error class
# and the message (a template over ``service``, ``url``, ``label``, ``host``, ``kind`` and ``exc`` of a failure
# without an answer, ``where`` and ``detail`` of an answer, ``hint`` of a sunset).
_ERROR_MAP: tuple[tuple[Callable[[_Outcome], bool], type[PinError], str], ...] = (
    (lambda o: o.failure.unusable_url, PinnerNotConfigured,
     "{service}: {url!r} is not a usable http(s) URL; "
     "fix the service's *_URL setting (it must start with http:// or https://)"),
    (lambda o: o.status is None and isinstance(o.failure.error, httpx.TimeoutException), PinUnavailable,
     "{service}: {label} to {host} timed out ({kind}); the service may be overloaded: retry later or raise the timeout"),
    (lambda o: o.status is None, PinUnavailable,
     "{service}: {label} to {host} failed ({kind}: {exc}); check the service URL and your network, then retry"),
    (lambda o: o.status == 410 or o.answered(o.rules.sunset), PinServiceSunset,
     "{where}{detail}; this API no longer accepts uploads: {hint}"),
    (lambda o: o.answered(o.rules.refused), PinRejected,
     "{where}{detail}; the service refused the request (not retried): check the input"),
    (lambda o: o.status in (401, 403), PinAuthError,
     "{where}: the credentials were refused; check the token's value and permissions"),
    (lambda o: o.status == 429, PinRateLimited, "{where}: rate limited after every retry; wait and run again"),
    (lambda o: o.failure.retryable, PinUnavailable, "{where}{detail}; the service is failing: retry later"),
    (lambda o: True, PinRejected, "{where}{detail}; the request was refused: check the input and settings"),
)


def pin_error(
    failure: Failure,
    *,
    service: str,
    url: str,
    label: str,
    rules: ServiceRules = ServiceRules(),  # noqa: B008 (frozen: one shared value is safe)
    clean: Callable[[str], str] = str,
) -> PinError:
    """The pinning error for a final ``Failure`` (the first row of ``_ERROR_MAP`` that holds); ``clean``
    redacts its message."""
    outcome = _Outcome(failure, rules)
    facts = {"service": service, "url": url, "label": label, "host": _host(url),
             "kind": type(failure.error).__name__, "exc": failure.error,
             "hint": rules.sunset_hint or _DEFAULT_SUNSET_HINT, "where": "", "detail": ""}
    if failure.response is not None and not failure.unusable_url:
        snippet = _snippet(failure.response, clean)
        facts["where"] = f"{service}: {label} answered HTTP {failure.response.status_code}"
        facts["detail"] = f": {snippet}" if snippet else ""
    kind, template = next((kind, template) for test, kind, template in _ERROR_MAP if test(outcome))
    return kind(clean(template.format(**facts)))


def _buffered(ok: Callable[[httpx.Response], bool]) -> Callable[[httpx.Response], bool]:
    """``ok`` over a response whose body is read first (service predicates look at ``.text``)."""

    def check(response: httpx.Response) -> bool:
        response.read()
        return ok(response)

    return check


def service_url(base: str, path: str) -> str:
    """``path`` (``api/v0/version``) joined onto the path of the service URL ``base``, whose query is kept:
    ``http://node/kubo?token=T`` gives ``http://node/kubo/api/v0/version?token=T`` (a proxy's credential in
    the query still reaches it), never ``...?token=T/api/v0/version``. A fragment is never sent."""
    parts = urlsplit(base)
    joined = parts.path.rstrip("/") + "/" + path.lstrip("/")
    return urlunsplit((parts.scheme, parts.netloc, joined, parts.query, ""))


class HttpClient(Closing):
    """A pinning service's HTTP client: the shared retry loop plus the pinning error map.

    ``service`` names the service in messages ("Pinata", "kubo", ...).
    ``secrets`` are redacted from every message and log line. ``options``
    defaults to ``UPLOAD_OPTIONS`` (its ``client`` is not used: the client
    carries this service's headers and auth). ``sunset`` is an optional
    ``rules`` (:class:`ServiceRules`) say what a failed answer means beyond
    its status code: the service's sunset and its own refusals. Tests answer for a service with respx, which patches
    httpx's default transport.
    """

    def __init__(
        self,
        service: str,
        *,
        headers: Mapping[str, str] | None = None,
        auth: httpx.Auth | tuple[str, str] | None = None,
        secrets: Sequence[str] = (),
        options: HttpOptions = UPLOAD_OPTIONS,
        rules: ServiceRules = ServiceRules(),  # noqa: B008 (frozen: one shared value is safe)
    ) -> None:
        self.service = service
        self.secrets = tuple(secrets)
        self.options = options
        self.rules = rules
        redact_library_logs(self.secrets, HTTPX_LOGGERS)
        self._client = httpx.Client(
            verify=tls_context(),
            headers=dict(headers or {}),
            auth=auth,
            timeout=options.timeout,
            follow_redirects=False,
        )

    def close(self) -> None:
        """Close the connection pool."""
        self._client.close()

    def redact(self, text: str) -> str:
        """``text`` with this client's secrets removed."""
        return redact(text, self.secrets)

    def json(self, response: httpx.Response, what: str = "", *, anything: bool = False) -> Any:
        """``response``'s JSON body, an object unless ``anything``; ``PinUnavailable`` otherwise.

        A 2xx answer that is not JSON (a proxy's login page, a wrong URL) would
        otherwise escape as a bare ``JSONDecodeError`` (a traceback from the CLI,
        "crashed" in a pin report), and one that is not an object as an
        ``AttributeError`` at the first ``.get``.
        """
        try:
            body = response.json()
        except ValueError:
            body = _NOT_JSON
        if body is _NOT_JSON or not (anything or isinstance(body, dict)):
            raise PinUnavailable(self.redact(
                f"{self.service}: {what or 'the answer'}: {_host(str(response.url))} did not answer a JSON "
                f"{'document' if anything else 'object'} ({_snippet(response, self.redact)}); "
                "check that the URL is the service's API"
            ))
        return body

    def request(
        self, call: HttpRequest, what: str = "", *, before_retry: Callable[[Failure], None] | None = None
    ) -> httpx.Response:
        """Send ``call`` through the shared retry loop; return the successful response (body read).

        ``call`` says what to send (``body`` is called before *each* attempt,
        so a file body can be rewound and re-sent), which answers count as
        success (``ok``, default 2xx) and whether a lost attempt may be sent
        again (``retry=False``: non-idempotent calls the caller cannot safely
        repeat); its ``final`` and ``on_retry`` are this client's (the
        service's sunset and refusal answers; a log line). ``what`` describes
        the call for messages ("upload CAR"). ``before_retry(failure)`` runs
        before each retry; it may raise to stop retrying (a non-idempotent
        upload that first checks whether the lost attempt landed).

        Raises PinnerNotConfigured, PinAuthError, PinRejected, PinServiceSunset
        (never retried), PinRateLimited or PinUnavailable (after the last attempt).
        """
        label = what or call.method

        def note_retry(failure: Failure, wait: float) -> None:
            if before_retry is not None:
                before_retry(failure)
            log.info(self.redact(f"{self.service}: {label}: {self._error(failure, call.url, label)}; "
                                 f"retrying in {wait:.2f}s"))

        mine = replace(call, ok=_buffered(call.ok), final=self.rules.final, on_retry=note_retry)
        outcome = send(self._client, mine, self.options)
        if isinstance(outcome, Failure):
            raise self._error(outcome, call.url, label) from outcome.error
        log.debug(self.redact(f"{self.service}: {call.method} {call.url} -> {outcome.status_code}"))
        return outcome

    def _error(self, failure: Failure, url: str, label: str) -> PinError:
        return pin_error(failure, service=self.service, url=url, label=label, rules=self.rules, clean=self.redact)
