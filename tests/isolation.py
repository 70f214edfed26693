"""The suite's own home: what a test process may not read of the user's environment, and proof it wrote nothing there.

A user who ran README's quick start (``bundlekit pin fixtures/memory``) has a store with roots in
``$XDG_DATA_HOME/bundlekit``; one who set ``BUNDLEKIT_ROUTING`` or ``PINATA_JWT`` in their shell has
commands that reach elsewhere. The suite runs against none of that: ``tests/conftest.py`` calls
:func:`isolate` before any test module is imported (every ``HOME`` and ``XDG_*`` location moved into a
temporary folder, every setting bundlekit reads removed), gives each test a home of its own
(the ``own_home`` fixture), and compares :func:`snapshot` of the user's locations before and after the
run (:func:`user_locations`), failing the run when anything there changed.

This module imports nothing of bundlekit, so the suite's own test (``tests/architecture/test_suite_isolation.py``)
and a session hook can use it before bundlekit is loaded.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable, Mapping, MutableMapping
from pathlib import Path

__all__ = [
    "HOME_VARIABLES",
    "SUITE_SETTINGS",
    "USER_SETTINGS",
    "changes",
    "home_environment",
    "isolate",
    "snapshot",
    "user_locations",
    "user_settings",
]

#: Where a program finds the user's files: each is pointed into the test's own home.
HOME_VARIABLES = ("HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME")
#: Variables of the ``BUNDLEKIT_`` family that configure the suite itself (where its heavy tools are), kept.
SUITE_SETTINGS = frozenset({
    "BUNDLEKIT_LETTA_VENV",  # tests/convert/test_letta_server.py: the Letta server's venv
    "BUNDLEKIT_LETTA_AGENT_FILES",  # ... and the real agent files it imports
    "BUNDLEKIT_AGENT_FILE_GIT",
    "BUNDLEKIT_CHROMIUM",  # tests/ui/test_browser.py: the browser Playwright drives
})
#: Settings of the user's a command reads besides ``BUNDLEKIT_*`` (pinner credentials, the build clock,
#: boto3's and httpx's own): each is removed, so a test sees what a fresh machine has.
USER_SETTINGS = frozenset({
    "PINATA_JWT", "PSA_TOKEN", "WEB3_STORAGE_TOKEN",
    "FILEBASE_ACCESS_KEY_ID", "FILEBASE_SECRET_ACCESS_KEY", "FILEBASE_BUCKET",
    "STORACHA_AUTH_SECRET", "STORACHA_AUTH_TOKEN", "STORACHA_SPACE_DID",
    "SOURCE_DATE_EPOCH",
    "GITHUB_TOKEN", "GITHUB_API_URL", "X_BEARER_TOKEN",  # the account lanes of `memory seed`
    "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "all_proxy", "no_proxy",
})
#: Prefixes of whole families removed the same way (boto3 reads ``AWS_*``; bundlekit ``BUNDLEKIT_*``).
USER_PREFIXES = ("BUNDLEKIT_", "AWS_")
#: Entries a snapshot records at most per location (a user's store may hold millions of blocks); past it
#: only directories are recorded, whose modification time still changes with every block added or removed.
MAX_FILES = 20_000


def home_environment(home: Path) -> dict[str, str]:
    """``HOME`` and the XDG base directories of a user whose home is ``home`` (the XDG specification's defaults)."""
    return {
        "HOME": str(home),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
    }


def user_settings(environ: Iterable[str]) -> list[str]:
    """The names in ``environ`` of the user's settings a command reads (everything :func:`isolate` removes)."""
    return [n for n in environ if n not in SUITE_SETTINGS and (n in USER_SETTINGS or n.startswith(USER_PREFIXES))]


def isolate(environ: MutableMapping[str, str], home: Path) -> None:
    """Point ``environ``'s home and XDG locations at ``home`` and remove every user setting bundlekit reads."""
    for name in user_settings(environ):
        del environ[name]
    environ.update(home_environment(home))


def user_locations(environ: Mapping[str, str]) -> list[Path]:
    """The folders of ``environ``'s user that bundlekit reads or writes by default: the store (``$BUNDLEKIT_HOME``,
    ``$XDG_DATA_HOME/bundlekit``, ``~/.local/share/bundlekit``), the config and cache folders named bundlekit, and
    the memory tree of ``$BUNDLEKIT_MEMORY_DIR``; each whether it exists or not (the suite must not create one)."""
    home = Path(environ.get("HOME") or os.path.expanduser("~"))
    found = [home / ".local" / "share" / "bundlekit", home / ".config" / "bundlekit", home / ".cache" / "bundlekit"]
    for name, sub in (("XDG_DATA_HOME", "bundlekit"), ("XDG_CONFIG_HOME", "bundlekit"), ("XDG_CACHE_HOME", "bundlekit")):
        if environ.get(name):
            found.append(Path(environ[name]) / sub)
    for name in ("BUNDLEKIT_HOME", "BUNDLEKIT_MEMORY_DIR"):
        if environ.get(name):
            found.append(Path(environ[name]))
    return list(dict.fromkeys(p.expanduser().absolute() for p in found))


def _entry(path: Path, info: os.stat_result, *, contents: bool) -> str:
    kind = "d" if stat.S_ISDIR(info.st_mode) else "l" if stat.S_ISLNK(info.st_mode) else "f"
    if kind == "l":
        return f"l {os.readlink(path)}"
    described = f"{kind} {stat.S_IMODE(info.st_mode):o} {info.st_mtime_ns}"
    if kind == "f":
        described += f" {info.st_size}"
        if contents:
            with path.open("rb") as handle:
                described += " " + hashlib.file_digest(handle, "sha256").hexdigest()
    return described


def snapshot(locations: Iterable[Path], *, contents: bool = False) -> dict[str, str]:
    """Every entry under ``locations`` (path -> kind, mode, modification time, size; with ``contents`` a hash of
    each file too), a location that does not exist as ``absent``. Links are recorded, never followed."""
    seen: dict[str, str] = {}
    files = 0
    for location in locations:
        try:
            info = location.lstat()
        except FileNotFoundError:
            seen[str(location)] = "absent"
            continue
        seen[str(location)] = _entry(location, info, contents=contents)
        if not stat.S_ISDIR(info.st_mode):
            continue
        for folder, dirs, names in os.walk(location):
            for name in dirs + (names if files < MAX_FILES else []):
                path = Path(folder) / name
                files += 1
                try:
                    seen[str(path)] = _entry(path, path.lstat(), contents=contents)
                except FileNotFoundError:
                    continue
    return seen


def changes(before: Mapping[str, str], after: Mapping[str, str]) -> list[str]:
    """What differs between two snapshots, one line per path (``added``, ``removed`` or ``changed``), sorted."""
    lines = [f"added {p}" for p in after.keys() - before.keys()]
    lines += [f"removed {p}" for p in before.keys() - after.keys()]
    lines += [f"changed {p}: {before[p]} -> {after[p]}" for p in before.keys() & after.keys() if before[p] != after[p]]
    return sorted(lines)
