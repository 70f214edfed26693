"""bundlekit: agent memory as content-addressed, optionally encrypted IPFS bundles.

The public API is re-exported here. Heavy pieces (the gateway server, boto3,
eth-account) are imported lazily by the modules that need them.
"""

from __future__ import annotations

from . import errors
from .errors import *  # noqa: F403  (the error tree is part of the public API)

__all__ = ["errors", *errors.__all__]
__version__ = "0.1.0"
