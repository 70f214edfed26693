"""``stream`` and ``send``'s default reader: the two verbs over the one retry loop (HTTP mocked with respx).

``stream`` is shaped as httpx's ``Client.stream`` (httpx 0.28.1, ``httpx/_client.py``): a context manager
yielding the answer open and closing it on leaving; here retried first, and a ``Failure`` in place of a raise.
"""

from __future__ import annotations

import httpx
import pytest
import respx

from bundlekit.net.http import Failure, HttpOptions, HttpRequest, send, stream

from .ticks import Ticks, chunks

URL = "https://svc.test/car"
NO_SLEEP = HttpOptions(sleep=lambda s: None, jitter=lambda: 0.0)


@respx.mock
def test_stream_retries_a_503_then_yields_the_answer_with_its_body_unread() -> None:
    route = respx.get(URL).mock(side_effect=[httpx.Response(503), httpx.Response(200, content=b"car bytes")])
    with httpx.Client() as client, stream(client, HttpRequest("GET", URL), NO_SLEEP) as answer:
        assert isinstance(answer, httpx.Response)
        assert not answer.is_stream_consumed
        assert answer.read() == b"car bytes"
    assert route.call_count == 2


@respx.mock
def test_stream_closes_the_answer_on_leaving_the_block() -> None:
    respx.get(URL).mock(return_value=httpx.Response(200, content=b"car bytes"))
    with httpx.Client() as client:
        with stream(client, HttpRequest("GET", URL), NO_SLEEP) as answer:
            assert isinstance(answer, httpx.Response) and not answer.is_closed
        assert answer.is_closed


@respx.mock
def test_stream_closes_the_answer_when_the_block_raises() -> None:
    respx.get(URL).mock(return_value=httpx.Response(200, content=b"car bytes"))
    seen: list[httpx.Response] = []
    with httpx.Client() as client, pytest.raises(ValueError, match="malformed"):
        with stream(client, HttpRequest("GET", URL), NO_SLEEP) as answer:
            assert isinstance(answer, httpx.Response)
            seen.append(answer)
            raise ValueError("malformed")
    assert seen[0].is_closed


@respx.mock
def test_stream_yields_a_final_status_as_a_failure_without_retrying() -> None:
    route = respx.get(URL).mock(return_value=httpx.Response(404))
    with httpx.Client() as client, stream(client, HttpRequest("GET", URL), NO_SLEEP) as answer:
        assert isinstance(answer, Failure) and answer.status == 404 and not answer.retryable
    assert route.call_count == 1


@respx.mock
def test_stream_keeps_the_deadline_on_a_body_read_in_the_block() -> None:
    respx.get(URL).mock(return_value=httpx.Response(200, content=chunks(100)))
    options = HttpOptions(deadline=10.0, monotonic=Ticks(), sleep=lambda s: None)
    with httpx.Client() as client, stream(client, HttpRequest("GET", URL), options) as answer:
        assert isinstance(answer, httpx.Response)
        with pytest.raises(httpx.TimeoutException, match="deadline"):
            answer.read()


@respx.mock
def test_send_without_a_reader_returns_the_answer_with_its_whole_body_read() -> None:
    respx.get(URL).mock(return_value=httpx.Response(200, content=chunks(5)))
    with httpx.Client() as client:
        answer = send(client, HttpRequest("GET", URL), NO_SLEEP)
    assert isinstance(answer, httpx.Response) and answer.content == b"xxxxx" and answer.is_closed
