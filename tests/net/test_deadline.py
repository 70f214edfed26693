"""One total deadline per response and per caller (issue 12, item 4): the per-read timeout alone let a
server that sends one byte every few seconds keep a load alive for ever."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import respx

from bundlekit.errors import LoadError
from bundlekit.net.http import Failure, HttpOptions, HttpRequest, open_client, read_capped, send

from .loopback import drip, serve
from .ticks import Ticks, chunks

URL = "http://gw.test/slow"


def _get(options: HttpOptions) -> bytes | Failure:
    client, _owned = open_client(options)
    with client:
        return send(client, HttpRequest("GET", URL), options, read=lambda r: read_capped(r, 1 << 20))


@respx.mock
def test_a_body_still_arriving_at_the_response_deadline_is_a_final_failure() -> None:
    respx.get(URL).mock(return_value=httpx.Response(200, content=chunks(100)))
    got = _get(HttpOptions(deadline=10.0, monotonic=Ticks(), sleep=lambda s: None))
    assert isinstance(got, Failure) and got.deadline and not got.retryable
    assert "deadline" in got.reason


@respx.mock
def test_a_body_within_the_deadline_is_read_whole() -> None:
    respx.get(URL).mock(return_value=httpx.Response(200, content=chunks(5)))
    assert _get(HttpOptions(deadline=100.0, monotonic=Ticks())) == b"xxxxx"


@respx.mock
def test_no_request_is_sent_once_the_callers_deadline_has_passed() -> None:
    route = respx.get(URL).mock(return_value=httpx.Response(200, content=b"late"))
    got = _get(HttpOptions(until=0.5, monotonic=Ticks()))
    assert isinstance(got, Failure) and got.deadline
    assert not route.called


@respx.mock
def test_no_retry_waits_past_the_callers_deadline() -> None:
    route = respx.get(URL).mock(return_value=httpx.Response(503, headers={"Retry-After": "30"}))
    sleeps: list[float] = []
    clock = Ticks()
    got = _get(HttpOptions(until=20.0, monotonic=clock, sleep=sleeps.append))
    assert isinstance(got, Failure) and got.status == 503
    assert sleeps == [] and route.call_count == 1


def test_a_gateway_dripping_one_byte_every_two_seconds_is_stopped_by_the_load_deadline(tmp_path: Path) -> None:
    """``bundlekit load --deadline 1`` against a drip: a clear error, well inside the harness's 60 s bound."""
    cid = "bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku"
    with serve(drip(every=2.0)) as gateway:
        result = subprocess.run(
            [sys.executable, "-m", "bundlekit", "load", "--gateway", gateway, "--deadline", "1", f"ipfs://{cid}"],
            capture_output=True, text=True, timeout=60, cwd=tmp_path, check=False,
        )
    assert result.returncode == LoadError.exit_code, result.stderr
    assert "within its 1-second deadline" in result.stderr and "Traceback" not in result.stderr
