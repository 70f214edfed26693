"""The secret guard scans a memory's text and its parsed values at once (``screen.guard_record``): one scan of
them joined by newlines finds a credential exactly when one of them holds one (no rule matches across a line
break), and on a finding the checks run one by one, so the error still names the first place."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bundlekit._secrets import find_secrets
from bundlekit.errors import SecretDetectedError
from bundlekit.memory import screen
from bundlekit.memory.record import parse_memory_file

from .test_secrets import CASES

_SECRETS = [secret for _rule, secret in CASES]
# Around a planted token: word characters, hyphens and line breaks, the characters a boundary check looks at.
_AROUND = st.text(alphabet="ab_-9 \n.", max_size=6)
_DATES = "created: 2026-01-01T00:00:00Z\nupdated: 2026-01-01T00:00:00Z\n"


@settings(max_examples=300, deadline=None)
@given(values=st.lists(st.tuples(_AROUND, st.sampled_from(["", *_SECRETS]), _AROUND), min_size=1, max_size=4))
def test_the_joined_values_hold_a_credential_exactly_when_one_value_does(
    values: list[tuple[str, str, str]]
) -> None:
    texts = [before + secret + after for before, secret, after in values]
    assert bool(find_secrets("\n".join(texts))) == any(find_secrets(text) for text in texts)


@pytest.mark.parametrize("secret", _SECRETS[:3])
def test_a_credential_in_an_extra_frontmatter_value_is_refused_naming_it(secret: str) -> None:
    text = (f"---\nname: n\ndescription: d\ntype: project\n{_DATES}extra:\n"
            f"  token: \"{secret[:1]}\\\n  {secret[1:]}\"\n---\n\nbody\n")
    record = parse_memory_file(text, key="project_x", where="project_x.md")
    with pytest.raises(SecretDetectedError, match=r"frontmatter 'extra'\['token'\]"):
        screen.guard_record(record, "project_x.md")


def test_a_memory_with_no_credential_passes() -> None:
    record = parse_memory_file(f"---\nname: n\ndescription: risk-assessment notes\ntype: project\n{_DATES}---\n\nsk-learn\n",
                               key="project_x", where="project_x.md")
    screen.guard_record(record, "project_x.md")


_LEAF = st.one_of(st.text(max_size=8), st.integers(), st.floats(), st.booleans(), st.none(), st.binary(max_size=4))
_VALUE = st.recursive(_LEAF, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.one_of(st.text(max_size=4), st.integers()), inner, max_size=3)),
    max_leaves=8)


@settings(max_examples=300, deadline=None)
@given(meta=st.dictionaries(st.one_of(st.text(max_size=6), st.integers()), _VALUE, max_size=6),
       body=st.text(max_size=20))
def test_the_joined_values_are_every_parsed_value_in_order_whatever_their_types(
    meta: dict[object, object], body: str
) -> None:
    record = parse_memory_file(f"---\nname: n\ndescription: d\ntype: project\n{_DATES}---\n\nb\n", key="project_x",
                               where="project_x.md")
    object.__setattr__(record, "meta", meta)
    object.__setattr__(record, "body", body)
    # The texts the one-by-one checks see (``_values``), joined: what the one scan must see, fast path or not.
    assert screen._joined(record) == "\n".join(text for text, _place in screen._values(record, None))  # noqa: SLF001
