"""The one retry loop: which failures retry, how long it waits, when it gives up (HTTP mocked with respx)."""

from __future__ import annotations

import dataclasses
import gzip
from collections.abc import Iterator
from datetime import UTC, datetime

import httpx
import pytest
import respx

from bundlekit.net.http import (
    DEFAULT_TIMEOUT,
    Failure,
    HttpOptions,
    HttpRequest,
    RetryPolicy,
    is_retryable_status,
    open_client,
    read_capped,
    send,
)

URL = "https://svc.test/thing"
NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def _body(response: httpx.Response) -> bytes:
    return response.read()


def _get(sleeps: list[float], *, retry: RetryPolicy | None = None, jitter: float = 0.0,
         final: object = None) -> bytes | Failure:
    options = HttpOptions(retry=retry or RetryPolicy(), sleep=sleeps.append, jitter=lambda: jitter,
                          clock=lambda: NOW)
    with httpx.Client() as client:
        return send(client, HttpRequest("GET", URL, final=final), options, read=_body)  # type: ignore[arg-type]


@pytest.mark.parametrize("status", [408, 429, 500, 502, 503, 504, 599])
def test_retryable_statuses_are_408_429_and_5xx(status: int) -> None:
    assert is_retryable_status(status)


@pytest.mark.parametrize("status", [400, 401, 403, 404, 409, 410, 422])
def test_other_4xx_statuses_are_final(status: int) -> None:
    assert not is_retryable_status(status)


@pytest.mark.parametrize("status", [408, 429, 500, 503])
@respx.mock
def test_a_retryable_status_then_success_returns_the_body(status: int) -> None:
    route = respx.get(URL).mock(side_effect=[httpx.Response(status), httpx.Response(200, content=b"ok")])
    sleeps: list[float] = []
    assert _get(sleeps) == b"ok"
    assert route.call_count == 2 and len(sleeps) == 1


@pytest.mark.parametrize("status", [400, 401, 403, 404, 410])
@respx.mock
def test_a_final_status_is_not_retried(status: int) -> None:
    route = respx.get(URL).mock(return_value=httpx.Response(status, text="no"))
    sleeps: list[float] = []
    outcome = _get(sleeps)
    assert isinstance(outcome, Failure) and outcome.status == status and not outcome.retryable
    assert route.call_count == 1 and sleeps == []
    assert outcome.response is not None and outcome.response.text == "no"


@respx.mock
def test_retryable_failures_until_the_last_attempt_return_the_last_failure() -> None:
    route = respx.get(URL).mock(return_value=httpx.Response(503))
    sleeps: list[float] = []
    outcome = _get(sleeps, retry=RetryPolicy(attempts=4))
    assert isinstance(outcome, Failure) and outcome.reason == "HTTP 503" and outcome.retryable
    assert route.call_count == 4 and len(sleeps) == 3


@respx.mock
def test_retry_after_in_seconds_replaces_the_backoff() -> None:
    respx.get(URL).mock(side_effect=[httpx.Response(429, headers={"Retry-After": "7"}), httpx.Response(200)])
    sleeps: list[float] = []
    _get(sleeps)
    assert sleeps == [7.0]


@respx.mock
def test_retry_after_as_an_http_date_is_honoured() -> None:
    respx.get(URL).mock(side_effect=[
        httpx.Response(503, headers={"Retry-After": "Thu, 01 Jan 2026 12:00:12 GMT"}), httpx.Response(200),
    ])
    sleeps: list[float] = []
    _get(sleeps)
    assert sleeps == [12.0]


@respx.mock
def test_retry_after_is_capped() -> None:
    respx.get(URL).mock(side_effect=[httpx.Response(429, headers={"Retry-After": "86400"}), httpx.Response(200)])
    sleeps: list[float] = []
    _get(sleeps, retry=RetryPolicy(max_retry_after=9.0))
    assert sleeps == [9.0]


@respx.mock
def test_backoff_doubles_and_is_capped() -> None:
    respx.get(URL).mock(return_value=httpx.Response(500))
    sleeps: list[float] = []
    _get(sleeps, retry=RetryPolicy(attempts=5, base=1.0, cap=4.0))
    assert sleeps == [0.5, 1.0, 2.0, 2.0]  # jitter 0: half of min(cap, base * 2**n)


@respx.mock
def test_the_injected_jitter_scales_the_backoff() -> None:
    respx.get(URL).mock(return_value=httpx.Response(500))
    sleeps: list[float] = []
    _get(sleeps, retry=RetryPolicy(attempts=3, base=1.0, cap=30.0), jitter=1.0)
    assert sleeps == [1.0, 2.0]  # jitter 1: the full min(cap, base * 2**n)


@respx.mock
def test_a_timeout_is_retried_and_named() -> None:
    route = respx.get(URL).mock(side_effect=httpx.ReadTimeout("slow"))
    sleeps: list[float] = []
    outcome = _get(sleeps, retry=RetryPolicy(attempts=2))
    assert isinstance(outcome, Failure) and outcome.reason == "timed out (ReadTimeout)" and outcome.retryable
    assert isinstance(outcome.error, httpx.ReadTimeout)
    assert route.call_count == 2


@respx.mock
def test_a_connection_error_then_success_recovers() -> None:
    respx.get(URL).mock(side_effect=[httpx.ConnectError("refused"), httpx.Response(200, content=b"ok")])
    sleeps: list[float] = []
    assert _get(sleeps) == b"ok" and len(sleeps) == 1


def test_a_url_without_a_scheme_is_final_and_marked_unusable() -> None:
    sleeps: list[float] = []
    options = HttpOptions(sleep=sleeps.append)
    with httpx.Client() as client:
        outcome = send(client, HttpRequest("GET", "localhost:5001/x"), options, read=_body)
    assert isinstance(outcome, Failure) and outcome.unusable_url and not outcome.retryable
    assert sleeps == []


@respx.mock
def test_a_final_predicate_stops_retries_of_a_5xx() -> None:
    route = respx.get(URL).mock(return_value=httpx.Response(503, text="this API has been sunset"))
    sleeps: list[float] = []
    outcome = _get(sleeps, final=lambda r: "sunset" in r.text)
    assert isinstance(outcome, Failure) and not outcome.retryable
    assert route.call_count == 1


@respx.mock
def test_a_body_over_the_limit_is_cut_and_not_retried() -> None:
    route = respx.get(URL).mock(return_value=httpx.Response(200, content=b"x" * 100))
    options = HttpOptions(sleep=lambda s: None)
    with httpx.Client() as client:
        outcome = send(client, HttpRequest("GET", URL), options, read=lambda r: read_capped(r, 10))
    assert isinstance(outcome, Failure) and outcome.too_large and not outcome.retryable
    assert route.call_count == 1


class _CutOff(httpx.SyncByteStream):
    """A body that sends a few bytes, then the connection drops."""

    def __iter__(self) -> Iterator[bytes]:
        yield b"ab"
        raise httpx.ReadError("connection reset")


@respx.mock
def test_a_body_cut_off_midway_is_retried_and_the_next_answer_read_whole() -> None:
    route = respx.get(URL).mock(side_effect=[httpx.Response(200, stream=_CutOff()),
                                             httpx.Response(200, content=b"abcd")])
    sleeps: list[float] = []
    assert _get(sleeps) == b"abcd"
    assert route.call_count == 2 and len(sleeps) == 1


@respx.mock
def test_a_compressed_body_is_cut_at_the_limit_of_what_it_decodes_to() -> None:
    bomb = gzip.compress(b"\0" * (8 << 20))
    respx.get(URL).mock(return_value=httpx.Response(200, content=bomb, headers={"Content-Encoding": "gzip"}))
    with httpx.Client() as client:
        outcome = send(client, HttpRequest("GET", URL), HttpOptions(sleep=lambda s: None),
                       read=lambda r: read_capped(r, 1 << 20))
    assert len(bomb) < 1 << 20
    assert isinstance(outcome, Failure) and outcome.too_large and not outcome.retryable


@respx.mock
def test_a_body_factory_is_called_for_every_attempt() -> None:
    seen: list[bytes] = []

    def record(request: httpx.Request) -> httpx.Response:
        seen.append(request.content)
        return httpx.Response(503 if len(seen) == 1 else 200)

    respx.post(URL).mock(side_effect=record)
    with httpx.Client() as client:
        send(client, HttpRequest("POST", URL, body=lambda: {"content": b"payload"}), HttpOptions(sleep=lambda s: None),
             read=_body)
    assert seen == [b"payload", b"payload"]


# -- the options object ----------------------------------------------------------------------


def test_default_options_time_out_every_phase_and_retry_three_times() -> None:
    options = HttpOptions()
    assert options.timeout is DEFAULT_TIMEOUT
    assert None not in (DEFAULT_TIMEOUT.connect, DEFAULT_TIMEOUT.read, DEFAULT_TIMEOUT.write, DEFAULT_TIMEOUT.pool)
    assert options.retry == RetryPolicy() and options.retry.attempts == 3


def test_options_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        HttpOptions().retry = RetryPolicy(attempts=1)  # type: ignore[misc]


def test_a_given_client_is_used_and_left_open() -> None:
    with httpx.Client() as mine:
        client, owned = open_client(HttpOptions(client=mine))
        assert client is mine and not owned


def test_without_a_client_one_is_made_with_the_options_timeout() -> None:
    client, owned = open_client(HttpOptions(timeout=3.0))
    try:
        assert owned and client.timeout == httpx.Timeout(3.0)
    finally:
        client.close()


@pytest.mark.parametrize("status", [200, 500])
@respx.mock
def test_a_body_that_does_not_decode_as_its_content_encoding_is_a_final_failure(status: int) -> None:
    route = respx.get(URL).mock(return_value=httpx.Response(  # a stream: decoded as it is read, not here
        status, stream=httpx.ByteStream(b"\x1f\x8bnot gzip at all"), headers={"Content-Encoding": "gzip"}))
    sleeps: list[float] = []
    outcome = _get(sleeps)
    assert isinstance(outcome, Failure) and not outcome.retryable
    assert "does not decode" in outcome.reason
    assert route.call_count == 1 and sleeps == []


@pytest.mark.parametrize("coding", ["br", "zstd", "identity, BR"])
@respx.mock
def test_an_answer_in_a_coding_never_asked_for_is_refused_unread(coding: str) -> None:
    route = respx.get(URL).mock(return_value=httpx.Response(
        200, stream=httpx.ByteStream(b"\x00" * 64), headers={"Content-Encoding": coding}))
    outcome = _get([])
    assert isinstance(outcome, Failure) and not outcome.retryable and "not asked for" in outcome.reason
    assert route.calls.last.request.headers["Accept-Encoding"] == "gzip, deflate"
