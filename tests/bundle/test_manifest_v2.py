"""bundlekit/2 (specs/bundle.md, "bundlekit/2"): the test vector, and the DAG held to what bundlekit/1's list was
checked for (paths entry by entry, the count, the bytes), each refused before anything is written."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bundlekit.bundle.build import BuildOptions, build_bundle
from bundlekit.bundle.load import load_bundle
from bundlekit.bundle.manifest import canonical_json, make_manifest, parse_manifest
from bundlekit.car.index import CarIndex
from bundlekit.car.writer import CarFileWriter
from bundlekit.errors import IntegrityError, ManifestError
from bundlekit.memory import Memory
from bundlekit.unixfs.importer import import_tree
from bundlekit.unixfs.profiles import get_profile
from bundlekit.unixfs.reader import UnixFSReader

ROLE = ("---\nname: Role\ndescription: plays 5-a-side\ntype: user\ncreated: '2026-04-14T12:00:00Z'\n"
        "updated: '2026-04-14T12:00:00Z'\nrevision: 1\n---\n\nGoalkeeper.\n")
WHEN = datetime(2026, 4, 14, 12, tzinfo=UTC)
VECTOR = (b'{"created":"2026-04-14T12:00:00Z","encryption":null,"format":"bundlekit/2","memory":{"bytes":207,'
          b'"count":2,"index":"memory/MEMORY.md"},"namespace":"coach","profile":"unixfs-v1-2025"}\n')


def _tree(tmp_path: Path) -> Path:
    tree = tmp_path / "t"
    tree.mkdir()
    (tree / "user_role.md").write_text(ROLE, "utf-8")
    Memory(tree).init()
    return tree


def test_the_spec_vector_builds_to_its_manifest_and_root(tmp_path: Path) -> None:
    built = build_bundle(_tree(tmp_path), tmp_path / "v2.car",
                         options=BuildOptions(namespace="coach", created=WHEN, manifest_version=2))
    assert canonical_json(built.manifest) == VECTOR
    assert built.root_cid == "bafybeiexatlz2l4qxvjzripwb43wsj7fy7xhukq2iz3w2ydbaq22vxbx34"
    assert load_bundle(str(built.car)).files["user_role.md"] == ROLE.encode()


@pytest.mark.parametrize("memory", [
    {"index": "memory/MEMORY.md", "count": 0, "bytes": 1},
    {"index": "memory/MEMORY.md", "count": 2, "bytes": -1},
    {"index": "memory/MEMORY.md", "count": True, "bytes": 1},
    {"index": "memory/MEMORY.md", "count": 2, "bytes": 1, "files": {}},
    {"index": "memory/MEMORY.md", "count": 2},
])
def test_a_bundlekit_2_memory_field_out_of_shape_is_a_manifest_error(memory: dict[str, object]) -> None:
    manifest = parse_manifest(VECTOR)
    manifest["memory"] = memory
    with pytest.raises(ManifestError):
        parse_manifest(canonical_json(manifest))


def _hostile(tmp_path: Path, files: dict[str, bytes], *, count: int | None = None, size: int | None = None) -> Path:
    """A CAR of a bundlekit/2 manifest beside ``files`` (bundle paths), claiming ``count`` and ``size``."""
    prof = get_profile()
    manifest = make_manifest(namespace="coach", created=WHEN, profile=prof.name, timeline=[], encryption=None,
                             files={p: (b"", len(d)) for p, d in files.items()}, version=2)
    manifest["memory"]["count"] = count if count is not None else len(files)
    manifest["memory"]["bytes"] = size if size is not None else sum(len(d) for d in files.values())
    car = tmp_path / "hostile.car"
    with CarFileWriter(car) as writer:
        root = import_tree([("manifest.json", canonical_json(manifest)), *files.items()], writer, prof).root
        writer.finish(root)
    return car


INDEX = {"memory/MEMORY.md": b"# Memory\n"}


@pytest.mark.parametrize("path", ["memory/notes/escape.md", "memory/timeline/not-a-day.md",
                                  "memory/timeline/2026-04-14.jsonl.enc"])
def test_a_path_no_bundle_may_hold_is_refused_as_the_dag_is_walked_and_nothing_is_written(
    tmp_path: Path, path: str
) -> None:
    car = _hostile(tmp_path, {**INDEX, path: b"x\n"})
    with pytest.raises(ManifestError):
        load_bundle(str(car), out_dir=tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_more_files_than_the_manifest_counts_are_refused(tmp_path: Path) -> None:
    car = _hostile(tmp_path, {**INDEX, "memory/a.md": ROLE.encode()}, count=1)
    with pytest.raises(IntegrityError, match="more files"):
        load_bundle(str(car), out_dir=tmp_path / "out")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("size", "message"), [(20, "more than the 20 bytes"), (10_000, "says 10000")])
def test_files_holding_other_bytes_than_the_manifest_says_are_refused_before_the_tree_is_written(
    tmp_path: Path, size: int, message: str
) -> None:
    car = _hostile(tmp_path, {**INDEX, "memory/a.md": ROLE.encode()}, size=size)
    with pytest.raises(IntegrityError, match=message):
        load_bundle(str(car), out_dir=tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_bundlekit_2_bundle_without_an_index_is_refused(tmp_path: Path) -> None:
    car = _hostile(tmp_path, {"memory/a.md": ROLE.encode()})
    with pytest.raises(IntegrityError, match="MEMORY.md"):
        load_bundle(str(car))


def test_a_bundlekit_2_build_serves_three_ws_the_very_memory_directory_its_runtime_loaded(tmp_path: Path) -> None:
    """three.ws's runtime (src/memory/index.js of nirholas/three.ws, ``_loadIPFS``) strips ``manifest.json`` from the
    URI and reads only ``memory/MEMORY.md`` and the ``memory/<file>`` it links: a ``bundlekit/2`` build of the tree
    whose ``bundlekit/1`` bundle the runtime loaded (fixtures/interop/threews, sample-plain) holds the same
    ``memory/`` directory CID, so every byte the runtime reads is the one it read."""
    tree = tmp_path / "memory"
    shutil.copytree(Path(__file__).resolve().parents[2] / "fixtures" / "memory", tree,
                    ignore=shutil.ignore_patterns(".bundlekit"))  # no lineage another build left there
    dirs = []
    for version in (1, 2):
        built = build_bundle(tree, tmp_path / f"v{version}.car",
                             options=BuildOptions(namespace="agent-7", created=datetime(2026, 4, 15, tzinfo=UTC),
                                                  manifest_version=version))
        with CarIndex(built.car, verify=True) as index:
            dirs.append(dict(UnixFSReader(index.get).list_dir(built.root_bytes))["memory"])
        if version == 1:
            assert built.root_cid == "bafybeifpzkx2wdwcx2axhd24ssl33jbys7bgosaolqg4zag5okp2x2ewwe"  # the one it loaded
    assert dirs[0] == dirs[1]


def test_a_timeline_that_is_a_file_is_a_layout_error_and_nothing_is_written(tmp_path: Path) -> None:
    """The DAG is the list: ``memory/timeline`` as a file was a ``PathNotFound`` (exit 1), not the layout error
    a manifest listing it would be (``ManifestError``)."""
    car = _hostile(tmp_path, {**INDEX, "memory/timeline": b"x\n"})
    with pytest.raises(ManifestError, match="timeline"):
        load_bundle(str(car), out_dir=tmp_path / "out")
    assert not (tmp_path / "out").exists()
