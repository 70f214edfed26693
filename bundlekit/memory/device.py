"""Device-bound memory: memory tied to one machine never leaves it.

MagicFrog's device notes (``x-magicfrog-dimension: device``, or
``x-magicfrog-local-only: true`` on any note) describe this machine: paths,
hardware, local tools. Code that moves a whole tree off the machine (the
bundle builder, publishers, converters) asks here first
(``specs/interop.md``, section 7).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from bundlekit.errors import DeviceMemoryError

__all__ = [
    "DIMENSION_FIELD",
    "LAYERS",
    "LOCAL_ONLY_FIELD",
    "device_bound_keys",
    "is_device_bound",
    "refuse_device_memory",
]


class HasKeyAndMeta(Protocol):
    """A memory as the device rule sees it: a key and its frontmatter (records and converter entries)."""

    @property
    def key(self) -> str: ...

    @property
    def meta(self) -> Mapping[str, Any]: ...


DIMENSION_FIELD = "x-magicfrog-dimension"
LOCAL_ONLY_FIELD = "x-magicfrog-local-only"
#: The dimensions that merge (MagicFrog's override chain), least to most specific.
#: ``device`` is not one of them: it never merges across machines.
LAYERS = ("account", "user", "agent", "task")


def is_device_bound(meta: Mapping[str, Any]) -> bool:
    """True when a memory's frontmatter binds it to this machine."""
    return meta.get(DIMENSION_FIELD) == "device" or meta.get(LOCAL_ONLY_FIELD) is True


def device_bound_keys(records: Iterable[HasKeyAndMeta]) -> list[str]:
    """Sorted keys of the memories (anything with ``.key`` and ``.meta``) bound to this machine."""
    return sorted(str(r.key) for r in records if is_device_bound(r.meta))


def refuse_device_memory(records: Iterable[HasKeyAndMeta], *, action: str = "bundle") -> None:
    """Raise ``DeviceMemoryError`` if any memory is bound to this machine."""
    keys = device_bound_keys(records)
    if keys:
        raise DeviceMemoryError(
            f"refusing to {action} {len(keys)} device memories (first: {keys[0]!r}): device memory never "
            "leaves this machine; forget them or convert the tree with --exclude-device first"
        )
