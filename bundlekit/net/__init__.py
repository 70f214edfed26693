"""The network: the one HTTP layer (``http``), trustless retrieval from remote gateways (``fetch``)
and a CAR response read as it streams in (``stream``).

Built on the block store, CAR and ipld layers; everything that talks HTTP,
the pinners included, goes through ``bundlekit.net.http``: one options object
(``HttpOptions``), one retry policy, one retry loop. What an answer means is
decided above it (``fetch``: "not here"; ``bundlekit.pinning.http``: a ``PinError``).
"""
