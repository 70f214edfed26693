"""Settings shared by the whole suite.

Hypothesis's per-example deadline is a timing assertion, and timing targets live in
``bench/``, never in tests: on a loaded 2-core CI machine a 200 ms deadline failed an
example that was correct (tests/net/test_stream_accept.py, 261 ms under load). Every test
runs without it; a test may still set its own ``@settings``.
"""

from hypothesis import settings

settings.register_profile("bundlekit", deadline=None)
settings.load_profile("bundlekit")
