"""The one compiled part: bundlekit.memory._statscan, a memory tree's listing with stat signatures.

Optional: where it cannot be built (no C compiler, not POSIX) the install goes on
and the memory store lists trees in Python (bundlekit/memory/backend.py).
Everything else is in pyproject.toml.
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
        )
    ]
    if os.name == "posix"
    else []
)
