"""The suite's bytecode cache (tests/bytecode.py, tests/conftest.py): the interpreter's own compiled modules are
linked where Python looks for them under ``PYTHONPYCACHEPREFIX``, so no process of a run compiles them again."""

from __future__ import annotations

import importlib.util
import json.decoder
import os
import sys
from pathlib import Path

import pytest

from tests.bytecode import link_installed


def test_an_installed_compiled_module_is_linked_where_python_looks_under_the_prefix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = json.decoder.__file__
    assert source is not None
    monkeypatch.setattr(sys, "pycache_prefix", None)  # where the interpreter keeps it: json/__pycache__/
    installed = importlib.util.cache_from_source(source)
    if not os.path.isfile(installed):
        pytest.skip(f"this interpreter ships no compiled {installed}")
    prefix = tmp_path / "bytecode"
    assert link_installed(prefix, [os.path.dirname(source)]) >= 1
    monkeypatch.setattr(sys, "pycache_prefix", str(prefix))
    looked_up = importlib.util.cache_from_source(source)
    assert looked_up.startswith(str(prefix)) and os.path.samefile(looked_up, installed)
    assert link_installed(prefix, [os.path.dirname(source)]) == 0  # what is there already is left as it is
