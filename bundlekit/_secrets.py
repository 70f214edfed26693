"""The secret guard: refuse memory content that looks like a credential.

Memory must never carry credentials (seed 003: "Secrets, API keys, or tokens —
ever"). Each rule is a regular expression with realistic lengths so that prose
like "sk-learn" or "xoxo" does not trip it. A finding names the rule and the
line; it never repeats the matched text.

Speed: the guard reads every memory a build packs, so it must run at hundreds
of MB/s. Each rule carries a ``trigger``: a literal search that every match of
the rule implies (``AKIA``/``ASIA`` for AWS, ``k-`` for the ``sk-`` keys, ...).
The scan runs the triggers (a literal search runs at GB/s when its first
character is rare), and a rule's full pattern only over a text its trigger
fired on, so clean prose costs a few literal scans (and a process that only checks clean text never
compiles the full patterns: each is compiled on the first text its trigger fires on). One alternation of all the triggers
would read as one pass, but ``re`` cannot search an alternation by a literal
prefix and stops at every ``e`` or ``s`` (measured 88 MB/s, against ~500 MB/s
for the separate literal scans). So the triggers are looked for in one pass
over the text, with the other marks the output checks need, in C
(``_marks.marks``, ``bundlekit/_textscan.c``: ~1 GB/s; Python's searches where
it is not built); a trigger it does not know is searched as above.

The rules sit at the lowest layer (they import only ``errors`` and ``_marks``) beside
:mod:`bundlekit._redact`, which withholds every match in every output: what the
guard refuses is what output withholds. ``bundlekit.memory.secrets`` re-exports them.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from bundlekit._marks import marks, trigger_bit
from bundlekit.errors import SecretDetectedError

__all__ = ["SECRET_RULES", "Finding", "SecretRule", "every_rule_marked", "find_secrets", "guard"]

# A token must not be glued to a preceding word character ("risk-..." is not "sk-...").
# The check sits *after* each pattern's first literal character: a pattern that opens
# with a lookbehind loses the regex engine's literal-prefix search and scans every
# position (measured: ~35x slower, which made the guard dominate bundle builds).
_GLUED = r"(?<![A-Za-z0-9_].)"


def _token(first: str, rest: str) -> str:
    """The source of a pattern: ``first`` (one literal character) then ``rest``, refusing a match glued to a word."""
    return re.escape(first) + _GLUED + rest


def _always(match: str) -> bool:
    return True


@dataclass(frozen=True)
class SecretRule:
    """A named credential pattern; ``accept`` can veto a match (false-positive filter).

    ``trigger`` is a cheap search that finds something in every text the
    pattern matches (a literal the pattern cannot match without); ``None``
    runs the pattern on every text. ``anchor``, when set, is one character
    every match holds, checked before the trigger (a one-character ``in`` runs
    at memory speed, ten times faster than the trigger's search).
    """

    name: str
    description: str
    pattern: re.Pattern[str]
    accept: Callable[[str], bool] = _always
    trigger: re.Pattern[str] | None = None
    anchor: str = ""


def _not_kebab_prose(match: str) -> bool:
    # "sk-learn-compatible-pipeline-wrapper" is prose: lowercase words joined by hyphens.
    # Real keys are random base62/base64url (mixed case and digits), or at least not hyphenated words.
    tail = match.split("-", 1)[1]
    return not (re.fullmatch(r"[a-z-]+", tail) and tail.count("-") >= 1)


# The rules, in order, as their sources: (name, description, pattern, accept, trigger, anchor). Both "sk-"
# rules share one trigger, scanned once per text. "k-", not "sk-": a literal search is as fast as its
# first character is rare, and "s" is common.
_SPECS: tuple[tuple[str, str, str, Callable[[str], bool], str | None, str], ...] = (
    ("aws-access-key-id", "an AWS access key id", _token("A", r"(?:KIA|SIA)[0-9A-Z]{16}(?![A-Za-z0-9])"), _always, r"A[KS]IA", ""),
    (
        "github-token",
        "a GitHub token",
        _token("g", r"(?:h[pousr]_[A-Za-z0-9]{36,}|ithub_pat_[A-Za-z0-9_]{50,})(?![A-Za-z0-9_])"),
        _always,
        r"g(?:h[pousr]_|ithub_pat_)",
        "_",
    ),
    # Before the OpenAI rule: Anthropic keys also start with "sk-".
    ("anthropic-api-key", "an Anthropic API key", _token("s", r"k-ant-[A-Za-z0-9_-]{20,}"), _always, r"k-", ""),
    (
        "openai-api-key",
        "an OpenAI API key",
        _token("s", r"k-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),
        _not_kebab_prose,
        r"k-",
        "",
    ),
    ("slack-token", "a Slack token", _token("x", r"ox[baprs]-[A-Za-z0-9-]{10,}"), _always, r"xox", "x"),
    # The shapes of gitleaks' rules stripe-access-token and gcp-api-key (gitleaks/gitleaks config/gitleaks.toml).
    (
        "stripe-api-key",
        "a Stripe API key",
        r"(?<![A-Za-z0-9_])[sr]k_(?:live|test|prod)_[A-Za-z0-9]{10,99}(?![A-Za-z0-9])",
        _always,
        r"k_(?:live|test|prod)_",
        "_",
    ),
    ("google-api-key", "a Google API key", _token("A", r"Iza[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])"), _always, r"AIza", ""),
    (
        "pem-private-key",
        "a PEM private key",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----",
        _always,
        r"-----BEGIN ",
        "G",
    ),
    (
        "jwt",
        "a JSON Web Token",
        _token("e", r"yJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{10,}"),
        _always,
        # "yJ", not "eyJ": the search runs at the speed of its first character's rarity.
        r"yJ",
        "J",
    ),
)

SECRET_RULES: tuple[SecretRule, ...]  # the rules, in order: built on first use (module ``__getattr__``)


@functools.cache
def _rules() -> tuple[SecretRule, ...]:
    """The rules with every pattern compiled (~0.6 ms of regex compiling, paid only where they are asked for:
    the guard compiles a rule's pattern only when its trigger fires, see :class:`_Group`)."""
    triggers = {source: re.compile(source) for *_, source, _anchor in _SPECS if source is not None}
    return tuple(
        SecretRule(name, description, re.compile(pattern), accept, None if trigger is None else triggers[trigger], anchor)
        for name, description, pattern, accept, trigger, anchor in _SPECS
    )


def __getattr__(name: str) -> Any:
    if name == "SECRET_RULES":
        return _rules()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True)
class Finding:
    """One credential-looking match: which rule, on which 1-based line. No secret text."""

    rule: str
    description: str
    line: int


def _found(text: str) -> bool:
    return True


class _Rule:
    """One rule as the guard runs it. ``finditer`` compiles the pattern on its first call (the first text the
    trigger fires on) and puts the compiled pattern's own ``finditer`` in its place."""

    __slots__ = ("accept", "description", "finditer", "name", "order", "source")

    def __init__(self, order: int, name: str, description: str, source: str, accept: Callable[[str], bool]) -> None:
        self.order, self.name, self.description, self.source, self.accept = order, name, description, source, accept
        self.finditer: Callable[[str], Iterator[re.Match[str]]] = self._compile_then_finditer

    def _compile_then_finditer(self, text: str) -> Iterator[re.Match[str]]:
        self.finditer = re.compile(self.source).finditer
        return self.finditer(text)


class _Group:
    """The rules sharing one (anchor, trigger). ``bit`` is the trigger's mark when the one-pass scan looks for it
    (``_marks``: every text's marks are found at once), else ``search`` runs: it compiles the trigger on its first
    call and puts the compiled pattern's own ``search`` in its place (no trigger: every text fires)."""

    __slots__ = ("anchor", "bit", "rules", "search", "trigger")

    def __init__(self, anchor: str, trigger: str | None, rules: tuple[_Rule, ...]) -> None:
        self.anchor, self.trigger, self.rules = anchor, trigger or "", rules
        self.bit = trigger_bit(trigger)
        self.search: Callable[[str], object] = _found if trigger is None else self._compile_then_search

    def _compile_then_search(self, text: str) -> object:
        self.search = re.compile(self.trigger).search
        return self.search(text)


@functools.cache
def _rule_plan() -> tuple[_Group, ...]:
    """The rules grouped by (anchor, trigger) in first appearance order, each with its place in the rules:
    nothing compiled yet (the patterns of rules whose trigger never fires are never compiled)."""
    groups: dict[tuple[str, str | None], list[_Rule]] = {}
    for order, (name, description, pattern, accept, trigger, anchor) in enumerate(_SPECS):
        groups.setdefault((anchor, trigger), []).append(_Rule(order, name, description, pattern, accept))
    return tuple(_Group(anchor, trigger, tuple(rules)) for (anchor, trigger), rules in groups.items())


@functools.cache
def every_rule_marked() -> bool:
    """Whether every rule's trigger is one the one-pass scan looks for (``_marks.TRIGGERS``): then a text whose
    scan found no trigger's mark holds no match of any rule (what ``_redact.shown_as_is`` relies on)."""
    return all(group.bit is not None for group in _rule_plan())


# A text of at least this many characters found to hold no credential is remembered (the last one only).
CLEAN_REMEMBERED = 64 * 1024
# The last such text, itself: a ``str`` is immutable, so the same object holds the same characters and is clean
# still. A ``memory list`` of 100,000 lines (15 MB) is checked by the memory layer, then by the output redaction
# (``_redact.mask``) as the same object: scanned once, not twice. Held until a later long clean text replaces it.
_last_clean: list[str] = []


def find_secrets(text: str) -> list[Finding]:
    """Every rule match in ``text``, ordered by line then rule order."""
    if _last_clean and text is _last_clean[0]:
        return []
    found: list[tuple[int, int, Finding]] = []
    bits = marks(text)[0]
    for group in _rule_plan():
        if group.bit is not None:
            if not bits & group.bit:  # the trigger is nowhere in the text (it implies the anchor)
                continue
        elif group.anchor not in text or group.search(text) is None:
            continue
        for rule in group.rules:
            # Matches come in text order, so lines are counted on from the previous match.
            line, counted = 1, 0
            for match in rule.finditer(text):
                if rule.accept(match.group(0)):
                    start = match.start()
                    line += text.count("\n", counted, start)
                    counted = start
                    found.append((line, rule.order, Finding(rule.name, rule.description, line)))
    if not found:
        if len(text) >= CLEAN_REMEMBERED:
            _last_clean[:] = [text]
        return []
    # Stable: one rule's matches on one line stay in text order.
    found.sort(key=lambda item: (item[0], item[1]))
    return [finding for _line, _order, finding in found]


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
        finding = f"{where} line {first.line} looks like {first.description} (rule {first.rule}){more}"
        raise SecretDetectedError(
            f"{finding}; "
            + (
                "memory must not carry credentials: remove it, or pass allow_secrets=True / --allow-secrets "
                "if it is not a real secret"
                if can_allow
                else "memory must not carry credentials: remove it (this check has no bypass)"
            ),
            finding=finding,
        )
