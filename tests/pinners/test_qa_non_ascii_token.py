"""A non-ASCII credential is a configuration error naming the variable (issue 12, item 5).

HTTP headers carry ASCII only; before, a token with a typographic quote or a
non-breaking space failed inside httpx with a ``UnicodeEncodeError`` traceback.
"""

from __future__ import annotations

import pytest

from bundlekit.errors import PinnerNotConfigured
from bundlekit.pinning.registry import create_pinner

CANARY = "CANARYtoken0123"


@pytest.mark.parametrize(
    ("name", "env", "variable"),
    [
        ("pinata", {"PINATA_JWT": f"{CANARY}\u201d"}, "PINATA_JWT"),
        ("psa", {"BUNDLEKIT_PSA_URL": "https://psa.example", "PSA_TOKEN": f"\u00a0{CANARY}"}, "PSA_TOKEN"),
    ],
)
def test_a_non_ascii_token_is_not_configured(name: str, env: dict[str, str], variable: str) -> None:
    with pytest.raises(PinnerNotConfigured, match=f"{variable} holds a non-ASCII character") as caught:
        create_pinner(name, env)
    assert CANARY not in str(caught.value)


def test_an_international_service_url_is_still_accepted() -> None:
    with create_pinner("psa", {"BUNDLEKIT_PSA_URL": "https://épingle.example", "PSA_TOKEN": "t0ken"}):
        pass
