"""A tree's files digest (``bundle.lineage.files_digest``: the last build's record, which decides whether an unchanged
tree built again names the parents it named) is the SHA-256 of ``json.dumps(..., sort_keys=True)`` of its files, its
text made without the encoder's dict and lists (issue 37): the same digest for any paths, CIDs and sizes."""

from __future__ import annotations

import hashlib
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from bundlekit.bundle.lineage import files_digest

_PATH = st.text(min_size=1, max_size=30)  # quotes, backslashes, controls, non-ASCII, lone surrogates


def _by_the_encoder(files: dict[str, tuple[bytes, int]]) -> str:
    text = json.dumps({path: [cid.hex(), size] for path, (cid, size) in files.items()}, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@settings(max_examples=300, deadline=None)
@given(files=st.dictionaries(_PATH, st.tuples(st.binary(max_size=40), st.integers(min_value=-(2**70), max_value=2**70)),
                             max_size=12))
def test_the_digest_is_that_of_the_encoders_text(files: dict[str, tuple[bytes, int]]) -> None:
    assert files_digest(files) == _by_the_encoder(files)


def test_a_size_that_is_no_plain_integer_is_left_to_the_encoder() -> None:
    files = {"memory/a.md": (b"\x01", True), "memory/b.md": (b"\x02", 3)}
    assert files_digest(files) == _by_the_encoder(files)  # json writes true, not True
