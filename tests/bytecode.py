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

The interpreter's own modules (the standard library, site-packages) come compiled with it, in ``__pycache__`` beside
their sources; under ``PYTHONPYCACHEPREFIX`` Python looks for them only in the prefix, so every process of a run with
a fresh cache compiled again each one it imported first (the MCP SDK, pydantic, moto, hypothesis...: ~12 s of CPU
for tests/mcp, tests/ui and tests/pinners alone). :func:`link_installed` links each of those compiled files into an
empty cache at the place Python looks (``<prefix>/<source folder>/<name>.cpython-311.pyc``), before the run
compiles them: a hard link (a symbolic one across file systems), never a write beside the installed sources. Python
checks each against its source (modification time and size) as it checks any cached file, and a stale one is
compiled again and written in its place (a rename over the link: the installed file is untouched).

pytest has no public call to rewrite one file; the rewriting functions are pytest's own
(``_pytest/assertion/rewrite.py``: ``_rewrite_test``, ``_write_pyc``, ``get_cache_dir``, ``PYC_TAIL``; pytest 8 and 9).
Where they are missing or differ, the worker skips this and compiles what it imports, as without it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import py_compile
import sys
import sysconfig
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


#: Folders no run imports from: the test suites installed with a package (the standard library's ``test``, numpy's,
#: sympy's... a fifth of the compiled files); a module there is compiled where it is imported, as before.
_NOT_IMPORTED = frozenset({"test", "tests"})


def _installed_roots() -> list[str]:
    """The interpreter's folders of installed modules (standard library, site-packages), none inside another."""
    paths = sysconfig.get_paths()
    roots = sorted({os.path.normpath(paths[key]) for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths})
    return [root for root in roots if not any(root.startswith(other + os.sep) for other in roots if other != root)]


def link_installed(prefix: Path, roots: list[str] | None = None) -> int:
    """Link the compiled modules of ``roots`` (the interpreter's: :func:`_installed_roots`) into the bytecode cache
    ``prefix`` (see the module docstring); the number linked. A file already there (a process compiled it first) is
    left as it is."""
    tag = sys.implementation.cache_tag  # cpython-311: a cached file of this interpreter is NAME.cpython-311.pyc
    linked = 0
    for root in _installed_roots() if roots is None else roots:
        for folder, dirs, files in os.walk(root):
            dirs[:] = [name for name in dirs if name not in _NOT_IMPORTED]
            if os.path.basename(folder) != "__pycache__":
                continue
            compiled = [name for name in files if name.endswith(f".{tag}.pyc")]
            if not compiled:
                continue
            target = prefix / os.path.dirname(folder).lstrip(os.sep)
            target.mkdir(parents=True, exist_ok=True)
            for name in compiled:
                linked += _link(os.path.join(folder, name), target / name)
    return linked


def _link(source: str, target: Path) -> int:
    try:
        try:
            os.link(source, target)
        except OSError as exc:
            if isinstance(exc, FileExistsError):
                raise
            os.symlink(source, target)  # another file system, or hard links refused
    except OSError:
        return 0
    return 1
