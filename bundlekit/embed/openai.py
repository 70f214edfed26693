"""An OpenAI-compatible embeddings endpoint (OpenAI, Ollama, llama.cpp's server, vLLM...).

The API as OpenAI documents it (openai/openai-node 4.45.0,
``src/resources/embeddings.ts``: ``POST /embeddings``; the request's ``input``
(strings, at most 2048 of them), ``model`` and ``encoding_format``; the answer
``{"object": "list", "data": [{"object": "embedding", "embedding": [floats],
"index": n}], "model": ..., "usage": {...}}``; errors answer with a 4xx or 5xx
status and ``{"error": {"message", "type", "param", "code"}}``). We send
``POST {url}/embeddings`` with ``encoding_format: "float"`` and the key (the
environment variable ``BUNDLEKIT_EMBED_KEY``; none for a local server) as a
bearer token, through ``net/http`` (timeouts, retries of 408/429/5xx). The key is never sent over plain
``http://`` to a host that is not loopback (``UsageError``: anyone on the way could read it); a local server
on 127.0.0.1, ``localhost`` or ``[::1]`` may take http, and so may any endpoint when no key is set.

Every answer is foreign: its body is read up to a bound set by the batch
(:func:`answer_limit`), the JSON must be the documented shape with one finite
vector per text (each ``index`` once), all of one length, that of the first
answer. Anything else is an ``EmbedderError`` naming what was wrong, with the
server's own message cut short and redacted.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import httpx
import numpy as np
from numpy.typing import NDArray

from bundlekit._closing import Closing
from bundlekit._redact import redact, redact_known
from bundlekit._terminal import printable
from bundlekit.embed.protocol import KEY_ENV, MAX_DIMENSION, EmbedderSettings, check_model_id
from bundlekit.errors import EmbedderError, UsageError
from bundlekit.net.http import Failure, HttpOptions, HttpRequest, check_http_url, open_client, read_capped, send
from bundlekit.net.loopback import is_loopback

__all__ = ["BATCH", "DEADLINE", "OpenAIEmbedder", "answer_limit", "endpoint_url"]

BATCH = 128  # texts per request (the API takes at most 2048)
# Seconds one answer may take, body included, unless the caller's options set another deadline: a server
# that trickles its answer a byte at a time (each within the read timeout) cannot hold a recall forever.
# 128 texts on a CPU-only local server take seconds; five minutes is far past any honest answer.
DEADLINE = 300.0
MAX_TEXT_CHARS = 32_768
_PER_VECTOR = MAX_DIMENSION * 32  # bytes a vector's JSON may take: digits, signs, exponents, commas
_MESSAGE = 200


def endpoint_url(base: str) -> str:
    """``POST`` target of the base URL ``base``: ``/embeddings`` appended to its path, its query kept (Azure's
    ``?api-version=``) and its fragment dropped, so the path never ends up inside a query or a fragment."""
    url = httpx.URL(base)
    return str(url.copy_with(path=url.path.rstrip("/") + "/embeddings", fragment=None))


def answer_limit(count: int) -> int:
    """The most bytes an answer for ``count`` texts may hold."""
    return 64 * 1024 + count * _PER_VECTOR


class OpenAIEmbedder(Closing):
    """Embeddings from ``POST {url}/embeddings`` with ``model``; the key from ``BUNDLEKIT_EMBED_KEY``."""

    name = "openai"

    def __init__(self, url: str, model: str, *, key: str | None = None, http: HttpOptions | None = None) -> None:
        check_http_url(url, what="--embed-url")
        if not url.lower().startswith(("http://", "https://")):
            raise UsageError(f"--embed-url {url[:120]!r} is not an http(s) URL")
        self._key = key or None
        _refuse_key_in_clear(url, self._key)
        self._url = endpoint_url(url)
        self._model = model
        self._model_id = check_model_id(f"openai/{model}", what="--embed-model")
        http = http or HttpOptions()
        self._http = http if http.deadline is not None else replace(http, deadline=DEADLINE)
        self._client: httpx.Client | None = None
        self._owned = False
        self._dimension: int | None = None

    @classmethod
    def from_settings(cls, settings: EmbedderSettings) -> OpenAIEmbedder:
        if not settings.url or not settings.model:
            raise UsageError("the openai embedder needs --embed-url URL and --embed-model NAME")
        key = settings.environment().get(KEY_ENV, "").strip()
        if any(ord(c) < 0x20 or ord(c) == 0x7F for c in key) or not key.isascii():
            raise UsageError(f"{KEY_ENV} holds a control or non-ASCII character; set it again")
        return cls(settings.url, settings.model, key=key)

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dimension(self) -> int:
        """The vectors' length: the first answer's (one short request when nothing was embedded yet)."""
        if self._dimension is None:
            self.embed(["dimension"])
        assert self._dimension is not None
        return self._dimension

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        rows: list[NDArray[np.float32]] = []
        for start in range(0, len(texts), BATCH):
            rows.append(self._request([t[:MAX_TEXT_CHARS] or " " for t in texts[start : start + BATCH]]))
        if not rows:
            return np.zeros((0, self._dimension or 0), dtype=np.float32)
        return np.concatenate(rows)

    def _request(self, batch: list[str]) -> NDArray[np.float32]:
        if self._client is None:
            self._client, self._owned = open_client(self._http)
        headers = {"Authorization": f"Bearer {self._key}"} if self._key else {}
        limit = answer_limit(len(batch))
        request = HttpRequest("POST", self._url, headers=headers,
                              json={"model": self._model, "input": batch, "encoding_format": "float"})
        outcome = send(self._client, request, self._http, read=lambda response: read_capped(response, limit))
        if isinstance(outcome, Failure):
            raise EmbedderError(self._failure(outcome))
        return self._vectors(outcome, len(batch))

    def _where(self) -> str:
        return f"the embeddings endpoint {redact(self._url)}"

    def _failure(self, failure: Failure) -> str:
        where = self._where()
        if failure.too_large:
            return f"{where} answered with more bytes than the vectors asked for can take ({failure.reason})"
        if failure.status in (401, 403):
            return f"{where} refused the key (HTTP {failure.status}); set {KEY_ENV} to a key it accepts"
        if failure.status == 429:
            return f"{where} is rate limiting (HTTP 429) after every retry; try again later"
        detail = _server_message(failure.response, self._key) if failure.response is not None else None
        told = f": {detail}" if detail else ""
        return f"{where} failed ({failure.reason}){told}"

    def _vectors(self, body: bytes, count: int) -> NDArray[np.float32]:
        where = self._where()
        try:
            answer = json.loads(body, parse_constant=_no_constant)
        except (ValueError, RecursionError) as exc:
            raise EmbedderError(f"{where} answered with malformed JSON ({type(exc).__name__})") from None
        data = answer.get("data") if isinstance(answer, dict) else None
        if not isinstance(data, list) or len(data) != count:
            got = len(data) if isinstance(data, list) else "no"
            raise EmbedderError(f"{where} answered with {got} embeddings for {count} texts")
        out: list[list[float] | None] = [None] * count
        for item in data:
            index = item.get("index") if isinstance(item, dict) else None
            vector = item.get("embedding") if isinstance(item, dict) else None
            if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < count or out[index] is not None:
                raise EmbedderError(f"{where} answered with a missing, repeated or out-of-range 'index'")
            out[index] = _checked_vector(vector, where)
        lengths = {len(v) for v in out if v is not None}
        if len(lengths) != 1:
            raise EmbedderError(f"{where} answered with vectors of different lengths ({sorted(lengths)[:4]})")
        dimension = lengths.pop()
        if self._dimension is not None and dimension != self._dimension:
            raise EmbedderError(
                f"{where} answered with {dimension}-dimension vectors after {self._dimension}-dimension ones; "
                "the model behind it changed"
            )
        self._dimension = dimension
        return np.asarray(out, dtype=np.float32)

    def close(self) -> None:
        if self._client is not None and self._owned:
            self._client.close()
        self._client = None


def _refuse_key_in_clear(url: str, key: str | None) -> None:
    """``UsageError`` when ``key`` would travel over plain http to a host that is not loopback: anyone on the
    path reads a bearer token in the clear. A local server (Ollama, llama.cpp on 127.0.0.1) may take http;
    an endpoint without a key may too (nothing secret is sent)."""
    parsed = httpx.URL(url)
    if key is None or parsed.scheme != "http" or is_loopback(parsed.host):
        return
    raise UsageError(
        f"refusing to send {KEY_ENV} over plain http to {printable(parsed.host)[:120]}: anyone on the way could "
        f"read it; use an https:// --embed-url, a loopback one (127.0.0.1, localhost, [::1]), or unset {KEY_ENV}"
    )


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")


def _checked_vector(vector: object, where: str) -> list[float]:
    if not isinstance(vector, list) or not 0 < len(vector) <= MAX_DIMENSION:
        raise EmbedderError(f"{where} answered with an 'embedding' that is not a list of 1 to {MAX_DIMENSION} numbers")
    for value in vector:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or abs(value) > 1e30:
            raise EmbedderError(f"{where} answered with an 'embedding' holding a value that is not a finite number")
    return vector


def _server_message(response: httpx.Response, key: str | None) -> str | None:
    """The ``error.message`` of a failed answer (as the API documents errors), cut short and made printable."""
    try:
        error: Any = json.loads(response.content[:16_384]).get("error")
    except (ValueError, AttributeError, RecursionError):
        return None
    message = error.get("message") if isinstance(error, dict) else error if isinstance(error, str) else None
    if not isinstance(message, str) or not message.strip():
        return None
    return printable(redact(redact_known(message[:_MESSAGE], [key] if key else [])))
