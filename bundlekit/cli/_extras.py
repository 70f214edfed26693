"""Commands that need an optional extra import it here, when they run, and name the extra if it is missing."""

from __future__ import annotations

import importlib
from collections.abc import Collection
from types import ModuleType

from bundlekit._lazy import extra_install_line
from bundlekit.errors import UsageError

__all__ = ["import_extra"]


def import_extra(module: str, *, extra: str, needs: str, packages: Collection[str]) -> ModuleType:
    """Import ``module``; a missing third-party package of ``packages`` is a ``UsageError`` naming ``extra``.

    ``needs`` says what needs it ("the MCP server"). Any other missing module is a bug and propagates.
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is not None and exc.name.split(".")[0] in packages:
            raise UsageError(
                f"{needs} needs the optional extra: {extra_install_line(extra)} "
                f"({exc.name} is not installed)"
            ) from None
        raise
