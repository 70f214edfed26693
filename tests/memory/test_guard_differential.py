"""The guard's one joined scan (``screen.guard_record``) against the checks it replaced, one text at a time.

The joined scan (the raw text and every parsed value joined by newlines) is only a fast "nothing here": it must
pass exactly the memories the per-value checks pass, and on a finding the per-value checks name the same first
place. The reference below is the guard as it was before the joined scan (its raw text, then each parsed value
by ``guard``). Memories are generated as YAML a person or a program could write: values that are strings, lists,
nested mappings, integers, dates (YAML tags, ``!!binary`` among them, are refused by the parser), keys that are themselves fragments, quoted with escapes;
credential samples split at every point across neighbouring values (a value ending in a token's prefix, the next
starting with its rest), around the characters a boundary check looks at (word characters, ``-``, ``_``, line
breaks, invisible and non-ASCII letters).
"""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bundlekit import _secrets
from bundlekit._secrets import find_secrets, guard
from bundlekit.errors import FrontmatterError, SecretDetectedError
from bundlekit.memory import screen
from bundlekit.memory.record import MemoryRecord, parse_memory_file

from .test_secrets import CASES

_SECRETS = [secret for _rule, secret in CASES]
_HEAD = "name: n\ndescription: d\ntype: project\ncreated: 2026-01-01T00:00:00Z\nupdated: 2026-01-01T00:00:00Z\n"
# The characters a boundary check or a character class looks at, and some it should not.
_AROUND = st.text(alphabet="ab_-9 \n\t.:/=A\u200b\u00e9\u2028\r", max_size=6)


def _reference(record: MemoryRecord, where: str, fields_first: bool) -> str | None:
    """The guard as it ran before the joined scan: raw text, then each parsed value; the error message or None."""
    texts = [(text, place) for text, place in screen._values(record, where)]  # noqa: SLF001 - the reference
    order = [*texts, (record.raw, where)] if fields_first else [(record.raw, where), *texts]
    try:
        for text, place in order:
            guard(text, place or where)
    except SecretDetectedError as exc:
        return str(exc)
    return None


def _new(record: MemoryRecord, where: str, fields_first: bool) -> str | None:
    try:
        screen.guard_record(record, where, fields_first=fields_first)
    except SecretDetectedError as exc:
        return str(exc)
    return None


def _assert_same(text: str) -> None:
    try:
        record = parse_memory_file(text, key="project_x", where="project_x.md")
    except FrontmatterError:
        return
    for fields_first in (False, True):
        assert _new(record, "project_x.md", fields_first) == _reference(record, "project_x.md", fields_first)
    values_hit = any(find_secrets(value) for value, _place in screen._values(record, "x"))  # noqa: SLF001
    assert screen.record_values_clean(record) is not values_hit


@st.composite
def _fragments(draw: st.DrawFn) -> list[str]:
    """A credential sample (or none) cut at one point, each piece wrapped in boundary characters."""
    secret = draw(st.sampled_from(["", *_SECRETS]))
    cut = draw(st.integers(0, len(secret)))
    pieces = [secret[:cut], secret[cut:]] if draw(st.booleans()) else [secret]
    return [draw(_AROUND) + piece + draw(_AROUND) for piece in pieces]


@st.composite
def _memories(draw: st.DrawFn) -> str:
    """A memory file: the required head, then extra frontmatter values of many shapes, then a body."""
    extra: dict[Any, Any] = {}
    for index in range(draw(st.integers(1, 4))):
        pieces = draw(_fragments())
        shape = draw(st.sampled_from(["str", "list", "dict", "key", "int", "date"]))
        name = f"x{index}"
        if shape == "str":
            extra[name] = "".join(pieces)
        elif shape == "list":
            extra[name] = [*pieces, 7]
        elif shape == "dict":
            extra[name] = {f"k{n}": piece for n, piece in enumerate(pieces)}
        elif shape == "key":
            extra[name] = {"".join(pieces) or "empty": 1}
        elif shape == "int":
            extra[name] = draw(st.integers())
        else:
            extra[name] = draw(st.dates())
    style = draw(st.sampled_from([None, '"', "'", "|"]))
    dumped = yaml.safe_dump(extra, default_style=style, allow_unicode=draw(st.booleans()), width=draw(
        st.sampled_from([20, 80, 10_000]))) if extra else ""
    body = "\n".join(draw(_fragments()))
    return f"---\n{_HEAD}{dumped}---\n\n{body}\n"


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_memories())
def test_the_joined_scan_refuses_exactly_what_the_per_value_checks_refuse(text: str) -> None:
    _assert_same(text)


_SPLITS = [(secret, cut) for secret in _SECRETS for cut in range(1, len(secret))]


@pytest.mark.parametrize(("secret", "cut"), _SPLITS[:: max(1, len(_SPLITS) // 400)])
def test_a_credential_split_across_neighbouring_values_is_judged_as_before(secret: str, cut: int) -> None:
    # A value ending in a token's prefix, the next starting with its rest: joined by a newline they never meet.
    head, tail = secret[:cut], secret[cut:]
    for layout in (f"a: {head!r}\nb: {tail!r}\n", f"l: [{head!r}, {tail!r}]\n", f"{head!r}: {tail!r}\n",
                   f"a: {head!r}\n---\n\n{tail}\n"):
        text = f"---\n{_HEAD}{layout}" + ("" if "\n---\n" in layout else "---\n\nbody\n")
        _assert_same(text.replace("'", '"') if "\\" not in text else text)


@pytest.mark.parametrize("secret", _SECRETS)
@pytest.mark.parametrize("form", ["escaped", "continued", "key", "nested", "long", "crlf"])
def test_a_credential_hidden_in_a_value_is_refused_as_before(secret: str, form: str) -> None:
    escaped = "".join(f"\\x{ord(char):02x}" for char in secret)
    layout = {
        "escaped": f'a: "{escaped}"\n',
        "continued": f'a: "{secret[:5]}\\\n  {secret[5:]}"\n',
        "key": f'"{secret}": 1\n',
        "nested": f"a:\n  - b:\n      - c: [{secret}]\n",
        "long": f"a: {'x ' * 50_000}{secret}\n",
        "crlf": f"a: |\r\n  line\r\n  {secret}\r\n",
    }[form]
    text = f"---\n{_HEAD}{layout}---\n\nbody\n"
    _assert_same(text)
    record = parse_memory_file(text, key="project_x", where="project_x.md")
    with pytest.raises(SecretDetectedError):
        screen.guard_record(record, "project_x.md")


# The regular-expression pieces that could make a rule see across a line break, or see a line break unlike a
# text's edge: classes that hold "\n" (\s, \S, \W, \D, negated sets, "." under DOTALL), anchors (^, $, \A, \Z),
# \B, inline flags, a literal newline. The one "." allowed is the one inside the glued-word lookbehind.
_UNSAFE = re.compile(r"\\[sSWDBAZn]|\[\^|\(\?[aiLmsux]|(?<!\\)[\^$]|\.")


def test_no_rule_can_match_across_a_line_break() -> None:
    # The joined scan is exact only while this holds: a rule added with one of these pieces must be looked at.
    for rule in _secrets.SECRET_RULES:
        source = rule.pattern.pattern.replace(_secrets._GLUED, "")  # noqa: SLF001 - the one allowed "."
        source = source.replace(r"\.", "")
        assert not _UNSAFE.search(source), f"rule {rule.name}: {source}"
        assert not rule.pattern.flags & (re.DOTALL | re.MULTILINE | re.IGNORECASE), rule.name
