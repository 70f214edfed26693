"""The sample memory tree in fixtures/memory/, as data, and the code that builds it.

Run ``python tests/memory/fixture_tree.py`` to regenerate the fixture;
``test_fixture.py`` checks the committed tree is exactly what this builds.
Every timestamp is fixed, so the tree (and its CIDs) never change by accident.
"""

from __future__ import annotations

import shutil
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

# Make `bundlekit` importable when run as a script from a checkout.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bundlekit.memory import Memory
from bundlekit.memory.naming import HIDDEN_DIR

FIXTURE_DIR = Path(__file__).resolve().parents[2] / "fixtures" / "memory"


def _t(text: str) -> datetime:
    return datetime.fromisoformat(text)


# (time, key, fields). A key written twice keeps its first `created`.
WRITES: list[tuple[str, str, dict[str, Any]]] = [
    (
        "2026-03-22T09:15:00Z",
        "user_role",
        {
            "name": "Role",
            "description": "Argentina fan, plays weekly 5-a-side on Saturdays",
            "type": "user",
            "body": "Plays 5-a-side every Saturday morning, usually as a holding midfielder.\n"
            "Supports Argentina; references to the 2022 final land well.",
            "tags": ["football", "schedule"],
        },
    ),
    (
        "2026-03-22T09:20:00Z",
        "feedback_tone",
        {
            "name": "Tone",
            "description": "stay warm but don't coddle; user asked for direct critique",
            "type": "feedback",
            "body": 'User prefers direct critique over encouragement-first framing. "Just tell me\n'
            "what's wrong\" — their words after session #4.\n\n"
            "**Why:** user explicitly corrected the first two sessions' overly warm tone.\n"
            "**How to apply:** lead with the issue, follow with the fix. Save warmth for\n"
            "genuine wins, not every message.",
            "source": "session-4",
            "important": True,
        },
    ),
    (
        "2026-03-29T18:02:00Z",
        "user_preferences",
        {
            "name": "Preferences",
            "description": "terse feedback, no emojis, metric units",
            "type": "user",
            "body": "Keep answers short. No emojis. Distances in metres, speeds in km/h.",
            "tags": ["style"],
        },
    ),
    (
        "2026-04-02T07:45:00Z",
        "project_season",
        {
            "name": "Season goal",
            "description": "user is training for a tournament in June 2026",
            "type": "project",
            "body": "Seven-a-side tournament on 13 June 2026. Goal: last the full 2 x 25 minutes\n"
            "without cramping. Knee injury: no high-impact drills until May.",
            "tags": ["tournament", "fitness", "knee"],
            "extra": {"deadline": "2026-06-13"},
        },
    ),
    (
        "2026-04-03T20:10:00Z",
        "reference_reel",
        {
            "name": "Highlight reel",
            "description": "shared Drive folder where user stores match clips",
            "type": "reference",
            "body": 'Match clips live in the shared Drive folder "5s clips 2026", one subfolder per\n'
            "Saturday. Ask before opening clips older than a month.",
        },
    ),
    (
        "2026-04-05T10:30:00Z",
        "feedback_pacing",
        {
            "name": "Drill pacing",
            "description": "3 drills per session max",
            "type": "feedback",
            "body": "Three drills per session at most; more and the user skips the cool-down.\n\n"
            "**Why:** session 6 had five drills and the user stopped halfway.\n"
            "**How to apply:** pick the three that serve this week's focus.",
            "source": "session-6",
            "decay": "90d",
        },
    ),
    (
        "2026-04-08T19:00:00Z",
        "reference_drill_library",
        {
            "name": "Drill library",
            "description": "the club's PDF of passing and first-touch drills",
            "type": "reference",
            "body": 'The club\'s coaching PDF ("Small-sided drills, v3") has the rondo and\n'
            "wall-pass progressions the user likes. Page numbers are in the table of contents.",
            "tags": ["drills"],
            "decay": "never",
        },
    ),
    (
        "2026-04-10T08:00:00Z",
        "project_knee_rehab",
        {
            "name": "Knee rehab",
            "description": "physio plan, strength work twice a week, no jumping until May",
            "type": "project",
            "body": "Physio plan after the March knee strain: single-leg squats and bridges twice\n"
            "a week; no box jumps or sprint starts until the May check-up.",
            "tags": ["knee", "rehab"],
            "decay": "30d",
        },
    ),
    (
        "2026-04-12T21:40:00Z",
        "feedback_units",
        {
            "name": "Units",
            "description": "never convert to miles; user corrected it once",
            "type": "feedback",
            "body": "Use kilometres and metres only. The user corrected a mile figure in session 9.",
            "source": "session-9",
        },
    ),
    (
        "2026-04-14T12:05:00Z",
        "feedback_tone",
        {
            "name": "Tone",
            "description": "stay warm but don't coddle; user asked for direct critique",
            "type": "feedback",
            "body": 'User prefers direct critique over encouragement-first framing. "Just tell me\n'
            "what's wrong\" — their words after session #4.\n\n"
            "**Why:** user explicitly corrected the first two sessions' overly warm tone.\n"
            "**How to apply:** lead with the issue, follow with the fix. Save warmth for\n"
            "genuine wins, not every message. Confirmed again in session 10.",
        },
    ),
]

NOTES: list[tuple[str, str, dict[str, Any]]] = [
    ("2026-04-10T17:58:02.120Z", "session_started", {"session": 8}),
    ("2026-04-10T18:01:45.500Z", "user_said", {"text": "knee feels fine on the bike"}),
    ("2026-04-10T18:30:10.000Z", "session_ended", {"session": 8, "drills": 3}),
    ("2026-04-12T21:30:00.250Z", "session_started", {"session": 9}),
    ("2026-04-12T21:38:12.900Z", "user_said", {"text": "please, kilometres not miles"}),
    ("2026-04-12T21:50:41.004Z", "session_ended", {"session": 9, "drills": 2}),
    (
        "2026-04-13T09:12:00.000Z",
        "played_clip",
        {"name": "saturday-volley", "uri": "clips/2026-04-11/volley.mp4"},
    ),
    ("2026-04-14T12:03:12.000Z", "waved", {"style": "enthusiastic"}),
    ("2026-04-14T12:03:45.000Z", "user_said", {"text": "how's my form?"}),
    ("2026-04-14T12:04:10.000Z", "played_clip", {"name": "demo-kick"}),
]


class _Clock:
    def __init__(self) -> None:
        self.now = _t("2026-03-22T00:00:00Z")

    def __call__(self) -> datetime:
        return self.now


def build(directory: Path) -> Memory:
    """Build the sample tree in ``directory`` (which should be empty or absent)."""
    clock = _Clock()
    memory = Memory(directory, namespace="football-coach", clock=clock)
    memory.init()
    events = [(when, "write", key, fields) for when, key, fields in WRITES]
    events += [(when, "note", kind, data) for when, kind, data in NOTES]
    events.sort(key=lambda e: _t(e[0]))
    for when, action, name, fields in events:
        clock.now = _t(when)
        if action == "write":
            memory.write(name, **fields)
        else:
            memory.note(name, **fields)
    return memory


def regenerate(target: Path = FIXTURE_DIR) -> None:
    """Rebuild the committed fixture in place (leaves no index or lock behind)."""
    if target.exists():
        shutil.rmtree(target)
    build(target)
    shutil.rmtree(target / HIDDEN_DIR, ignore_errors=True)


if __name__ == "__main__":
    regenerate()
    print(f"regenerated {FIXTURE_DIR}")
