"""Response formats against the trustless and path gateway specifications (issue 25, item 8).

Sources (github ipfs/specs, commit 0084d7c3): ``src/http-gateways/trustless-gateway.md`` (raw
blocks only at ``/ipfs/{cid}``; ``car-version``/``car-order``/``car-dups`` and the CAR ``order``
and ``dups`` content type parameters; "A Gateway MAY choose to implement only some parameters and
return HTTP 400 Bad Request or 406 Not Acceptable"; ``Content-Location`` when the format is not in
the URL) and ``src/http-gateways/path-gateway.md`` ("Content-Location": the URL with ``format``).
Checked on ``GatewayResponder`` directly: the rules, without sockets.
"""

from __future__ import annotations

import pytest

from bundlekit.blockstore import BlockStore
from bundlekit.gateway.respond import GatewayResponder, Response
from bundlekit.ipld.cid import cid_to_str

CAR = "application/vnd.ipld.car"
RAW = "application/vnd.ipld.raw"
SERVED_CAR = "car-version=1&car-order=dfs&car-dups=n"


def _get(store: BlockStore, target: str, accept: str | None = None, method: str = "GET") -> Response:
    headers = {"accept": accept} if accept is not None else {}
    return GatewayResponder(store).respond(method, target, headers)


@pytest.fixture
def root(sample_dag) -> str:  # type: ignore[no-untyped-def]
    return cid_to_str(sample_dag.root)


def test_a_raw_block_chosen_by_accept_names_its_format_url(filled_store: BlockStore, root: str) -> None:
    response = _get(filled_store, f"/ipfs/{root}", RAW)
    assert response.status == 200
    assert response.header("Content-Location") == f"/ipfs/{root}?format=raw"


def test_a_car_chosen_by_accept_names_its_format_and_car_parameters_keeping_the_query(
    filled_store: BlockStore, root: str
) -> None:
    response = _get(filled_store, f"/ipfs/{root}/memory?dag-scope=block", CAR)
    assert response.status == 200
    assert response.header("Content-Location") == f"/ipfs/{root}/memory?dag-scope=block&format=car&{SERVED_CAR}"


def test_a_head_request_carries_the_content_location_too(filled_store: BlockStore, root: str) -> None:
    assert _get(filled_store, f"/ipfs/{root}", RAW, method="HEAD").header("Content-Location") is not None


def test_a_not_modified_answer_keeps_the_content_location(filled_store: BlockStore, root: str) -> None:
    etag = _get(filled_store, f"/ipfs/{root}", RAW).header("Etag")
    assert etag is not None
    response = GatewayResponder(filled_store).respond("GET", f"/ipfs/{root}", {"accept": RAW, "if-none-match": etag})
    assert response.status == 304
    assert response.header("Content-Location") == f"/ipfs/{root}?format=raw"


@pytest.mark.parametrize("query", ["format=raw", "format=car", "format=car&car-dups=n"])
def test_a_format_in_the_url_needs_no_content_location(filled_store: BlockStore, root: str, query: str) -> None:
    response = _get(filled_store, f"/ipfs/{root}?{query}", f"{CAR}, {RAW}")
    assert response.status == 200
    assert response.header("Content-Location") is None


def test_a_deserialized_answer_has_no_content_location(filled_store: BlockStore, root: str) -> None:
    assert _get(filled_store, f"/ipfs/{root}/manifest.json", "text/html").header("Content-Location") is None


def test_url_car_parameters_win_over_accept_and_the_answer_names_them(filled_store: BlockStore, root: str) -> None:
    response = _get(filled_store, f"/ipfs/{root}?format=car&car-dups=n", f"{CAR}; dups=y")
    assert response.status == 200
    assert response.header("Content-Type") == f"{CAR}; version=1; order=dfs; dups=n"
    assert response.header("Content-Location") == f"/ipfs/{root}?format=car&{SERVED_CAR}"


def test_car_dups_y_in_the_url_is_a_400(filled_store: BlockStore, root: str) -> None:
    response = _get(filled_store, f"/ipfs/{root}?format=car&car-dups=y")
    assert response.status == 400
    assert b"car-dups=n" in b"".join(response.body)


@pytest.mark.parametrize("query", ["car-dups=maybe", "car-order=bfs", "car-order="])
def test_an_unknown_car_parameter_value_in_the_url_is_a_400(filled_store: BlockStore, root: str, query: str) -> None:
    assert _get(filled_store, f"/ipfs/{root}?format=car&{query}").status == 400


@pytest.mark.parametrize("accept", [f"{CAR}; dups=y", f"{CAR}; order=bfs", f"{CAR};version=1;order=dfs;dups=y"])
def test_a_car_variant_not_served_is_406_when_nothing_else_is_acceptable(
    filled_store: BlockStore, root: str, accept: str
) -> None:
    assert _get(filled_store, f"/ipfs/{root}", accept).status == 406


def test_a_served_car_variant_later_in_accept_is_chosen(filled_store: BlockStore, root: str) -> None:
    response = _get(filled_store, f"/ipfs/{root}", f"{CAR}; dups=y, {CAR}; dups=n; q=0.5")
    assert response.status == 200
    assert response.header("Content-Type") == f"{CAR}; version=1; order=dfs; dups=n"


def test_a_url_car_dups_n_makes_an_accept_asking_dups_y_acceptable(filled_store: BlockStore, root: str) -> None:
    assert _get(filled_store, f"/ipfs/{root}?car-dups=n", f"{CAR}; dups=y").status == 200


@pytest.mark.parametrize(("query", "accept"), [("format=car&car-order=unk", None), ("", f"{CAR}; order=unk")])
def test_order_unk_is_answered_depth_first_and_says_so(
    filled_store: BlockStore, root: str, query: str, accept: str | None
) -> None:
    response = _get(filled_store, f"/ipfs/{root}?{query}", accept)
    assert response.status == 200
    assert response.header("Content-Type") == f"{CAR}; version=1; order=dfs; dups=n"


@pytest.mark.parametrize(("target", "accept"), [("memory?format=raw", None), ("memory/a.md", RAW)])
def test_a_raw_block_at_a_path_is_a_400(filled_store: BlockStore, root: str, target: str, accept: str | None) -> None:
    response = _get(filled_store, f"/ipfs/{root}/{target}", accept)
    assert response.status == 400
    assert b"/ipfs/{cid}" in b"".join(response.body)


def test_a_raw_block_at_the_root_with_a_trailing_slash_is_served(
    filled_store: BlockStore, root: str, sample_dag  # type: ignore[no-untyped-def]
) -> None:
    response = _get(filled_store, f"/ipfs/{root}/?format=raw")
    assert response.status == 200
    assert b"".join(response.body) == sample_dag.blocks[sample_dag.root]


def test_the_url_car_parameters_are_ignored_for_a_raw_block(filled_store: BlockStore, root: str) -> None:
    assert _get(filled_store, f"/ipfs/{root}?format=raw&car-dups=y").status == 200
