"""A loopback fake of an OpenAI-compatible embeddings endpoint, answering as the API documents.

The documented shapes (openai/openai-node 4.45.0, ``src/resources/embeddings.ts``): ``POST /embeddings``
takes ``{"model", "input": [texts], "encoding_format"}`` and answers ``{"object": "list", "data":
[{"object": "embedding", "embedding": [floats], "index": n}], "model", "usage": {"prompt_tokens",
"total_tokens"}}``; an error is a 4xx/5xx status with ``{"error": {"message", "type", "param", "code"}}``.
Each test queues the answers it wants; by default every text gets a deterministic vector of its own.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.net.loopback import serve

Answer = Callable[[BaseHTTPRequestHandler, dict[str, Any]], None]


def vector_of(text: str, dimension: int = 8) -> list[float]:
    """A deterministic vector per text (the fake's 'model')."""
    digest = hashlib.sha256(text.encode()).digest()
    return [(b - 128) / 128 for b in digest[:dimension]]


def send_json(handler: BaseHTTPRequestHandler, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    for name, value in (headers or {}).items():
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(data)


def error_body(message: str, kind: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def embeddings_answer(request: dict[str, Any], dimension: int = 8) -> dict[str, Any]:
    texts = request["input"]
    data = [{"object": "embedding", "embedding": vector_of(t, dimension), "index": i} for i, t in enumerate(texts)]
    data.reverse()  # the API gives each vector's index: a client must not rely on the order
    return {"object": "list", "data": data, "model": request["model"],
            "usage": {"prompt_tokens": len(texts), "total_tokens": len(texts)}}


@dataclass
class FakeEndpoint:
    url: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    targets: list[str] = field(default_factory=list)  # each request's path and query, as sent
    answers: list[Answer] = field(default_factory=list)


@contextmanager
def fake_endpoint(dimension: int = 8) -> Iterator[FakeEndpoint]:
    """The fake on loopback; queued ``answers`` are used first, one per request, then the documented success."""
    state: list[FakeEndpoint] = []

    def answer(handler: BaseHTTPRequestHandler) -> None:
        endpoint = state[0]
        length = int(handler.headers.get("Content-Length") or 0)
        request = json.loads(handler.rfile.read(length) or b"{}")
        endpoint.requests.append(request)
        endpoint.headers.append({k.lower(): v for k, v in handler.headers.items()})
        endpoint.targets.append(handler.path)
        if handler.path.split("?", 1)[0].rstrip("/") != "/v1/embeddings":
            send_json(handler, 404, error_body(f"Invalid URL (POST {handler.path})", "invalid_request_error"))
            return
        if endpoint.answers:
            endpoint.answers.pop(0)(handler, request)
            return
        send_json(handler, 200, embeddings_answer(request, dimension))

    with serve(answer) as base:
        state.append(FakeEndpoint(url=f"{base}/v1"))
        yield state[0]
