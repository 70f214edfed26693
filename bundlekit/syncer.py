"""``bundlekit.syncer``: the name the Python API has used for the sync (README, specs/sync.md); the flow itself is
``bundlekit.flows.sync``, re-exported here as it is."""

from __future__ import annotations

from bundlekit.flows.sync import (
    DEFAULT_ATTEMPTS,
    DEFAULT_MAX_BLOCKS,
    BackgroundSync,
    SyncOptions,
    SyncReport,
    sync,
    sync_forever,
)

__all__ = ["DEFAULT_ATTEMPTS", "DEFAULT_MAX_BLOCKS", "BackgroundSync", "SyncOptions", "SyncReport", "sync", "sync_forever"]
