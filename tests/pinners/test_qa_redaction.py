"""QA regression: a token holding a line break never reaches an error message, escaped or not."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from bundlekit._http import redact
from bundlekit.errors import BundlekitError
from bundlekit.pinning import create_pinner

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


def test_pinata_check_with_a_token_holding_a_newline_does_not_echo_it(listener: int) -> None:
    url = f"http://127.0.0.1:{listener}"
    env = {
        "PINATA_JWT": f"{CANARY}\nrest",
        "BUNDLEKIT_PINATA_API_URL": url,
        "BUNDLEKIT_PINATA_UPLOAD_URL": url,
    }
    with create_pinner("pinata", env) as pinner, pytest.raises(BundlekitError) as caught:
        pinner.check()  # type: ignore[attr-defined]
    assert CANARY not in str(caught.value)
