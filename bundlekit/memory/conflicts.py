"""How a merge may resolve a conflict (``--on-conflict``), apart from the merge itself (``memory.merge``, which
validates the policy it is given against these): a command that offers the option names its choices without
importing the three-way merge, which a writer's uncontested ``sync`` round never runs (issue 37)."""

from __future__ import annotations

from typing import Final

__all__ = ["CONFLICT_POLICIES"]

#: How a conflict (both sides changed the same field differently) is resolved.
CONFLICT_POLICIES: Final = ("both", "newer", "ours", "theirs", "fail")
