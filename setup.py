"""The compiled parts, both optional: bundlekit.memory._statscan, a memory tree's listing with stat
signatures, and bundlekit.memory._cosine, the cosines recall by meaning ranks with.

Where they cannot be built (no C compiler, not POSIX) the install goes on: the
memory store lists trees in Python (bundlekit/memory/backend.py) and ranks by
meaning with numpy (bundlekit/memory/cosines.py). Everything else is in pyproject.toml.
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
    ]
    if os.name == "posix"
    else []
)
