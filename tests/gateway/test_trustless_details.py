"""Two trustless-gateway rules found broken while attacking the gateway after issues 24 and 25.

Source: github ipfs/specs ``src/http-gateways/trustless-gateway.md``, commit 0084d7c3: "A Gateway
MUST NOT include virtual blocks identified by identity CIDs (multihash with 0x00 code) in CAR
responses"; ``entity-bytes`` offsets are integers (boxo parses them as int64:
github ipfs/boxo ``gateway/handler_car.go``, commit a50f7849).
"""

from __future__ import annotations

import io

import pytest

from bundlekit.blockstore import BlockStore
from bundlekit.car.reader import read_car
from bundlekit.gateway.respond import GatewayResponder
from bundlekit.ipld.cid import cid_from_text, cid_to_str


def test_the_identity_probe_car_has_its_root_and_no_block(store: BlockStore) -> None:
    response = GatewayResponder(store).respond("GET", "/ipfs/bafkqaaa?format=car", {})
    assert response.status == 200
    roots, blocks = read_car(io.BytesIO(b"".join(response.body)))
    assert roots == [cid_from_text("bafkqaaa")]
    assert list(blocks) == []


@pytest.mark.parametrize("value", ["1_0:20", " 1:20", "+1:20", "1:2 0", "0:99999999999999999999", "0x1:2", ":5", "5:"])
def test_an_entity_bytes_offset_that_is_not_a_plain_integer_is_a_400(
    filled_store: BlockStore, sample_dag, value: str  # type: ignore[no-untyped-def]
) -> None:
    target = f"/ipfs/{cid_to_str(sample_dag.root)}/memory/a.md?format=car&entity-bytes={value}"
    assert GatewayResponder(filled_store).respond("GET", target, {}).status == 400
