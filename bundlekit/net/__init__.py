"""The network: the one HTTP layer (``http``), trustless retrieval from remote gateways (``fetch``),
a CAR response read as it streams in (``stream``), and the one loopback rule of the servers
bundlekit runs (``loopback``: which Host headers a loopback server answers), and the TLS context every client
verifies with, its authorities read at the first handshake (``_trust``).

Built on the block store, CAR and ipld layers; everything that talks HTTP,
the pinners included, goes through ``bundlekit.net.http``: one request value
(``HttpRequest``), one options object (``HttpOptions``), one retry policy, one
retry loop under its two verbs (``send`` and the ``stream`` context manager).
What an answer means is decided above it (``fetch``: "not here";
``bundlekit.pinning.http``: a ``PinError``).
"""
