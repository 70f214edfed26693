"""QA regression: a token holding a line break never reaches an error message, escaped or not."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from bundlekit.errors import BundlekitError
from bundlekit.net.http import redact
from bundlekit.pinning.registry import create_pinner

CANARY = "CANARYtoken0123"


@pytest.mark.parametrize(
    "secret",
    [f"{CANARY}\n", f"{CANARY}\nmore", f"{CANARY}\r\nX-Injected: 1", f"caf\u00e9{CANARY}\t"],
)
def test_redact_removes_escaped_and_split_forms(secret: str) -> None:
    messages = [
        f"Illegal header value {('Bearer ' + secret).encode('utf-8')!r}",
        f"value {secret!r}",
        f"value {secret}",
    ]
    for message in messages:
        assert CANARY not in redact(message, [secret])


def test_redact_leaves_other_text_alone() -> None:
    assert redact("connect to example.org failed", ["s3cr3t-value"]) == "connect to example.org failed"


@pytest.fixture
def listener() -> Iterator[int]:
    # A bare loopback socket: the client fails on the bad header before any reply is needed.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(4)
        yield int(sock.getsockname()[1])


@pytest.mark.parametrize(("name", "variable"), [("pinata", "PINATA_JWT"), ("kubo", "BUNDLEKIT_KUBO_TOKEN")])
def test_a_token_holding_a_newline_is_never_echoed(listener: int, name: str, variable: str) -> None:
    url = f"http://127.0.0.1:{listener}"
    env = {
        variable: f"{CANARY}\nrest",
        "BUNDLEKIT_PINATA_API_URL": url,
        "BUNDLEKIT_PINATA_UPLOAD_URL": url,
        "BUNDLEKIT_KUBO_URL": url,
    }
    # pinata refuses the value when built; kubo's optional token reaches the HTTP layer and fails there.
    with pytest.raises(BundlekitError) as caught, create_pinner(name, env) as pinner:
        pinner.check()  # type: ignore[attr-defined]
    assert CANARY not in str(caught.value)


@pytest.mark.parametrize("value", [f"{CANARY}\n", f"{CANARY}\r\nX-Injected: 1"])
def test_a_token_with_a_line_break_is_a_configuration_error_naming_only_the_variable(value: str) -> None:
    from bundlekit.errors import PinnerNotConfigured

    with pytest.raises(PinnerNotConfigured, match="PINATA_JWT holds a line break") as caught:
        create_pinner("pinata", {"PINATA_JWT": value})
    assert CANARY not in str(caught.value)


def test_a_blank_token_is_not_configured() -> None:
    from bundlekit.errors import PinnerNotConfigured

    with pytest.raises(PinnerNotConfigured, match="set PINATA_JWT"):
        create_pinner("pinata", {"PINATA_JWT": "   "})


def test_pinners_lists_a_blank_token_as_not_configured() -> None:
    from bundlekit.pinning.registry import pinner_factory

    assert not pinner_factory("pinata").is_configured({"PINATA_JWT": "  "})  # type: ignore[attr-defined]
