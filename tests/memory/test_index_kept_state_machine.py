"""``MEMORY.md`` after any sequence of edits is the index rendered from every memory file, whether a refresh
rendered it or marked it current without rendering (``Indexer._shown_before``, ``_shown_kept``; the
tests of one edit each are in ``test_index_kept_by_refresh.py``).

A state machine edits a tree of more memories than ``MEMORY.md`` shows (so most edits touch memories it
only counts) as an editor or another program would (retype, rename, new description, body and ``updated``,
delete, add, a file that stops parsing, a key whose case changes, the API's ``write``), in place or by
replacing the file, and after each command that refreshes (``memory list``, a build's read) compares the
stored ``MEMORY.md`` with a render of every file that parses."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule

from bundlekit.errors import BundlekitError
from bundlekit.memory import Memory
from bundlekit.memory.index import MAX_INDEX_LINES, render_index
from bundlekit.memory.record import MEMORY_TYPES, parse_memory_file, render_memory_file

_COUNT = MAX_INDEX_LINES + 60  # a quarter of the memories counted, not shown
_KEYS = st.integers(0, _COUNT + 3)  # a few past the last: added
_TAIL = st.integers(MAX_INDEX_LINES - 20, _COUNT + 3)  # mostly memories MEMORY.md counts only


def _text(i: int, kind: str, name: str = "", body: str = "b\n", updated: str = "2025-02-01T00:00:00Z") -> str:
    meta = {"name": name or f"Note {i}", "description": f"about {i}", "type": kind,
            "created": "2025-01-01T00:00:00Z", "updated": updated, "revision": 1}
    return render_memory_file(meta, body)


def _rendered_from_files(root: Path) -> str:
    records = []
    for path in sorted(root.glob("*.md")):
        if path.name == "MEMORY.md":
            continue
        try:
            records.append(parse_memory_file(path.read_text(encoding="utf-8"), key=path.name[:-3], where=path.name))
        except BundlekitError:
            continue  # left out of the index and of MEMORY.md
    return render_index(records)


class EditSequences(RuleBasedStateMachine):
    template: Path

    @initialize(in_place=st.booleans())
    def start(self, in_place: bool) -> None:
        self.root = self.template.parent / f"tree{id(self)}"
        shutil.rmtree(self.root, ignore_errors=True)
        shutil.copytree(self.template, self.root, copy_function=shutil.copy2)
        self.in_place = in_place  # edits in place (a new Memory per command: another process) or by replacing
        self.memory = Memory(self.root)

    def teardown(self) -> None:
        if hasattr(self, "root"):
            self.memory.close()
            shutil.rmtree(self.root, ignore_errors=True)

    def _put(self, i: int, data: str) -> None:
        path = self.root / f"n{i:03d}.md"
        before = path.stat().st_mtime_ns if path.exists() else None
        target = path if self.in_place else self.root / ".edit.tmp"
        target.write_text(data, encoding="utf-8")
        if before is not None:
            os.utime(target, ns=(before + 1_000_000_000,) * 2)  # the signature moves, whatever the clock
        if target != path:
            os.replace(target, path)

    def _memory(self) -> Memory:
        if self.in_place:  # an edit in place is seen by the next full check: another process's command
            self.memory.close()
            self.memory = Memory(self.root)
        return self.memory

    def _check(self) -> None:
        assert (self.root / "MEMORY.md").read_text(encoding="utf-8") == _rendered_from_files(self.root)

    @rule(i=_KEYS, kind=st.sampled_from(MEMORY_TYPES), name=st.sampled_from(["", "Alpha", "Zed"]))
    def retype_or_rename(self, i: int, kind: str, name: str) -> None:
        self._put(i, _text(i, kind, name))

    @rule(i=_TAIL, kind=st.sampled_from(MEMORY_TYPES), body=st.sampled_from(["x\n", "yy\n"]),
          updated=st.sampled_from(["2025-03-01T00:00:00Z", "2024-01-01T00:00:00Z"]))
    def edit_a_counted_one(self, i: int, kind: str, body: str, updated: str) -> None:
        self._put(i, _text(i, kind, body=body, updated=updated))

    @rule(i=_KEYS)
    def delete(self, i: int) -> None:
        (self.root / f"n{i:03d}.md").unlink(missing_ok=True)

    @rule(i=_KEYS)
    def stop_parsing(self, i: int) -> None:
        if (self.root / f"n{i:03d}.md").exists():
            self._put(i, "---\nname: [unclosed\n---\nbody\n")

    @rule(i=_KEYS)
    def recase(self, i: int) -> None:
        lower, upper = self.root / f"n{i:03d}.md", self.root / f"N{i:03d}.md"
        if lower.exists():
            os.rename(lower, upper)
        elif upper.exists():
            os.rename(upper, lower)

    @rule(i=_TAIL, kind=st.sampled_from(MEMORY_TYPES))
    def write(self, i: int, kind: str) -> None:
        try:
            self._memory().write(f"n{i:03d}", name=f"Written {i}", description="w", type=kind, body="w\n")
        except BundlekitError:
            return  # a broken file or another case of the key refuses the write: nothing written
        self._check()

    @rule(build=st.booleans())
    def list_or_build(self, build: bool) -> None:
        memory = self._memory()
        try:
            memory.bundle_files() if build else memory.list()  # a build's read lists and reads in one pass
        except BundlekitError:
            return  # a key in two cases refuses the tree
        self._check()


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("kept") / "template"
    root.mkdir()
    for i in range(_COUNT):
        (root / f"n{i:03d}.md").write_text(_text(i, MEMORY_TYPES[(i * 7) % 4]), encoding="utf-8")
    Memory(root).list()  # the index and MEMORY.md written
    return root


def test_memory_md_is_always_the_render_of_every_file(template: Path) -> None:
    EditSequences.template = template
    run = EditSequences.TestCase
    run.settings = settings(max_examples=25, stateful_step_count=12, deadline=None,
                            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    run("runTest").runTest()
