"""Loopback fakes of the account services, answering as each documents (fixtures/seed/), and hostile ones.

:class:`FakeService` is a threaded ``http.server`` on 127.0.0.1 whose answers come from a function of the
request (:class:`Asked` -> :class:`Answer`); every request is recorded. :func:`github_app`, :func:`hub_app` and
:func:`x_app` answer the documented calls with the documented fixtures, 401 with the documented error body
when the credential is wrong; the hostile answers (100 MB, deep JSON, slow bodies, redirects elsewhere,
endless pages) are built by the tests from :class:`Answer`.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from urllib.parse import parse_qs, urlsplit

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "seed"


def fixture(name: str) -> object:
    """A documented example, parsed (``github/user.json``)."""
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


@dataclass(frozen=True)
class Asked:
    """One request as the fake saw it."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]


@dataclass
class Answer:
    """What the fake sends: status, headers, and the body as bytes or as chunks (each after ``pause`` s)."""

    status: int = 200
    body: bytes | Iterable[bytes] = b""
    headers: dict[str, str] = field(default_factory=dict)
    pause: float = 0.0

    @classmethod
    def json(cls, value: object, status: int = 200, headers: dict[str, str] | None = None,
             content_type: str = "application/json; charset=utf-8") -> Answer:
        return cls(status, json.dumps(value).encode(), {"Content-Type": content_type, **(headers or {})})


App = Callable[[Asked], Answer]


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:  # noqa: N802  (http.server's name)
        split = urlsplit(self.path)
        asked = Asked("GET", split.path, {k: v[-1] for k, v in parse_qs(split.query).items()},
                      {k.lower(): v for k, v in self.headers.items()})
        self.server.asked.append(asked)
        answer = self.server.app(asked)
        self.send_response(answer.status)
        for name, value in answer.headers.items():
            self.send_header(name, value)
        try:
            if isinstance(answer.body, bytes):
                self.send_header("Content-Length", str(len(answer.body)))
                self.end_headers()
                self.wfile.write(answer.body)
                return
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for chunk in answer.body:
                if answer.pause:
                    time.sleep(answer.pause)
                self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, app: App) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.app = app
        self.asked: list[Asked] = []


class FakeService:
    """A loopback service answering with ``app``; ``url`` is its base, ``asked`` what it was asked."""

    def __init__(self, app: App) -> None:
        self._server = _Server(app)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def asked(self) -> list[Asked]:
        return self._server.asked

    def set_app(self, app: App) -> None:
        self._server.app = app

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeService:
        return self

    def __exit__(self, *exc: object | TracebackType) -> None:
        self.close()


# -- GitHub: github/rest-api-description; rate limits as "Rate limits for the REST API" documents them --------

GITHUB_LIMIT = {"x-ratelimit-limit": "5000", "x-ratelimit-remaining": "4999", "x-ratelimit-used": "1",
                "x-ratelimit-resource": "core", "x-ratelimit-reset": str(int(time.time()) + 3600)}


def github_app(token: str, *, user: object | None = None, repos: object | None = None) -> App:
    """``GET /user``, ``/user/repos`` (pages of ``per_page``), ``/repos/{owner}/{repo}/languages`` for ``token``."""
    profile = fixture("github/user.json") if user is None else user
    listed = fixture("github/repos.json") if repos is None else repos

    def app(asked: Asked) -> Answer:
        if asked.headers.get("authorization") != f"Bearer {token}":
            return Answer.json(fixture("github/error-401.json"), 401, GITHUB_LIMIT)
        if asked.path == "/user":
            return Answer.json(profile, headers=GITHUB_LIMIT)
        if asked.path == "/user/repos":
            per_page, page = int(asked.query.get("per_page", "30")), int(asked.query.get("page", "1"))
            assert isinstance(listed, list)
            return Answer.json(listed[(page - 1) * per_page: page * per_page], headers=GITHUB_LIMIT)
        if asked.path.startswith("/repos/") and asked.path.endswith("/languages"):
            return Answer.json(fixture("github/languages.json"), headers=GITHUB_LIMIT)
        return Answer.json({"message": "Not Found", "documentation_url": "https://docs.github.com/rest"}, 404)

    return app


# -- the Farcaster hub: farcasterxyz/hub-monorepo apps/hubble/www/docs/docs/httpapi/ ------------------------------

def hub_app(fid: int, verified: list[str]) -> App:
    """``userDataByFid`` and ``verificationsByFid`` for ``fid``: the documented messages, the fid and the
    verified addresses put in; a bad fid answers the documented 400."""

    def app(asked: Asked) -> Answer:
        if not asked.query.get("fid", "").isdigit():
            return Answer.json(fixture("farcaster/error-400.json"), 400)
        if asked.path == "/v1/userDataByFid":
            answer = fixture("farcaster/userDataByFid.json")
            assert isinstance(answer, dict)
            for message in answer["messages"]:
                message["data"]["fid"] = fid
            return Answer.json(answer)
        if asked.path == "/v1/verificationsByFid":
            answer = fixture("farcaster/verificationsByFid.json")
            assert isinstance(answer, dict)
            template = answer["messages"][0]
            answer["messages"] = []
            for address in verified:
                message = json.loads(json.dumps(template))
                message["data"]["fid"] = fid
                message["data"]["verificationAddEthAddressBody"]["address"] = address
                answer["messages"].append(message)
            return Answer.json(answer)
        return Answer.json(fixture("farcaster/error-400.json"), 400)

    return app


# -- X: the API v2 OpenAPI description; x-rate-limit-* as xdevplatform's SDK reads them -------------------------

X_LIMIT = {"x-rate-limit-limit": "75", "x-rate-limit-remaining": "74",
           "x-rate-limit-reset": str(int(time.time()) + 900)}


def x_app(token: str, *, me: object | None = None, tweets: object | None = None) -> App:
    """``GET /2/users/me`` and ``/2/users/{id}/tweets`` for ``token``; a wrong one answers the Problem 401."""
    profile = fixture("x/users-me.json") if me is None else me
    posts = fixture("x/tweets.json") if tweets is None else tweets

    def app(asked: Asked) -> Answer:
        if asked.headers.get("authorization") != f"Bearer {token}":
            return Answer.json(fixture("x/problem-401.json"), 401, X_LIMIT, "application/problem+json")
        if asked.path == "/2/users/me":
            return Answer.json(profile, headers=X_LIMIT)
        if asked.path.startswith("/2/users/") and asked.path.endswith("/tweets"):
            return Answer.json(posts, headers=X_LIMIT)
        return Answer.json({"title": "Not Found Error", "type": "about:blank", "status": 404,
                            "detail": "not found"}, 404, content_type="application/problem+json")

    return app
