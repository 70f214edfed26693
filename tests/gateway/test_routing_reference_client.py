"""The routing API of ``bundlekit serve`` read and written by the reference client, both ways.

``routing_client.mjs`` drives ``GET``/``PUT /routing/v1/ipns/{name}`` with npm
``@helia/delegated-routing-v1-http-api-client`` 9.0.2 (``getIPNS``/``putIPNS``, which names a
name by its base32 CIDv1, ``bafz...``) and checks every record it reads with npm ``ipns`` 10.1.6
(``ipnsValidator``); it makes its own records with ``createIPNSRecord`` (V1+V2). Both packages
are the ones ``tests/package-lock.json`` pins, found through ``tests/reference_tools``; without
them the tests are skipped with the reason. The client hides status codes (any answer but 200
to a PUT is its ``BadResponseError``): ``test_routing_api.py`` checks those.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bundlekit.blockstore import BlockStore
from bundlekit.crypto.signing import Ed25519Signer
from bundlekit.gateway.server import serve_in_thread
from bundlekit.ipld.cid import parse_cid
from bundlekit.names import PublishTargets, publish, resolve
from bundlekit.names.routing import RoutingEndpoint, parse_routing
from bundlekit.hub.routing import MOUNT, RoutingAPI
from tests.reference_tools import find

HERE = Path(__file__).resolve().parent
OURS = "bafkreidfdrlkeq4m4xnxuyx6iae76fdm4wgl5d4xzsb77ixhyqwumhz244"
THEIRS = "bafkqaddwgevxmmraojswg33smq"
SEED_A, SEED_B = bytes([7]) * 32, bytes([9]) * 32


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[str, Any], RoutingEndpoint, Path]]:
    """A served routing API holding the record bundlekit published (sequence 0), then the client's run."""
    found = find({"@helia/delegated-routing-v1-http-api-client": "9.0.2", "ipns": "10.1.6"})
    if isinstance(found, str):
        pytest.skip(found)
    node, _modules = found
    base = tmp_path_factory.mktemp("routing")
    served = BlockStore(base / "served")
    with serve_in_thread(store=served, apps={MOUNT: RoutingAPI(served).app()}) as server:
        endpoint = parse_routing(server.url)
        publish(Ed25519Signer.from_seed(SEED_A), parse_cid(OURS), store=BlockStore(base / "writer"),
                targets=PublishTargets(routing=[endpoint]))
        done = subprocess.run(
            [node, str(HERE / "routing_client.mjs"), server.url, SEED_A.hex(), SEED_B.hex(), f"/ipfs/{THEIRS}"],
            capture_output=True, text=True, timeout=120, check=True,
        )
        seen = json.loads(done.stdout)
        # What bundlekit resolves right after the client's run (later tests publish again).
        seen["resolved"] = resolve(seen["nameA"], store=BlockStore(base / "reader"), routing=[endpoint])
        yield seen, endpoint, base


def test_a_record_bundlekit_publishes_is_read_and_verified_by_the_reference_client(run) -> None:  # type: ignore[no-untyped-def]
    seen, _endpoint, _base = run
    assert seen["published"]["ok"], seen["published"]
    assert seen["published"]["result"]["sequence"] == 0
    assert seen["published"]["result"]["value"] == f"/ipfs/{OURS}"


def test_the_reference_client_names_the_name_as_base32_and_the_server_takes_it(run) -> None:  # type: ignore[no-untyped-def]
    seen, _endpoint, _base = run
    assert seen["pathName"].startswith("bafz")
    assert seen["put"] == {"ok": True, "result": None}


def test_a_record_the_reference_client_puts_is_resolved_by_bundlekit(run) -> None:  # type: ignore[no-untyped-def]
    seen, endpoint, _base = run
    found = seen["resolved"]
    assert found.record.sequence == 1
    assert found.record.value == f"/ipfs/{THEIRS}"
    assert found.sources == [endpoint.label]


def test_the_reference_client_reads_back_the_bytes_it_put(run) -> None:  # type: ignore[no-untyped-def]
    seen, _endpoint, _base = run
    assert seen["readBack"]["result"]["hex"] == seen["putHex"]


def test_putting_the_same_record_again_is_accepted(run) -> None:  # type: ignore[no-untyped-def]
    seen, _endpoint, _base = run
    assert seen["putAgain"]["ok"]


def test_a_record_with_the_kept_sequence_is_refused(run) -> None:  # type: ignore[no-untyped-def]
    seen, _endpoint, _base = run
    assert seen["equalSequence"]["error"] == "BadResponseError"


def test_a_record_below_the_kept_sequence_is_refused(run) -> None:  # type: ignore[no-untyped-def]
    seen, _endpoint, _base = run
    assert seen["lowerSequence"]["error"] == "BadResponseError"


def test_a_record_signed_by_another_key_is_refused(run) -> None:  # type: ignore[no-untyped-def]
    seen, _endpoint, _base = run
    assert seen["foreign"]["error"] == "BadResponseError"


def test_refused_records_leave_the_kept_one_in_place(run) -> None:  # type: ignore[no-untyped-def]
    seen, _endpoint, _base = run
    assert seen["afterRefusals"]["result"]["hex"] == seen["putHex"]


def test_a_name_without_a_record_is_not_found_by_the_reference_client(run) -> None:  # type: ignore[no-untyped-def]
    seen, _endpoint, _base = run
    assert seen["none"]["error"] == "NotFoundError"


def test_bundlekit_publishes_above_the_record_the_reference_client_put(run) -> None:  # type: ignore[no-untyped-def]
    _seen, endpoint, base = run
    published = publish(Ed25519Signer.from_seed(SEED_A), parse_cid(OURS), store=BlockStore(base / "late"),
                        targets=PublishTargets(routing=[endpoint]))
    assert published.sequence == 2
