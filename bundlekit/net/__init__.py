"""The network: the one HTTP layer (``http``) and trustless retrieval from remote gateways (``fetch``).

Built on the block store, CAR and ipld layers; everything that talks HTTP,
the pinners included, goes through ``bundlekit.net.http``.
"""
