"""The ``kubo`` pinner: a kubo (go-ipfs) node's RPC API.

``POST {base}/api/v0/dag/import?pin-roots=true`` with the CAR as the
multipart ``file`` field. kubo answers NDJSON, one object per line; a root
line is ``{"Root": {"Cid": {"/": "<cid>"}, "PinErrorMsg": ""}}`` and a
non-empty ``PinErrorMsg`` means the pin failed. kubo's pin set is keyed by
CID, so importing again creates no duplicate.

Settings: ``BUNDLEKIT_KUBO_URL`` (default ``http://127.0.0.1:5001``), and for
a node behind a proxy either ``BUNDLEKIT_KUBO_TOKEN`` (bearer) or
``BUNDLEKIT_KUBO_BASIC_AUTH`` (``user:password``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, BinaryIO

import httpx

from bundlekit.errors import CIDMismatch, PinRejected, PinUnavailable, UsageError
from bundlekit.ipld.cid import cid_to_str
from bundlekit.net.http import HttpOptions
from bundlekit.pinning.http import UPLOAD_OPTIONS, HttpClient
from bundlekit.pinning.orchestrate import same_cid
from bundlekit.pinning.protocol import MISSING, PINNED, BasePinner, PinResult, require_env

__all__ = ["DEFAULT_URL", "KuboPinner"]

DEFAULT_URL = "http://127.0.0.1:5001"


class KuboPinner(BasePinner):
    """Imports CARs into a kubo node and pins their roots."""

    name = "kubo"
    description = "a kubo node's RPC API (dag/import with pin-roots)"
    optional_env = ("BUNDLEKIT_KUBO_URL", "BUNDLEKIT_KUBO_TOKEN", "BUNDLEKIT_KUBO_BASIC_AUTH")

    def __init__(
        self,
        base_url: str = DEFAULT_URL,
        *,
        token: str | None = None,
        basic_auth: str | None = None,
        options: HttpOptions = UPLOAD_OPTIONS,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        headers: dict[str, str] = {}
        auth: tuple[str, str] | None = None
        secrets: list[str] = []
        if token:
            headers["Authorization"] = f"Bearer {token}"
            secrets.append(token)
        elif basic_auth:
            user, sep, password = basic_auth.partition(":")
            if not sep:
                raise UsageError("BUNDLEKIT_KUBO_BASIC_AUTH must be user:password")
            auth = (user, password)
            secrets += [basic_auth, password]
        self.http = HttpClient("kubo", headers=headers, auth=auth, secrets=secrets, options=options)

    @classmethod
    def from_env(cls, env: Mapping[str, str], *, options: HttpOptions = UPLOAD_OPTIONS) -> KuboPinner:
        """Build from ``BUNDLEKIT_KUBO_*``; every setting has a default, so this never raises for missing ones.

        A blank credential counts as unset; one holding a line break or control
        character raises ``PinnerNotConfigured`` naming it (``require_env``'s rule).
        """
        given = [n for n in ("BUNDLEKIT_KUBO_TOKEN", "BUNDLEKIT_KUBO_BASIC_AUTH") if env.get(n, "").strip()]
        secrets = require_env(env, given, cls.name)
        return cls(
            env.get("BUNDLEKIT_KUBO_URL") or DEFAULT_URL,
            token=secrets.get("BUNDLEKIT_KUBO_TOKEN"),
            basic_auth=secrets.get("BUNDLEKIT_KUBO_BASIC_AUTH"),
            options=options,
        )

    @classmethod
    def is_configured(cls, env: Mapping[str, str]) -> bool:
        return True  # the default URL is a local node

    def _rpc(self, command: str, **kwargs: Any) -> httpx.Response:
        # kubo's RPC is POST-only; an error answers 500 with {"Message": ...}.
        return self.http.request("POST", f"{self.base_url}/api/v0/{command}", **kwargs)

    def pin(self, car: BinaryIO, root: bytes, *, name: str | None = None, size: int | None = None) -> PinResult:
        """Import and pin. Raises PinRejected (kubo's pin error), CIDMismatch, and the HTTP errors."""
        start = car.tell()

        def body() -> dict[str, Any]:
            car.seek(start)
            return {"files": {"file": ("bundle.car", car, "application/vnd.ipld.car")}}

        response = self._rpc(
            "dag/import", params={"pin-roots": "true"}, body=body, what="dag/import"
        )
        roots: list[tuple[str, str]] = []
        for line in response.text.splitlines():
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except ValueError as exc:
                raise PinUnavailable(f"kubo: dag/import answered a line that is not JSON; is {self.base_url} a kubo RPC endpoint?") from exc
            rootinfo = item.get("Root") if isinstance(item, dict) else None
            if isinstance(rootinfo, dict):
                cid = str((rootinfo.get("Cid") or {}).get("/", ""))
                roots.append((cid, str(rootinfo.get("PinErrorMsg") or "")))
        ours = [(c, err) for c, err in roots if same_cid(c, root)]
        if not ours:
            reported = ", ".join(c for c, _ in roots) or "no root"
            raise CIDMismatch(
                f"kubo: dag/import reported {reported}, not {cid_to_str(root)}; check the CAR's header"
            )
        cid, err = ours[0]
        if err:
            raise PinRejected(self.http.redact(f"kubo: imported {cid} but could not pin it: {err}"))
        return PinResult(self.name, cid, PINNED, url=f"ipfs://{cid}")

    def status(self, cid: bytes) -> PinResult:
        """``pin/ls?arg=<cid>&type=recursive``: pinned, or missing when kubo says it is not pinned."""
        text = cid_to_str(cid)
        response = self._rpc(
            "pin/ls",
            params={"arg": text, "type": "recursive"},
            ok=lambda r: r.is_success or (r.status_code == 500 and "not pinned" in r.text),
            what="pin/ls",
        )
        if response.is_success and text in (response.json().get("Keys") or {}):
            return PinResult(self.name, text, PINNED, url=f"ipfs://{text}")
        return PinResult(self.name, text, MISSING)

    def unpin(self, cid: bytes) -> None:
        """``pin/rm``; a CID that is not pinned is fine."""
        self._rpc(
            "pin/rm",
            params={"arg": cid_to_str(cid)},
            ok=lambda r: r.is_success or (r.status_code == 500 and "not pinned" in r.text),
            what="pin/rm",
        )

    def put_ipns_record(self, name: str, record: bytes) -> None:
        """``routing/put?arg=/ipns/<name>&allow-offline=true`` with the record as the multipart file.

        kubo validates the record itself (kubo ``core/commands/routing.go``,
        ``putValueRoutingCmd``: key argument, ``value-file`` file argument,
        ``allow-offline`` saves it to the node's store when it has no peers).
        Raises the HTTP errors (``PinRejected`` when kubo refuses the record).
        """
        self._rpc("routing/put", params={"arg": f"/ipns/{name}", "allow-offline": "true"},
                  body=lambda: {"files": {"file": ("record", record, "application/vnd.ipfs.ipns-record")}},
                  what="routing/put")

    def check(self) -> None:
        """``version``: cheap, and authenticated when the node sits behind a proxy."""
        self._rpc("version", retry=False, what="version")

    def close(self) -> None:
        self.http.close()
