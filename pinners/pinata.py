"""The ``pinata`` pinner: Pinata's v3 Files API, as the official SDK calls it.

Source: PinataCloud/pinata (commit 8c033da81d401149aff8693a202b914f91f5d612),
``src/core/functions/uploads/file.ts`` (multipart fields, the 94,371,840-byte
switch to TUS, the final PATCH's ``upload-cid`` header then
``/files/{network}?cid=``), ``src/core/functions/files/list.ts`` (the
``cid``, ``name``, ``cidPending``, ``limit``, ``pageToken`` filters) and
``src/core/classes/files/FilterFiles.ts`` (paging until ``next_page_token`` is empty).

* Existing pin: ``GET {api}/v3/files/public?cid=<root>``; a file already
  holding our root is reused (no duplicate upload). A file of ours still
  being processed (``GET ...?cidPending=true&name=<name>``, its ``cid`` is
  ``"pending"``) is awaited instead of uploaded again.
* Upload (CAR up to ``TUS_THRESHOLD`` = 94,371,840 bytes, as the SDK):
  ``POST {upload}/v3/files``, multipart with the CAR as ``file`` and the
  fields ``network=public``, ``name``, ``group_id`` (``--group``),
  ``keyvalues`` (JSON of ``--meta``) and ``car=true``. One attempt only: a
  retried POST can create a duplicate file (the answer's ``is_duplicate``);
  after a timeout the file is looked up as above before giving up.
* Upload (larger CARs; Pinata requires it over 100 MB): resumable TUS 1.0.0.
  ``POST {upload}/v3/files`` with ``Upload-Length`` and ``Upload-Metadata``
  (base64 ``filename``, ``filetype``, ``network``, ``group_id``,
  ``keyvalues``, ``car``) answers 201 with a ``Location``; each chunk is a
  ``PATCH`` with ``Upload-Offset`` and ``Content-Type:
  application/offset+octet-stream``. After a failed chunk the offset is
  re-read with ``HEAD`` (``Upload-Offset``) and the upload resumes there.
  The final PATCH's ``upload-cid`` header names the CID; the file record is
  ``GET {api}/v3/files/public?cid=<cid>``.
* A ``cid`` of ``"pending"`` (CAR imports are processed asynchronously) is
  polled with ``GET {api}/v3/files/public/{id}`` every ``poll_interval``
  until it resolves or ``deadline`` passes (the result stays ``pinning``).
* Status: the list call above. Unpin: ``DELETE {api}/v3/files/public/{id}``
  for every file holding the CID (every page). ``list(name_prefix)``: every
  page of ``GET {api}/v3/files/public`` (``pageToken`` = the last
  ``next_page_token`` until none, as the SDK's ``FilterFiles`` iterator),
  names starting with the prefix; no ``name`` filter is sent, since Pinata
  does not document whether it matches exactly or in part. A token seen
  before, or more than ``MAX_PAGES`` pages, raises ``PinUnavailable``.
  Check: ``GET {api}/data/testAuthentication``.

Settings: ``PINATA_JWT``; ``BUNDLEKIT_PINATA_UPLOAD_URL`` (default
``https://uploads.pinata.cloud``), ``BUNDLEKIT_PINATA_API_URL`` (default
``https://api.pinata.cloud``), ``BUNDLEKIT_PINATA_POLL_INTERVAL`` (seconds,
default 5) and ``BUNDLEKIT_PINATA_DEADLINE`` (seconds, default 600).
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Callable, Mapping
from typing import Any, BinaryIO

import httpx

from bundlekit.errors import CIDMismatch, PinRateLimited, PinRejected, PinUnavailable
from bundlekit.ipld.cid import cid_to_str
from bundlekit.net.http import Failure, HttpOptions, HttpRequest
from bundlekit.pinning.http import UPLOAD_OPTIONS, HttpClient, service_url
from bundlekit.pinning.orchestrate import same_cid
from bundlekit.pinning.polling import Polling
from bundlekit.pinning.protocol import (
    MISSING,
    PINNED,
    PINNING,
    BasePinner,
    PinEntry,
    PinResult,
    require_env,
)

__all__ = ["TUS_CHUNK", "TUS_THRESHOLD", "PinataPinner"]

DEFAULT_UPLOAD_URL = "https://uploads.pinata.cloud"
DEFAULT_API_URL = "https://api.pinata.cloud"
TUS_THRESHOLD = 94_371_840  # 90 MiB: where the official SDK switches to TUS
PENDING = "pending"
DEFAULT_POLL_INTERVAL = 5.0
PAGE_LIMIT = 1000
MAX_PAGES = 100
TUS_CHUNK = 50 * 1024 * 1024  # what Pinata's own SDK sends per PATCH
TUS_VERSION = "1.0.0"
# How many times a TUS upload may resume from HEAD after a failed chunk.
TUS_RESUMES = 5


class _Landed(Exception):
    """A timed-out upload that reached Pinata after all: its file record."""

    def __init__(self, data: dict[str, Any]) -> None:
        super().__init__("landed")
        self.data = data


def _b64(text: str) -> str:
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


class PinataPinner(BasePinner):
    """Uploads CARs to Pinata's public IPFS network."""

    name = "pinata"
    description = "Pinata v3 Files API (CAR upload, resumable above 90 MiB)"
    env_vars = ("PINATA_JWT",)
    optional_env = ("BUNDLEKIT_PINATA_UPLOAD_URL", "BUNDLEKIT_PINATA_API_URL",
                    "BUNDLEKIT_PINATA_POLL_INTERVAL", "BUNDLEKIT_PINATA_DEADLINE")

    def __init__(
        self,
        jwt: str,
        *,
        upload_url: str = DEFAULT_UPLOAD_URL,
        api_url: str = DEFAULT_API_URL,
        tus_threshold: int = TUS_THRESHOLD,
        tus_chunk: int = TUS_CHUNK,
        polling: Polling | None = None,
        options: HttpOptions = UPLOAD_OPTIONS,
    ) -> None:
        self.upload_url = upload_url.rstrip("/")
        self.api_url = api_url.rstrip("/")
        self.tus_threshold = tus_threshold
        self.tus_chunk = tus_chunk
        self.polling = polling or Polling(DEFAULT_POLL_INTERVAL)
        self.group: str | None = None
        self.keyvalues: dict[str, str] = {}
        self.http = HttpClient("Pinata", headers={"Authorization": f"Bearer {jwt}"}, secrets=[jwt], options=options)

    @classmethod
    def from_env(cls, env: Mapping[str, str], *, options: HttpOptions = UPLOAD_OPTIONS) -> PinataPinner:
        """Raises PinnerNotConfigured naming PINATA_JWT when it is missing."""
        values = require_env(env, cls.env_vars, cls.name)
        return cls(
            values["PINATA_JWT"],
            upload_url=env.get("BUNDLEKIT_PINATA_UPLOAD_URL") or DEFAULT_UPLOAD_URL,
            api_url=env.get("BUNDLEKIT_PINATA_API_URL") or DEFAULT_API_URL,
            polling=Polling.from_env(env, "PINATA", DEFAULT_POLL_INTERVAL),
            options=options,
        )

    def describe(self, *, group: str | None = None, keyvalues: Mapping[str, str] | None = None) -> None:
        """Metadata for the next uploads: a group id (``group_id``) and key-values (``keyvalues``)."""
        self.group = group
        self.keyvalues = dict(keyvalues or {})

    # -- queries --------------------------------------------------------------

    def _list(self, params: Mapping[str, str]) -> tuple[list[dict[str, Any]], str]:
        """One page of ``GET {api}/v3/files/public``: its files and ``next_page_token``."""
        response = self.http.request(HttpRequest("GET", service_url(self.api_url, "/v3/files/public"), params=params),
                                     "list files")
        data = self.http.json(response, "list files").get("data") or {}
        files = [f for f in (data.get("files") or []) if isinstance(f, dict)]
        return files, str(data.get("next_page_token") or "")

    def _every(self, params: Mapping[str, str]) -> list[dict[str, Any]]:
        """Every page of ``GET {api}/v3/files/public``: ``pageToken`` = the last ``next_page_token`` until none.

        Each file is kept once (by ``id``). Raises ``PinUnavailable`` when the
        listing does not end: a token answered before comes back (the pages
        would repeat forever), or more than ``MAX_PAGES`` pages of ``PAGE_LIMIT``.
        """
        files: dict[str, dict[str, Any]] = {}
        tokens: set[str] = set()
        token = ""
        for _ in range(MAX_PAGES):
            page, token = self._list({**params, "limit": str(PAGE_LIMIT), **({"pageToken": token} if token else {})})
            for f in page:
                files.setdefault(str(f.get("id") or "") or f"#{len(files)}", f)
            if not token:
                return list(files.values())
            if token in tokens:
                raise PinUnavailable(self._listing_error(f"next_page_token {token!r} came back a second time"))
            tokens.add(token)
        raise PinUnavailable(self._listing_error(f"more than {MAX_PAGES} pages of {PAGE_LIMIT} files"))

    def _listing_error(self, problem: str) -> str:
        return self.http.redact(f"Pinata: listing files stopped: {problem}; the pages would not end: retry later, "
                                "or report it to Pinata")

    def _files(self, cid: str) -> list[dict[str, Any]]:
        return self._list({"cid": cid})[0]

    def _pending(self, label: str) -> list[dict[str, Any]]:
        """Files named ``label`` whose CID Pinata has not computed yet (``cidPending``)."""
        files = self._list({"cidPending": "true", "name": label})[0]
        return [f for f in files if f.get("cid") == PENDING and f.get("name") == label and f.get("id")]

    def _result(self, cid: str) -> PinResult:
        return PinResult(self.name, cid, PINNED, url=f"ipfs://{cid}")

    # -- the verbs ------------------------------------------------------------

    def pin(self, car: BinaryIO, root: bytes, *, name: str | None = None, size: int | None = None) -> PinResult:
        """Upload the CAR unless Pinata already holds ``root`` or is still processing our upload of it.

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
        pending = self._pending(label)
        if pending:
            data = pending[0]
        elif size > self.tus_threshold:
            data = self._upload_tus(car, size, label, filename)
        else:
            data = self._upload_multipart(car, root, label, filename)
        if data.get("cid") == PENDING:
            data = self._await_cid(data)
            if data.get("cid") == PENDING:
                return PinResult(
                    self.name, root_text, PINNING,
                    error=f"Pinata is still processing the CAR after {self.polling.deadline:.0f}s (file {data.get('id')}); "
                          "not durable yet: run the pin again later to check",
                )
        cid = str(data.get("cid", ""))
        if not same_cid(cid, root):
            raise CIDMismatch(
                f"Pinata reports CID {cid or '(none)'} for the upload, but the local root is {root_text}; "
                "Pinata did not import it as a CAR: check the upload settings"
            )
        return self._result(cid)

    def _await_cid(self, data: dict[str, Any]) -> dict[str, Any]:
        """Poll ``GET {api}/v3/files/public/{id}`` until the CID is no longer pending or the deadline passes."""
        file_id = str(data.get("id", ""))
        if not file_id:
            raise PinUnavailable("Pinata: a pending upload came back without a file id; run the pin again")
        give_up = self.polling.give_up_at()
        while data.get("cid") == PENDING and not self.polling.passed(give_up):
            self.http.options.sleep(self.polling.interval)
            record = self.http.request(HttpRequest("GET", service_url(self.api_url, f"/v3/files/public/{file_id}")),
                                       "file record")
            data = self.http.json(record, "file record").get("data") or data
        return data

    def _fields(self, label: str) -> dict[str, str]:
        """The SDK's metadata fields: ``network``, ``name``, ``group_id``, ``keyvalues`` (JSON), ``car``."""
        fields = {"network": "public", "name": label}
        if self.group:
            fields["group_id"] = self.group
        if self.keyvalues:
            fields["keyvalues"] = json.dumps(self.keyvalues, separators=(",", ":"))
        fields["car"] = "true"
        return fields

    def _upload_multipart(self, car: BinaryIO, root: bytes, label: str, filename: str) -> dict[str, Any]:
        """POST the CAR. A timed-out POST may have stored the file, so it is never sent again: the file is
        looked up (by CID, then pending by name) and used, or the run fails asking for a re-run (which finds it).
        Refusals (429, 5xx) and connections that never opened are retried as usual."""
        start = car.tell()

        def body() -> dict[str, Any]:
            car.seek(start)
            return {"files": {"file": (filename, car, "application/vnd.ipld.car")}, "data": self._fields(label)}

        def before_retry(failure: Failure) -> None:
            if not isinstance(failure.error, (httpx.ReadTimeout, httpx.WriteTimeout)):
                return
            found = [f for f in self._files(cid_to_str(root)) if same_cid(str(f.get("cid", "")), root)]
            found = found or self._pending(label)
            if found:
                raise _Landed(found[0])
            raise PinUnavailable(
                f"Pinata: the upload of {cid_to_str(root)} timed out and is not sent again (a second POST can "
                "store a duplicate); Pinata does not list it yet: run the pin again later, which finds it"
            )

        try:
            response = self.http.request(HttpRequest("POST", f"{self.upload_url}/v3/files", body=body), "upload CAR",
                                         before_retry=before_retry)
        except _Landed as landed:
            return landed.data
        data: dict[str, Any] = self.http.json(response, "upload CAR").get("data") or {}
        return data

    def _upload_tus(self, car: BinaryIO, size: int, label: str, filename: str) -> dict[str, Any]:
        start = car.tell()
        tus = {"Tus-Resumable": TUS_VERSION}
        fields = self._fields(label)
        metadata = ",".join(
            [f"filename {_b64(label)}", f"filetype {_b64('application/vnd.ipld.car')}"]
            + [f"{key} {_b64(value)}" for key, value in fields.items() if key != "name"]
        )
        created = self.http.request(HttpRequest(
            "POST", f"{self.upload_url}/v3/files",
            headers={**tus, "Upload-Length": str(size), "Upload-Metadata": metadata},
            ok=lambda r: r.status_code == 201 and "location" in r.headers,
        ), "create resumable upload")
        location = str(httpx.URL(f"{self.upload_url}/v3/files/").join(created.headers["location"]))
        offset = 0
        resumes = 0
        response: httpx.Response | None = None
        while offset < size:
            car.seek(start + offset)
            chunk = car.read(min(self.tus_chunk, size - offset))
            if not chunk:
                raise PinRejected(f"Pinata: the CAR ended at byte {offset} of {size}; it changed while uploading")
            try:
                response = self.http.request(HttpRequest(
                    "PATCH", location,
                    headers={**tus, "Upload-Offset": str(offset),
                             "Content-Type": "application/offset+octet-stream"},
                    body=_content(chunk),
                    retry=False,
                ), "upload chunk")
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
        cid = response.headers.get("upload-cid", "") if response is not None else ""
        if cid and cid != PENDING:
            files = self._files(cid)
            if files:
                return files[0]
            return {"cid": cid}
        pending = self._pending(label)
        if not pending:
            raise PinUnavailable("Pinata: the upload finished without an upload-cid and no file of that name "
                                 "is pending; run the pin again")
        return pending[0]

    def _tus_offset(self, location: str) -> int:
        """Where the server has the upload up to (HEAD ``Upload-Offset``)."""
        head = self.http.request(HttpRequest("HEAD", location, headers={"Tus-Resumable": TUS_VERSION}), "resume upload")
        value = head.headers.get("Upload-Offset", "")
        if not value.isdigit():
            raise PinUnavailable("Pinata: the resumable upload lost its offset; run the pin again")
        return int(value)

    def status(self, cid: bytes) -> PinResult:
        text = cid_to_str(cid)
        if any(same_cid(str(f.get("cid", "")), cid) for f in self._files(text)):
            return self._result(text)
        return PinResult(self.name, text, MISSING)

    def list(self, name_prefix: str = "") -> list[PinEntry]:
        """Public files whose name starts with ``name_prefix``, from every page of the listing.

        No ``name`` filter is sent: Pinata documents it only as "Filter files
        by name", not whether it matches exactly or in part, and an exact match
        would hide every release but one. The prefix is applied here.
        """
        return [PinEntry(str(f.get("cid", "")), str(f.get("name") or "") or None, str(f.get("created_at") or "") or None)
                for f in self._every({}) if str(f.get("name") or "").startswith(name_prefix)]

    def unpin(self, cid: bytes) -> None:
        """Delete every public file holding ``cid`` (every page of the ``cid`` listing)."""
        for f in self._every({"cid": cid_to_str(cid)}):
            if f.get("id"):
                self.http.request(HttpRequest("DELETE", service_url(self.api_url, f"/v3/files/public/{f['id']}")),
                                  "delete file")

    def check(self) -> None:
        self.http.request(HttpRequest("GET", service_url(self.api_url, "/data/testAuthentication"), retry=False),
                          "test authentication")

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
