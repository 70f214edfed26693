"""The interface in a real browser: Playwright for Python driving Debian's Chromium.

Browsers cannot be downloaded here, so Playwright is pointed at the system
executable (``$BUNDLEKIT_CHROMIUM``, else ``chromium`` on PATH); without it, or
without Playwright, these tests skip with the reason. ``.ci/run`` installs the
package. Each test saves a screenshot of its page under its temporary directory.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bundlekit.gateway.server import GatewayServer
from tests.ui.conftest import XSS_NAME, XSS_TAG, XSS_TIMELINE, Bundles

sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright for Python is not installed")
CHROMIUM = os.environ.get("BUNDLEKIT_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
# slow: Chromium starts (about 20 s of set-up); the suite runs slow tests first, beside the rest.
pytestmark = [pytest.mark.skipif(CHROMIUM is None, reason="no chromium executable (apt-get install chromium)"),
              pytest.mark.slow]


class Watched:
    """A page with every console error, dialog and request recorded."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        self.requests: list[str] = []
        page.on("console", lambda msg: self.errors.append(msg.text) if msg.type == "error" else None)
        page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        page.on("dialog", lambda dialog: (self.dialogs.append(dialog.message), dialog.dismiss()))
        page.on("request", lambda request: self.requests.append(request.url))

    def visit(self, url: str) -> Any:
        response = self.page.goto(url)
        assert response is not None and response.ok, url
        return response

    def check_clean(self, origin: str) -> None:
        assert self.errors == []
        assert self.dialogs == []
        assert all(url.startswith(origin) for url in self.requests), self.requests


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()


@pytest.fixture
def watched(browser: Any) -> Iterator[Watched]:
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    yield Watched(context.new_page())
    context.close()


def _shot(watched: Watched, tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"{name}.png"
    watched.page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 1000
    return path


def test_home_and_bundle_pages_load_without_errors(watched: Watched, ui_server: GatewayServer, bundles: Bundles,
                                                   tmp_path: Path) -> None:
    watched.visit(f"{ui_server.url}/ui/")
    assert watched.page.locator("#bundles tbody tr").count() == 2
    _shot(watched, tmp_path, "home")
    watched.page.click(f"a[href='/ui/bundle/{bundles.old}']")
    assert watched.page.locator("tr.memory").count() == 5
    assert watched.page.locator("h3").all_inner_texts() == ["User", "Feedback", "Project", "Reference"]
    _shot(watched, tmp_path, "bundle")
    watched.check_clean(ui_server.url)


def test_the_search_box_filters(watched: Watched, ui_server: GatewayServer, bundles: Bundles, tmp_path: Path) -> None:
    watched.visit(f"{ui_server.url}/ui/bundle/{bundles.old}")
    watched.page.fill("#q", "drive")
    watched.page.click("form[role=search] button")
    watched.page.wait_for_url("**q=drive**")
    assert watched.page.locator("tr.memory").all_inner_texts()[0].startswith("Highlight reel")
    assert watched.page.locator("tr.memory").count() == 1
    _shot(watched, tmp_path, "search")
    watched.check_clean(ui_server.url)


def test_a_memory_page_renders_its_markdown(watched: Watched, ui_server: GatewayServer, bundles: Bundles,
                                            tmp_path: Path) -> None:
    watched.visit(f"{ui_server.url}/ui/bundle/{bundles.old}/memory/user_role")
    assert watched.page.inner_text("#body h1") == "Winger"
    assert watched.page.inner_text("#body em") == "winger"
    assert "revision" in watched.page.inner_text("#frontmatter")
    _shot(watched, tmp_path, "memory")
    watched.check_clean(ui_server.url)


def test_injected_script_and_html_show_as_text_and_run_nothing(watched: Watched, ui_server: GatewayServer,
                                                               bundles: Bundles, tmp_path: Path) -> None:
    watched.visit(f"{ui_server.url}/ui/bundle/{bundles.old}")
    assert XSS_NAME in watched.page.inner_text("#memories")
    watched.visit(f"{ui_server.url}/ui/bundle/{bundles.old}/memory/reference_hostile")
    assert watched.page.inner_text("#memory-name") == XSS_NAME
    body = watched.page.inner_text("#body")
    assert "<script>alert('body')</script>" in body and "<iframe" in body
    assert watched.page.locator("#body script, #body iframe, #body img").count() == 0
    for link in watched.page.locator("#body a").all():  # only the safe links survived
        assert not (link.get_attribute("href") or "").lower().startswith("javascript")
    assert XSS_TAG in watched.page.inner_text("#frontmatter")
    watched.page.wait_for_timeout(300)  # give any injected handler a chance to fire
    _shot(watched, tmp_path, "hostile")
    watched.visit(f"{ui_server.url}/ui/bundle/{bundles.old}/timeline?day=2026-04-14")
    assert XSS_TIMELINE in watched.page.inner_text("#entries")
    assert watched.page.locator("#entries img, #entries svg").count() == 0
    watched.page.wait_for_timeout(300)
    watched.check_clean(ui_server.url)


def test_the_timeline_chart_and_a_chosen_day(watched: Watched, ui_server: GatewayServer, bundles: Bundles,
                                             tmp_path: Path) -> None:
    watched.visit(f"{ui_server.url}/ui/bundle/{bundles.old}/timeline")
    assert watched.page.locator("#chart rect").count() == 3
    watched.page.click("ul.days a >> text=2026-04-15")
    assert watched.page.locator("#entries tbody tr").count() == 3
    _shot(watched, tmp_path, "timeline")
    watched.check_clean(ui_server.url)


def test_the_diff_page_shows_a_changed_memory(watched: Watched, ui_server: GatewayServer, bundles: Bundles,
                                              tmp_path: Path) -> None:
    watched.visit(f"{ui_server.url}/ui/bundle/{bundles.old}")
    watched.page.click("form.compare button")
    changed = watched.page.locator("section.changed[data-key=project_season]")
    assert changed.count() == 1
    assert "+Tournament in July." in changed.inner_text()
    _shot(watched, tmp_path, "diff")
    watched.check_clean(ui_server.url)
