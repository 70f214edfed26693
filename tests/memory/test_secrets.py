"""The secret guard: one positive case per rule, messages without the secret, few false positives.

Credential-shaped strings are assembled at run time so this file does not
itself look like it carries secrets to scanners.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bundlekit.errors import SecretDetectedError
from bundlekit.memory import Memory, find_secrets

from .conftest import fields

B62 = "aB3dE5fG7hJ9kL1mN2pQ4rS6tU8vW0xYz"
SAMPLES = {
    "aws-access-key-id": ["AKIA" + "IOSFODNN7EXAMPLE", "ASIA" + "Y34FZKBOKMUTVV7A"],
    "github-token": [p + (B62 + "abc")[:36] for p in ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")]
    + ["github_" + "pat_11ABCDEFG0" + B62 + "_" + B62],
    "openai-api-key": [
        "sk-" + B62 + "T3BlbkFJ" + B62[:8],
        "sk-" + "proj-" + B62 + "-" + B62,
        "sk-" + "a" * 48,
    ],
    "anthropic-api-key": ["sk-" + "ant-api03-" + B62 + B62],
    "slack-token": ["xox" + "b-1234567890-0987654321-" + B62[:24], "xox" + "p-12345678901-abcdefgh"],
    "pem-private-key": [
        "-----BEGIN " + "RSA PRIVATE KEY-----",
        "-----BEGIN " + "PRIVATE KEY-----",
        "-----BEGIN " + "OPENSSH PRIVATE KEY-----",
        "-----BEGIN " + "EC PRIVATE KEY-----",
    ],
    "jwt": [
        "eyJ"
        + "hbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJ"
        + "zdWIiOiIxMjM0NTY3ODkwIn0."
        + "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
    ],
}
CASES = [(rule, sample) for rule, samples in SAMPLES.items() for sample in samples]


@pytest.mark.parametrize(("rule", "secret"), CASES)
def test_each_rule_detects_its_credential(rule: str, secret: str) -> None:
    findings = find_secrets(f"line one\nthe value is {secret} ok\n")
    assert [(f.rule, f.line) for f in findings] == [(rule, 2)]


@pytest.mark.parametrize(("rule", "secret"), CASES)
def test_write_refuses_secret_naming_rule_and_line_without_the_secret(
    mem: Memory, tree: Path, rule: str, secret: str
) -> None:
    with pytest.raises(SecretDetectedError) as info:
        mem.write("k", **fields(body=f"first\n{secret}\n"))
    message = str(info.value)
    assert rule in message and message.startswith("k.md (not written) body line 2 ")  # the field and its line
    assert secret not in message and secret[4:20] not in message
    assert not (tree / "k.md").exists()


def test_secret_in_a_frontmatter_value_is_refused(mem: Memory) -> None:
    with pytest.raises(SecretDetectedError, match="aws-access-key-id"):
        mem.write("k", **fields(source="AKIA" + "IOSFODNN7EXAMPLE"))


def test_secret_in_extra_frontmatter_is_refused(mem: Memory) -> None:
    with pytest.raises(SecretDetectedError, match="github-token"):
        mem.write("k", **fields(), extra={"token": "ghp_" + (B62 + "abc")[:36]})


def test_allow_secrets_bypasses_the_guard(mem: Memory) -> None:
    record = mem.write("k", **fields(body="AKIA" + "IOSFODNN7EXAMPLE"), allow_secrets=True)
    assert "IOSFODNN7EXAMPLE" in record.body


def test_note_with_a_secret_is_refused(mem: Memory) -> None:
    with pytest.raises(SecretDetectedError, match="slack-token"):
        mem.note("said", text="xox" + "b-1234567890-abcdefghijkl")
    assert mem.timeline() == []


def test_check_flags_a_secret_added_by_hand(mem: Memory, tree: Path) -> None:
    record = mem.write("k", **fields())
    (tree / "k.md").write_text(record.raw + "\n" + "-----BEGIN " + "PRIVATE KEY-----\n", encoding="utf-8")
    with pytest.raises(SecretDetectedError, match="k.md line .*pem-private-key"):
        mem.check()


@pytest.mark.parametrize(
    "text",
    [
        "We used sk-learn for the model.",
        "scikit-learn, a.k.a. sk-learn-compatible-pipeline-wrapper-classes",
        "risk-management-framework-document-2026-final",
        "xoxo, see you Saturday",
        "the AKIA prefix means an access key",
        "ghp_short",
        "eyJ is how base64 JSON starts",
        "BEGIN PUBLIC KEY and -----BEGIN CERTIFICATE-----",
        "task-0123456789abcdefghij",
        "ask-me-anything-about-football-drills",
    ],
)
def test_ordinary_prose_is_not_flagged(text: str) -> None:
    assert find_secrets(text) == []


# The guard points at --allow-secrets only where that bypass exists.

AWS = "AKIA" + "IOSFODNN7EXAMPLE"


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
