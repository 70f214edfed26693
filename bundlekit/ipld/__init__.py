"""Content addressing: binary CIDs, the dag-pb codec, block verification and the DAG walk.

The lowest layer: it imports only ``bundlekit.errors``. Modules:

* ``cid``    binary CIDs in the hot path (multiformats only at the edges), varints,
             ``verify_block`` and the block limit ``MAX_BLOCK_SIZE``
* ``dagpb``  dag-pb nodes and UnixFS ``Data`` messages
* ``block``  a block is accepted only if it hashes to its CID (``check_block``, ``block_codec``)
* ``bases``  base58btc and base36 (``did:key``, IPNS names)
* ``walk``   the iterative, limit-checked DAG walk (``walk_dag``)
* ``getter`` the one block-getter protocol (``BlockGetter``: ``get``, ``get_many``; boxo's), which a
             load's sessions and the gateway's sources both are, and ``HeldRoot``
* ``ipns_entry`` an IPNS record's unsigned structure: the ``IpnsEntry`` protobuf, its DAG-CBOR
             ``data`` map and RFC 3339 validity (no signatures: ``bundlekit.names`` verifies)
* ``cbormap`` DAG-CBOR of one flat map (text keys; bytes and unsigned integers), the usual IPNS
             ``data``, without importing ``dag_cbor`` (anything else is left to it)
"""
