"""The OpenAI-compatible embedder against a loopback fake answering as the OpenAI embeddings API documents
(tests/embed/fake_openai.py names the source): requests, vectors by index, and every error a client meets."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from bundlekit.cli import cli
from bundlekit.embed.openai import BATCH, OpenAIEmbedder
from bundlekit.embed.protocol import EmbedderSettings
from bundlekit.errors import EmbedderError, UsageError
from bundlekit.net.http import HttpOptions, RetryPolicy
from tests.embed.fake_openai import Answer, error_body, fake_endpoint, send_json, vector_of
from tests.embed.trees import memory_tree

KEY = "sk-test-0123456789abcdefghij"
QUICK = HttpOptions(retry=RetryPolicy(attempts=3), sleep=lambda _s: None, timeout=5.0)


def embedder(url: str, *, key: str | None = KEY) -> OpenAIEmbedder:
    return OpenAIEmbedder(url, "text-embedding-3-small", key=key, http=QUICK)


def embed(url: str, texts: list[str], *, key: str | None = KEY) -> np.ndarray:
    with embedder(url, key=key) as e:
        return e.embed(texts)


def test_texts_are_embedded_in_order_whatever_order_the_answer_lists_them() -> None:
    with fake_endpoint() as fake:
        vectors = embed(fake.url, ["alpha", "beta", "gamma"])
    assert vectors.dtype == np.float32 and vectors.shape == (3, 8)
    assert np.allclose(vectors, [vector_of(t) for t in ["alpha", "beta", "gamma"]])


def test_the_request_is_the_documented_one_with_the_key_as_a_bearer_token() -> None:
    with fake_endpoint() as fake:
        embed(fake.url, ["alpha"])
    assert fake.requests == [{"model": "text-embedding-3-small", "input": ["alpha"], "encoding_format": "float"}]
    assert fake.headers[0]["authorization"] == f"Bearer {KEY}"


def test_no_key_sends_no_authorization_header() -> None:
    with fake_endpoint() as fake:
        embed(fake.url, ["alpha"], key=None)
    assert "authorization" not in fake.headers[0]


def test_many_texts_go_in_batches() -> None:
    with fake_endpoint() as fake:
        vectors = embed(fake.url, [f"t{i}" for i in range(BATCH + 3)])
    assert [len(r["input"]) for r in fake.requests] == [BATCH, 3] and vectors.shape == (BATCH + 3, 8)


def test_model_id_and_dimension_come_from_the_model_and_the_first_answer() -> None:
    with fake_endpoint(dimension=12) as fake, embedder(fake.url) as e:
        assert e.model_id == "openai/text-embedding-3-small"
        assert e.dimension == 12


def test_the_key_comes_from_the_environment_variable() -> None:
    settings = EmbedderSettings(name="openai", url="http://127.0.0.1:9/v1", model="m", env={"BUNDLEKIT_EMBED_KEY": KEY})
    assert OpenAIEmbedder.from_settings(settings)._key == KEY


def test_missing_url_or_model_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="--embed-url"):
        OpenAIEmbedder.from_settings(EmbedderSettings(name="openai", model="m", env={}))


def answer(status: int, body: Any, headers: dict[str, str] | None = None) -> Answer:
    """One queued answer of the fake: ``status`` with the JSON ``body`` (or raw bytes)."""
    return lambda handler, _request: send_json(handler, status, body, headers)


def error_from(*answers: Answer) -> tuple[str, int]:
    """The ``EmbedderError`` message one embed call ends with after ``answers``, and the requests it made."""
    with fake_endpoint() as fake:
        fake.answers.extend(answers)
        with pytest.raises(EmbedderError) as info:
            embed(fake.url, ["alpha"])
    return str(info.value), len(fake.requests)


def test_401_names_the_key_variable_and_never_the_key() -> None:
    message, requests = error_from(answer(401, error_body(f"Incorrect API key provided: {KEY}.",
                                                          "invalid_request_error", "invalid_api_key")))
    assert "BUNDLEKIT_EMBED_KEY" in message and KEY not in message
    assert requests == 1  # never retried


def test_429_is_retried_then_reported() -> None:
    limited = answer(429, error_body("Rate limit reached", "requests", "rate_limit_exceeded"), {"Retry-After": "0"})
    message, requests = error_from(limited, limited, limited)
    assert "429" in message and requests == 3


def test_429_then_success_returns_the_vectors() -> None:
    with fake_endpoint() as fake:
        fake.answers.append(answer(429, error_body("Rate limit reached", "requests"), {"Retry-After": "0"}))
        assert embed(fake.url, ["alpha"]).shape == (1, 8)


def test_400_shows_the_servers_message() -> None:
    message, _ = error_from(answer(400, error_body("This model's maximum context length is 8192 tokens",
                                                   "invalid_request_error")))
    assert "HTTP 400" in message and "maximum context length" in message


def test_malformed_json_is_an_embedder_error() -> None:
    assert "malformed JSON" in error_from(answer(200, b'{"object": "list", "data": ['))[0]


def test_a_changed_dimension_is_an_embedder_error() -> None:
    def shorter(handler: BaseHTTPRequestHandler, request: dict[str, Any]) -> None:
        send_json(handler, 200, {"object": "list", "model": "m", "data": [
            {"object": "embedding", "embedding": vector_of(t, 4), "index": i} for i, t in enumerate(request["input"])]})

    with fake_endpoint() as fake, embedder(fake.url) as e:
        e.embed(["alpha"])
        fake.answers.append(shorter)
        with pytest.raises(EmbedderError, match="4-dimension vectors after 8-dimension"):
            e.embed(["beta"])


def test_fewer_vectors_than_texts_is_an_embedder_error() -> None:
    def short(handler: BaseHTTPRequestHandler, _r: dict[str, Any]) -> None:
        send_json(handler, 200, {"object": "list", "data": [{"embedding": [0.1, 0.2], "index": 0}]})

    with fake_endpoint() as fake:
        fake.answers.append(short)
        with pytest.raises(EmbedderError, match="1 embeddings for 2 texts"):
            embed(fake.url, ["alpha", "beta"])


def test_an_oversize_answer_is_cut_off_at_its_bound() -> None:
    sent: list[int] = []

    def flood(handler: BaseHTTPRequestHandler, _r: dict[str, Any]) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.end_headers()
        chunk = b" " * 65536
        try:
            for _ in range(2000):  # 128 MiB if read whole
                handler.wfile.write(chunk)
                sent.append(len(chunk))
        except (BrokenPipeError, ConnectionResetError):
            pass
        handler.close_connection = True

    with fake_endpoint() as fake:
        fake.answers.append(flood)
        with pytest.raises(EmbedderError, match="more bytes"):
            embed(fake.url, ["alpha"])
    assert sum(sent) < 64 * 1024 * 1024


def test_an_unusable_url_is_a_usage_error() -> None:
    with pytest.raises(UsageError):
        OpenAIEmbedder("ftp://example.com", "m")
    assert json.dumps  # the module's json is the one the fake answers with


@pytest.mark.parametrize("url", ["http://embed.example/v1", "http://10.0.0.7:11434/v1", "HTTP://[2001:db8::1]/v1"])
def test_the_key_is_never_sent_over_plain_http_to_a_host_that_is_not_loopback(url: str) -> None:
    with pytest.raises(UsageError, match="refusing to send BUNDLEKIT_EMBED_KEY over plain http") as refused:
        embedder(url)
    assert KEY not in str(refused.value)


@pytest.mark.parametrize("url", ["https://embed.example/v1", "http://127.0.0.1:11434/v1", "http://localhost:8080",
                                 "http://[::1]:8080/v1", "http://127.0.0.2/v1"])
def test_the_key_may_go_over_https_or_to_a_loopback_http_server(url: str) -> None:
    embedder(url).close()


@pytest.mark.parametrize("url", ["http://127.1:11434/v1", "http://2130706433/v1", "http://0x7f000001/v1",
                                 "http://[::ffff:127.0.0.1]/v1", "http://[::ffff:7f00:1]:8080/v1",
                                 "http://[0:0:0:0:0:0:0:1]/v1"])
def test_the_key_may_go_over_http_to_loopback_written_as_the_resolver_also_reads_it(url: str) -> None:
    # getaddrinfo reads 127.1, 2130706433 and 0x7f000001 as inet_aton does (127.0.0.1); a mapped address is too
    embedder(url).close()


@pytest.mark.parametrize("url", ["http://localhost./v1", "http://127.0.0.1@evil.example/v1",
                                 "http://evil.example#@127.0.0.1/v1", "http://evil.example?@127.0.0.1/v1",
                                 "http://127.0.0.1.nip.io/v1", "http://localhost.evil.example/v1",
                                 "http://[::ffff:10.0.0.7]/v1", "http://0.0.0.0/v1", "http://0x80000001/v1",
                                 "http://[::127.0.0.1]/v1"])
def test_the_key_is_refused_over_http_to_names_and_addresses_that_only_look_loopback(url: str) -> None:
    # a name asked of DNS (localhost. included) can point anywhere; userinfo and fragments are not the host
    with pytest.raises(UsageError, match="refusing to send BUNDLEKIT_EMBED_KEY over plain http"):
        embedder(url)


def test_without_a_key_a_plain_http_endpoint_elsewhere_is_allowed() -> None:
    embedder("http://10.0.0.7:11434/v1", key=None).close()


def test_recall_with_the_key_and_a_plain_http_endpoint_elsewhere_exits_2_naming_the_problem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = memory_tree(tmp_path / "memory", ("reel",))
    monkeypatch.setenv("BUNDLEKIT_EMBED_KEY", KEY)
    result = CliRunner().invoke(cli, ["memory", "-d", str(tree), "recall", "videos", "--rank", "semantic",
                                      "--embed-url", "http://embed.example/v1", "--embed-model", "m"])
    assert result.exit_code == 2
    assert "refusing to send BUNDLEKIT_EMBED_KEY over plain http to embed.example" in result.stderr
    assert KEY not in result.output and "Traceback" not in result.output
