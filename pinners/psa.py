"""The ``psa`` pinner: any IPFS Pinning Service API endpoint.

The Pinning Service API does not take uploads: the service fetches the DAG
itself, from the IPFS network or the ``origins`` we give it. So ``pin``
publishes nothing; it asks the service to pin our root and waits.

1. ``GET {base}/pins?cid=<root>&status=queued,pinning,pinned``: an existing
   request for the same CID is reused (no duplicate pin).
2. Otherwise ``POST {base}/pins`` with ``{"cid", "name", "origins", "meta"}``.
3. Poll ``GET {base}/pins/{requestid}`` every ``poll_interval`` seconds until
   ``pinned`` (durable), ``failed`` (PinRejected) or the deadline (the result
   keeps status ``queued``/``pinning``, which does not count as durable).

Settings: ``BUNDLEKIT_PSA_URL``, ``PSA_TOKEN`` (bearer); optional
``BUNDLEKIT_PSA_ORIGINS`` (comma-separated multiaddrs of a node serving the
content, e.g. ``bundlekit serve`` behind a public address),
``BUNDLEKIT_PSA_POLL_INTERVAL`` (seconds, default 5) and
``BUNDLEKIT_PSA_DEADLINE`` (seconds, default 600).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, BinaryIO

from bundlekit.errors import CIDMismatch, PinRejected, PinUnavailable, UsageError
from bundlekit.ipld.cid import cid_to_str
from bundlekit.net.http import HttpOptions
from bundlekit.pinning.http import UPLOAD_OPTIONS, HttpClient
from bundlekit.pinning.protocol import FAILED, MISSING, PINNED, QUEUED, BasePinner, PinResult, require_env

__all__ = ["PSAPinner"]

ACTIVE_STATUSES = "queued,pinning,pinned"
DEFAULT_POLL_INTERVAL = 5.0
DEFAULT_DEADLINE = 600.0


def _float_env(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name)
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError as exc:
        raise UsageError(f"{name} must be a number of seconds, not {raw!r}") from exc
    if math.isnan(value):
        # float() takes "nan"; as a deadline it never passes, as an interval sleep() refuses it.
        raise UsageError(f"{name} must be a number of seconds, not {raw!r}")
    if value < 0:
        raise UsageError(f"{name} must not be negative")
    return value


class PSAPinner(BasePinner):
    """Asks a Pinning Service API to pin our root, reusing an existing request."""

    name = "psa"
    description = "any IPFS Pinning Service API (the service fetches the content)"
    env_vars = ("BUNDLEKIT_PSA_URL", "PSA_TOKEN")
    optional_env = ("BUNDLEKIT_PSA_ORIGINS", "BUNDLEKIT_PSA_POLL_INTERVAL", "BUNDLEKIT_PSA_DEADLINE")

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        origins: Sequence[str] = (),
        poll_interval: float = DEFAULT_POLL_INTERVAL,
        deadline: float = DEFAULT_DEADLINE,
        clock: Callable[[], float] = time.monotonic,
        options: HttpOptions = UPLOAD_OPTIONS,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.origins = list(origins)
        self.poll_interval = poll_interval
        self.deadline = deadline
        self.clock = clock
        self.http = HttpClient(
            "pinning service", headers={"Authorization": f"Bearer {token}"}, secrets=[token], options=options
        )

    @classmethod
    def from_env(cls, env: Mapping[str, str], *, options: HttpOptions = UPLOAD_OPTIONS) -> PSAPinner:
        """Raises PinnerNotConfigured naming BUNDLEKIT_PSA_URL / PSA_TOKEN when missing."""
        values = require_env(env, cls.env_vars, cls.name)
        origins = [o.strip() for o in env.get("BUNDLEKIT_PSA_ORIGINS", "").split(",") if o.strip()]
        return cls(
            values["BUNDLEKIT_PSA_URL"],
            values["PSA_TOKEN"],
            origins=origins,
            poll_interval=_float_env(env, "BUNDLEKIT_PSA_POLL_INTERVAL", DEFAULT_POLL_INTERVAL),
            deadline=_float_env(env, "BUNDLEKIT_PSA_DEADLINE", DEFAULT_DEADLINE),
            options=options,
        )

    def _existing(self, cid: str, statuses: str = ACTIVE_STATUSES) -> list[dict[str, Any]]:
        response = self.http.request(
            "GET", f"{self.base_url}/pins", params={"cid": cid, "status": statuses}, what="list pins"
        )
        results = response.json().get("results") or []
        return [r for r in results if isinstance(r, dict)]

    def pin(self, car: BinaryIO, root: bytes, *, name: str | None = None, size: int | None = None) -> PinResult:
        """Request (or reuse) a pin of ``root`` and wait for it.

        The CAR is not sent: the service fetches the DAG from ``origins`` or
        the network. Raises PinRejected when the service reports ``failed``.
        """
        cid = cid_to_str(root)
        existing = self._existing(cid)
        if existing:
            # Prefer a finished request; any active one is still better than a duplicate.
            existing.sort(key=lambda r: r.get("status") != PINNED)
            status = existing[0]
        else:
            body: dict[str, Any] = {"cid": cid, "origins": self.origins, "meta": {"app": "bundlekit"}}
            if name:
                body["name"] = name
            # Not retried blindly: a retried POST could create the duplicate we avoid.
            # A lost answer is recovered by listing again.
            try:
                status = self.http.request("POST", f"{self.base_url}/pins", json=body, retry=False,
                                           what="create pin").json()
            except PinUnavailable:
                found = self._existing(cid)
                if not found:
                    raise
                status = found[0]
        return self._wait(status, cid)

    def _wait(self, status: dict[str, Any], cid: str) -> PinResult:
        requestid = str(status.get("requestid", ""))
        if not requestid:
            raise PinUnavailable("pinning service: the answer carries no requestid; is BUNDLEKIT_PSA_URL a Pinning Service API?")
        give_up = self.clock() + self.deadline
        while True:
            state = str(status.get("status", ""))
            reported = str((status.get("pin") or {}).get("cid") or cid)
            if reported != cid:
                raise CIDMismatch(
                    f"pinning service: request {requestid} is for {reported}, not {cid}; "
                    "the service rewrote the CID: check it with the service"
                )
            if state == PINNED:
                return PinResult(self.name, reported, PINNED, url=f"ipfs://{reported}")
            if state == FAILED:
                info = status.get("info") or {}
                raise PinRejected(self.http.redact(
                    f"pinning service: request {requestid} for {cid} failed"
                    + (f" ({info})" if info else "")
                    + "; make sure the content is reachable (BUNDLEKIT_PSA_ORIGINS) and retry"
                ))
            if self.clock() >= give_up:
                return PinResult(
                    self.name, reported, state or QUEUED,
                    error=f"still {state or 'queued'} after {self.deadline:.0f}s (request {requestid}); "
                          "not durable yet: check later with the service",
                )
            self.http.options.sleep(self.poll_interval)
            status = self.http.request("GET", f"{self.base_url}/pins/{requestid}", what="pin status").json()

    def status(self, cid: bytes) -> PinResult:
        text = cid_to_str(cid)
        existing = self._existing(text, "queued,pinning,pinned,failed")
        if not existing:
            return PinResult(self.name, text, MISSING)
        existing.sort(key=lambda r: r.get("status") != PINNED)
        return PinResult(self.name, text, str(existing[0].get("status", MISSING)))

    def unpin(self, cid: bytes) -> None:
        """Delete every request for ``cid``."""
        for item in self._existing(cid_to_str(cid), "queued,pinning,pinned,failed"):
            self.http.request("DELETE", f"{self.base_url}/pins/{item['requestid']}", what="delete pin")

    def check(self) -> None:
        """``GET /pins?limit=1``: authenticated and cheap."""
        self.http.request("GET", f"{self.base_url}/pins", params={"limit": "1"}, retry=False, what="list pins")

    def close(self) -> None:
        self.http.close()
