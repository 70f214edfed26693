"""Filebase against a real local S3 endpoint (moto in server mode).

moto does not compute IPFS CIDs, so a botocore event hook plays Filebase's
part: after PutObject / HeadObject it fetches the stored object and sets
``x-amz-meta-cid`` to the root of the CAR when the object's metadata says
``import=car`` (else to the raw CID of its bytes, as Filebase would for a
plain file).
"""

from __future__ import annotations

import functools
import hashlib
import io
import logging
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bundlekit.car.reader import read_car
from bundlekit.errors import CIDMismatch, PinAuthError, PinnerNotConfigured, PinRejected
from bundlekit.ipld.cid import RAW, cid_from_digest, cid_to_str
from bundlekit.pinning.protocol import MISSING, PINNED
from pinners.filebase import FilebasePinner

from tests.net.loopback import free_port

from .conftest import Car, build_car

BUCKET = "memories"
ACCESS = "AKIAFILEBASETEST01"
SECRET_KEY = "filebase-secret-key-value-123456"


@pytest.fixture(scope="module")
def s3_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """moto's S3 server (``python -m moto.server``, moto's own CLI) in a child process on loopback. In a thread of
    the test process (``ThreadedMotoServer``) what it stored and its app stayed in that process for the rest of
    the run, ~90-150 MB of the test process's peak."""
    port = free_port()
    log = tmp_path_factory.mktemp("moto") / "server.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"moto's server did not start: {log.read_text(errors='replace')[-2000:]}")
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(30)


@functools.cache
def plain_client(endpoint: str) -> Any:
    """A boto3 client of the moto server (boto3 imported here: at import, every test process paid ~0.2 s of CPU for
    it while collecting, whether or not it ran a Filebase test)."""
    import boto3

    return boto3.session.Session().client(
        "s3", endpoint_url=endpoint, region_name="us-east-1",
        aws_access_key_id=ACCESS, aws_secret_access_key=SECRET_KEY,
    )


@pytest.fixture
def bucket(s3_endpoint: str) -> Iterator[str]:
    client = plain_client(s3_endpoint)
    client.create_bucket(Bucket=BUCKET)
    yield BUCKET
    for obj in client.list_objects_v2(Bucket=BUCKET).get("Contents", []):
        client.delete_object(Bucket=BUCKET, Key=obj["Key"])
    client.delete_bucket(Bucket=BUCKET)


def filebase_cid(endpoint: str, key: str, *, honour_import: bool = True) -> str | None:
    """What Filebase would report for the stored object."""
    client = plain_client(endpoint)
    try:
        obj = client.get_object(Bucket=BUCKET, Key=key)
    except client.exceptions.NoSuchKey:
        return None
    data = obj["Body"].read()
    if honour_import and obj.get("Metadata", {}).get("import") == "car":
        roots, _ = read_car(io.BytesIO(data), verify=False)
        return cid_to_str(roots[0])
    return cid_to_str(cid_from_digest(1, RAW, hashlib.sha256(data).digest()))


def make_pinner(endpoint: str, *, honour_import: bool = True, **kw: Any) -> tuple[FilebasePinner, list[str]]:
    pinner = FilebasePinner.from_env({
        "FILEBASE_ACCESS_KEY_ID": ACCESS, "FILEBASE_SECRET_ACCESS_KEY": SECRET_KEY,
        "FILEBASE_BUCKET": BUCKET, "BUNDLEKIT_FILEBASE_ENDPOINT": endpoint,
    })
    for k, v in kw.items():
        setattr(pinner, k, v)
    calls: list[str] = []

    def add_cid(event_name: str, parsed: dict[str, Any], **_: Any) -> None:
        op = event_name.rsplit(".", 1)[-1]
        calls.append(op)
        if "Error" in parsed:
            return
        key = add_cid.key
        cid = filebase_cid(endpoint, key, honour_import=honour_import)
        if cid is None:
            return
        parsed.setdefault("ResponseMetadata", {}).setdefault("HTTPHeaders", {})["x-amz-meta-cid"] = cid
        if op == "HeadObject":
            parsed.setdefault("Metadata", {})["cid"] = cid

    events = pinner.client.meta.events
    for op in ("PutObject", "CompleteMultipartUpload", "HeadObject"):
        events.register(f"after-call.s3.{op}", add_cid)
    pinner._hook = add_cid  # type: ignore[attr-defined]
    return pinner, calls


def pin(pinner: FilebasePinner, car: Car, **kw: Any) -> Any:
    pinner._hook.key = pinner.key_for(car.root)  # type: ignore[attr-defined]
    with car.open() as fh:
        return pinner.pin(fh, car.root, size=car.size, **kw)


def test_upload_stores_the_car_with_import_car_metadata_and_reads_the_cid(s3_endpoint: str, bucket: str, car: Car) -> None:
    pinner, calls = make_pinner(s3_endpoint)
    result = pin(pinner, car, name="release")
    assert (result.cid, result.status) == (car.root_text, PINNED)
    obj = plain_client(s3_endpoint).get_object(Bucket=bucket, Key=f"{car.root_text}.car")
    assert obj["Metadata"]["import"] == "car"
    assert obj["Body"].read() == car.path.read_bytes()
    assert "PutObject" in calls


def test_large_cars_go_through_multipart_upload(s3_endpoint: str, bucket: str, tmp_path: Path) -> None:
    big = build_car(tmp_path / "big.car", [bytes([i]) * (1024 * 1024) for i in range(6)])
    pinner, calls = make_pinner(s3_endpoint, multipart_threshold=5 * 1024 * 1024,
                                multipart_chunk=5 * 1024 * 1024)
    result = pin(pinner, big)
    assert result.cid == big.root_text
    assert "CompleteMultipartUpload" in calls and "PutObject" not in calls


def test_pinning_twice_reuses_the_object(s3_endpoint: str, bucket: str, car: Car) -> None:
    pinner, calls = make_pinner(s3_endpoint)
    pin(pinner, car)
    calls.clear()
    assert pin(pinner, car).status == PINNED
    assert "PutObject" not in calls
    assert len(plain_client(s3_endpoint).list_objects_v2(Bucket=bucket)["Contents"]) == 1


def test_a_cid_other_than_the_root_is_a_mismatch(s3_endpoint: str, bucket: str, car: Car) -> None:
    pinner, _ = make_pinner(s3_endpoint, honour_import=False)
    with pytest.raises(CIDMismatch, match=car.root_text):
        pin(pinner, car)


def test_no_cid_reported_is_rejected(s3_endpoint: str, bucket: str, car: Car) -> None:
    pinner, _ = make_pinner(s3_endpoint)
    pinner.client.meta.events.unregister("after-call.s3.PutObject", pinner._hook)  # type: ignore[attr-defined]
    pinner.client.meta.events.unregister("after-call.s3.HeadObject", pinner._hook)  # type: ignore[attr-defined]
    with pytest.raises(PinRejected, match="no CID"):
        pin(pinner, car)


def test_a_missing_bucket_is_rejected_with_the_bucket_named(s3_endpoint: str, car: Car) -> None:
    pinner, _ = make_pinner(s3_endpoint)
    pinner.bucket = "no-such-bucket"
    with pytest.raises(PinRejected, match="no-such-bucket") as info:
        pin(pinner, car)
    assert SECRET_KEY not in str(info.value)


def test_status_and_unpin(s3_endpoint: str, bucket: str, car: Car) -> None:
    pinner, _ = make_pinner(s3_endpoint)
    pin(pinner, car)
    assert pinner.status(car.root).status == PINNED
    pinner.unpin(car.root)
    assert pinner.status(car.root).status == MISSING


def test_check_heads_the_bucket(s3_endpoint: str, bucket: str) -> None:
    pinner, _ = make_pinner(s3_endpoint)
    pinner.check()


def test_access_denied_is_an_auth_error(car: Car) -> None:
    from botocore.exceptions import ClientError

    class Denied:
        def head_object(self, **_: Any) -> None:
            raise ClientError({"Error": {"Code": "AccessDenied", "Message": f"denied {ACCESS}"},
                               "ResponseMetadata": {"HTTPStatusCode": 403}}, "HeadObject")

    pinner = FilebasePinner(ACCESS, SECRET_KEY, BUCKET, client=Denied())
    with car.open() as fh, pytest.raises(PinAuthError) as info:
        pinner.pin(fh, car.root)
    assert ACCESS not in str(info.value) and SECRET_KEY not in str(info.value)


def test_missing_settings_name_the_variables() -> None:
    with pytest.raises(PinnerNotConfigured, match="FILEBASE_BUCKET"):
        FilebasePinner.from_env({"FILEBASE_ACCESS_KEY_ID": ACCESS, "FILEBASE_SECRET_ACCESS_KEY": SECRET_KEY})


def test_filebase_runs_under_pin_all_with_progress(s3_endpoint: str, bucket: str, tmp_path: Path) -> None:
    from bundlekit.pinning.orchestrate import pin_all

    big = build_car(tmp_path / "big.car", [bytes([i]) * (1024 * 1024) for i in range(6)])
    small, _ = make_pinner(s3_endpoint)
    multi, _ = make_pinner(s3_endpoint, multipart_threshold=5 * 1024 * 1024, multipart_chunk=5 * 1024 * 1024)
    seen: dict[str, int] = {}

    def progress(name: str, n: int) -> None:
        seen[name] = seen.get(name, 0) + n

    for pinner in (small, multi):
        pinner._hook.key = pinner.key_for(big.root)  # type: ignore[attr-defined]
        report = pin_all(big.path, big.root, [pinner], progress=progress)
        assert report.ok, report.pins
        plain_client(s3_endpoint).delete_object(Bucket=bucket, Key=pinner.key_for(big.root))
    assert seen["filebase"] >= 2 * big.size


def test_no_credential_reaches_the_debug_logs(
    s3_endpoint: str, bucket: str, car: Car, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    pinner, _ = make_pinner(s3_endpoint)
    pin(pinner, car)
    assert "Authorization" in caplog.text or "Sending http request" in caplog.text  # boto did log requests
    assert ACCESS not in caplog.text and SECRET_KEY not in caplog.text
    assert "Signature=***" in caplog.text or "Signature=" not in caplog.text


def test_uploads_carry_content_length_not_aws_chunked(s3_endpoint: str, bucket: str, tmp_path: Path) -> None:
    """issue 13: botocore >= 1.36 defaults to aws-chunked bodies with trailing checksums and no
    Content-Length (boto/botocore botocore/httpchecksum.py; botocore/config.py
    ``request_checksum_calculation``); the pinner asks for checksums only when required."""
    big = build_car(tmp_path / "big.car", [bytes([i]) * 40_000 for i in range(4)])
    small = build_car(tmp_path / "small.car", [b"tiny"])
    pinner, _calls = make_pinner(s3_endpoint, multipart_threshold=100_000, multipart_chunk=5 * 1024 * 1024)
    sent: list[tuple[str, dict[str, str]]] = []

    def record(request: Any, **kwargs: Any) -> None:
        sent.append((kwargs["event_name"].rsplit(".", 1)[-1], {k.lower(): str(v) for k, v in request.headers.items()}))

    for op in ("PutObject", "UploadPart"):
        pinner.client.meta.events.register(f"before-send.s3.{op}", record)
    assert pin(pinner, small).status == PINNED
    assert pin(pinner, big).status == PINNED
    assert {op for op, _ in sent} == {"PutObject", "UploadPart"}
    for op, headers in sent:
        assert "content-length" in headers, op
        assert "aws-chunked" not in headers.get("content-encoding", ""), op
        assert "x-amz-trailer" not in headers, op
        # Over plain HTTP (this moto server) the default puts the flexible checksum in a header; over
        # HTTPS (Filebase) the same default moves it to an aws-chunked trailer. Neither may be sent.
        assert "x-amz-sdk-checksum-algorithm" not in headers and "x-amz-checksum-crc32" not in headers, op
    config = pinner.client.meta.config
    assert (config.request_checksum_calculation, config.response_checksum_validation) == (
        "when_required", "when_required")
