"""Fixtures for the interface tests: bundles with ordinary and hostile memories, a server with /ui/ mounted."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

pytest.importorskip("jinja2")
pytest.importorskip("markdown_it")

from bundlekit.bundle.build import BuildOptions, build_bundle
from bundlekit.gateway.server import (
    GatewayServer,
    close_source,
    make_source,
    serve_in_thread,
    served_roots,
)
from bundlekit.memory import Memory
from bundlekit.ui.app import MOUNT, UIApp

START = datetime(2026, 4, 14, 12, 0, 0, tzinfo=UTC)
# Payloads that must show as text and run nothing (name, description, body).
XSS_NAME = "<script>alert('name')</script>"
XSS_DESCRIPTION = "<img src=x onerror=alert('description')>"
XSS_BODY = (
    "Hello <script>alert('body')</script> and <iframe src=\"http://203.0.113.7/\"></iframe>\n\n"
    "[click me](javascript:alert('link')) and ![pixel](http://203.0.113.9/pixel.png)\n\n"
    "<a href=\"http://203.0.113.8/\" onclick=\"alert('a')\">raw anchor</a>"
)
XSS_TAG = "<svg onload=alert('tag')>"
XSS_TIMELINE = "<img src=http://203.0.113.10/t.png onerror=alert('timeline')>"


def make_tree(root: Path, *, season_body: str = "Tournament in June.\n\n**Three drills** per session.") -> Path:
    """A tree with one memory per type, a hostile memory, and timeline entries on three days."""
    clock = {"now": START}
    mem = Memory(root, namespace="coach", clock=lambda: clock["now"])
    mem.write("user_role", name="Role", description="plays 5-a-side on Saturdays", type="user",
              body="# Winger\n\nPlays as a *winger*.")
    mem.write("feedback_tone", name="Tone", description="stay warm but direct", type="feedback",
              body="Direct critique, no fluff.")
    mem.write("project_season", name="Season goal", description="a June tournament", type="project",
              body=season_body)
    mem.write("reference_reel", name="Highlight reel", description="shared Drive folder", type="reference",
              body="Clips live in the [team folder](https://example.org/reel).")
    mem.write("reference_hostile", name=XSS_NAME, description=XSS_DESCRIPTION, type="reference", body=XSS_BODY,
              tags=[XSS_TAG])
    for day, count in ((0, 1), (1, 3), (2, 2)):
        for i in range(count):
            clock["now"] = START + timedelta(days=day, minutes=i)
            mem.note("session", summary=f"day {day} note {i}")
    clock["now"] = START + timedelta(minutes=30)
    mem.note(XSS_TIMELINE, summary=XSS_TIMELINE)  # day 0: a hostile type and field
    return root


@dataclass
class Bundles:
    old: str
    new: str
    old_car: Path
    new_car: Path


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> Bundles:
    base = tmp_path_factory.mktemp("ui-bundles")
    old_car, new_car = base / "old.car", base / "new.car"
    old = build_bundle(make_tree(base / "old"), old_car,
                       options=BuildOptions(created=START, namespace="coach"))
    new = build_bundle(make_tree(base / "new", season_body="Tournament in July.\n\n**Four drills** per session."),
                       new_car, options=BuildOptions(created=START + timedelta(days=3), namespace="coach"))
    return Bundles(old.root_cid, new.root_cid, old_car, new_car)


@contextmanager
def serving_ui(*cars: Path) -> Iterator[GatewayServer]:
    """A server with the interface mounted over ``cars`` (for tests that build their own bundles)."""
    source = make_source(cars=list(cars))
    app = UIApp(source.get, lambda: served_roots(source))
    try:
        with serve_in_thread(source, apps={MOUNT: app}) as server:
            yield server
    finally:
        close_source(source)


@pytest.fixture(scope="module")
def ui_server(bundles: Bundles) -> Iterator[GatewayServer]:
    with serving_ui(bundles.old_car, bundles.new_car) as server:
        yield server
