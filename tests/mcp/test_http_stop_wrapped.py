"""A stop signal that lands while the MCP SDK or uvicorn starts is raised inside their code, which may wrap it in
an exception of its own; ``run_http`` still ends as that stop (seen once in CI: SIGHUP sent right after
`mcp --http` announced itself ended with exit 1 "internal error ... Interrupted: SIGTERM")."""

from __future__ import annotations

import signal
from collections.abc import Callable
from typing import Any

import pytest

from bundlekit._signals import Interrupted
from tests.mcp.conftest import skip_without_the_sdk

skip_without_the_sdk()

#: What the tests replace: the server modules import the SDK, so they are named here and imported when a test runs.
SERVE = "bundlekit.mcp_server.http_server.serve"


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
def run_http(monkeypatch: pytest.MonkeyPatch) -> Callable[[], object]:
    """``server.run_http`` on 127.0.0.1:1 with the SDK's app and the bind check replaced."""
    from bundlekit.mcp_server import server

    monkeypatch.setattr(server, "build_server", lambda _tools: _App())
    monkeypatch.setattr(server, "_check_bindable", lambda _host, _port: None)
    tools: Any = object()
    return lambda: server.run_http(tools, "127.0.0.1", 1)


class _App:
    def streamable_http_app(self, **_kw: object) -> object:
        return object()


def test_a_wrapped_sigterm_while_starting_is_the_servers_normal_end(
    monkeypatch: pytest.MonkeyPatch, run_http: Callable[[], object]
) -> None:
    monkeypatch.setattr(SERVE, _serve_raising(_wrapped(signal.SIGTERM)))
    assert run_http() is None


def test_a_wrapped_sighup_while_starting_interrupts_as_sighup(
    monkeypatch: pytest.MonkeyPatch, run_http: Callable[[], object]
) -> None:
    group = BaseExceptionGroup("startup", [ValueError("x"), Interrupted(signal.SIGHUP)])
    wrapper = RuntimeError("while starting")
    wrapper.__cause__ = group
    monkeypatch.setattr(SERVE, _serve_raising(wrapper))
    with pytest.raises(Interrupted) as caught:
        run_http()
    assert caught.value.signum == signal.SIGHUP


def test_an_error_without_a_stop_signal_is_not_taken_for_one(
    monkeypatch: pytest.MonkeyPatch, run_http: Callable[[], object]
) -> None:
    monkeypatch.setattr(SERVE, _serve_raising(RuntimeError("a real defect")))
    with pytest.raises(RuntimeError, match="a real defect"):
        run_http()
