"""The team hub: the HTTP apps ``bundlekit serve`` mounts beside its gateway, over its block store.

``kubo`` is the push API at ``/api/v0/``: the calls of kubo's RPC API the ``kubo`` pinner makes
(blocks and CARs into the store, pins), for holders of ``$BUNDLEKIT_SERVE_TOKEN``. ``routing``
serves the IPNS paths of the Delegated Routing V1 HTTP API (``GET``/``PUT /routing/v1/ipns/{name}``)
from the store's records: verified, a compare-and-swap on the sequence. Both sit above ``gateway``
(their answers and body types) and ``names`` (whose ``routing`` is the client of the same paths), as
boxo keeps ``routing/http/server`` apart from ``ipns/``.
"""
