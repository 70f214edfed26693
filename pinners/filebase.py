"""The ``filebase`` pinner: Filebase's S3-compatible API.

The CAR is uploaded as object ``<root>.car`` with metadata ``import=car``,
which tells Filebase to import it as a DAG; Filebase then reports the root's
CID in the ``x-amz-meta-cid`` header. A CAR up to ``multipart_threshold``
goes in one ``PutObject`` (the CID is read from its response headers), a
larger one through boto3's managed multipart upload (``upload_fileobj`` with
a ``TransferConfig``) and the CID is read with ``HeadObject``. The reported
CID must equal our root (else ``CIDMismatch``). The key is derived from the
root, so an object already holding our root is reused: no duplicate.

Settings: ``FILEBASE_ACCESS_KEY_ID``, ``FILEBASE_SECRET_ACCESS_KEY``,
``FILEBASE_BUCKET``; ``BUNDLEKIT_FILEBASE_ENDPOINT`` (default
``https://s3.filebase.com``). Region ``us-east-1``, path-style addressing.
boto3 is imported only when this pinner is built, so ``bundlekit --help``
and the other pinners never pay for it. The client computes and validates
checksums only when an operation requires them
(``request_checksum_calculation`` / ``response_checksum_validation`` =
``when_required``): botocore 1.36 otherwise uploads with ``Content-Encoding:
aws-chunked`` and a trailing checksum instead of a ``Content-Length``
(boto/botocore ``botocore/config.py``, ``botocore/httpchecksum.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, BinaryIO

from bundlekit.errors import CIDMismatch, PinAuthError, PinError, PinRateLimited, PinRejected, PinUnavailable
from bundlekit.ipld.cid import cid_to_str
from bundlekit.net.http import redact, redact_library_logs
from bundlekit.pinning.orchestrate import same_cid
from bundlekit.pinning.protocol import MISSING, PINNED, BasePinner, PinResult, require_env

__all__ = ["DEFAULT_ENDPOINT", "MULTIPART_THRESHOLD", "FilebasePinner"]

DEFAULT_ENDPOINT = "https://s3.filebase.com"
REGION = "us-east-1"
MULTIPART_THRESHOLD = 64 * 1024 * 1024
MULTIPART_CHUNK = 16 * 1024 * 1024
_AUTH_CODES = {"AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "InvalidToken", "ExpiredToken", "403", "401"}
_THROTTLE_CODES = {"SlowDown", "Throttling", "ThrottlingException", "TooManyRequests", "RequestLimitExceeded", "429"}
_MISSING_CODES = {"404", "NoSuchKey", "NotFound"}
# The botocore/s3transfer loggers that print requests (headers included) at debug level.
_BOTO_LOGGERS = (
    "botocore.endpoint", "botocore.auth", "botocore.hooks", "botocore.parsers", "botocore.httpsession",
    "botocore.retryhandler", "botocore.regions", "botocore.client", "botocore.credentials",
    "s3transfer.upload", "s3transfer.tasks", "s3transfer.futures", "urllib3.connectionpool",
)


class FilebasePinner(BasePinner):
    """Uploads CARs to a Filebase IPFS bucket over S3."""

    name = "filebase"
    description = "Filebase S3 API (CAR import into an IPFS bucket)"
    env_vars = ("FILEBASE_ACCESS_KEY_ID", "FILEBASE_SECRET_ACCESS_KEY", "FILEBASE_BUCKET")
    optional_env = ("BUNDLEKIT_FILEBASE_ENDPOINT",)

    def __init__(
        self,
        access_key: str,
        secret_key: str,
        bucket: str,
        *,
        endpoint: str = DEFAULT_ENDPOINT,
        multipart_threshold: int = MULTIPART_THRESHOLD,
        multipart_chunk: int = MULTIPART_CHUNK,
        client: Any = None,
    ) -> None:
        self.bucket = bucket
        self.endpoint = endpoint
        self.multipart_threshold = multipart_threshold
        self.multipart_chunk = multipart_chunk
        self._secrets = (access_key, secret_key)
        redact_library_logs(self._secrets, _BOTO_LOGGERS)
        self.client = client if client is not None else _make_client(endpoint, access_key, secret_key)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> FilebasePinner:
        """Raises PinnerNotConfigured naming the missing FILEBASE_* variables."""
        v = require_env(env, cls.env_vars, cls.name)
        return cls(
            v["FILEBASE_ACCESS_KEY_ID"], v["FILEBASE_SECRET_ACCESS_KEY"], v["FILEBASE_BUCKET"],
            endpoint=env.get("BUNDLEKIT_FILEBASE_ENDPOINT") or DEFAULT_ENDPOINT,
        )

    @staticmethod
    def key_for(root: bytes) -> str:
        """The object key for a root: the same root always lands on the same key."""
        return f"{cid_to_str(root)}.car"

    # -- helpers --------------------------------------------------------------

    def _translate(self, exc: Exception, what: str) -> PinError:
        """A boto error as a PinError; the text is redacted and says what to do."""
        from botocore.exceptions import BotoCoreError, ClientError

        if isinstance(exc, ClientError):
            err = exc.response.get("Error", {})
            code = str(err.get("Code", ""))
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
            where = redact(f"Filebase: {what} in bucket {self.bucket!r} failed ({code or status})", self._secrets)
            if code in _AUTH_CODES or status in (401, 403):
                return PinAuthError(f"{where}: the credentials were refused; check FILEBASE_ACCESS_KEY_ID, "
                                    "FILEBASE_SECRET_ACCESS_KEY and the bucket's access")
            if code in _THROTTLE_CODES or status == 429:
                return PinRateLimited(f"{where}: rate limited after every retry; wait and run again")
            if isinstance(status, int) and status >= 500:
                return PinUnavailable(f"{where}: the service is failing; retry later")
            return PinRejected(f"{where}: the request was refused; check FILEBASE_BUCKET and the input")
        if isinstance(exc, BotoCoreError):
            return PinUnavailable(redact(
                f"Filebase: {what} could not reach {self.endpoint} ({type(exc).__name__}); "
                "check BUNDLEKIT_FILEBASE_ENDPOINT and your network, then retry", self._secrets))
        return PinUnavailable(f"Filebase: {what} failed ({type(exc).__name__})")

    def _boto_errors(self) -> tuple[type[Exception], ...]:
        from botocore.exceptions import BotoCoreError, ClientError

        return (BotoCoreError, ClientError)

    def _head_cid(self, key: str) -> str | None:
        """The CID Filebase reports for ``key``, or None when the object does not exist."""
        from botocore.exceptions import ClientError

        try:
            head = self.client.head_object(Bucket=self.bucket, Key=key)
        except ClientError as exc:
            code = str(exc.response.get("Error", {}).get("Code", ""))
            if code in _MISSING_CODES:
                return None
            raise self._translate(exc, f"HeadObject {key}") from exc
        except self._boto_errors() as exc:
            raise self._translate(exc, f"HeadObject {key}") from exc
        metadata = head.get("Metadata") or {}
        headers = (head.get("ResponseMetadata") or {}).get("HTTPHeaders") or {}
        return str(metadata.get("cid") or headers.get("x-amz-meta-cid") or "")

    # -- the verbs ------------------------------------------------------------

    def pin(self, car: BinaryIO, root: bytes, *, name: str | None = None, size: int | None = None) -> PinResult:
        """Upload the CAR (unless the root's object already exists) and compare Filebase's CID with ``root``.

        Raises CIDMismatch, PinAuthError, PinRejected, PinRateLimited, PinUnavailable.
        """
        key = self.key_for(root)
        root_text = cid_to_str(root)
        existing = self._head_cid(key)
        if existing and same_cid(existing, root):
            return PinResult(self.name, existing, PINNED, url=f"ipfs://{existing}")
        metadata = {"import": "car"}
        if name:
            metadata["name"] = name.encode("ascii", "replace").decode("ascii")
        cid: str | None = None
        if size is not None and size <= self.multipart_threshold:
            try:
                response = self.client.put_object(
                    Bucket=self.bucket, Key=key, Body=car, Metadata=metadata,
                    ContentType="application/vnd.ipld.car", ContentLength=size,
                )
            except self._boto_errors() as exc:
                raise self._translate(exc, f"PutObject {key}") from exc
            headers = (response.get("ResponseMetadata") or {}).get("HTTPHeaders") or {}
            cid = headers.get("x-amz-meta-cid")
        else:
            from boto3.s3.transfer import TransferConfig

            config = TransferConfig(multipart_threshold=self.multipart_threshold,
                                    multipart_chunksize=self.multipart_chunk, use_threads=False)
            try:
                self.client.upload_fileobj(
                    car, self.bucket, key, Config=config,
                    ExtraArgs={"Metadata": metadata, "ContentType": "application/vnd.ipld.car"},
                )
            except self._boto_errors() as exc:
                raise self._translate(exc, f"upload {key}") from exc
        if not cid:
            cid = self._head_cid(key)
        if not cid:
            raise PinRejected(
                f"Filebase stored {key} but reports no CID; is {self.bucket!r} an IPFS bucket? "
                "Create the bucket with the IPFS network"
            )
        if not same_cid(cid, root):
            raise CIDMismatch(
                f"Filebase reports CID {cid} for {key}, but the local root is {root_text}; "
                "it did not import the object as a CAR (metadata import=car)"
            )
        return PinResult(self.name, cid, PINNED, url=f"ipfs://{cid}")

    def status(self, cid: bytes) -> PinResult:
        reported = self._head_cid(self.key_for(cid))
        text = cid_to_str(cid)
        if reported and same_cid(reported, cid):
            return PinResult(self.name, text, PINNED, url=f"ipfs://{text}")
        return PinResult(self.name, text, MISSING)

    def unpin(self, cid: bytes) -> None:
        key = self.key_for(cid)
        try:
            self.client.delete_object(Bucket=self.bucket, Key=key)
        except self._boto_errors() as exc:
            raise self._translate(exc, f"DeleteObject {key}") from exc

    def check(self) -> None:
        """``HeadBucket``: authenticated, cheap, and proves the bucket exists."""
        try:
            self.client.head_bucket(Bucket=self.bucket)
        except self._boto_errors() as exc:
            raise self._translate(exc, "HeadBucket") from exc

    def close(self) -> None:
        close = getattr(self.client, "close", None)
        if callable(close):
            close()


def _make_client(endpoint: str, access_key: str, secret_key: str) -> Any:
    import boto3
    from botocore.config import Config

    config = Config(
        region_name=REGION,
        signature_version="s3v4",
        s3={"addressing_style": "path"},
        connect_timeout=15,
        read_timeout=120,
        retries={"max_attempts": 5, "mode": "standard"},
        # botocore >= 1.36 otherwise sends PutObject/UploadPart as aws-chunked with a trailing
        # CRC checksum and no Content-Length, which S3-compatible services such as Filebase refuse.
        request_checksum_calculation="when_required",
        response_checksum_validation="when_required",
    )
    return boto3.session.Session().client(
        "s3", endpoint_url=endpoint, aws_access_key_id=access_key,
        aws_secret_access_key=secret_key, config=config,
    )
