"""The gateway's per-request walk budget and its stop for a client that has gone (issue 12, item 1).

``GatewayResponder.respond`` walks under a ``WalkBudget`` with the
responder's ``limits``; ``cancelled`` (the server's "has the client left?")
is polled every ``CANCEL_POLL`` block visits.
"""

from __future__ import annotations


import pytest

from bundlekit.errors import DAGLimitExceeded
from bundlekit.gateway.respond import CLIENT_GONE, GatewayResponder
from bundlekit.ipld.cid import RAW, cid_to_str, make_cid
from bundlekit.ipld.walk import WalkCancelled, WalkLimits

from .conftest import Dag, DictSource


def _wide_dir(files: int) -> Dag:
    dag = Dag()
    dag.root, _ = dag.directory({f"f{i:04d}": dag.file(b"%04d" % i) for i in range(files)})
    return dag


def test_a_car_of_more_blocks_than_the_visit_limit_is_cut(sample_dag: Dag) -> None:
    responder = GatewayResponder(DictSource(sample_dag.blocks), limits=WalkLimits(max_visits=2))
    response = responder.respond("GET", f"/ipfs/{cid_to_str(sample_dag.root)}?format=car", {})
    assert response.status == 200  # the status line goes out first; the stream is cut
    with pytest.raises(DAGLimitExceeded, match="more than 2 block visits"):
        b"".join(response.body)


def test_a_listing_past_the_entry_limit_is_a_500() -> None:
    dag = _wide_dir(20)
    responder = GatewayResponder(DictSource(dag.blocks), limits=WalkLimits(max_visits=5))
    response = responder.respond("GET", f"/ipfs/{cid_to_str(dag.root)}/f0003", {})
    assert response.status == 200  # one listing and one file: within the limit
    refused = GatewayResponder(DictSource(dag.blocks), limits=WalkLimits(max_visits=1))
    response = refused.respond("GET", f"/ipfs/{cid_to_str(dag.root)}/f0003", {})
    assert response.status == 500
    assert b"past this gateway's limits" in b"".join(response.body)


def test_work_for_a_client_that_has_gone_stops() -> None:
    dag = _wide_dir(600)
    response = GatewayResponder(DictSource(dag.blocks)).respond(
        "GET", f"/ipfs/{cid_to_str(dag.root)}?format=car", {}, cancelled=lambda: True
    )
    with pytest.raises(WalkCancelled):
        b"".join(response.body)


def test_a_request_cancelled_before_its_answer_gets_client_gone() -> None:
    dag = Dag()
    node = dag.add(*_leaf())
    for _ in range(300):  # 300 directories deep: resolving the path lists each one
        node, _tsize = dag.directory({"a": (node, 1)})
    path = "/".join(["a"] * 300)
    response = GatewayResponder(DictSource(dag.blocks)).respond(
        "GET", f"/ipfs/{cid_to_str(node)}/{path}", {}, cancelled=lambda: True
    )
    assert (response.status, list(response.body)) == (CLIENT_GONE, [])


def _leaf() -> tuple[bytes, bytes]:
    return make_cid(1, RAW, b"x"), b"x"
