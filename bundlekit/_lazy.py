"""Lazy re-exports for package ``__init__`` modules (PEP 562).

A package re-exports its public names without importing every submodule:
importing ``bundlekit.car.writer`` must not pull in the verifier and the UnixFS
unpacker, and ``import bundlekit`` must stay cheap so ``bundlekit --help`` is fast.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["extra_install_line", "lazy_getattr"]


def lazy_getattr(package: str, table: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that imports ``table[name]`` on first use and caches the value.

    ``table`` maps each public name to the module that defines it. An unknown
    name raises ``AttributeError`` as a normal module attribute would.
    """

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)  # later lookups skip this function
        return value

    return __getattr__


def extra_install_line(extra: str) -> str:
    """The command that installs the optional ``extra`` (its modules are imported lazily, so a missing one
    is only found when a command needs it): the form README uses, which works from a clone."""
    return f"pip install -e '.[{extra}]' (from a bundlekit clone)"
