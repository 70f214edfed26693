"""Commands that need an optional extra import it here, when they run, and name the extra if it is missing."""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Collection
from types import ModuleType

from bundlekit._lazy import extra_install_line
from bundlekit.errors import UsageError

__all__ = ["import_extra", "require_extra"]


def import_extra(module: str, *, extra: str, needs: str, packages: Collection[str]) -> ModuleType:
    """Import ``module``; a missing third-party package of ``packages`` is a ``UsageError`` naming ``extra``.

    ``needs`` says what needs it ("the MCP server"). Any other missing module is a bug and propagates.
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is not None and exc.name.split(".")[0] in packages:
            raise _missing(extra, needs, exc.name) from None
        raise


def require_extra(*, extra: str, needs: str, packages: Collection[str]) -> None:
    """Fail as ``import_extra`` would if a package of ``packages`` is not installed, importing none of them.

    A command whose extra is slow to import (the MCP SDK: ~1 s) calls this first, checks its options
    and sources, and imports the extra last: a usage error never pays the import, a missing extra
    still fails before any work.
    """
    for package in sorted(packages):
        if importlib.util.find_spec(package) is None:
            raise _missing(extra, needs, package)


def _missing(extra: str, needs: str, package: str) -> UsageError:
    return UsageError(f"{needs} needs the optional extra: {extra_install_line(extra)} ({package} is not installed)")
