"""The gateway over real HTTP on loopback: formats, scopes, headers, status codes, paths."""

from __future__ import annotations

import io
import threading

import httpx
import pytest

from bundlekit.blockstore import BlockStore
from bundlekit.car.reader import read_car
from bundlekit.errors import UsageError
from bundlekit.gateway.respond import GatewayResponder
from bundlekit.gateway.server import create_server
from bundlekit.ipld.cid import RAW, cid_to_str, make_cid

from .conftest import DictSource

CAR_TYPE = "application/vnd.ipld.car; version=1; order=dfs; dups=n"


def car_blocks(body: bytes) -> tuple[list[bytes], list[bytes]]:
    """(roots, CIDs in order) of a CAR response, every block verified by read_car."""
    roots, blocks = read_car(io.BytesIO(body), verify=True)
    return list(roots), [cid for cid, _data in blocks]


def test_format_raw_returns_the_block_bytes(client: httpx.Client, sample_dag) -> None:  # type: ignore[no-untyped-def]
    r = client.get(f"/ipfs/{cid_to_str(sample_dag.root)}?format=raw")
    assert r.status_code == 200
    assert r.content == sample_dag.blocks[sample_dag.root]
    assert r.headers["content-type"] == "application/vnd.ipld.raw"


def test_raw_response_carries_the_trustless_headers(client: httpx.Client, sample_dag) -> None:  # type: ignore[no-untyped-def]
    name = cid_to_str(sample_dag.root)
    r = client.get(f"/ipfs/{name}?format=raw")
    assert r.headers["x-content-type-options"] == "nosniff"
    assert "immutable" in r.headers["cache-control"]
    assert r.headers["content-disposition"] == f'attachment; filename="{name}.bin"'
    assert r.headers["etag"] == f'"{name}.raw"'
    assert r.headers["x-ipfs-path"] == f"/ipfs/{name}"
    assert r.headers["x-ipfs-roots"] == name
    assert r.headers["content-length"] == str(len(r.content))


def test_accept_header_selects_raw(client: httpx.Client, sample_dag) -> None:  # type: ignore[no-untyped-def]
    r = client.get(f"/ipfs/{cid_to_str(sample_dag.root)}", headers={"Accept": "application/vnd.ipld.raw"})
    assert r.headers["content-type"] == "application/vnd.ipld.raw"
    assert r.content == sample_dag.blocks[sample_dag.root]


def test_accept_header_selects_car_by_quality(client: httpx.Client, sample_dag) -> None:  # type: ignore[no-untyped-def]
    accept = "application/vnd.ipld.raw;q=0.5, application/vnd.ipld.car;version=1;q=0.9"
    r = client.get(f"/ipfs/{cid_to_str(sample_dag.root)}", headers={"Accept": accept})
    assert r.headers["content-type"] == CAR_TYPE


def test_format_parameter_wins_over_accept(client: httpx.Client, sample_dag) -> None:  # type: ignore[no-untyped-def]
    r = client.get(
        f"/ipfs/{cid_to_str(sample_dag.root)}?format=raw", headers={"Accept": "application/vnd.ipld.car"}
    )
    assert r.headers["content-type"] == "application/vnd.ipld.raw"


def test_car_version_2_only_is_not_acceptable(client: httpx.Client, sample_dag) -> None:  # type: ignore[no-untyped-def]
    r = client.get(
        f"/ipfs/{cid_to_str(sample_dag.root)}", headers={"Accept": "application/vnd.ipld.car;version=2"}
    )
    assert r.status_code == 406


def test_head_raw_sends_headers_and_no_body(client: httpx.Client, sample_dag) -> None:  # type: ignore[no-untyped-def]
    r = client.head(f"/ipfs/{cid_to_str(sample_dag.root)}?format=raw")
    assert r.status_code == 200
    assert r.content == b""
    assert r.headers["content-length"] == str(len(sample_dag.blocks[sample_dag.root]))


def test_head_car_sends_car_headers_and_no_body(client: httpx.Client, sample_dag) -> None:  # type: ignore[no-untyped-def]
    r = client.head(f"/ipfs/{cid_to_str(sample_dag.root)}?format=car")
    assert r.status_code == 200
    assert r.headers["content-type"] == CAR_TYPE
    assert r.content == b""


def test_head_of_an_unknown_cid_is_404(client: httpx.Client) -> None:
    r = client.head(f"/ipfs/{cid_to_str(make_cid(1, RAW, b'absent'))}?format=raw")
    assert r.status_code == 404


def test_unknown_block_is_404(client: httpx.Client) -> None:
    r = client.get(f"/ipfs/{cid_to_str(make_cid(1, RAW, b'absent'))}?format=raw")
    assert r.status_code == 404
    assert "not in this gateway's store" in r.text


def test_unknown_car_root_is_404(client: httpx.Client) -> None:
    r = client.get(f"/ipfs/{cid_to_str(make_cid(1, RAW, b'absent'))}?format=car")
    assert r.status_code == 404


def test_malformed_cid_is_400(client: httpx.Client) -> None:
    assert client.get("/ipfs/not-a-cid?format=raw").status_code == 400


def test_unsupported_format_is_400(client: httpx.Client, sample_dag) -> None:  # type: ignore[no-untyped-def]
    assert client.get(f"/ipfs/{cid_to_str(sample_dag.root)}?format=tar").status_code == 400


def test_unknown_dag_scope_is_400(client: httpx.Client, sample_dag) -> None:  # type: ignore[no-untyped-def]
    assert client.get(f"/ipfs/{cid_to_str(sample_dag.root)}?format=car&dag-scope=most").status_code == 400


def test_paths_outside_ipfs_are_404(client: httpx.Client) -> None:
    assert client.get("/").status_code == 404


def test_ipns_is_not_implemented(client: httpx.Client) -> None:
    assert client.get("/ipns/example.com").status_code == 501


def test_other_methods_are_405(client: httpx.Client, sample_dag) -> None:  # type: ignore[no-untyped-def]
    r = client.post(f"/ipfs/{cid_to_str(sample_dag.root)}", content=b"x")
    assert r.status_code == 405
    assert "GET" in r.headers["allow"]


def test_identity_probe_cid_is_served_as_raw(client: httpx.Client) -> None:
    r = client.get("/ipfs/bafkqaaa?format=raw")
    assert r.status_code == 200
    assert r.content == b""


def test_only_if_cached_for_an_absent_root_is_412(client: httpx.Client) -> None:
    absent = cid_to_str(make_cid(1, RAW, b"absent"))
    r = client.head(f"/ipfs/{absent}?format=raw", headers={"Cache-Control": "only-if-cached"})
    assert r.status_code == 412


def test_if_none_match_with_the_etag_is_304(client: httpx.Client, sample_dag) -> None:  # type: ignore[no-untyped-def]
    url = f"/ipfs/{cid_to_str(sample_dag.root)}?format=raw"
    etag = client.get(url).headers["etag"]
    r = client.get(url, headers={"If-None-Match": etag})
    assert r.status_code == 304
    assert r.content == b""


def test_car_scope_all_holds_the_whole_dag(client: httpx.Client, sample_dag) -> None:  # type: ignore[no-untyped-def]
    r = client.get(f"/ipfs/{cid_to_str(sample_dag.root)}?format=car")
    assert r.status_code == 200
    assert r.headers["content-type"] == CAR_TYPE
    roots, cids = car_blocks(r.content)
    assert roots == [sample_dag.root]
    assert cids[0] == sample_dag.root
    assert sorted(cids) == sorted(sample_dag.blocks)


def test_car_response_is_streamed_with_chunked_encoding(client: httpx.Client, sample_dag) -> None:  # type: ignore[no-untyped-def]
    r = client.get(f"/ipfs/{cid_to_str(sample_dag.root)}?format=car")
    assert r.headers["transfer-encoding"] == "chunked"
    assert r.headers["content-disposition"] == f'attachment; filename="{cid_to_str(sample_dag.root)}.car"'


def test_car_scope_block_holds_only_the_root_block(client: httpx.Client, sample_dag) -> None:  # type: ignore[no-untyped-def]
    r = client.get(f"/ipfs/{cid_to_str(sample_dag.root)}?format=car&dag-scope=block")
    assert car_blocks(r.content)[1] == [sample_dag.root]


def test_car_scope_entity_of_a_directory_holds_no_children(client: httpx.Client, sample_dag) -> None:  # type: ignore[no-untyped-def]
    r = client.get(f"/ipfs/{cid_to_str(sample_dag.root)}?format=car&dag-scope=entity")
    assert car_blocks(r.content)[1] == [sample_dag.root]


def test_car_with_path_and_entity_scope_holds_path_blocks_then_the_file(
    client: httpx.Client, sample_dag
) -> None:  # type: ignore[no-untyped-def]
    path = "memory/timeline/2026-01-02.jsonl"
    r = client.get(f"/ipfs/{cid_to_str(sample_dag.root)}/{path}?format=car&dag-scope=entity")
    _roots, cids = car_blocks(r.content)
    memory_dir = sample_dag.entries["memory"][0]
    timeline_dir = sample_dag.entries["memory/timeline"][0]
    file_cid = sample_dag.entries[path][0]
    assert cids[:4] == [sample_dag.root, memory_dir, timeline_dir, file_cid]
    file_blocks = {c for c in sample_dag.blocks if c not in (sample_dag.root, memory_dir, timeline_dir)}
    assert len(cids) > 4
    assert set(cids[4:]) <= file_blocks
    assert sample_dag.entries["manifest.json"][0] not in cids


def test_car_with_path_and_block_scope_ends_at_the_terminal_block(client: httpx.Client, sample_dag) -> None:  # type: ignore[no-untyped-def]
    r = client.get(f"/ipfs/{cid_to_str(sample_dag.root)}/memory?format=car&dag-scope=block")
    assert car_blocks(r.content)[1] == [sample_dag.root, sample_dag.entries["memory"][0]]


def test_car_path_response_names_each_resolved_cid_in_x_ipfs_roots(client: httpx.Client, sample_dag) -> None:  # type: ignore[no-untyped-def]
    r = client.head(f"/ipfs/{cid_to_str(sample_dag.root)}/memory/a.md?format=car")
    expected = [sample_dag.root, sample_dag.entries["memory"][0], sample_dag.entries["memory/a.md"][0]]
    assert r.headers["x-ipfs-roots"] == ",".join(cid_to_str(c) for c in expected)


def test_path_resolution_returns_the_file_bytes(client: httpx.Client, sample_dag) -> None:  # type: ignore[no-untyped-def]
    r = client.get(f"/ipfs/{cid_to_str(sample_dag.root)}/memory/timeline/2026-01-02.jsonl")
    assert r.status_code == 200
    assert r.content == sample_dag.entries["memory/timeline/2026-01-02.jsonl"][2]
    assert r.headers["content-length"] == str(len(r.content))


def test_markdown_file_is_served_as_text_markdown(client: httpx.Client, sample_dag) -> None:  # type: ignore[no-untyped-def]
    r = client.get(f"/ipfs/{cid_to_str(sample_dag.root)}/memory/MEMORY.md")
    assert r.headers["content-type"].startswith("text/markdown")
    assert r.content == sample_dag.entries["memory/MEMORY.md"][2]


def test_a_missing_path_is_404(client: httpx.Client, sample_dag) -> None:  # type: ignore[no-untyped-def]
    assert client.get(f"/ipfs/{cid_to_str(sample_dag.root)}/memory/nope.md").status_code == 404


def test_a_path_through_a_file_is_404(client: httpx.Client, sample_dag) -> None:  # type: ignore[no-untyped-def]
    assert client.get(f"/ipfs/{cid_to_str(sample_dag.root)}/manifest.json/x").status_code == 404


def test_dot_dot_segments_are_400(client: httpx.Client, sample_dag) -> None:  # type: ignore[no-untyped-def]
    root = cid_to_str(sample_dag.root)
    assert client.get(f"/ipfs/{root}/memory/%2E%2E/manifest.json").status_code == 400


def test_directory_without_trailing_slash_redirects(client: httpx.Client, sample_dag) -> None:  # type: ignore[no-untyped-def]
    root = cid_to_str(sample_dag.root)
    r = client.get(f"/ipfs/{root}/memory")
    assert r.status_code == 301
    assert r.headers["location"] == f"/ipfs/{root}/memory/"


def test_directory_with_trailing_slash_lists_its_entries(client: httpx.Client, sample_dag) -> None:  # type: ignore[no-untyped-def]
    r = client.get(f"/ipfs/{cid_to_str(sample_dag.root)}/memory/")
    assert r.status_code == 200
    assert r.headers["content-type"] == "text/html; charset=utf-8"
    for name in ("MEMORY.md", "a.md", "timeline"):
        assert f'href="{name}"' in r.text


def test_a_damaged_block_is_a_500_never_served(
    client: httpx.Client, filled_store: BlockStore, sample_dag
) -> None:  # type: ignore[no-untyped-def]
    cid = sample_dag.entries["manifest.json"][0]
    filled_store.path_for(cid).write_bytes(b"tampered")
    assert client.get(f"/ipfs/{cid_to_str(cid)}?format=raw").status_code == 500


def test_a_block_missing_mid_stream_cuts_the_car_short(
    client: httpx.Client, filled_store: BlockStore, sample_dag
) -> None:  # type: ignore[no-untyped-def]
    path = "memory/timeline/2026-01-02.jsonl"
    file_cid = sample_dag.entries[path][0]
    leaf = next(
        c for c in sample_dag.blocks if c not in sample_dag.entries.values() and c != file_cid and c[1] == RAW
    )
    filled_store.path_for(leaf).unlink()
    with pytest.raises(httpx.RemoteProtocolError):
        client.get(f"/ipfs/{cid_to_str(sample_dag.root)}?format=car")


def test_concurrent_clients_all_get_correct_answers(gateway: str, sample_dag) -> None:  # type: ignore[no-untyped-def]
    root = cid_to_str(sample_dag.root)
    errors: list[str] = []

    def worker() -> None:
        with httpx.Client(base_url=gateway, timeout=10) as c:
            for _ in range(5):
                car = c.get(f"/ipfs/{root}?format=car")
                if sorted(car_blocks(car.content)[1]) != sorted(sample_dag.blocks):
                    errors.append("car")
                text = c.get(f"/ipfs/{root}/memory/a.md").content
                if text != sample_dag.entries["memory/a.md"][2]:
                    errors.append("file")

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_car_files_are_served_without_a_store(sample_car, sample_dag) -> None:  # type: ignore[no-untyped-def]
    from bundlekit.gateway.server import serve_in_thread

    with serve_in_thread(cars=[sample_car]) as server, httpx.Client(base_url=server.url, timeout=10) as c:
        r = c.get(f"/ipfs/{cid_to_str(sample_dag.root)}/memory/a.md")
        assert r.content == sample_dag.entries["memory/a.md"][2]
        car = c.get(f"/ipfs/{cid_to_str(sample_dag.root)}?format=car")
        assert sorted(car_blocks(car.content)[1]) == sorted(sample_dag.blocks)


def test_options_answers_a_cors_preflight(client: httpx.Client, sample_dag) -> None:  # type: ignore[no-untyped-def]
    r = client.options(f"/ipfs/{cid_to_str(sample_dag.root)}")
    assert r.status_code == 204
    assert r.headers["access-control-allow-origin"] == "*"


def test_car_version_query_other_than_1_is_400(client: httpx.Client, sample_dag) -> None:  # type: ignore[no-untyped-def]
    assert client.get(f"/ipfs/{cid_to_str(sample_dag.root)}?format=car&car-version=2").status_code == 400


def test_malformed_entity_bytes_is_400(client: httpx.Client, sample_dag) -> None:  # type: ignore[no-untyped-def]
    assert client.get(f"/ipfs/{cid_to_str(sample_dag.root)}?format=car&entity-bytes=ten").status_code == 400


def test_entity_bytes_on_a_directory_is_the_entity_scope(client: httpx.Client, sample_dag) -> None:  # type: ignore[no-untyped-def]
    r = client.get(f"/ipfs/{cid_to_str(sample_dag.root)}?format=car&entity-bytes=0:10")
    assert car_blocks(r.content)[1] == [sample_dag.root]


def test_equal_quality_accept_prefers_the_first_listed(client: httpx.Client, sample_dag) -> None:  # type: ignore[no-untyped-def]
    accept = "application/vnd.ipld.car, application/vnd.ipld.raw"
    r = client.head(f"/ipfs/{cid_to_str(sample_dag.root)}", headers={"Accept": accept})
    assert r.headers["content-type"] == CAR_TYPE


def test_unrelated_accept_gives_the_deserialized_response(client: httpx.Client, sample_dag) -> None:  # type: ignore[no-untyped-def]
    r = client.get(f"/ipfs/{cid_to_str(sample_dag.root)}/manifest.json", headers={"Accept": "text/html, */*"})
    assert r.content == sample_dag.entries["manifest.json"][2]
    assert r.headers["content-type"] == "application/json"


def test_raw_with_a_path_is_refused(client: httpx.Client, sample_dag) -> None:  # type: ignore[no-untyped-def]
    """The trustless gateway specification serves a raw block only at /ipfs/{cid} (test_negotiation.py)."""
    r = client.get(f"/ipfs/{cid_to_str(sample_dag.root)}/memory?format=raw")
    assert r.status_code == 400
    assert "dag-scope=block" in r.text


def test_a_directory_with_index_html_serves_it(tree_builder) -> None:  # type: ignore[no-untyped-def]
    from bundlekit.gateway.server import serve_in_thread

    dag = tree_builder({"site/index.html": b"<p>hi</p>", "site/x.txt": b"x"})
    with serve_in_thread(source=DictSource(dag.blocks)) as server, httpx.Client(base_url=server.url) as c:
        r = c.get(f"/ipfs/{cid_to_str(dag.root)}/site/")
        assert r.content == b"<p>hi</p>"
        assert r.headers["content-type"] == "text/html"


def test_head_car_of_a_path_whose_terminal_block_is_absent_is_404(
    client: httpx.Client, filled_store: BlockStore, sample_dag
) -> None:  # type: ignore[no-untyped-def]
    cid = sample_dag.entries["memory/a.md"][0]
    filled_store.path_for(cid).unlink()
    assert client.head(f"/ipfs/{cid_to_str(sample_dag.root)}/memory/a.md?format=car").status_code == 404


def test_subdomain_host_serves_the_cid_in_the_host_name(client: httpx.Client, sample_dag) -> None:  # type: ignore[no-untyped-def]
    host = f"{cid_to_str(sample_dag.root)}.ipfs.localhost"
    r = client.get("/memory/a.md", headers={"Host": host})
    assert r.content == sample_dag.entries["memory/a.md"][2]


def test_subdomain_directory_redirect_keeps_the_subdomain_path(client: httpx.Client, sample_dag) -> None:  # type: ignore[no-untyped-def]
    host = f"{cid_to_str(sample_dag.root)}.ipfs.localhost"
    r = client.get("/memory", headers={"Host": host})
    assert r.status_code == 301
    assert r.headers["location"] == "/memory/"


def test_subdomain_host_with_a_raw_request(client: httpx.Client, sample_dag) -> None:  # type: ignore[no-untyped-def]
    host = f"{cid_to_str(sample_dag.root)}.ipfs.localhost:8080"
    r = client.get("/?format=raw", headers={"Host": host})
    assert r.content == sample_dag.blocks[sample_dag.root]


@pytest.mark.parametrize("target", ["/ipns/not-a-name", "/ipns/k51" + "q" * 50 + "/a/path"])
def test_an_ipns_record_request_for_a_bad_name_or_with_a_path_is_400(store: BlockStore, target: str) -> None:
    """specs/gateway.md 3, step 1: only ``/ipns/{k51...}`` names a record."""
    response = GatewayResponder(store).respond("GET", target, {"accept": "application/vnd.ipfs.ipns-record"})
    assert response.status == 400


def test_an_ipns_name_with_a_trailing_newline_is_not_a_name(store: BlockStore) -> None:
    response = GatewayResponder(store).respond(
        "GET", "/ipns/k51" + "q" * 50 + "%0A", {"accept": "application/vnd.ipfs.ipns-record"}
    )
    assert response.status == 400


@pytest.mark.parametrize("prefix", ["/", "/ipfs/", "/ipns", "/ipfs/sub/", "ui/"])
def test_an_app_cannot_be_mounted_over_the_gateway_paths(store: BlockStore, prefix: str) -> None:
    with pytest.raises(UsageError, match="cannot mount an app"):
        create_server(store, port=0, apps={prefix: GatewayResponder(store).respond})
