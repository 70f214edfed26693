"""The built-in seeders registered as an installed distribution registers them, for a run whose installed
bundlekit predates them.

``pyproject.toml`` registers ``github``, ``farcaster`` and ``x`` in ``bundlekit.seeders``; an editable install
made before they existed has no such entry points. :func:`register_builtin_seeders` then writes a one-file
distribution (``dist-info/entry_points.txt``, the lines ``pyproject.toml`` holds) onto ``sys.path`` and
``PYTHONPATH`` (for the CLI's child processes): the registry reads it through ``importlib.metadata`` exactly
as it reads an installed package. Once the installed metadata has them, it does nothing.
"""

from __future__ import annotations

import os
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GROUP = "bundlekit.seeders"


def builtin_seeders() -> dict[str, str]:
    """The seeders ``pyproject.toml`` registers: name -> ``module:attribute``."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return dict(project["entry-points"][GROUP])


def install_dist(site: Path, dist: str, entries: dict[str, str], modules: dict[str, str] | None = None) -> Path:
    """A tiny installed distribution in ``site``: its metadata, its ``bundlekit.seeders`` entries, modules."""
    info = site / f"{dist}-1.0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n", encoding="utf-8")
    lines = "".join(f"{name} = {target}\n" for name, target in entries.items())
    (info / "entry_points.txt").write_text(f"[{GROUP}]\n{lines}", encoding="utf-8")
    for name, source in (modules or {}).items():
        (site / f"{name}.py").write_text(source, encoding="utf-8")
    return site


def register_builtin_seeders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the built-in seeders findable in this process and its children (see the module)."""
    wanted = builtin_seeders()
    found = {ep.name for ep in metadata.entry_points(group=GROUP)}
    if set(wanted) <= found:
        return
    site = install_dist(tmp_path / "seeders-site", "bundlekit_builtin_seeders", wanted)
    monkeypatch.syspath_prepend(str(site))
    paths = [str(site), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(paths))


def tree_files(root: Path) -> dict[str, bytes]:
    """Every file of a memory tree but its timeline and its derived index (``.bundlekit/``): what seeding
    then unseeding must leave byte for byte as it was."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.relative_to(root).parts[0] not in ("timeline", ".bundlekit")}
