"""Make the README screenshot ``specs/img/ui-bundle.png``: the bundle page of a small plaintext bundle.

Run from a clone (Playwright for Python and Debian's ``chromium``):
``PYTHONPATH=. python tests/ui/make_screenshot.py specs/img/ui-bundle.png``
"""

from __future__ import annotations

import sys
import tempfile
from datetime import timedelta
from pathlib import Path

from playwright.sync_api import sync_playwright

from bundlekit.bundle.build import BuildOptions, build_bundle
from bundlekit.gateway.server import close_source, make_source, serve_in_thread, served_roots
from bundlekit.memory import Memory
from bundlekit.ui.app import MOUNT, UIApp
from tests.ui.conftest import START

CHROMIUM = "/usr/bin/chromium"


def make_bundle(workdir: Path) -> tuple[Path, str]:
    """A coach tree (one memory per type, six timeline entries over three days) built into a CAR."""
    clock = {"now": START}
    mem = Memory(workdir / "coach", namespace="coach", clock=lambda: clock["now"])
    mem.write("user_role", name="Role", description="plays 5-a-side on Saturdays", type="user",
              body="# Winger\n\nPlays as a *winger*.")
    mem.write("feedback_tone", name="Tone", description="stay warm but direct", type="feedback",
              body="Direct critique, no fluff.")
    mem.write("project_season", name="Season goal", description="a June tournament", type="project",
              body="Tournament in June.")
    mem.write("reference_reel", name="Highlight reel", description="shared Drive folder", type="reference",
              body="Clips in the [team folder](https://example.org/reel).")
    for day, count in ((0, 1), (1, 3), (2, 2)):
        for i in range(count):
            clock["now"] = START + timedelta(days=day, minutes=i)
            mem.note("session", summary=f"day {day} note {i}")
    car = workdir / "coach.car"
    result = build_bundle(workdir / "coach", car,
                          options=BuildOptions(created=START + timedelta(days=3), namespace="coach"))
    return car, result.root_cid


def main(out: str) -> None:
    with tempfile.TemporaryDirectory(prefix="bundlekit-shot-") as workdir:
        car, root = make_bundle(Path(workdir))
        source = make_source(cars=[car])
        app = UIApp(source.get, lambda: served_roots(source))
        try:
            with serve_in_thread(source, apps={MOUNT: app}) as server, sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
                page = browser.new_context(viewport={"width": 1000, "height": 800}).new_page()
                page.goto(f"{server.url}/ui/bundle/{root}")
                page.screenshot(path=out, full_page=True)
                browser.close()
        finally:
            close_source(source)


if __name__ == "__main__":
    main(sys.argv[1])
