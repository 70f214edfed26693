"""Each test process compiles its share of the run's bytecode before collecting, instead of all of it.

On a fresh checkout no compiled module is cached yet (``tests/conftest.py`` points ``PYTHONPYCACHEPREFIX`` at
pytest's cache folder), and every pytest-xdist worker collects every test module: each compiled all of bundlekit and
rewrote the asserts of all ~400 test modules, the same ~10 s of CPU three times over before the first test ran (on
2 cores, 8 s of the run's wall time). Here worker *i* of *n*, before it collects, writes the cached bytecode of every
*n*-th file from the *i*-th on (pytest's own rewritten form for the files pytest rewrites, plain bytecode for the
rest), so the workers compile the run's code once between them and then each reads the others' caches. What a
worker imports and runs is unchanged: only which process writes a cache file first. A file another worker has not
cached yet when it is needed is compiled again where it is needed, as before (each cache file is written whole,
then renamed into place).

pytest has no public call to rewrite one file; the rewriting functions are pytest's own
(``_pytest/assertion/rewrite.py``: ``_rewrite_test``, ``_write_pyc``, ``get_cache_dir``, ``PYC_TAIL``; pytest 8 and 9).
Where they are missing or differ, the worker skips this and compiles what it imports, as without it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import py_compile
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

#: Folders of the checkout whose Python files a run imports (``tests/node_modules`` holds the npm reference tools).
_SOURCES = ("bundlekit", "pinners", "tests")
_SKIP = {"node_modules", "__pycache__", ".pytest_cache"}


def _python_files(root: Path) -> Iterator[Path]:
    for top in _SOURCES:
        for path in sorted((root / top).rglob("*.py")):
            if not _SKIP.intersection(path.relative_to(root).parts):
                yield path


def _rewritten(root: Path, path: Path) -> bool:
    """Whether pytest rewrites the asserts of this file: the suite's test modules and conftest files."""
    return path.relative_to(root).parts[0] == "tests" and (path.name == "conftest.py" or path.name.startswith("test_"))


def warm_share(config: pytest.Config, worker: int, workers: int) -> None:
    """Write the cached bytecode of this worker's share of the checkout's Python files (see the module docstring)."""
    if sys.dont_write_bytecode or workers < 2:
        return
    try:
        from _pytest.assertion import assertstate_key
        from _pytest.assertion.rewrite import PYC_TAIL, _rewrite_test, _write_pyc, get_cache_dir

        state = config.stash[assertstate_key]
    except (ImportError, KeyError):
        return
    root = Path(str(config.rootpath))
    for n, path in enumerate(_python_files(root)):
        if n % workers != worker:
            continue
        with contextlib.suppress(Exception):  # a file that does not compile fails where it is imported, as before
            if _rewritten(root, path):
                cache = get_cache_dir(path)
                pyc = cache / (path.name[:-3] + PYC_TAIL)
                if not pyc.exists():
                    cache.mkdir(parents=True, exist_ok=True)
                    stat, code = _rewrite_test(path, config)
                    _write_pyc(state, code, stat, pyc)
            else:
                pyc = Path(importlib.util.cache_from_source(str(path)))
                if not pyc.exists():
                    py_compile.compile(
                        str(path), cfile=str(pyc), doraise=True,
                        invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP,
                    )
