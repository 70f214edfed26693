"""The escaping helpers of the interface on their own: bounded value text, index links to memory pages."""

from __future__ import annotations

import pytest

pytest.importorskip("jinja2")
pytest.importorskip("markdown_it")

from bundlekit.ui.render import MAX_VALUE_DEPTH, markdown_html, value_text


def test_value_text_stops_an_alias_bomb_at_its_item_budget() -> None:
    level: list[object] = ["x"] * 10
    for _ in range(8):  # YAML anchors make this: 10**9 items, each list shared, a few hundred bytes of file
        level = [level] * 10
    text = value_text({"bomb": level})
    assert len(text) < 50_000 and text.endswith(", …]}")


def test_value_text_cuts_nesting_deeper_than_the_limit() -> None:
    deep: list[object] = []
    node = deep
    for _ in range(5000):  # deeper than a JSON encoder can recurse
        child: list[object] = []
        node.append(child)
        node = child
    assert value_text(deep) == "[" * MAX_VALUE_DEPTH + "…" + "]" * MAX_VALUE_DEPTH


def test_value_text_writes_values_json_has_no_form_for() -> None:
    assert value_text(b"hi") == "b'hi'"  # YAML !!binary
    assert value_text({"tags": ["a", None, 1]}) == '{"tags": ["a", null, 1]}'
    assert value_text("<b>as is</b>") == "<b>as is</b>"  # the template escapes it


def test_index_links_to_key_md_open_the_memory_pages() -> None:
    html = markdown_html("- [Role](user_role.md) and [elsewhere](https://example.org/a.md)", memory_base="/ui/b/m/")
    assert '<a href="/ui/b/m/user_role" rel="nofollow noopener noreferrer">Role</a>' in html
    assert 'href="https://example.org/a.md"' in html


@pytest.mark.parametrize(
    "link",
    [
        "[a](javascript:alert(1))",
        "[a](JaVaScRiPt:alert(1))",
        "[a](&#106;avascript:alert(1))",
        "[a](<javascript:alert(1)>)",
        "[a](data:text/html;base64,PHNjcmlwdD4=)",
        "[a](vbscript:msgbox(1))",
        "[a](file:///etc/passwd)",
        "[a](//203.0.113.1/x)",
        "<javascript:alert(1)>",
        "[a][r]\n\n[r]: javascript:alert(1)",
        "[a](/ipfs/bafkqaaa/page.html)",  # the gateway on this origin serves a bundle's HTML as text/html
        "[a](../../../ipfs/bafkqaaa/page.html)",
        "[a](notes.html)",
    ],
)
def test_unsafe_links_are_not_links(link: str) -> None:
    assert "<a " not in markdown_html(link)


def test_fragment_and_memory_links_stay_links() -> None:
    html = markdown_html("[top](#top) [role](user_role.md)", memory_base="/ui/bundle/b/memory/")
    assert 'href="#top"' in html and 'href="/ui/bundle/b/memory/user_role"' in html
