# The compiled cosines of recall by meaning (bundlekit/memory/_cosine.c has the contract).
from typing_extensions import Buffer

def similarities(
    vectors: Buffer, heads: Buffer | None, query: Buffer, w_head: float, sim: Buffer, near: Buffer, /
) -> None: ...
