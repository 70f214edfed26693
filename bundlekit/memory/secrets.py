"""The secret rules' old address: :mod:`bundlekit._secrets`, re-exported.

The rules moved to the lowest layer, beside :mod:`bundlekit._redact` (which
withholds every match in every output), since they import only ``errors``. This
name stays because ``memory/indexer.row_of`` imports the guard from it, and that
function's source is part of the derived index's fingerprint
(``tests/memory/test_derived_index.py``): renaming the import there would mean a
``DERIVED_VERSION`` bump and every index rebuilt, for no gain. Code that patches
the guard patches :mod:`bundlekit._secrets`, where the memory tree looks it up.
"""

from __future__ import annotations

from typing import Any

import bundlekit._secrets as _secrets
from bundlekit._secrets import Finding, SecretRule, find_secrets, guard

__all__ = ["SECRET_RULES", "Finding", "SecretRule", "find_secrets", "guard"]


def __getattr__(name: str) -> Any:
    """``SECRET_RULES`` (built on first use) and the rules' private names, read where they live."""
    return getattr(_secrets, name)
