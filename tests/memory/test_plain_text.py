"""Text the frontmatter code treats as plain without asking PyYAML (frontmatter._plain_text, reads_back) is
what PyYAML itself says: read as a string, written plain; and a write's record built without parsing is
the record parsing its text gives.

The facts come from PyYAML 6.0.x's own source (yaml/resolver.py: implicit resolvers chosen by a scalar's
first character; yaml/emitter.py: analyze_scalar), and these tests hold the shortcut to PyYAML's answers.
"""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from bundlekit.errors import FrontmatterError
from bundlekit.memory import Memory, frontmatter, parse_memory_file, render_memory_file
from bundlekit.memory.record import rendered_record
from bundlekit.memory.timefmt import format_timestamp

STR = "tag:yaml.org,2002:str"


def _pyyaml_resolves(value: str) -> str:
    tag: str = frontmatter._yaml().resolver.resolve(yaml.ScalarNode, value, (True, False))  # type: ignore[no-untyped-call]
    return tag


def _pyyaml_plain(value: str, flow: bool) -> bool:
    analysis = frontmatter._yaml().analyzer.analyze_scalar(value)
    return bool(analysis.allow_flow_plain if flow else analysis.allow_block_plain)


def test_pyyaml_types_letter_first_scalars_only_by_the_boolean_and_null_words() -> None:
    resolvers = frontmatter._yaml().loader.yaml_implicit_resolvers
    assert None not in resolvers  # no pattern tried on every scalar
    letters = {first for first in resolvers if first and first.isalpha()}
    assert letters == set("yYnNtTfFoO")
    tags = {tag for first in letters for tag, _regexp in resolvers[first]}
    assert tags == {"tag:yaml.org,2002:bool", "tag:yaml.org,2002:null"}
    assert all(_pyyaml_resolves(word) != STR for word in frontmatter._YAML_WORDS)
    assert not any(frontmatter._plain_text(word, False) for word in frontmatter._YAML_WORDS)


text = st.text(st.sampled_from("yYnNtTfFoOlLeEsSuUrRaA0123456789 -:.,#_"), min_size=1, max_size=8)


# Example counts halved for the suite's time (issue 36 item 8); neither these tests nor their issues set them.
@settings(max_examples=125, deadline=None)  # 250 before
@given(text, st.booleans())
def test_text_called_plain_is_a_plain_string_to_pyyaml(value: str, flow: bool) -> None:
    if frontmatter._plain_text(value, flow):
        assert _pyyaml_resolves(value) == STR and _pyyaml_plain(value, flow)


# Every spelling YAML 1.1 gives a non-string a letter or digit may start (yes On ~ 0x1f 1_000 .inf 2026-01-01
# 12:30:00 0o17 -.5 1e3 NaN), spaces at the ends or doubled, ': ', ' #', and the characters YAML or Python take
# for line breaks, byte order marks or letters and digits outside ASCII (LS, PS, NEL, BOM, NBSP, Kelvin sign,
# Arabic-Indic digit, accented letters).
tricky = st.text(
    st.sampled_from("yYnNtTfFoOlLeEsSuUrRaAxXbBiIkK0123456789 ~-+:.,#_=<@'\"\t\u2028\u2029\x85\ufeff\xa0\u212a\u0661\xe9"),
    min_size=1,
    max_size=10,
) | st.sampled_from(["yes", "On", "~", "0x1f", "1_000", ".inf", "2026-01-01", "12:30:00", "0o17", "1e3", "NaN", "y"])


@settings(max_examples=150, deadline=None)  # 300 before
@given(tricky)
def test_text_called_plain_reads_back_as_itself_through_pyyaml(value: str) -> None:
    loader = frontmatter._yaml().loader
    if frontmatter._plain_text(value, False):
        assert yaml.load(f"k: {value}\n", Loader=loader) == {"k": value}
        assert yaml.load(f"{value}: 1\n", Loader=loader) == {value: 1}
    if frontmatter._plain_text(value, True):
        assert yaml.load(f"k: [{value}, {value}]\n", Loader=loader) == {"k": [value, value]}


@settings(max_examples=100, deadline=None)  # 200 before
@given(st.datetimes(min_value=datetime(1000, 1, 1), max_value=datetime(9999, 12, 31), timezones=st.just(UTC)))
def test_our_timestamps_are_plain_strings_to_pyyaml(moment: datetime) -> None:
    stamp = format_timestamp(moment)
    assert frontmatter._plain_text(stamp, False) and not frontmatter._plain_text(stamp, True)
    assert _pyyaml_resolves(stamp) == STR and _pyyaml_plain(stamp, False)


words = st.from_regex(r"[A-Za-z][A-Za-z0-9]{0,6}( [A-Za-z0-9]{1,5}){0,3}", fullmatch=True)
meta = st.fixed_dictionaries(
    {
        "name": words | st.sampled_from(["Yes", "no", "12", "a: b", "x #y", "tab\there"]),
        "description": words,
        "type": st.sampled_from(["user", "feedback", "project", "reference"]),
        "created": st.just("2026-03-22T09:00:00Z"),
        "updated": st.just("2026-04-14T12:03:12Z"),
    },
    optional={
        "revision": st.integers(min_value=1, max_value=2**63 - 1),
        "tags": st.lists(words | st.sampled_from(["on", "a,b", "x]"]), max_size=4),
        "important": st.booleans(),
        "decay": st.sampled_from(["never", "30d", "90d"]),
        "source": words,
    },
)


@settings(max_examples=75, deadline=None)  # 150 before
@given(meta, st.text(max_size=40))
def test_the_record_built_without_parsing_is_the_parsed_record(values: dict[str, Any], body: str) -> None:
    try:
        text = render_memory_file(values, body, where="k.md")
    except FrontmatterError as exc:  # refused: the shortcut refuses it the same way
        try:
            rendered_record("k", values, body, where="k.md")
        except FrontmatterError as same:
            assert type(same) is type(exc) and str(same) == str(exc)
            return
        raise AssertionError("rendered_record accepted what render_memory_file refused") from exc
    record, parsed = rendered_record("k", values, body, where="k.md"), parse_memory_file(text, key="k", where="k.md")
    assert (record.key, record.meta, record.body, record.raw) == (parsed.key, parsed.meta, parsed.body, parsed.raw)
    assert list(record.meta) == list(parsed.meta)
    assert [type(v) for v in record.meta.values()] == [type(v) for v in parsed.meta.values()]


def test_a_write_of_plain_text_to_an_indexed_tree_loads_no_yaml(tmp_path: Path) -> None:
    Memory(tmp_path / "tree").write("k1", name="Knee", description="drill notes", type="user", body="b")
    code = (
        "import sys\n"
        "from bundlekit.memory import Memory\n"
        f"m = Memory({str(tmp_path / 'tree')!r})\n"
        "m.write('k2', name='New one', description='fresh', type='project', body='text', tags=['a b'])\n"
        "m.write('k1', name='Knee', description='drill notes 2', type='user', body='b', important=True)\n"
        "print(sorted(n for n in ('yaml', 'frontmatter') if n in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
