"""The /ui/ pages over HTTP (no browser): content, escaping, safety headers, read-only, gateway paths unchanged."""

from __future__ import annotations

import io
import re
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from bundlekit.bundle.build import BuildOptions, build_bundle
from bundlekit.bundle.manifest import INDEX_PATH, canonical_json, make_manifest
from bundlekit.car.writer import CarFileWriter
from bundlekit.crypto import RawKeyFile
from bundlekit.crypto.signing import Ed25519Signer
from bundlekit.errors import FrontmatterError
from bundlekit.gateway.server import GatewayServer, close_source, make_source
from bundlekit.ipld.cid import cid_from_text, cid_to_str
from bundlekit.memory import Memory
from bundlekit.ui import model
from bundlekit.ui.app import CONTENT_SECURITY_POLICY
from bundlekit.unixfs.importer import ListSink, import_file, import_path, import_tree
from bundlekit.unixfs.profiles import get_profile
from tests.ui.conftest import XSS_DESCRIPTION, XSS_NAME, Bundles, make_tree, serving_ui


def _get(server: GatewayServer, path: str) -> httpx.Response:
    return httpx.get(server.url + path, timeout=30)


@pytest.mark.parametrize("path", ["/ui/", "/ui/bundle/{old}", "/ui/bundle/{old}/memory/user_role",
                                  "/ui/bundle/{old}/timeline", "/ui/diff?old={old}&new={new}", "/ui/nope"])
def test_every_page_carries_the_safety_headers(ui_server: GatewayServer, bundles: Bundles, path: str) -> None:
    response = _get(ui_server, path.format(old=bundles.old, new=bundles.new))
    assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert "script-src 'none'" in CONTENT_SECURITY_POLICY
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["x-frame-options"] == "DENY"


def test_the_home_page_lists_both_bundles(ui_server: GatewayServer, bundles: Bundles) -> None:
    text = _get(ui_server, "/ui/").text
    assert bundles.old in text and bundles.new in text
    assert "coach" in text and "plaintext" in text


def test_the_bundle_page_groups_memories_by_type_and_shows_the_index(ui_server: GatewayServer, bundles: Bundles) -> None:
    text = _get(ui_server, f"/ui/bundle/{bundles.old}").text
    for heading in ("<h3>User</h3>", "<h3>Feedback</h3>", "<h3>Project</h3>", "<h3>Reference</h3>"):
        assert heading in text
    assert "Season goal" in text and "a June tournament" in text
    assert "Index (MEMORY.md)" in text


def test_search_filters_names_and_descriptions(ui_server: GatewayServer, bundles: Bundles) -> None:
    text = _get(ui_server, f"/ui/bundle/{bundles.old}?q=JUNE").text
    assert "Season goal" in text and "Highlight reel" not in text.split("Index (MEMORY.md)")[0]


def test_hostile_values_are_escaped_text(ui_server: GatewayServer, bundles: Bundles) -> None:
    listing = _get(ui_server, f"/ui/bundle/{bundles.old}").text.split("Index (MEMORY.md)")[0]
    page = _get(ui_server, f"/ui/bundle/{bundles.old}/memory/reference_hostile").text
    for text in (listing, page):
        assert XSS_NAME not in text and XSS_DESCRIPTION not in text
        assert "&lt;script&gt;alert(&#39;name&#39;)&lt;/script&gt;" in text
    assert "<script" not in page and "<iframe" not in page and "<img" not in page
    assert 'href="javascript' not in page and "onclick=" not in page.replace("onclick=&quot;", "")
    assert "&lt;svg onload=alert(&#39;tag&#39;)&gt;" in page  # a tag, in the frontmatter table
    day = _get(ui_server, f"/ui/bundle/{bundles.old}/timeline?day=2026-04-14").text
    assert "<img" not in day and "&lt;img src=http://203.0.113.10/t.png" in day
    article = page.split('<article class="markdown" id="body">')[1].split("</article>")[0]
    assert re.search(r"<[a-z][^>]*\ssrc=", article) is None  # no element in a body makes the browser fetch


def test_a_memory_page_renders_markdown_and_the_frontmatter(ui_server: GatewayServer, bundles: Bundles) -> None:
    text = _get(ui_server, f"/ui/bundle/{bundles.old}/memory/user_role").text
    assert "<h1>Winger</h1>" in text and "<em>winger</em>" in text
    assert "<th>revision</th>" in text and "<th>created</th>" in text


def test_the_timeline_chart_is_svg_and_a_day_lists_its_entries(ui_server: GatewayServer, bundles: Bundles) -> None:
    text = _get(ui_server, f"/ui/bundle/{bundles.old}/timeline?day=2026-04-15").text
    assert text.count("<rect") == 3
    assert "day 1 note 2" in text and "day 0 note 0" not in text


def test_the_diff_page_shows_the_changed_memory_and_its_body_lines(ui_server: GatewayServer, bundles: Bundles) -> None:
    text = _get(ui_server, f"/ui/diff?old={bundles.old}&new={bundles.new}").text
    assert 'data-key="project_season"' in text
    assert "-Tournament in June." in text and "+Tournament in July." in text


def test_nothing_writes(ui_server: GatewayServer, bundles: Bundles) -> None:
    response = httpx.post(f"{ui_server.url}/ui/bundle/{bundles.old}", content=b"x", timeout=30)
    assert response.status_code == 405


@pytest.mark.parametrize(("path", "status"), [("/ui/bundle/notacid", 400), ("/ui/bundle/{old}/memory/ghost", 404),
                                              ("/ui/elsewhere", 404), ("/ui/diff?old={old}", 400)])
def test_bad_paths_get_an_error_page(ui_server: GatewayServer, bundles: Bundles, path: str, status: int) -> None:
    response = _get(ui_server, path.format(old=bundles.old))
    assert response.status_code == status
    assert 'id="error"' in response.text


def test_gateway_paths_are_unchanged_beside_the_interface(ui_server: GatewayServer, bundles: Bundles) -> None:
    raw = httpx.get(f"{ui_server.url}/ipfs/{bundles.old}?format=raw", timeout=30)
    assert raw.status_code == 200 and raw.headers["content-type"] == "application/vnd.ipld.raw"
    manifest = httpx.get(f"{ui_server.url}/ipfs/{bundles.old}/manifest.json", timeout=30)
    assert manifest.json()["namespace"] == "coach"
    # The gateway's own header (content is sandboxed), not the interface's policy.
    assert manifest.headers["content-security-policy"] == "sandbox"


def test_html_inside_a_served_dag_is_sandboxed_away_from_the_interface(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "x.html").write_text("<script>fetch('/ui/').then(r => r.text()).then(alert)</script>")
    car = tmp_path / "site.car"
    with CarFileWriter(car) as writer:
        root = cid_to_str(import_path(site, writer, get_profile()).root)
        writer.finish(cid_from_text(root))
    with serving_ui(car) as server:
        page = _get(server, f"/ipfs/{root}/x.html")
        listing = _get(server, f"/ipfs/{root}/")
    assert page.headers["content-type"].startswith("text/html")
    assert page.headers["content-security-policy"] == "sandbox"  # an opaque origin, scripts off
    assert listing.headers["content-security-policy"] == "sandbox"


def test_the_index_links_open_each_memory_page(ui_server: GatewayServer, bundles: Bundles) -> None:
    # The index's `- [name](key.md)` links (the three.ws form) point at the interface's memory pages.
    text = _get(ui_server, f"/ui/bundle/{bundles.old}").text
    index = text.split("Index (MEMORY.md)")[1]
    assert "<h1>Memory</h1>" in index
    assert f'<a href="/ui/bundle/{bundles.old}/memory/user_role" rel="nofollow noopener noreferrer">Role</a>' in index


def test_an_encrypted_bundle_shows_its_index_and_names_but_no_body(tmp_path: Path) -> None:
    car = tmp_path / "enc.car"
    result = build_bundle(make_tree(tmp_path / "tree"), car, key=RawKeyFile(b"k" * 32),
                          options=BuildOptions(namespace="coach"))
    with serving_ui(car) as server:
        home = _get(server, "/ui/").text
        page = _get(server, f"/ui/bundle/{result.root_cid}").text
        memory = _get(server, f"/ui/bundle/{result.root_cid}/memory/user_role").text
        timeline = _get(server, f"/ui/bundle/{result.root_cid}/timeline").text
    assert "encrypted" in home
    # file names and descriptions come from the plaintext index (three.ws's encrypted link form)
    assert "key from key-file" in page and "project_season.md" in page and "a June tournament" in page
    assert "Plays as a" not in page + memory and "no key ever reaches the browser" in memory
    assert "3 encrypted" in timeline


def test_a_signed_bundle_with_parents_shows_its_signer_and_lineage(tmp_path: Path, bundles: Bundles) -> None:
    signer = Ed25519Signer.from_seed(bytes([7]) * 32)
    car = tmp_path / "signed.car"
    result = build_bundle(make_tree(tmp_path / "tree"), car, sign=signer,
                          options=BuildOptions(namespace="coach", parents=[bundles.old]))
    with serving_ui(car) as server:
        page = _get(server, f"/ui/bundle/{result.root_cid}").text
    assert f"signed by <span class=\"cid\">{signer.identity}</span> (valid)" in page
    assert f'href="/ui/bundle/{bundles.old}"' in page


def test_an_unsigned_bundle_says_so(ui_server: GatewayServer, bundles: Bundles) -> None:
    assert '<dd id="signature">unsigned</dd>' in _get(ui_server, f"/ui/bundle/{bundles.old}").text


HOSTILE_FRONTMATTER = (
    "---\nname: Odd values\ndescription: frontmatter JSON cannot hold\ntype: user\n"
    "created: 2026-04-14T12:00:00Z\nupdated: 2026-04-14T12:00:00Z\n"
    "blob: !!binary aGVsbG8=\nset: !!set {a, b}\n"
    "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
    "c: [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
    "deep: " + "[" * 100 + "]" * 100 + "\n---\nBody.\n"
)


def _foreign_bundle(files: dict[str, bytes], car: Path) -> str:
    """A bundle CAR made without bundlekit's build (which refuses what another tool may write)."""
    profile = get_profile()
    listed = {}
    for path, data in files.items():
        entry = import_file(io.BytesIO(data), ListSink(), profile)
        listed[path] = (entry.cid, len(data))
    manifest = make_manifest(namespace="coach", created=datetime(2026, 4, 14, tzinfo=UTC), profile=profile.name,
                             files=listed, timeline=[], encryption=None)
    with CarFileWriter(car) as writer:
        result = import_tree([("manifest.json", canonical_json(manifest)), *files.items()], writer, profile)
        writer.finish(result.root)
    return cid_to_str(result.root)


def test_a_memory_whose_frontmatter_is_refused_shows_the_reason_not_a_crash(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "tree")
    (tree / "user_odd.md").write_text(HOSTILE_FRONTMATTER, encoding="utf-8")
    with pytest.raises(FrontmatterError):  # bundlekit never bundles it (strict: refused, else left out) ...
        build_bundle(tree, tmp_path / "x.car", options=BuildOptions(strict=True))
    root = _foreign_bundle({"memory/MEMORY.md": b"# Memory\n", "memory/user_odd.md": HOSTILE_FRONTMATTER.encode()},
                           tmp_path / "odd.car")  # ... but another tool may
    with serving_ui(tmp_path / "odd.car") as server:
        page = _get(server, f"/ui/bundle/{root}/memory/user_odd")
    assert page.status_code == 200
    assert "cannot show this memory" in page.text and "YAML tags (such as !!int or !!bool) are not accepted" in page.text


def test_a_bundle_is_read_up_to_the_budget_then_listed_unread(monkeypatch: pytest.MonkeyPatch,
                                                               bundles: Bundles) -> None:
    # A small CAR can list thousands of paths sharing one large file's blocks: reading stops at the budget.
    source = make_source(cars=[bundles.old_car])
    try:
        full = model.read_bundle(source.get, cid_from_text(bundles.old))
        sizes = full.manifest["memory"]["files"]
        monkeypatch.setattr(model, "MAX_SHOWN_BUNDLE", sizes[INDEX_PATH]["size"] + sizes["memory/feedback_tone.md"]["size"])
        view = model.read_bundle(source.get, cid_from_text(bundles.old))
    finally:
        close_source(source)
    assert view.index_text == full.index_text  # the index is read first: the names stay visible
    assert [item.key for item in view.memories] == [item.key for item in full.memories]
    assert [item.key for item in view.memories if item.record is not None] == ["feedback_tone"]
    unread = [item for item in view.memories if item.record is None]
    assert unread and all("is not read: the interface reads at most" in str(item.problem) for item in unread)


def test_a_diff_of_encrypted_bundles_names_added_keys_and_says_what_it_cannot_compare(tmp_path: Path) -> None:
    key = RawKeyFile(b"k" * 32)
    old_tree = make_tree(tmp_path / "old")
    new_tree = make_tree(tmp_path / "new")
    Memory(new_tree).write("project_cup", name="Cup", description="a cup run", type="project", body="Cup.")
    old = build_bundle(old_tree, tmp_path / "old.car", key=key, options=BuildOptions(namespace="coach"))
    new = build_bundle(new_tree, tmp_path / "new.car", key=key, options=BuildOptions(namespace="coach"))
    with serving_ui(tmp_path / "old.car", tmp_path / "new.car") as server:
        text = _get(server, f"/ui/diff?old={old.root_cid}&new={new.root_cid}").text
    assert '<ul id="added"><li>' in text and ">project_cup</a>" in text
    assert "1 added, 0 removed, 0 changed, 0 unchanged" in text
    assert "5 memories on both sides are encrypted or unreadable, so not compared" in text
