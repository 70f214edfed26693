"""The secret guard points at --allow-secrets only where that bypass exists."""

from __future__ import annotations

import pytest

from bundlekit.errors import SecretDetectedError
from bundlekit.memory import Memory

AWS = "AKIAIOSFODNN7EXAMPLE"


def test_note_refusal_does_not_suggest_a_bypass_it_lacks() -> None:
    with pytest.raises(SecretDetectedError) as err:
        Memory(None).note("said", text=f"key {AWS}")
    assert "allow-secrets" not in str(err.value) and "no bypass" in str(err.value)
    assert AWS not in str(err.value)


def test_write_refusal_suggests_the_bypass() -> None:
    with pytest.raises(SecretDetectedError) as err:
        Memory(None).write("k", name="n", description="d", type="user", body=f"key {AWS}")
    assert "--allow-secrets" in str(err.value)
    assert AWS not in str(err.value)
