"""Issue 12, item 1, the gateway: DAGs that reuse blocks get a quick error, and the server lives on.

``bundlekit serve`` runs the hostile CARs (``make_inputs.py``) in a child
process capped in memory (``conftest.gateway_url``); every request has a
client timeout. Before the budgets, listing the HAMT bomb grew without bound.
"""

from __future__ import annotations

import httpx
import pytest

_TIMEOUT = 60.0


def _get(url: str) -> httpx.Response:
    return httpx.get(url, timeout=_TIMEOUT)


def test_listing_a_hamt_that_reuses_a_shard_is_a_500(gateway_url: str, roots: dict[str, str]) -> None:
    response = _get(f"{gateway_url}/ipfs/{roots['hamt-bomb.car']}/")
    assert response.status_code == 500
    assert "more than once" in response.text


def test_a_file_claiming_a_petabyte_is_refused_before_the_status_line(
    gateway_url: str, roots: dict[str, str]
) -> None:
    response = _get(f"{gateway_url}/ipfs/{roots['file-bomb.car']}")
    assert response.status_code == 500
    assert "past this gateway's limits" in response.text


def test_a_byte_range_car_of_a_reused_file_follows_each_block_once(
    gateway_url: str, roots: dict[str, str]
) -> None:
    root = roots["file-bomb.car"]
    response = _get(f"{gateway_url}/ipfs/{root}?format=car&entity-bytes=0:*")
    assert response.status_code == 200
    assert len(response.content) < 16 * 1024  # the 41 distinct blocks, not 2**41 visits


@pytest.mark.parametrize("path", ["a/b/a/b/a/", "?format=car&dag-scope=all"])
def test_the_directory_bomb_is_served_by_its_distinct_blocks(
    path: str, gateway_url: str, roots: dict[str, str]
) -> None:
    response = _get(f"{gateway_url}/ipfs/{roots['dir-bomb.car']}/{path}")
    assert response.status_code == 200


def test_the_server_answers_after_the_hostile_requests(gateway_url: str, roots: dict[str, str]) -> None:
    for name in ("hamt-bomb.car", "file-bomb.car"):
        _get(f"{gateway_url}/ipfs/{roots[name]}/")
    response = _get(f"{gateway_url}/ipfs/{roots['dir-bomb.car']}?format=raw")
    assert response.status_code == 200
