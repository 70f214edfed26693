"""The ``pinata`` pinner: Pinata's v3 Files API.

* Existing pin: ``GET {api}/v3/files/public?cid=<root>``; a file already
  holding our root is reused (no duplicate upload).
* Upload (CAR up to ``TUS_THRESHOLD`` bytes): ``POST {upload}/v3/files``,
  multipart with the CAR as ``file``, ``network=public``, ``car=true`` and
  ``name``; the answer's ``data.cid`` must equal our root.
* Upload (larger CARs): resumable TUS 1.0.0. ``POST {upload}/v3/files`` with
  ``Upload-Length`` and ``Upload-Metadata`` (base64 ``filename``, ``name``,
  ``network``, ``car``) answers 201 with a ``Location``; each chunk is a
  ``PATCH`` with ``Upload-Offset`` and ``Content-Type:
  application/offset+octet-stream``. After a failed chunk the offset is
  re-read with ``HEAD`` (``Upload-Offset``) and the upload resumes there.
  The file id is the last segment of the location; its record
  (``GET {api}/v3/files/public/{id}``) gives the CID.
* Status: the list call above. Unpin: ``DELETE {api}/v3/files/public/{id}``
  for every file holding the CID. Check: ``GET {api}/data/testAuthentication``.

Settings: ``PINATA_JWT``; ``BUNDLEKIT_PINATA_UPLOAD_URL`` (default
``https://uploads.pinata.cloud``) and ``BUNDLEKIT_PINATA_API_URL`` (default
``https://api.pinata.cloud``).
"""

from __future__ import annotations

import base64
import os
from collections.abc import Callable, Mapping
from typing import Any, BinaryIO

import httpx

from bundlekit.errors import CIDMismatch, PinRateLimited, PinRejected, PinUnavailable
from bundlekit.ipld.cid import cid_to_str
from bundlekit.net.http import HttpOptions
from bundlekit.pinning.http import UPLOAD_OPTIONS, HttpClient
from bundlekit.pinning.orchestrate import same_cid
from bundlekit.pinning.protocol import MISSING, PINNED, PINNING, BasePinner, PinResult, require_env

__all__ = ["TUS_CHUNK", "TUS_THRESHOLD", "PinataPinner"]

DEFAULT_UPLOAD_URL = "https://uploads.pinata.cloud"
DEFAULT_API_URL = "https://api.pinata.cloud"
TUS_THRESHOLD = 100 * 1024 * 1024
TUS_CHUNK = 50 * 1024 * 1024  # what Pinata's own SDK sends per PATCH
TUS_VERSION = "1.0.0"
# How many times a TUS upload may resume from HEAD after a failed chunk.
TUS_RESUMES = 5


def _b64(text: str) -> str:
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


class PinataPinner(BasePinner):
    """Uploads CARs to Pinata's public IPFS network."""

    name = "pinata"
    description = "Pinata v3 Files API (CAR upload, resumable above 100 MB)"
    env_vars = ("PINATA_JWT",)
    optional_env = ("BUNDLEKIT_PINATA_UPLOAD_URL", "BUNDLEKIT_PINATA_API_URL")

    def __init__(
        self,
        jwt: str,
        *,
        upload_url: str = DEFAULT_UPLOAD_URL,
        api_url: str = DEFAULT_API_URL,
        tus_threshold: int = TUS_THRESHOLD,
        tus_chunk: int = TUS_CHUNK,
        options: HttpOptions = UPLOAD_OPTIONS,
    ) -> None:
        self.upload_url = upload_url.rstrip("/")
        self.api_url = api_url.rstrip("/")
        self.tus_threshold = tus_threshold
        self.tus_chunk = tus_chunk
        self.http = HttpClient("Pinata", headers={"Authorization": f"Bearer {jwt}"}, secrets=[jwt], options=options)

    @classmethod
    def from_env(cls, env: Mapping[str, str], *, options: HttpOptions = UPLOAD_OPTIONS) -> PinataPinner:
        """Raises PinnerNotConfigured naming PINATA_JWT when it is missing."""
        values = require_env(env, cls.env_vars, cls.name)
        return cls(
            values["PINATA_JWT"],
            upload_url=env.get("BUNDLEKIT_PINATA_UPLOAD_URL") or DEFAULT_UPLOAD_URL,
            api_url=env.get("BUNDLEKIT_PINATA_API_URL") or DEFAULT_API_URL,
            options=options,
        )

    # -- queries --------------------------------------------------------------

    def _files(self, cid: str) -> list[dict[str, Any]]:
        response = self.http.request(
            "GET", f"{self.api_url}/v3/files/public", params={"cid": cid}, what="list files"
        )
        data = response.json().get("data") or {}
        return [f for f in (data.get("files") or []) if isinstance(f, dict)]

    def _result(self, cid: str) -> PinResult:
        return PinResult(self.name, cid, PINNED, url=f"ipfs://{cid}")

    # -- the verbs ------------------------------------------------------------

    def pin(self, car: BinaryIO, root: bytes, *, name: str | None = None, size: int | None = None) -> PinResult:
        """Upload the CAR unless Pinata already holds ``root``.

        Raises CIDMismatch when Pinata's CID differs from ``root``, and the
        HTTP errors of ``bundlekit.pinning.http``.
        """
        root_text = cid_to_str(root)
        for existing in self._files(root_text):
            if same_cid(str(existing.get("cid", "")), root):
                return self._result(root_text)
        if size is None:
            size = _stream_size(car)
        label = name or f"{root_text}.car"
        filename = label if label.endswith(".car") else f"{label}.car"
        if size > self.tus_threshold:
            data = self._upload_tus(car, size, label, filename)
        else:
            data = self._upload_multipart(car, label, filename)
        cid = str(data.get("cid", ""))
        if cid == "pending":
            return PinResult(self.name, root_text, PINNING, error="Pinata is still processing the CAR")
        if not same_cid(cid, root):
            raise CIDMismatch(
                f"Pinata reports CID {cid or '(none)'} for the upload, but the local root is {root_text}; "
                "Pinata did not import it as a CAR: check the upload settings"
            )
        return self._result(cid)

    def _upload_multipart(self, car: BinaryIO, label: str, filename: str) -> dict[str, Any]:
        start = car.tell()

        def body() -> dict[str, Any]:
            car.seek(start)
            return {
                "files": {"file": (filename, car, "application/vnd.ipld.car")},
                "data": {"network": "public", "car": "true", "name": label},
            }

        response = self.http.request("POST", f"{self.upload_url}/v3/files", body=body, what="upload CAR")
        data: dict[str, Any] = response.json().get("data") or {}
        return data

    def _upload_tus(self, car: BinaryIO, size: int, label: str, filename: str) -> dict[str, Any]:
        start = car.tell()
        tus = {"Tus-Resumable": TUS_VERSION}
        metadata = ",".join([
            f"filename {_b64(filename)}",
            f"name {_b64(label)}",
            f"network {_b64('public')}",
            f"car {_b64('true')}",
        ])
        created = self.http.request(
            "POST", f"{self.upload_url}/v3/files",
            headers={**tus, "Upload-Length": str(size), "Upload-Metadata": metadata},
            ok=lambda r: r.status_code == 201 and "location" in r.headers,
            what="create resumable upload",
        )
        location = str(httpx.URL(f"{self.upload_url}/v3/files/").join(created.headers["location"]))
        offset = 0
        resumes = 0
        while offset < size:
            car.seek(start + offset)
            chunk = car.read(min(self.tus_chunk, size - offset))
            if not chunk:
                raise PinRejected(f"Pinata: the CAR ended at byte {offset} of {size}; it changed while uploading")
            try:
                response = self.http.request(
                    "PATCH", location,
                    headers={**tus, "Upload-Offset": str(offset),
                             "Content-Type": "application/offset+octet-stream"},
                    body=_content(chunk),
                    retry=False,
                    what="upload chunk",
                )
            except (PinUnavailable, PinRateLimited):
                if resumes >= TUS_RESUMES:
                    raise
                options = self.http.options
                options.sleep(options.retry.backoff(resumes, options.jitter()))
                resumes += 1
                offset = self._tus_offset(location)
                continue
            new_offset = response.headers.get("Upload-Offset")
            offset = int(new_offset) if new_offset and new_offset.isdigit() else offset + len(chunk)
        file_id = location.rstrip("/").rsplit("/", 1)[-1]
        record = self.http.request("GET", f"{self.api_url}/v3/files/public/{file_id}", what="file record")
        data: dict[str, Any] = record.json().get("data") or {}
        return data

    def _tus_offset(self, location: str) -> int:
        """Where the server has the upload up to (HEAD ``Upload-Offset``)."""
        head = self.http.request("HEAD", location, headers={"Tus-Resumable": TUS_VERSION}, what="resume upload")
        value = head.headers.get("Upload-Offset", "")
        if not value.isdigit():
            raise PinUnavailable("Pinata: the resumable upload lost its offset; run the pin again")
        return int(value)

    def status(self, cid: bytes) -> PinResult:
        text = cid_to_str(cid)
        if any(same_cid(str(f.get("cid", "")), cid) for f in self._files(text)):
            return self._result(text)
        return PinResult(self.name, text, MISSING)

    def unpin(self, cid: bytes) -> None:
        """Delete every public file holding ``cid``."""
        for f in self._files(cid_to_str(cid)):
            if f.get("id"):
                self.http.request("DELETE", f"{self.api_url}/v3/files/public/{f['id']}", what="delete file")

    def check(self) -> None:
        self.http.request("GET", f"{self.api_url}/data/testAuthentication", retry=False, what="test authentication")

    def close(self) -> None:
        self.http.close()


def _content(chunk: bytes) -> Callable[[], dict[str, Any]]:
    """A body factory that re-sends the same bytes on each attempt."""
    return lambda: {"content": chunk}


def _stream_size(stream: BinaryIO) -> int:
    """Bytes left in a seekable stream, without reading it."""
    here = stream.tell()
    end = stream.seek(0, os.SEEK_END)
    stream.seek(here)
    return end - here
