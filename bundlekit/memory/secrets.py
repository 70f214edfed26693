"""The secret guard: refuse memory content that looks like a credential.

Memory must never carry credentials (seed 003: "Secrets, API keys, or tokens —
ever"). Each rule is a regular expression with realistic lengths so that prose
like "sk-learn" or "xoxo" does not trip it. A finding names the rule and the
line; it never repeats the matched text.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from bundlekit.errors import SecretDetectedError

__all__ = ["SECRET_RULES", "Finding", "SecretRule", "find_secrets", "guard"]

# A token must not be glued to a preceding word character ("risk-..." is not "sk-...").
# The check sits *after* each pattern's first literal character: a pattern that opens
# with a lookbehind loses the regex engine's literal-prefix search and scans every
# position (measured: ~35x slower, which made the guard dominate bundle builds).
_GLUED = r"(?<![A-Za-z0-9_].)"


def _token(first: str, rest: str) -> re.Pattern[str]:
    """``first`` (one literal character) then ``rest``, refusing a match glued to a word."""
    return re.compile(re.escape(first) + _GLUED + rest)


@dataclass(frozen=True)
class SecretRule:
    """A named credential pattern; ``accept`` can veto a match (false-positive filter)."""

    name: str
    description: str
    pattern: re.Pattern[str]
    accept: Callable[[str], bool] = lambda match: True


def _not_kebab_prose(match: str) -> bool:
    # "sk-learn-compatible-pipeline-wrapper" is prose: lowercase words joined by hyphens.
    # Real keys are random base62/base64url (mixed case and digits), or at least not hyphenated words.
    tail = match.split("-", 1)[1]
    return not (re.fullmatch(r"[a-z-]+", tail) and tail.count("-") >= 1)


SECRET_RULES: tuple[SecretRule, ...] = (
    SecretRule(
        "aws-access-key-id",
        "an AWS access key id",
        _token("A", r"(?:KIA|SIA)[0-9A-Z]{16}(?![A-Za-z0-9])"),
    ),
    SecretRule(
        "github-token",
        "a GitHub token",
        _token("g", r"(?:h[pousr]_[A-Za-z0-9]{36,}|ithub_pat_[A-Za-z0-9_]{50,})(?![A-Za-z0-9_])"),
    ),
    # Before the OpenAI rule: Anthropic keys also start with "sk-".
    SecretRule(
        "anthropic-api-key",
        "an Anthropic API key",
        _token("s", r"k-ant-[A-Za-z0-9_-]{20,}"),
    ),
    SecretRule(
        "openai-api-key",
        "an OpenAI API key",
        _token("s", r"k-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),
        _not_kebab_prose,
    ),
    SecretRule(
        "slack-token",
        "a Slack token",
        _token("x", r"ox[baprs]-[A-Za-z0-9-]{10,}"),
    ),
    SecretRule(
        "pem-private-key",
        "a PEM private key",
        re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----"),
    ),
    SecretRule(
        "jwt",
        "a JSON Web Token",
        _token("e", r"yJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{10,}"),
    ),
)


@dataclass(frozen=True)
class Finding:
    """One credential-looking match: which rule, on which 1-based line. No secret text."""

    rule: str
    description: str
    line: int


def find_secrets(text: str) -> list[Finding]:
    """Every rule match in ``text``, ordered by line then rule order."""
    findings: list[Finding] = []
    for rule in SECRET_RULES:
        for match in rule.pattern.finditer(text):
            if rule.accept(match.group(0)):
                line = text.count("\n", 0, match.start()) + 1
                findings.append(Finding(rule.name, rule.description, line))
    findings.sort(key=lambda f: f.line)
    return findings


def guard(text: str, where: str, *, allow_secrets: bool = False, can_allow: bool = True) -> None:
    """Raise :class:`SecretDetectedError` if ``text`` contains a credential pattern.

    ``where`` names the file (or entry) for the message. With
    ``allow_secrets=True`` nothing is checked. ``can_allow=False`` is for
    checks that have no bypass (``note``, ``check`` before a build): the
    message then does not point at ``--allow-secrets``.
    """
    if allow_secrets:
        return
    findings = find_secrets(text)
    if findings:
        first = findings[0]
        more = f" (and {len(findings) - 1} more match(es))" if len(findings) > 1 else ""
        raise SecretDetectedError(
            f"{where} line {first.line} looks like {first.description} (rule {first.rule}){more}; "
            + (
                "memory must not carry credentials: remove it, or pass allow_secrets=True / --allow-secrets "
                "if it is not a real secret"
                if can_allow
                else "memory must not carry credentials: remove it (this check has no bypass)"
            )
        )
