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

__all__ = ["extra_install_line", "lazy_getattr", "lazy_module"]


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


class _LazyModule:
    """Module ``name`` imported on the first read of one of its attributes (:func:`lazy_module`)."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: Any = None

    def __getattr__(self, attr: str) -> Any:
        module = self._module
        if module is None:  # the import system's lock makes a first use from two threads import it once
            module = self._module = importlib.import_module(self._name)
        return getattr(module, attr)


def lazy_module(name: str) -> Any:
    """A stand-in for the module ``name`` that imports it when one of its attributes is first read (``httpx.Client``
    in a function, an ``except httpx.HTTPError`` clause reached by an error): a module that names it only in
    functions then imports it at that first use, not at its own import (DEVELOPERS.md, "Lazy imports"). Bind it
    under ``if not TYPE_CHECKING`` beside a real ``import`` for the type checker."""
    return _LazyModule(name)


def extra_install_line(extra: str) -> str:
    """The command that installs the optional ``extra`` (its modules are imported lazily, so a missing one
    is only found when a command needs it): the form README uses, which works from a clone."""
    return f"pip install -e '.[{extra}]' (from a bundlekit clone)"
