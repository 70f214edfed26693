"""Issue 35, items 6 and 7: the routing API of a running ``bundlekit serve``, driven as an attacker would.

6. 10,000 names from one client locked new writers out (every new name then 507, the team's too). Now,
   with ``$BUNDLEKIT_SERVE_TOKEN`` set, a record of a name the hub does not hold yet needs the token
   (403 without it; records of held names still verify and go in as before); without a token, one
   client brings at most ``MAX_NAMES_PER_CLIENT`` new names (403 past it); at the ``MAX_NAMES`` cap the
   expired records are evicted before the cap is counted.
7. 32 concurrent PUTs of different records with one sequence: exactly one wins (the compare-and-swap
   under the store's record lock); a record whose value is not an ``/ipfs/`` or ``/ipns/`` path is 400.
"""

from __future__ import annotations

import concurrent.futures
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from bundlekit.blockstore import BlockStore
from bundlekit.crypto.signing import Ed25519Signer
from bundlekit.gateway.server import serve_in_thread
from bundlekit.names.record import create_record, name_from_key
from bundlekit.hub.routing import MAX_NAMES_PER_CLIENT, MOUNT, RoutingAPI, client_of

TOKEN = "routing-token-feedc0ffee123456"
MEDIA = "application/vnd.ipfs.ipns-record"
VALIDITY = datetime.now(UTC) + timedelta(days=1)
WAIT = 30.0  # seconds a request may take: a bound for a hung server, never a timing assertion


def signer(seed: int) -> Ed25519Signer:
    return Ed25519Signer.from_seed(seed.to_bytes(4, "big") * 8)


def record(key: Ed25519Signer, sequence: int = 1, value: str = "/ipfs/bafkqaaa", *,
           validity: datetime = VALIDITY, ttl_ns: int = 0) -> bytes:
    return create_record(key, value, sequence=sequence, validity=validity, ttl_ns=ttl_ns)


def put(url: str, key: Ed25519Signer, body: bytes, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.put(f"{url}/routing/v1/ipns/{name_from_key(key.public)}", content=body,
                     headers={"Content-Type": MEDIA, **(headers or {})}, timeout=WAIT)


@contextmanager
def serve(tmp_path: Path, token: str | None) -> Iterator[tuple[str, Path]]:
    """``bundlekit serve --port 0 --store S`` (with ``$BUNDLEKIT_SERVE_TOKEN`` = ``token``): its URL and S."""
    store = tmp_path / "served"
    env = {k: v for k, v in os.environ.items() if not k.startswith("BUNDLEKIT_")}
    if token is not None:
        env["BUNDLEKIT_SERVE_TOKEN"] = token
    proc = subprocess.Popen([sys.executable, "-m", "bundlekit", "serve", "--port", "0", "--store", str(store)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), url
        yield url, store
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=30)
        assert TOKEN not in out + err


def test_with_a_token_a_new_name_needs_it_and_a_held_name_moves_without_it(tmp_path: Path) -> None:
    team, stranger = signer(1), signer(2)
    with serve(tmp_path, TOKEN) as (url, store):
        refused = put(url, team, record(team, 1))
        assert refused.status_code == 403 and "needs its token" in refused.text and TOKEN not in refused.text
        assert put(url, team, record(team, 1), {"Authorization": "Bearer not-the-token-000000"}).status_code == 403
        assert put(url, team, record(team, 1), {"Authorization": f"Bearer {TOKEN}"}).status_code == 200
        assert put(url, team, record(team, 2)).status_code == 200  # a held name: the record verifies, that is all
        assert put(url, team, record(team, 2, validity=VALIDITY + timedelta(hours=1))).status_code == 409
        assert put(url, stranger, record(stranger, 1)).status_code == 403
        echoed = httpx.get(f"{url}/ipfs/{TOKEN}", timeout=WAIT)  # an answer that quotes the path it refuses
        assert echoed.status_code == 400 and TOKEN not in echoed.text and "***" in echoed.text
    assert sorted(p.name for p in (store / "ipns").iterdir() if not p.name.startswith(".")) == [
        name_from_key(team.public)]


def test_without_a_token_one_client_brings_at_most_its_share_of_new_names(tmp_path: Path) -> None:
    keys = [signer(100 + i) for i in range(MAX_NAMES_PER_CLIENT + 1)]
    bodies = [record(key) for key in keys]
    with serve(tmp_path, None) as (url, store):
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            codes = list(pool.map(lambda pair: put(url, *pair).status_code, zip(keys, bodies, strict=True)))
        assert sorted(codes) == [200] * MAX_NAMES_PER_CLIENT + [403]
        assert put(url, keys[0], record(keys[0], 2)).status_code == 200  # its held names still move
    assert len([p for p in (store / "ipns").iterdir() if not p.name.startswith(".")]) == MAX_NAMES_PER_CLIENT


def test_at_the_cap_expired_records_are_evicted_before_a_new_name_is_refused(tmp_path: Path) -> None:
    now = [int(datetime.now(UTC).timestamp() * 1e9)]
    store = BlockStore(tmp_path / "store", fsync=False)
    api = RoutingAPI(store, clock=lambda: now[0], max_names=3, token=TOKEN)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    soon = datetime.now(UTC) + timedelta(minutes=5)
    with serve_in_thread(store=store, apps={MOUNT: api.app()}) as server:
        short = [signer(300 + i) for i in range(2)]
        lasting = signer(310)
        for key in short:
            assert put(server.url, key, record(key, validity=soon), auth).status_code == 200
        assert put(server.url, lasting, record(lasting), auth).status_code == 200
        newcomer = signer(320)
        assert put(server.url, newcomer, record(newcomer), auth).status_code == 507
        now[0] += 10 * 60 * 1_000_000_000  # the two short records have expired
        assert put(server.url, newcomer, record(newcomer), auth).status_code == 200
    assert store.record_count() == 2
    assert store.get_record(name_from_key(lasting.public)) is not None


def test_thirty_two_concurrent_puts_of_one_sequence_see_exactly_one_win(tmp_path: Path) -> None:
    team = signer(7)
    rivals = [record(team, 5, validity=VALIDITY + timedelta(seconds=i), ttl_ns=i) for i in range(32)]
    with serve(tmp_path, TOKEN) as (url, store):
        assert put(url, team, record(team, 4), {"Authorization": f"Bearer {TOKEN}"}).status_code == 200
        with concurrent.futures.ThreadPoolExecutor(len(rivals)) as pool:
            codes = list(pool.map(lambda body: put(url, team, body).status_code, rivals))
        assert sorted(codes) == [200] + [409] * 31
        kept = httpx.get(f"{url}/routing/v1/ipns/{name_from_key(team.public)}", headers={"Accept": MEDIA}).content
    assert kept == rivals[codes.index(200)]


def test_a_record_whose_value_is_no_ipfs_or_ipns_path_is_400_and_not_kept(tmp_path: Path) -> None:
    team = signer(8)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with serve(tmp_path, TOKEN) as (url, store):
        for value in ("https://example.com/", "bafkqaaa", "/dns/example.com", ""):
            answer = put(url, team, record(team, 1, value), auth)
            assert answer.status_code == 400 and "not an /ipfs/ or /ipns/ path" in answer.text, value
        assert put(url, team, record(team, 1, "/ipns/k51qzi5uqu5dlvj2baxnqndepeb86cbk3ng7n3i46uzyxzyqj2xjonzllnv0v8"),
                   auth).status_code == 200
    assert (store / "ipns" / name_from_key(team.public)).exists()


@pytest.mark.parametrize(("peer", "counted_as"), [
    ("192.0.2.7", "192.0.2.7"),
    ("::ffff:192.0.2.7", "192.0.2.7"),
    ("2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"),
    ("2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"),
])
def test_an_ipv6_client_counts_by_its_64_network(peer: str, counted_as: str) -> None:
    assert client_of(peer) == counted_as


def test_a_record_whose_value_is_an_ipfs_or_ipns_prefix_with_junk_is_400_and_not_kept(tmp_path: Path) -> None:
    team = signer(9)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    junk = ["/ipfs/", "/ipns/", "/ipfs/junk", "/ipfs/bafkqaaa\x00", "/ipfs/bafkqaaa\n/ipfs/bafkqaab", "/ipfs/../../pins.json",
            "/ipfs/bafkqaaa//x", "/ipfs/ bafkqaaa", "/ipns/k51\x1b[2J"]
    with serve(tmp_path, TOKEN) as (url, store):
        for sequence, value in enumerate(junk, start=1):
            answer = put(url, team, record(team, sequence, value), auth)
            assert answer.status_code == 400 and "not an /ipfs/ or /ipns/ path" in answer.text, value
        assert not (store / "ipns" / name_from_key(team.public)).exists()
        assert put(url, team, record(team, 1, "/ipfs/bafkqaaa/sub/"), auth).status_code == 200
