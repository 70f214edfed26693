"""The local trustless gateway (``bundlekit serve``): HTTP server, request rules, DAG selection, block sources.

Modules: ``server`` (the threading HTTP server and ``serve_in_thread``),
``respond`` (the trustless-gateway request rules: formats, scopes, ranges,
paths), ``dag`` (which blocks a request selects), ``sources`` (``ServedBlocks``:
the block store, CAR files through ``CarIndex``, a chain of them), ``framing`` (a
request body on a keep-alive connection, read and dropped within a bound) and
``record_cache`` (an IPNS record's ``Cache-Control`` from its TTL and EOL); ``kubo_api``
(the team hub's push API: the kubo RPC calls the ``kubo`` pinner makes). Not to be
confused with a *remote* gateway, which ``bundlekit.net.fetch`` reads from.
"""
