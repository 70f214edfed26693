"""The compiled parts, all optional: bundlekit.memory._statscan, a memory tree's listing with stat
signatures, bundlekit.memory._cosine, the cosines recall by meaning ranks with, bundlekit._textscan,
the marks the output checks look for in a text, in one pass, and bundlekit._packscan, a block store pack
index's rules checked in one pass and its last pin's walk record read and laid out in one.

Where they cannot be built (no C compiler, not POSIX) the install goes on: the
memory store lists trees in Python (bundlekit/memory/backend.py), ranks by
meaning with numpy (bundlekit/memory/cosines.py) and looks for the marks with
Python's searches (bundlekit/_marks.py) and checks pack indexes and reads and writes walk records with the
interpreter's loops (bundlekit/blockstore.py). Everything else is in pyproject.toml.
"""

import os

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "bundlekit.memory._statscan",
            ["bundlekit/memory/_statscan.c"],
            optional=True,
            extra_compile_args=["-O2", "-std=gnu11"],
        ),
        Extension(
            "bundlekit.memory._cosine",
            ["bundlekit/memory/_cosine.c"],
            optional=True,
            extra_compile_args=["-O3", "-std=gnu11"],
        ),
        Extension(
            "bundlekit._textscan",
            ["bundlekit/_textscan.c"],
            optional=True,
            extra_compile_args=["-O2", "-std=gnu11"],
        ),
        Extension(
            "bundlekit._packscan",
            ["bundlekit/_packscan.c"],
            optional=True,
            extra_compile_args=["-O2", "-std=gnu11"],
        ),
    ]
    if os.name == "posix"
    else []
)
