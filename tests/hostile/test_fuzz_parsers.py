"""A bounded fuzz run of the parsers that read untrusted bytes (issue 12, evidence).

Each parser gets 500 inputs, random bytes and mutations of a
valid input (flipped, inserted, deleted bytes; truncation), derandomized so a
CI run is repeatable. The property: the parser returns, or raises one of its
documented ``BundlekitError`` classes; never another exception.
"""

from __future__ import annotations

import copy
import io
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bundlekit.bundle.manifest import canonical_json, parse_manifest
from bundlekit.car.reader import read_car
from bundlekit.car.writer import CarWriter
from bundlekit.errors import CARError, CIDError, CodecError, ManifestError, VerificationError
from bundlekit.ipld.cid import DAG_PB, RAW, cid_to_str, make_cid
from bundlekit.ipld.dagpb import FILE, PBLink, UnixFSData, decode_node, encode_node

FUZZ = settings(
    max_examples=500, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)


def _valid_node() -> bytes:
    leaf = make_cid(1, RAW, b"leaf")
    return encode_node([PBLink(leaf, b"", 4), PBLink(leaf, b"", 4)], UnixFSData(FILE, filesize=8, blocksizes=[4, 4]).encode())


def _valid_car() -> bytes:
    node = _valid_node()
    root = make_cid(1, DAG_PB, node)
    out = io.BytesIO()
    writer = CarWriter(out, [root])
    writer.put(root, node)
    writer.put(make_cid(1, RAW, b"leaf"), b"leaf")
    writer.close()
    return out.getvalue()


def _valid_manifest() -> bytes:
    cid = cid_to_str(make_cid(1, RAW, b"x"))
    return canonical_json({
        "format": "bundlekit/1", "namespace": "agent", "created": "2026-01-02T03:04:05Z",
        "profile": "unixfs-v1-2025", "encryption": None,
        "memory": {"index": "memory/MEMORY.md", "timeline": ["memory/timeline/2026-01-02.jsonl"],
                   "files": {"memory/MEMORY.md": {"cid": cid, "size": 1},
                             "memory/a.md": {"cid": cid, "size": 1},
                             "memory/timeline/2026-01-02.jsonl": {"cid": cid, "size": 1}}},
    })


@st.composite
def _mutated(draw: st.DrawFn, seed: bytes) -> bytes:
    data = bytearray(seed)
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "insert", "delete", "truncate"]))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if kind == "flip" and data:
            data[at] = draw(st.integers(0, 255))
        elif kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "delete" and data:
            del data[at : at + draw(st.integers(1, 8))]
        elif kind == "truncate":
            del data[at:]
    return bytes(data)


def _inputs(seed: bytes) -> st.SearchStrategy[bytes]:
    return st.one_of(st.binary(max_size=300), _mutated(seed))


@FUZZ
@given(_inputs(_valid_car()))
def test_the_car_reader_raises_only_its_errors(data: bytes) -> None:
    try:
        _roots, blocks = read_car(io.BytesIO(data))
        for _cid, _block in blocks:
            pass
    except (CARError, VerificationError, CodecError, CIDError):
        pass


@FUZZ
@given(_inputs(_valid_node()))
def test_the_dag_pb_decoder_raises_only_codec_errors(data: bytes) -> None:
    try:
        _links, payload = decode_node(data)
        if payload is not None:
            UnixFSData.decode(payload)
    except CodecError:
        pass


_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.sampled_from(["", "x", "memory/a.md\n", "../x"]))
#: Wrong-typed and odd JSON values: scalars, and lists or objects of them.
_JSON_VALUES = st.one_of(
    _SCALARS,
    st.lists(_SCALARS, max_size=3),
    st.dictionaries(st.sampled_from(["cid", "size", "name", "n", "r", "p"]), _SCALARS, max_size=3),
)
_MANIFEST = json.loads(_valid_manifest())


@st.composite
def _manifest_with_a_field_replaced(draw: st.DrawFn) -> bytes:
    manifest = copy.deepcopy(_MANIFEST)
    target = manifest
    keys = draw(st.lists(st.sampled_from(["memory", "files", "encryption", "timeline", "created"]), max_size=2))
    for key in keys:
        if isinstance(target, dict) and isinstance(target.get(key), dict):
            target = target[key]
    field = draw(st.sampled_from([*target.keys(), "key_source"])) if isinstance(target, dict) else None
    if field is not None:
        target[field] = draw(_JSON_VALUES)
    return json.dumps(manifest).encode()


@FUZZ
@given(st.one_of(_inputs(_valid_manifest()), _manifest_with_a_field_replaced()))
def test_the_manifest_parser_raises_only_manifest_errors(data: bytes) -> None:
    try:
        parse_manifest(data)
    except ManifestError:
        pass
