"""bundlekit's built-in pinners.

Each module here is one publisher backend. They are found through the
``bundlekit.pinners`` entry-point group declared in ``pyproject.toml``,
exactly as a third-party pinner would be, never imported by name.

Modules: ``local`` (the default: the embedded block store), ``memory`` (real CIDs, nothing
kept), ``kubo`` (a kubo node's RPC API), ``cluster`` (an IPFS Cluster's REST API), ``psa`` (any
IPFS Pinning Service API), ``pinata`` (Pinata's v3 Files API), ``filebase`` (Filebase's S3 API)
and ``web3storage`` (``web3-storage``: the legacy API and the Storacha bridge).
"""
