"""Run ``bundlekit`` with a capped address space: ``python bounded.py BYTES ARGS...``.

The cap is set inside the child, before bundlekit is imported (a
``preexec_fn`` would do the same, but is unsafe in a threaded parent).
"""

from __future__ import annotations

import resource
import runpy
import sys

if __name__ == "__main__":
    limit = int(sys.argv[1])
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    sys.argv = ["bundlekit", *sys.argv[2:]]
    runpy.run_module("bundlekit", run_name="__main__", alter_sys=True)
