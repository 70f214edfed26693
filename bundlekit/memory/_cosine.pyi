# The compiled cosines of recall by meaning (bundlekit/memory/_cosine.c has the contract).
from typing_extensions import Buffer

def similarities(
    vectors: Buffer, heads: Buffer | None, query: Buffer, w_head: float, sim: Buffer, near: Buffer,
    portable: bool = False, /,
) -> None: ...
def scores(
    near: Buffer, lexical: Buffer | None, factors: Buffer | None, salience: Buffer, updated: Buffer, horizon: Buffer,
    now: float, constants: tuple[float, float, float, float, float], relevance: Buffer, score: Buffer, /,
) -> None: ...
