"""A stop signal that lands while the MCP SDK or uvicorn starts is raised inside their code, which may wrap it in
an exception of its own; ``run_http`` still ends as that stop (seen once in CI: SIGHUP sent right after
`mcp --http` announced itself ended with exit 1 "internal error ... Interrupted: SIGTERM")."""

from __future__ import annotations

import signal
from typing import Any

import pytest

pytest.importorskip("mcp")

from bundlekit._signals import Interrupted  # noqa: E402
from bundlekit.mcp_server import http_server, server  # noqa: E402


def _wrapped(signum: int) -> RuntimeError:
    """A RuntimeError whose context is a group raised from ``Interrupted(signum)``."""
    group = ExceptionGroup("startup", [RuntimeError("lifespan failed")])
    group.__cause__ = Interrupted(signum)
    wrapper = RuntimeError("while starting")
    wrapper.__context__ = group
    return wrapper


def _serve_raising(exc: BaseException) -> Any:
    def serve(*_args: object) -> None:
        raise exc

    return serve


@pytest.fixture
def tools(monkeypatch: pytest.MonkeyPatch) -> object:
    monkeypatch.setattr(server, "build_server", lambda _tools: _App())
    monkeypatch.setattr(server, "_check_bindable", lambda _host, _port: None)
    return object()


class _App:
    def streamable_http_app(self, **_kw: object) -> object:
        return object()


def test_a_wrapped_sigterm_while_starting_is_the_servers_normal_end(monkeypatch: pytest.MonkeyPatch, tools: Any) -> None:
    monkeypatch.setattr(http_server, "serve", _serve_raising(_wrapped(signal.SIGTERM)))
    assert server.run_http(tools, "127.0.0.1", 1) is None


def test_a_wrapped_sighup_while_starting_interrupts_as_sighup(monkeypatch: pytest.MonkeyPatch, tools: Any) -> None:
    group = BaseExceptionGroup("startup", [ValueError("x"), Interrupted(signal.SIGHUP)])
    wrapper = RuntimeError("while starting")
    wrapper.__cause__ = group
    monkeypatch.setattr(http_server, "serve", _serve_raising(wrapper))
    with pytest.raises(Interrupted) as caught:
        server.run_http(tools, "127.0.0.1", 1)
    assert caught.value.signum == signal.SIGHUP


def test_an_error_without_a_stop_signal_is_not_taken_for_one(monkeypatch: pytest.MonkeyPatch, tools: Any) -> None:
    monkeypatch.setattr(http_server, "serve", _serve_raising(RuntimeError("a real defect")))
    with pytest.raises(RuntimeError, match="a real defect"):
        server.run_http(tools, "127.0.0.1", 1)
