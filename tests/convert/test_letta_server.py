"""bundlekit <-> a REAL Letta 0.16.8 server on loopback, through its REST API.

The server is letta==0.16.8 from PyPI (letta-ai/letta tag 0.16.8, commit
1131535716e8a31c9a437f8695e25ac98f203a24), in its own venv made by
``tests/convert/letta_server/setup.sh`` from a pinned lock (``.ci/run`` makes it), served over a
SQLite file by ``tests/convert/letta_server/serve.py``. It is started once per test session. The
calls are the ones a user makes: ``POST /v1/agents/import`` (multipart ``file``, no override) and
``GET /v1/agents/{id}/export`` (``letta/server/rest_api/routers/v1/agents.py``).

The real agent files are letta-ai/agent-file's (commit 78212eb571e59e10b35b924375a997319b89c280),
read from ``$BUNDLEKIT_LETTA_AGENT_FILES`` (a directory holding them by file name), else from
``shared/letta-agent-file/`` beside the checkout or ``fixtures/interop/letta/agent-file/``, else
from a fetched mirror of that repository
(``$BUNDLEKIT_AGENT_FILE_GIT``, a git directory); they are not committed here. Without the venv or
the files the tests skip, saying which is missing.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from bundlekit.convert import export_to, import_from, read_foreign
from bundlekit.memory import Memory
from tests.convert.test_names_at_export import TEXTS, plant_tree
from tests.net.loopback import free_port

ROOT = Path(__file__).resolve().parents[2]
SERVER_DIR = Path(__file__).resolve().parent / "letta_server"
FIXTURE_TREE = ROOT / "fixtures" / "memory"
AGENT_FILE_COMMIT = "78212eb571e59e10b35b924375a997319b89c280"
AGENT_FILES = {
    "ezra.af": "agents/@letta-ai/ezra/ezra.af",  # blocks over their limit, path-like labels, 35 unattached
    "co-3.af": "agents/@cpfiffer/co-3/co-3.af",  # the labels human, persona and /note_directory
    "lettabot.af": "agents/@letta-ai/lettabot/lettabot.af",  # system/human/* and system/persona/* labels
}
# Files read without the server: void.af does not import into Letta 0.16.8 itself ("Source with
# name=folder-1765842590288 not found").
OFFLINE_FILES = {
    "ezra.af": AGENT_FILES["ezra.af"],
    "void.af": "agents/@cpfiffer/void/void.af",  # a value of 31 line breaks, empty values
}
_START_SECONDS = 300  # health answers in ~10-50 s on a loaded 2-core machine
_CALL_SECONDS = 300

# slow: a real Letta server starts (10-50 s); the suite runs slow tests first, beside the rest.
pytestmark = [pytest.mark.filterwarnings("ignore::ResourceWarning"), pytest.mark.slow]


def _venv_python() -> Path | None:
    venv = Path(os.environ.get("BUNDLEKIT_LETTA_VENV") or ROOT / ".cache" / "letta-server" / "venv")
    python, stamp = venv / "bin" / "python", venv / ".bundlekit-requirements"
    lock = SERVER_DIR / "requirements.txt"
    if python.exists() and stamp.exists() and stamp.read_bytes() == lock.read_bytes():
        return python
    return None




def _server_env() -> dict[str, str]:
    """This process's environment without the suite's bytecode cache (``PYTHONPYCACHEPREFIX``, tests/conftest.py),
    and writing no bytecode: where a prefix is set Python reads compiled modules only there, so the server compiled
    Letta and its dependencies from source again (~7 s of CPU of its ~22 s start) instead of reading those pip
    compiled into the venv."""
    env = {name: value for name, value in os.environ.items() if name != "PYTHONPYCACHEPREFIX"}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


@pytest.fixture(scope="session")
def letta(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    """A client of a real Letta 0.16.8 server started for this session (skip when its venv is not made)."""
    python = _venv_python()
    if python is None:
        pytest.skip("no Letta 0.16.8 venv: run `bash tests/convert/letta_server/setup.sh` (.ci/run does)")
    data = tmp_path_factory.mktemp("letta-server")
    port = free_port()
    log = (data / "server.log").open("wb")
    proc = subprocess.Popen(
        [str(python), str(SERVER_DIR / "serve.py"), "--port", str(port), "--data", str(data)],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=_server_env(),
    )
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=_CALL_SECONDS)
    try:
        deadline = time.monotonic() + _START_SECONDS
        while True:
            if proc.poll() is not None:
                pytest.fail(f"the Letta server exited ({proc.returncode}): {(data / 'server.log').read_text()[-3000:]}")
            try:
                if client.get("/v1/health/", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"the Letta server did not answer in {_START_SECONDS} s: {(data / 'server.log').read_text()[-3000:]}")
            time.sleep(1)
        yield client
    finally:
        client.close()
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(30)
        log.close()


def _import(client: httpx.Client, path: Path) -> str:
    """POST the file as a user uploads it (no override): the id of the one agent made."""
    response = client.post("/v1/agents/import", files={"file": (path.name, path.read_bytes(), "application/json")})
    assert response.status_code == 200, response.text
    (agent_id,) = response.json()["agent_ids"]
    return str(agent_id)


def _export(client: httpx.Client, agent_id: str, dest: Path) -> dict[str, Any]:
    response = client.get(f"/v1/agents/{agent_id}/export")
    assert response.status_code == 200, response.text
    data = response.json()
    if isinstance(data, str):
        data = json.loads(data)
    dest.write_text(json.dumps(data), encoding="utf-8")
    return dict(data)


def _held_blocks(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The blocks the document's one agent holds, by label, without their ids (renumbered by each export)."""
    by_id = {b["id"]: b for b in doc["blocks"]}
    held = (by_id[i] for i in doc["agents"][0]["block_ids"])
    return {b["label"]: {k: v for k, v in b.items() if k != "id"} for b in held}


def _files(tree: Path) -> dict[str, bytes]:
    return {str(p.relative_to(tree)): p.read_bytes() for p in sorted(tree.rglob("*"))
            if p.is_file() and ".bundlekit" not in p.parts}


def _agent_file(name: str, tmp_path: Path) -> Path:
    given = os.environ.get("BUNDLEKIT_LETTA_AGENT_FILES")
    folders = [ROOT.parent / "shared" / "letta-agent-file", ROOT / "fixtures" / "interop" / "letta" / "agent-file"]
    for folder in ([Path(given)] if given else []) + folders:
        if (folder / name).is_file():
            return folder / name
    git_dir = os.environ.get("BUNDLEKIT_AGENT_FILE_GIT")  # a git directory of letta-ai/agent-file
    mirror = Path(git_dir) if git_dir else None
    if mirror is not None and mirror.is_dir() and shutil.which("git"):
        shown = subprocess.run(
            ["git", f"--git-dir={mirror}", "show", f"{AGENT_FILE_COMMIT}:{OFFLINE_FILES.get(name) or AGENT_FILES[name]}"],
            capture_output=True, timeout=60,
        )
        if shown.returncode == 0:
            (tmp_path / name).write_bytes(shown.stdout)
            return tmp_path / name
    pytest.skip(
        f"letta-ai/agent-file's {name} is not here: put it in ../shared/letta-agent-file/, or set "
        "BUNDLEKIT_LETTA_AGENT_FILES to a folder holding it or BUNDLEKIT_AGENT_FILE_GIT to a git directory of the repository"
    )


def _four_type_tree(tmp_path: Path) -> Path:
    """fixtures/memory (all four types, tags, source, decay, important, revision, deadline, a timeline)
    plus a memory over Letta's default block limit."""
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURE_TREE, tree, ignore=shutil.ignore_patterns(".bundlekit"))
    Memory(tree).write("reference_big", name="Big", description="a long reference", type="reference",
                       body="word " * 30_000, tags=["big"])
    return tree


def test_our_export_imports_as_is_and_comes_back_with_every_memory_field(letta: httpx.Client, tmp_path: Path) -> None:
    tree = _four_type_tree(tmp_path)
    sent = export_to("letta", tree, tmp_path / "ours.af")
    assert any("'reference_big'" in w and "exported with limit" in w for w in sent.warnings)
    first = _export(letta, _import(letta, tmp_path / "ours.af"), tmp_path / "first.af")
    back = import_from("letta", tmp_path / "first.af", tmp_path / "back")
    assert back.timeline == 10
    assert _files(tmp_path / "back") == _files(tree)

    export_to("letta", tmp_path / "back", tmp_path / "again.af")
    second = _export(letta, _import(letta, tmp_path / "again.af"), tmp_path / "second.af")
    assert _held_blocks(second) == _held_blocks(first)


@pytest.mark.parametrize("name", sorted(AGENT_FILES))
def test_a_real_agent_file_survives_letta_bundlekit_letta(letta: httpx.Client, tmp_path: Path, name: str) -> None:
    original = _agent_file(name, tmp_path)
    first = _export(letta, _import(letta, original), tmp_path / "first.af")
    import_from("letta", tmp_path / "first.af", tmp_path / "tree", all_blocks=True)
    export_to("letta", tmp_path / "tree", tmp_path / "ours.af")
    second = _export(letta, _import(letta, tmp_path / "ours.af"), tmp_path / "second.af")

    fields = ("label", "value", "limit", "read_only", "description")
    before, after = _held_blocks(first), _held_blocks(second)
    assert sorted(before) == sorted(after)
    for label, block in before.items():
        assert {f: after[label][f] for f in fields} == {f: block[f] for f in fields}, label
        # Letta's own metadata comes back as it was, bundlekit's fields beside it under one key
        assert {k: v for k, v in after[label]["metadata"].items() if k != "bundlekit"} == block["metadata"], label


@pytest.mark.parametrize("name", sorted(OFFLINE_FILES))
def test_every_block_of_a_real_agent_file_survives_bundlekit_with_all_blocks(tmp_path: Path, name: str) -> None:
    original = _agent_file(name, tmp_path)
    doc = json.loads(original.read_text(encoding="utf-8"))
    import_from("letta", original, tmp_path / "tree", all_blocks=True)
    export_to("letta", tmp_path / "tree", tmp_path / "back.af")
    back = json.loads((tmp_path / "back.af").read_text(encoding="utf-8"))
    held = set(doc["agents"][0]["block_ids"])
    held_back = set(back["agents"][0]["block_ids"])

    def blocks(d: dict[str, Any], ids: set[str]) -> list[tuple[Any, ...]]:
        return sorted((b["label"], b["value"], b["limit"], b["read_only"], b["description"], b["id"] in ids)
                      for b in d["blocks"])

    assert blocks(back, held_back) == blocks(doc, held)


def test_names_any_single_line_holds_come_back_from_letta_exactly(letta: httpx.Client, tmp_path: Path) -> None:
    """': ', ' #', 'yes', a leading '-', '[', quotes, non-ASCII in a name and description: Letta keeps the
    description as the block's ``description`` and bundlekit's fields in its ``metadata`` (JSON), so an
    agent it imported and exported gives every one back, with no loss at export."""
    tree = plant_tree(tmp_path / "tree")
    sent = export_to("letta", tree, tmp_path / "ours.af")
    assert sent.losses == []
    first = _export(letta, _import(letta, tmp_path / "ours.af"), tmp_path / "first.af")
    held = _held_blocks(first)
    for i, text in enumerate(TEXTS):
        assert held[f"m{i}"]["description"] == text
        assert held[f"m{i}"]["metadata"]["bundlekit"]["name"] == text
    back = {e.key: (e.meta["name"], e.meta["description"]) for e in read_foreign("letta", tmp_path / "first.af").entries}
    assert back == {f"m{i}": (t, t) for i, t in enumerate(TEXTS)}
