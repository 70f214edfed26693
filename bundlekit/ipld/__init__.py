"""Content addressing: binary CIDs, the dag-pb codec, block verification and the DAG walk.

The lowest layer: it imports only ``bundlekit.errors``. Modules:

* ``cid``    binary CIDs in the hot path (multiformats only at the edges), varints
* ``dagpb``  dag-pb nodes and UnixFS ``Data`` messages
* ``block``  a block is accepted only if it hashes to its CID; ``MAX_BLOCK_SIZE``
* ``walk``   the iterative, limit-checked DAG walk (``walk_dag``)
"""
