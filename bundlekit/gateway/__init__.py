"""The local trustless gateway (``bundlekit serve``): HTTP server, request rules, DAG selection, block sources.

Modules: ``server`` (uvicorn on one event loop, the mounted apps beside the gateway, and
``serve_in_thread``), ``transport`` (one connection's bounds over uvicorn's h11 protocol),
``fastpath`` (the plain raw-block GET answered without h11, framed as h11 frames it),
``bodies`` (the mounted apps' types and the request bodies they read: in memory, or spooled
to an unnamed temp file), ``car_cache`` (whole CAR answers kept as unnamed files),
``respond`` (the trustless-gateway request rules: formats, scopes, ranges,
paths), ``dag`` (which blocks a request selects), ``sources`` (``ServedBlocks``:
the block store, CAR files through ``CarIndex``, a chain of them), ``framing`` (a
request body on a keep-alive connection, read and dropped within a bound) and
``record_cache`` (an IPNS record's ``Cache-Control`` from its TTL and EOL). The apps mounted
beside it over the same store (the team hub's push and routing APIs) are ``bundlekit.hub``. Not to be
confused with a *remote* gateway, which ``bundlekit.net.fetch`` reads from.
"""
