"""Per-type sharing that fails closed (bundle/share, specs/bundle.md "Shared bundles").

The model is Magic Context's workspace sharing (seed 002, "Workspaces": only the categories the workspace
names are shared, read-only for non-owners, and a malformed share list fails closed to sharing nothing).
The property test searches every block of a shared bundle's CAR for unique marker strings planted in the
memories that must stay out: in their keys (file names, index lines, the embeddings' key list), names,
descriptions, bodies and the timeline.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bundlekit.bundle.build import BuildOptions, build_bundle
from bundlekit.bundle.load import load_bundle
from bundlekit.bundle.manifest import validate_manifest
from bundlekit.bundle.share import (
    MAX_CONFIG_BYTES,
    SharePolicy,
    enforce_share,
    parse_share_types,
    read_share_config,
    share_policy,
)
from bundlekit.car.reader import read_car
from bundlekit.crypto._keys import RawKeyFile
from bundlekit.errors import ManifestError, UsageError
from bundlekit.memory import Memory
from bundlekit.memory.files import read_tree_files
from bundlekit.memory.record import MEMORY_TYPES
from tests.embed.counting import CountingEmbedder

CREATED = datetime(2026, 1, 2, tzinfo=UTC)


def _blocks(car: Path) -> bytes:
    """Every block of the CAR, decoded from its sections, joined (file names live in dag-pb links, text in leaves)."""
    with open(car, "rb") as fh:
        _roots, blocks = read_car(fh)
        return b"\x00".join(data for _cid, data in blocks)


def _tree(root: Path, memories: list[tuple[str, str, bool]], note: str | None = None) -> Memory:
    """A tree of ``(marker, type, private)`` memories: the marker is in the key, name, description and body."""
    mem = Memory(root)
    mem.init()
    for marker, kind, private in memories:
        mem.write(f"k{marker}", name=f"n{marker}", description=f"d{marker}", type=kind, body=f"b{marker}",
                  extra={"share": "private"} if private else None)
    if note is not None:
        mem.note("decision", what=note)
    return mem


_MEMORIES = st.lists(
    st.tuples(st.sampled_from(MEMORY_TYPES), st.booleans()), min_size=1, max_size=8
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(memories=_MEMORIES, shared=st.sets(st.sampled_from(MEMORY_TYPES), min_size=1),
       timeline=st.booleans(), embeddings=st.booleans())
def test_no_memory_outside_the_shared_types_is_in_the_car_in_any_form(
    tmp_path_factory: pytest.TempPathFactory, memories: list[tuple[str, bool]], shared: set[str],
    timeline: bool, embeddings: bool,
) -> None:
    root = tmp_path_factory.mktemp("share")
    planted = [(f"mk{i:02d}{os.urandom(6).hex()}", kind, private) for i, (kind, private) in enumerate(memories)]
    note = f"tl{os.urandom(6).hex()}"
    mem = _tree(root / "tree", planted, note)
    gone = f"gone{os.urandom(6).hex()}"  # forgotten: only its tombstone (key and name) is left, in the timeline
    mem.write(f"k{gone}", name=f"n{gone}", description="d", type=sorted(shared)[0], body="b")
    mem.forget(f"k{gone}")
    for marker, _kind, _private in planted:  # an event naming each memory, its own marker inside
        mem.note("opened", key=f"k{marker}", what=f"e{marker}")
    source = Memory(root / "tree", embedder=CountingEmbedder()) if embeddings else mem
    policy = SharePolicy(tuple(sorted(shared)), timeline)
    result = build_bundle(source, root / "s.car", options=BuildOptions(
        created=CREATED, share=policy, embeddings=embeddings))
    blocks = _blocks(root / "s.car")
    for marker, kind, private in planted:
        out = private or kind not in shared
        assert (marker.encode() in blocks) is not out, (marker, kind, private, shared)
        assert (f"e{marker}".encode() in blocks) is (timeline and not out)
    assert (note.encode() in blocks) is timeline
    assert gone.encode() not in blocks
    assert result.manifest["share"] == {"types": sorted(shared), "timeline": timeline}
    if embeddings:
        kept = sorted(f"k{m}" for m, kind, private in planted if kind in shared and not private)
        assert result.manifest["embeddings"]["keys"] == kept


def test_an_encrypted_shared_bundle_opens_to_the_shared_types_alone(tmp_path: Path) -> None:
    # Markers long enough that ciphertext never holds one by chance (a 3-byte one did, about 1 run in 200).
    _tree(tmp_path / "tree", [("p1zqxwv", "project", False), ("u1zqxwv", "user", False), ("p2zqxwv", "project", True)])
    key = RawKeyFile(b"k" * 32)  # the --key-file source
    build_bundle(tmp_path / "tree", tmp_path / "s.car", key=key,
                 options=BuildOptions(created=CREATED, share=SharePolicy(("project",))))
    blocks = _blocks(tmp_path / "s.car")
    assert b"du1zqxwv" not in blocks and b"dp2zqxwv" not in blocks and b"dp1zqxwv" in blocks  # the plaintext index
    loaded = load_bundle(str(tmp_path / "s.car"), key=key)
    assert sorted(loaded.files) == ["MEMORY.md", "kp1zqxwv.md"]


def test_a_private_memory_of_a_shared_type_is_named_in_a_warning(tmp_path: Path) -> None:
    _tree(tmp_path / "tree", [("p1", "project", True)])
    warnings: list[str] = []
    build_bundle(tmp_path / "tree", tmp_path / "s.car",
                 options=BuildOptions(created=CREATED, share=SharePolicy(("project",)), warn=warnings.append))
    assert warnings == ["kp1.md: not shared (marked share: private)"]


def test_a_share_value_not_understood_keeps_the_memory_out(tmp_path: Path) -> None:
    mem = _tree(tmp_path / "tree", [])
    mem.write("odd", name="odd", description="d", type="project", body="oddmarker", extra={"share": "everyone"})
    build_bundle(tmp_path / "tree", tmp_path / "s.car",
                 options=BuildOptions(created=CREATED, share=SharePolicy(("project",))))
    assert b"oddmarker" not in _blocks(tmp_path / "s.car")


def test_the_created_time_of_a_shared_bundle_comes_from_what_it_carries(tmp_path: Path) -> None:
    clock = iter([datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 6, 1, tzinfo=UTC)])
    mem = Memory(tmp_path / "tree", clock=lambda: next(clock))
    mem.init()
    mem.write("a", name="a", description="d", type="project", body="x")
    mem.write("b", name="b", description="d", type="user", body="y")
    result = build_bundle(tmp_path / "tree", tmp_path / "s.car", options=BuildOptions(share=SharePolicy(("project",))))
    assert result.manifest["created"] == "2026-01-01T00:00:00Z"


@pytest.mark.parametrize("values", [[], [""], [" , "]])
def test_an_empty_share_list_is_refused(values: list[str]) -> None:
    with pytest.raises(UsageError, match="names no memory type"):
        parse_share_types(values)


@pytest.mark.parametrize("value", ["bogus", "project,bogus", "Project", "users"])
def test_an_unknown_type_is_refused_by_name(value: str) -> None:
    with pytest.raises(UsageError, match="unknown memory type"):
        parse_share_types([value])


def test_types_may_be_repeated_or_comma_separated() -> None:
    assert parse_share_types(["project, reference", "project"]) == ("project", "reference")


def _config(root: Path, text: str | bytes) -> None:
    (root / ".bundlekit").mkdir(parents=True, exist_ok=True)
    data = text.encode() if isinstance(text, str) else text
    (root / ".bundlekit" / "config.toml").write_bytes(data)


def test_the_share_section_of_the_config_is_the_policy(tmp_path: Path) -> None:
    _config(tmp_path, '[share]\ntypes = ["project", "reference"]\ntimeline = true\n')
    assert read_share_config(tmp_path) == SharePolicy(("project", "reference"), True)


def test_no_config_or_no_share_section_shares_the_whole_tree(tmp_path: Path) -> None:
    assert share_policy((), timeline=False, root=tmp_path) is None
    _config(tmp_path, "[other]\nx = 1\n")
    assert share_policy((), timeline=False, root=tmp_path) is None


def test_the_share_option_wins_over_the_config(tmp_path: Path) -> None:
    _config(tmp_path, '[share]\ntypes = ["user"]\n')
    assert share_policy(("project",), timeline=False, root=tmp_path) == SharePolicy(("project",))


@pytest.mark.parametrize("text", [
    "[share\ntypes = 1",                                  # not TOML
    "share = 'project'\n",                                # not a table
    "[share]\ntypes = []\n",                              # empty
    "[share]\ntypes = 'project'\n",                       # a string, not a list
    "[share]\ntypes = ['project', 3]\n",                  # not all strings
    "[share]\ntypes = ['projects']\n",                    # unknown type
    "[share]\ntype = ['project']\n",                      # unknown key (a typo)
    "[share]\ntypes = ['project']\ntimeline = 'yes'\n",   # not a boolean
    "[share]\n",                                          # no types
])
def test_a_malformed_share_config_shares_nothing(tmp_path: Path, text: str) -> None:
    _config(tmp_path, text)
    with pytest.raises(UsageError, match="nothing was"):
        share_policy((), timeline=False, root=tmp_path)


def test_a_config_that_is_not_utf8_or_too_large_is_refused(tmp_path: Path) -> None:
    _config(tmp_path, b"[share]\ntypes = ['\xff']\n")
    with pytest.raises(UsageError, match="not valid TOML"):
        read_share_config(tmp_path)
    _config(tmp_path, b"#" * (MAX_CONFIG_BYTES + 1))
    with pytest.raises(UsageError, match="larger than"):
        read_share_config(tmp_path)


def test_a_config_that_is_a_symbolic_link_is_refused(tmp_path: Path) -> None:
    (tmp_path / "elsewhere.toml").write_text('[share]\ntypes = ["project"]\n')
    (tmp_path / ".bundlekit").mkdir()
    (tmp_path / ".bundlekit" / "config.toml").symlink_to(tmp_path / "elsewhere.toml")
    with pytest.raises(UsageError, match="symbolic link"):
        read_share_config(tmp_path)


def test_share_timeline_alone_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="--share-timeline"):
        share_policy((), timeline=True, root=tmp_path)


def _manifest(share: object, timeline: list[str] | None = None) -> dict[str, object]:
    files = {"memory/MEMORY.md": {"cid": "bafkreigewethscslp5mja4uhn7qry6remkolyom6ezbcg2hewlhnh4bnvm", "size": 1}}
    for path in timeline or []:
        files[path] = files["memory/MEMORY.md"]
    return {"format": "bundlekit/1", "namespace": "n", "created": "2026-01-01T00:00:00Z", "profile": "p",
            "encryption": None, "memory": {"index": "memory/MEMORY.md", "files": files, "timeline": timeline or []},
            "share": share}


@pytest.mark.parametrize("share", [
    "project", [], {"types": []}, {"types": ["bogus"], "timeline": False}, {"types": ["project"]},
    {"types": ["project"], "timeline": 1}, {"types": ["project", "project"], "timeline": False},
    {"types": ["project"], "timeline": False, "more": 1},
])
def test_a_manifest_with_a_malformed_share_is_refused(share: object) -> None:
    with pytest.raises(ManifestError, match="share"):
        validate_manifest(_manifest(share))


def test_a_manifest_claiming_no_timeline_but_listing_one_is_refused() -> None:
    with pytest.raises(ManifestError, match="timeline"):
        validate_manifest(_manifest({"types": ["project"], "timeline": False}, ["memory/timeline/2026-01-01.jsonl"]))


def test_a_loaded_bundle_is_held_to_its_share_claim(tmp_path: Path) -> None:
    mem = _tree(tmp_path / "tree", [("p1", "project", False), ("u1", "user", False), ("p2", "project", True)])
    tree = read_tree_files(dict(mem.bundle_files()))
    warnings: list[str] = []
    kept, timeline = enforce_share({"share": {"types": ["project"], "timeline": False}}, tree.records,
                                   [{"ts": "2026-01-01T00:00:00Z", "type": "x"}], warnings.append)
    assert sorted(kept) == ["kp1"] and timeline == []
    assert any("ku1.md: dropped" in w for w in warnings) and any("kp2.md: dropped" in w for w in warnings)


def test_a_shared_timeline_leaves_out_tombstones_and_events_of_memories_not_shared(tmp_path: Path) -> None:
    mem = _tree(tmp_path / "tree", [("p1", "project", False), ("u1", "user", False), ("gone", "user", False)])
    mem.forget("kgone")
    mem.note("opened", key="ku1", what="usereventmarker")
    mem.note("opened", key="kp1", what="projecteventmarker")
    mem.note("decision", what="plainmarker")
    build_bundle(tmp_path / "tree", tmp_path / "s.car",
                 options=BuildOptions(created=CREATED, share=SharePolicy(("project",), timeline=True)))
    blocks = _blocks(tmp_path / "s.car")
    assert b"ngone" not in blocks and b"kgone" not in blocks and b"usereventmarker" not in blocks
    assert b"projecteventmarker" in blocks and b"plainmarker" in blocks
