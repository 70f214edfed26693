"""The ``psa`` pinner: any IPFS Pinning Service API endpoint.

The Pinning Service API does not take uploads: the service fetches the DAG
itself over bitswap, from libp2p peers: the ``origins`` we give it (multiaddrs
ending ``/p2p/<peer ID>`` of a node that holds the blocks) or the IPFS
network. An HTTP gateway (``bundlekit serve``) is not a libp2p peer and cannot
be an origin. So ``pin`` publishes nothing; it asks the service to pin our
root by CID and waits. The origins come from ``--psa-origin MULTIADDR``
(``BUNDLEKIT_PSA_ORIGINS``), or from the kubo pinner's node (its ``id``
addresses) when both run; ``pinning.origins.link_origins`` refuses at once a
run where ``psa`` has neither and no other pinner puts the content on the
network. ``psa`` runs after the other pinners (``fetches_content``), so the
node holding the blocks has them when the service asks.

1. ``GET {base}/pins?cid=<root>&status=queued,pinning,pinned``: an existing
   request for the same CID is reused (no duplicate pin).
2. Otherwise ``POST {base}/pins`` with ``{"cid", "name", "origins", "meta"}``.
3. Poll ``GET {base}/pins/{requestid}`` every ``poll_interval`` seconds until
   ``pinned`` (durable), ``failed`` (PinRejected) or the deadline (the result
   keeps status ``queued``/``pinning``, which does not count as durable).

Retention: ``list`` reads every page of ``GET {base}/pins?name=<prefix>&match=partial``
(every status; ``before`` the oldest ``created`` above each page's oldest, so
requests sharing the boundary timestamp are read again, kept once) and keeps
names starting with the prefix; ``unpin`` deletes each request for the CID
(every page of ``GET {base}/pins?cid=<cid>``, paged the same way).

Settings: ``BUNDLEKIT_PSA_URL``, ``PSA_TOKEN`` (bearer); optional
``BUNDLEKIT_PSA_ORIGINS`` (comma-separated libp2p multiaddrs of a node holding
the blocks), ``BUNDLEKIT_PSA_POLL_INTERVAL`` (seconds, default 5) and
``BUNDLEKIT_PSA_DEADLINE`` (seconds, default 600).

Source: ipfs/pinning-services-api-spec ``ipfs-pinning-service.yaml``
(commit bbfaa5896d9378c8c613f2ed18d227a7a18d2880): ``Pin.origins`` and
"Provider hints", the ``name``/``match``/``status``/``limit`` filters, and
"Pagination and filtering" (``count``, newest first, ``before``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, BinaryIO

from bundlekit.errors import CIDMismatch, PinRejected, PinUnavailable
from bundlekit.ipld.cid import cid_to_str
from bundlekit.net.http import HttpOptions, HttpRequest
from bundlekit.pinning.http import UPLOAD_OPTIONS, HttpClient, service_url
from bundlekit.pinning.origins import check_origins
from bundlekit.pinning.polling import Polling
from bundlekit.pinning.protocol import (
    FAILED,
    MISSING,
    PINNED,
    QUEUED,
    BasePinner,
    PinEntry,
    PinResult,
    require_env,
)

__all__ = ["PSAPinner"]

ACTIVE_STATUSES = "queued,pinning,pinned"
ALL_STATUSES = "queued,pinning,pinned,failed"
LIST_LIMIT = 1000  # the spec's maximum page
# A million requests: a listing still going after that is a service that never ends its pages.
LIST_MAX_PAGES = 1000
DEFAULT_POLL_INTERVAL = 5.0


class PSAPinner(BasePinner):
    """Asks a Pinning Service API to pin our root, reusing an existing request."""

    name = "psa"
    description = "any IPFS Pinning Service API (the service fetches the content)"
    env_vars = ("BUNDLEKIT_PSA_URL", "PSA_TOKEN")
    optional_env = ("BUNDLEKIT_PSA_ORIGINS", "BUNDLEKIT_PSA_POLL_INTERVAL", "BUNDLEKIT_PSA_DEADLINE")
    # The service fetches the DAG itself: run after the pinners that put it on the network.
    fetches_content = True

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        origins: Sequence[str] = (),
        polling: Polling | None = None,
        options: HttpOptions = UPLOAD_OPTIONS,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.origins = list(origins)
        # Set by link_origins when a kubo pinner runs too: its node's addresses, read after it pinned.
        self.origin_source: Callable[[], list[str]] | None = None
        self.polling = polling or Polling(DEFAULT_POLL_INTERVAL)
        self.http = HttpClient(
            "pinning service", headers={"Authorization": f"Bearer {token}"}, secrets=[token], options=options
        )

    @classmethod
    def from_env(cls, env: Mapping[str, str], *, options: HttpOptions = UPLOAD_OPTIONS) -> PSAPinner:
        """Raises PinnerNotConfigured naming BUNDLEKIT_PSA_URL / PSA_TOKEN when missing, UsageError for a bad origin."""
        values = require_env(env, cls.env_vars, cls.name)
        origins = check_origins([o.strip() for o in env.get("BUNDLEKIT_PSA_ORIGINS", "").split(",") if o.strip()],
                                "BUNDLEKIT_PSA_ORIGINS")
        return cls(
            values["BUNDLEKIT_PSA_URL"],
            values["PSA_TOKEN"],
            origins=origins,
            polling=Polling.from_env(env, "PSA", DEFAULT_POLL_INTERVAL),
            options=options,
        )

    def _existing(self, cid: str, statuses: str = ACTIVE_STATUSES) -> list[dict[str, Any]]:
        response = self.http.request(
            HttpRequest("GET", service_url(self.base_url, "/pins"), params={"cid": cid, "status": statuses}), "list pins"
        )
        return self._results(self.http.json(response, "list pins"))

    def _results(self, data: Mapping[str, Any]) -> list[dict[str, Any]]:
        """A listing's pin statuses (``PinResults.results``, an array in the spec); one that is not an
        array is a service that does not follow it (``PinUnavailable``), not a traceback."""
        results = data.get("results")
        if results is None:
            return []
        if not isinstance(results, list):
            raise PinUnavailable(self.http.redact(
                f"{self.http.service}: list pins: {self.base_url} answered {type(results).__name__} 'results' where "
                "the Pinning Service API has an array of pin statuses; check that the URL is the service's API"
            ))
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
            origins = self.origins or (self.origin_source() if self.origin_source is not None else [])
            body: dict[str, Any] = {"cid": cid, "origins": origins, "meta": {"app": "bundlekit"}}
            if name:
                body["name"] = name
            # Not retried blindly: a retried POST could create the duplicate we avoid.
            # A lost answer is recovered by listing again.
            try:
                status = self.http.json(self.http.request(
                    HttpRequest("POST", service_url(self.base_url, "/pins"), json=body, retry=False), "create pin"
                ), "create pin")
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
        give_up = self.polling.give_up_at()
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
                    + "; make sure a node holding the blocks is reachable over libp2p "
                    "(--psa-origin MULTIADDR, or --pinner kubo) and retry"
                ))
            if self.polling.passed(give_up):
                return PinResult(
                    self.name, reported, state or QUEUED,
                    error=f"still {state or 'queued'} after {self.polling.deadline:.0f}s (request {requestid}); "
                          "not durable yet: check later with the service",
                )
            self.http.options.sleep(self.polling.interval)
            status = self.http.json(
                self.http.request(HttpRequest("GET", service_url(self.base_url, f"/pins/{requestid}")), "pin status"),
                "pin status")

    def status(self, cid: bytes) -> PinResult:
        text = cid_to_str(cid)
        existing = self._existing(text, ALL_STATUSES)
        if not existing:
            return PinResult(self.name, text, MISSING)
        existing.sort(key=lambda r: r.get("status") != PINNED)
        return PinResult(self.name, text, str(existing[0].get("status", MISSING)))

    def _every(self, filters: Mapping[str, str]) -> list[dict[str, Any]]:
        """Every request of every page of ``GET {base}/pins`` with ``filters``, each once.

        ``count`` larger than the page means more, and the next page is asked
        ``before`` the oldest ``created`` above the page's oldest one, so
        requests sharing the boundary timestamp are read again (and kept once,
        by ``requestid``) rather than skipped by the exclusive ``before``.
        Raises ``PinUnavailable`` when the listing cannot be read to its end:
        more than ``LIST_MAX_PAGES`` pages, a page that ignores ``before`` or
        brings nothing new, a request without a ``created`` timestamp, or more
        requests sharing one timestamp than fit in a page.
        """
        params = {**filters, "limit": str(LIST_LIMIT)}
        read: dict[str, dict[str, Any]] = {}
        before = ""
        tie: _Tie | None = None
        for _ in range(LIST_MAX_PAGES):
            query = {**params, "before": before} if before else params
            response = self.http.request(HttpRequest("GET", service_url(self.base_url, "/pins"), params=query),
                                         "list pins")
            data = self.http.json(response, "list pins")
            page = self._results(data)
            count = data.get("count")
            if before:
                self._check_before(page, before)
            if tie is not None and isinstance(count, int) and tie.total - count > tie.read:
                raise PinUnavailable(self._listing_error(
                    f"{tie.total - count} requests were created at {tie.created}, more than a page of "
                    f"{LIST_LIMIT}; paging by 'created' cannot reach the others sharing it"))
            fresh = [r for r in page if _key(r) not in read]
            read.update((_key(r), r) for r in fresh)
            if not page or not isinstance(count, int) or count <= len(page):
                break
            if not fresh:
                if len(page) < LIST_LIMIT:
                    break  # only the boundary's requests again: the service's count runs ahead of its pages
                raise PinUnavailable(self._listing_error(f"a page of {len(page)} requests brought none not read before"))
            before, tie = self._next_before(page, count, read.values())
        else:
            raise PinUnavailable(self._listing_error(f"more than {LIST_MAX_PAGES} pages of {LIST_LIMIT}"))
        return list(read.values())

    def unpin(self, cid: bytes) -> None:
        """Delete every request for ``cid`` (every page of the ``cid`` listing, read before the first delete)."""
        for item in self._every({"cid": cid_to_str(cid), "status": ALL_STATUSES}):
            if item.get("requestid"):
                self.http.request(HttpRequest("DELETE", service_url(self.base_url, f"/pins/{item['requestid']}")),
                                  "delete pin")

    def list(self, name_prefix: str = "") -> list[PinEntry]:
        """Pin requests (any status) whose name starts with ``name_prefix``; one entry per CID (its newest).

        Raises ``PinUnavailable`` when the listing cannot be read to its end (see :meth:`_every`).
        """
        params = {"status": ALL_STATUSES}
        if name_prefix:
            params.update(name=name_prefix, match="partial")
        entries: dict[str, PinEntry] = {}
        for item in sorted(self._every(params), key=_newest_first):
            pin = item.get("pin")
            if not isinstance(pin, dict) or not str(pin.get("name") or "").startswith(name_prefix):
                continue
            cid = str(pin.get("cid", ""))
            entries.setdefault(cid, PinEntry(cid, str(pin.get("name") or "") or None, str(item.get("created") or "")
                                             or None))
        return list(entries.values())

    def _listing_error(self, problem: str) -> str:
        return self.http.redact(
            f"pinning service: listing pins at {self.base_url} stopped: {problem}; "
            "the service does not page its list as the Pinning Service API says: report it to the service"
        )

    def _created(self, item: dict[str, Any]) -> int:
        when = _parse_created(item.get("created"))
        if when is None:
            raise PinUnavailable(self._listing_error(
                f"request {item.get('requestid', '?')} has no RFC 3339 'created' timestamp to page by"))
        return when

    def _check_before(self, page: Sequence[dict[str, Any]], before: str) -> None:
        """Every request of a page asked ``before`` a timestamp MUST be older than it."""
        limit = _parse_created(before)
        for item in page:
            if limit is not None and self._created(item) >= limit:
                raise PinUnavailable(self._listing_error(
                    f"asked for requests created before {before}, it answered request "
                    f"{item.get('requestid', '?')} created {item.get('created')} (a page repeated or 'before' ignored)"))

    def _next_before(self, page: Sequence[dict[str, Any]], count: int,
                     read: Iterable[dict[str, Any]]) -> tuple[str, _Tie | None]:
        """The ``before`` of the next page: the oldest ``created`` newer than the page's oldest.

        ``before`` is exclusive, so asking before the oldest timestamp itself
        would skip the requests sharing it that did not fit on this page. A
        page whose requests all share one timestamp can only be followed by
        asking before it; the returned ``_Tie`` lets the next page's ``count``
        prove that no request at that timestamp was left unread.
        """
        times = [(self._created(item), str(item.get("created"))) for item in page]
        oldest = min(when for when, _ in times)
        newer = [(when, text) for when, text in times if when > oldest]
        if newer:
            return min(newer)[1], None
        text = times[0][1]
        at_oldest = sum(1 for item in read if _parse_created(item.get("created")) == oldest)
        return text, _Tie(text, count, at_oldest)

    def check(self) -> None:
        """``GET /pins?limit=1``: authenticated and cheap."""
        self.http.request(HttpRequest("GET", service_url(self.base_url, "/pins"), params={"limit": "1"}, retry=False),
                          "list pins")

    def close(self) -> None:
        self.http.close()


@dataclass(frozen=True)
class _Tie:
    """A page whose requests all shared ``created``: ``total`` is that query's ``count``, ``read`` the requests read at it.

    Asked next ``before`` that timestamp, a service answering ``count`` C holds
    ``total - C`` requests at it; more than ``read`` means some cannot be reached.
    """

    created: str
    total: int
    read: int


_FRACTION = re.compile(r"[.,](\d+)")  # the comma: ISO 8601's other decimal sign, which fromisoformat reads
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _parse_created(value: object) -> int | None:
    """An RFC 3339 timestamp as nanoseconds since the epoch (UTC when it names no zone), exactly: a service
    written in Go sends up to 9 fractional digits (``time.RFC3339Nano``), where ``datetime`` keeps 6, and
    two requests apart by less than a microsecond must not look alike when paging by ``before``. None when
    it is not a timestamp."""
    if not isinstance(value, str):
        return None
    fraction = _FRACTION.search(value)
    digits = fraction.group(1) if fraction else ""
    whole = value[: fraction.start()] + value[fraction.end() :] if fraction else value
    try:
        when = datetime.fromisoformat(whole)
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    seconds = (when - _EPOCH) // timedelta(seconds=1)
    return seconds * 1_000_000_000 + (int(digits[:9].ljust(9, "0")) if digits else 0)


def _key(item: dict[str, Any]) -> str:
    """A request's identity across pages: its ``requestid``, else its CID and ``created``."""
    rid = item.get("requestid")
    if rid:
        return f"id:{rid}"
    pin = item.get("pin")
    cid = pin.get("cid") if isinstance(pin, dict) else None
    return f"pin:{cid}@{item.get('created')}"


def _newest_first(item: dict[str, Any]) -> float:
    """Sort key putting the newest ``created`` first (unparseable ones last)."""
    when = _parse_created(item.get("created"))
    return -when if when is not None else float("inf")
