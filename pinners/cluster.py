"""The ``cluster`` pinner: an IPFS Cluster's REST API (the engine past one kubo node).

Source: ipfs-cluster/ipfs-cluster at 2182e887ef378f906455784396f1011df968822c:
``api/rest/restapi.go`` (routes ``POST /add``, ``GET /allocations``,
``GET /allocations/{hash}``, ``GET /pins/{hash}``, ``DELETE /pins/{hash}``,
``GET /id``), ``api/add.go`` (``AddParams`` from the query: ``format=car``,
``local``; ``AddedOutput`` ``{"name", "cid", "bytes", "size", "allocations"}``),
``api/types.go`` (``PinOptions.ToQuery``: ``replication-min``,
``replication-max``, ``name``; ``GlobalPinInfo`` ``{"cid", "name",
"allocations", "peer_map": {peer: {"peername", "status", "error", ...}}}``;
tracker statuses ``pinned``, ``pinning``, ``pin_queued``, ``queued``,
``pin_error``, ``cluster_error``, ``remote``, ...; ``Error`` ``{"code", "message"}``).

1. Existing pin: ``GET {base}/allocations/<root>``; 200 means the cluster
   already tracks the root (no upload), 404 that it does not.
2. Otherwise ``POST {base}/add?format=car&name=<name>&replication-min=<n>
   &replication-max=<n>&local=<bool>&stream-channels=false``, the CAR as the
   multipart ``file`` field; the answer is JSON (one ``AddedOutput`` per
   line, or a list) whose ``cid`` must equal the root. Not re-sent blindly:
   after a lost answer, step 1 is asked again before retrying.
3. Poll ``GET {base}/pins/<root>`` every ``poll_interval`` until every peer
   holding an allocation (every peer, when ``allocations`` is empty, i.e.
   replication everywhere) reports ``pinned``: durable. A peer reporting
   ``pin_error`` fails the pin (``PinRejected`` naming the peer). At the
   deadline the result keeps status ``pinning`` and its error names the
   peers still pinning; it is not durable, so ``--require all`` fails.

Retention: ``list(name_prefix)`` reads ``GET {base}/allocations?filter=pin``
(one Pin per line); ``unpin`` is ``DELETE {base}/pins/<cid>`` (404 is fine).
``check``: ``GET {base}/id``.

Settings: ``BUNDLEKIT_CLUSTER_URL`` (required); ``BUNDLEKIT_CLUSTER_TOKEN``
(bearer) or ``BUNDLEKIT_CLUSTER_BASIC_AUTH`` (``user:password``);
``BUNDLEKIT_CLUSTER_REPLICATION_MIN`` / ``_MAX`` (integers; default 0, the
cluster's own setting; -1 pins everywhere); ``BUNDLEKIT_CLUSTER_LOCAL``
(``true``: the peer we talk to stores the blocks, replicas fetch them);
``BUNDLEKIT_CLUSTER_POLL_INTERVAL`` (seconds, default 2) and
``BUNDLEKIT_CLUSTER_DEADLINE`` (seconds, default 600).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, BinaryIO

import httpx

from bundlekit.errors import CIDMismatch, PinRejected, PinUnavailable, UsageError
from bundlekit.ipld.cid import cid_to_str
from bundlekit.net.http import Failure, HttpOptions, HttpRequest
from bundlekit.pinning.http import UPLOAD_OPTIONS, HttpClient, node_credentials, service_url
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

__all__ = ["ClusterPinner"]

DEFAULT_POLL_INTERVAL = 2.0
_ERROR_STATUSES = frozenset({"pin_error", "error", "unexpectedly_unpinned"})
_NOT_HERE = frozenset({"remote", "unpinned", "sharded"})


def _json_lines(text: str) -> list[Any]:
    """A cluster answer as a list of objects: a JSON list, or one JSON value per line (streamed)."""
    text = text.strip()
    if not text:
        return []
    if text.startswith("["):
        value = json.loads(text)
        return list(value) if isinstance(value, list) else [value]
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _int_env(env: Mapping[str, str], name: str) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return 0
    try:
        return int(raw)
    except ValueError as exc:
        raise UsageError(f"{name} must be a whole number of peers (-1 for everywhere), not {raw!r}") from exc


def _bool_env(env: Mapping[str, str], name: str) -> bool:
    """``true``/``1``/``yes`` or ``false``/``0``/``no`` (unset is false); UsageError for anything else."""
    raw = env.get(name, "").strip().lower()
    if raw in ("1", "true", "yes"):
        return True
    if raw in ("", "0", "false", "no"):
        return False
    raise UsageError(f"{name} must be true or false, not {raw[:40]!r}")


class ClusterPinner(BasePinner):
    """Adds CARs to an IPFS Cluster and waits until the allocated peers have pinned them."""

    name = "cluster"
    description = "an IPFS Cluster's REST API (add CAR, replication, status per peer)"
    env_vars = ("BUNDLEKIT_CLUSTER_URL",)
    optional_env = ("BUNDLEKIT_CLUSTER_TOKEN", "BUNDLEKIT_CLUSTER_BASIC_AUTH", "BUNDLEKIT_CLUSTER_REPLICATION_MIN",
                    "BUNDLEKIT_CLUSTER_REPLICATION_MAX", "BUNDLEKIT_CLUSTER_LOCAL",
                    "BUNDLEKIT_CLUSTER_POLL_INTERVAL", "BUNDLEKIT_CLUSTER_DEADLINE")

    def __init__(
        self,
        base_url: str,
        *,
        token: str | None = None,
        basic_auth: str | None = None,
        replication_min: int = 0,
        replication_max: int = 0,
        local: bool = False,
        polling: Polling | None = None,
        options: HttpOptions = UPLOAD_OPTIONS,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.replication_min = replication_min
        self.replication_max = replication_max
        self.local = local
        self.polling = polling or Polling(DEFAULT_POLL_INTERVAL)
        creds = node_credentials(token, basic_auth, "BUNDLEKIT_CLUSTER_BASIC_AUTH")
        self.http = HttpClient("IPFS Cluster", headers=creds.headers, auth=creds.auth, secrets=creds.secrets,
                               options=options)

    @classmethod
    def from_env(cls, env: Mapping[str, str], *, options: HttpOptions = UPLOAD_OPTIONS) -> ClusterPinner:
        """Raises PinnerNotConfigured naming BUNDLEKIT_CLUSTER_URL when it is missing, UsageError for a bad number or flag."""
        url = require_env(env, cls.env_vars, cls.name)["BUNDLEKIT_CLUSTER_URL"]
        given = [n for n in ("BUNDLEKIT_CLUSTER_TOKEN", "BUNDLEKIT_CLUSTER_BASIC_AUTH") if env.get(n, "").strip()]
        secrets = require_env(env, given, cls.name)
        return cls(
            url,
            token=secrets.get("BUNDLEKIT_CLUSTER_TOKEN"),
            basic_auth=secrets.get("BUNDLEKIT_CLUSTER_BASIC_AUTH"),
            replication_min=_int_env(env, "BUNDLEKIT_CLUSTER_REPLICATION_MIN"),
            replication_max=_int_env(env, "BUNDLEKIT_CLUSTER_REPLICATION_MAX"),
            local=_bool_env(env, "BUNDLEKIT_CLUSTER_LOCAL"),
            polling=Polling.from_env(env, "CLUSTER", DEFAULT_POLL_INTERVAL),
            options=options,
        )

    # -- the verbs ------------------------------------------------------------

    def pin(self, car: BinaryIO, root: bytes, *, name: str | None = None, size: int | None = None) -> PinResult:
        """Add the CAR (unless the cluster tracks ``root``) and wait for the allocated peers.

        Raises CIDMismatch, PinRejected (a peer's ``pin_error``, a refused add)
        and the HTTP errors of ``bundlekit.pinning.http``.
        """
        root_text = cid_to_str(root)
        if not self._tracked(root_text):
            self._add(car, root, name or f"{root_text}.car")
        return self._wait(root_text)

    def _tracked(self, cid: str) -> bool:
        call = HttpRequest("GET", service_url(self.base_url, f"/allocations/{cid}"),
                           ok=lambda r: r.is_success or r.status_code == 404)
        response = self.http.request(call, "allocation")
        return response.status_code != 404

    def _add(self, car: BinaryIO, root: bytes, label: str) -> None:
        start = car.tell()
        params = {"format": "car", "name": label, "replication-min": str(self.replication_min),
                  "replication-max": str(self.replication_max), "local": str(self.local).lower(),
                  "stream-channels": "false"}

        def body() -> dict[str, Any]:
            car.seek(start)
            return {"files": {"file": (f"{cid_to_str(root)}.car", car, "application/vnd.ipld.car")}}

        def before_retry(failure: Failure) -> None:
            if isinstance(failure.error, (httpx.ReadTimeout, httpx.WriteTimeout)) and self._tracked(cid_to_str(root)):
                raise _Added()

        try:
            response = self.http.request(HttpRequest("POST", service_url(self.base_url, "/add"), params=params, body=body),
                                         "add CAR", before_retry=before_retry)
        except _Added:
            return
        stream_error = response.headers.get("X-Stream-Error", "")
        try:
            added = [a for a in _json_lines(response.text) if isinstance(a, dict)]
        except ValueError as exc:
            raise PinUnavailable(f"IPFS Cluster: /add answered something that is not JSON; is {self.base_url} "
                                 "a cluster REST API?") from exc
        cids = [str(a.get("cid", "")) for a in added]
        if not any(same_cid(c, root) for c in cids):
            if stream_error or not cids:
                raise PinRejected(self.http.redact(
                    f"IPFS Cluster: /add of {cid_to_str(root)} failed: {stream_error or 'no CID in the answer'}"))
            raise CIDMismatch(f"IPFS Cluster: /add reported {', '.join(cids)}, not {cid_to_str(root)}; "
                              "check the CAR's header")

    def _status(self, cid: str) -> dict[str, Any]:
        info: dict[str, Any] = self.http.json(
            self.http.request(HttpRequest("GET", service_url(self.base_url, f"/pins/{cid}")), "pin status"),
            "pin status")
        return info

    def _wait(self, cid: str) -> PinResult:
        give_up = self.polling.give_up_at()
        while True:
            info = self._status(cid)
            waiting, failed = _progress(info)
            if failed:
                raise PinRejected(self.http.redact(
                    f"IPFS Cluster: pinning {cid} failed on {'; '.join(failed)}; "
                    "check those peers' IPFS daemons, then `ipfs-cluster-ctl recover` or pin again"))
            if not waiting:
                return PinResult(self.name, cid, PINNED, url=f"ipfs://{cid}")
            if self.polling.passed(give_up):
                return PinResult(
                    self.name, cid, PINNING,
                    error=f"still pinning after {self.polling.deadline:.0f}s on {', '.join(waiting)}; "
                          "not durable yet: check later with `ipfs-cluster-ctl status`",
                )
            self.http.options.sleep(self.polling.interval)

    def status(self, cid: bytes) -> PinResult:
        text = cid_to_str(cid)
        if not self._tracked(text):
            return PinResult(self.name, text, MISSING)
        waiting, failed = _progress(self._status(text))
        state = PINNED if not waiting and not failed else PINNING
        return PinResult(self.name, text, state, url=f"ipfs://{text}", error="; ".join(failed) or None)

    def unpin(self, cid: bytes) -> None:
        """``DELETE /pins/<cid>``; a CID the cluster does not track is fine."""
        self.http.request(HttpRequest("DELETE", service_url(self.base_url, f"/pins/{cid_to_str(cid)}"),
                                      ok=lambda r: r.is_success or r.status_code == 404), "unpin")

    def list(self, name_prefix: str = "") -> list[PinEntry]:
        """Cluster pins (``/allocations?filter=pin``) whose name starts with ``name_prefix``."""
        response = self.http.request(
            HttpRequest("GET", service_url(self.base_url, "/allocations"), params={"filter": "pin"}), "list pins")
        try:
            pins = [p for p in _json_lines(response.text) if isinstance(p, dict)]
        except ValueError:
            raise PinUnavailable(f"IPFS Cluster: /allocations answered something that is not JSON; is {self.base_url} "
                                 "a cluster REST API?") from None
        return [PinEntry(str(p.get("cid", "")), str(p.get("name") or "") or None, str(p.get("timestamp") or "") or None)
                for p in pins if str(p.get("name") or "").startswith(name_prefix)]

    def check(self) -> None:
        """``GET /id``: cheap, and authenticated when the API requires it."""
        self.http.request(HttpRequest("GET", service_url(self.base_url, "/id"), retry=False), "id")

    def close(self) -> None:
        self.http.close()


class _Added(Exception):
    """A timed-out /add that reached the cluster after all."""


def _progress(info: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """From a GlobalPinInfo: the allocated peers not yet pinned, and those that failed (with their error)."""
    peer_map = info.get("peer_map") or {}
    allocations = set(info.get("allocations") or [])
    waiting: list[str] = []
    failed: list[str] = []
    for peer, pin in sorted(peer_map.items()):
        if not isinstance(pin, dict):
            continue
        state = str(pin.get("status", ""))
        label = str(pin.get("peername") or peer)
        if (allocations and peer not in allocations) or state in _NOT_HERE and not allocations:
            continue
        if state == PINNED:
            continue
        if state in _ERROR_STATUSES:
            failed.append(f"{label} ({state}: {pin.get('error') or 'no detail'})")
        else:
            waiting.append(f"{label} ({state})")
    if not peer_map:
        waiting.append("no peer yet")
    return waiting, failed
