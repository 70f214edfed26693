"""Revocation holds with the build cache (issue 37) in the tree (issue 39; specs/encryption.md 4.1, 7.5).

The build cache keeps the last build's bundle key when the given key opens it. A recipients bundle's
key must never be kept: an identity re-encrypting (``sync --identity-file``) opens the cached key of
its own last build, so keeping it would publish the old readers' envelope again, a removed reader
included, and never choose the readers anew.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from bundlekit.bundle.build import build_bundle
from bundlekit.crypto.recipients import IdentityKey, RecipientsKey, new_identity, recipient_of
from bundlekit.errors import WrongKeyError
from bundlekit.memory import Memory

NS = "agent"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / NS  # the namespace a tree builds under is its directory name
    mem = Memory(root, namespace=NS, clock=lambda: datetime(2026, 4, 14, tzinfo=UTC))
    mem.init()
    mem.write("plan", name="Plan", description="the plan", type="project", body="ship on friday")
    return root


def test_an_identity_rebuild_reencrypts_for_the_readers_now_not_the_cached_ones(tree: Path, tmp_path: Path) -> None:
    ana, bo, cy = (new_identity() for _ in range(3))
    build_bundle(tree, tmp_path / "first.car", key=RecipientsKey(map(recipient_of, (ana, bo, cy))))
    writer = IdentityKey([ana])
    _, remote = RecipientsKey(map(recipient_of, (ana, bo))).new_bundle_key(NS)  # cy removed upstream
    writer.open_bundle_key(remote, NS)
    second = build_bundle(tree, tmp_path / "second.car", key=writer).manifest["encryption"]
    assert second["recipients"] == sorted([recipient_of(ana), recipient_of(bo)])
    with pytest.raises(WrongKeyError):
        IdentityKey([cy]).open_bundle_key(second, NS)


def test_a_recipient_removed_before_a_rebuild_of_a_cached_tree_cannot_open_it(tree: Path, tmp_path: Path) -> None:
    ana, cy = new_identity(), new_identity()
    first = build_bundle(tree, tmp_path / "first.car", key=RecipientsKey(map(recipient_of, (ana, cy))))
    second = build_bundle(tree, tmp_path / "second.car", key=RecipientsKey([recipient_of(ana)]))
    assert second.manifest["encryption"]["key_id"] != first.manifest["encryption"]["key_id"]
    with pytest.raises(WrongKeyError):
        IdentityKey([cy]).open_bundle_key(second.manifest["encryption"], NS)
    assert IdentityKey([ana]).open_bundle_key(second.manifest["encryption"], NS)
