"""The ``web3-storage`` pinner: web3.storage's legacy HTTP API and the Storacha HTTP bridge.

Both public services have stopped taking uploads (the legacy API in January
2024, the bridge in April 2026). The pinner stays for self-hosted and
compatible deployments, and so that a pipeline still pointed at them fails
fast with ``PinServiceSunset`` (never retried) and a pointer to Pinata,
Filebase or a kubo node, instead of retrying into a dead endpoint.

Legacy mode (``WEB3_STORAGE_TOKEN`` set):
``POST {base}/car`` with the CAR as body, ``Authorization: Bearer <token>``,
``X-NAME: <name>``, ``Content-Type: application/vnd.ipld.car``; the answer
``{"cid": ...}`` must equal our root. A CAR over ``SPLIT_SIZE`` (10 MiB, the
official client's chunk size) is split as the official client splits it, by a
tree walk: a depth-first walk from the root fills parts of at most
``SPLIT_SIZE`` bytes, and each new part starts with the blocks on the path
from the root to the next block, so every part has our root in its header,
holds the root block, and is a connected piece of the DAG. The service's CAR
check refuses a part without its root block ("missing root block"). The
service keys uploads by root, so sending the same CAR again creates no
duplicate. Sources: web3-storage/web3.storage ``packages/client/src/lib.js``
(``putCar``: ``TreewalkCarSplitter``, ``MAX_CHUNK_SIZE`` 10 MiB) and
alanshaw/carbites ``lib/treewalk/splitter.js`` (the walk).

Bridge mode (``STORACHA_AUTH_SECRET``, ``STORACHA_AUTH_TOKEN`` and
``STORACHA_SPACE_DID`` set): ``POST {base}/bridge`` with headers
``X-Auth-Secret`` and ``Authorization`` and a JSON body
``{"tasks": [[capability, space_did, args]]}``; the answer is a list of
receipts whose ``p.out`` is ``{"ok": ...}`` or ``{"error": ...}``.

1. ``store/add`` ``{"link": {"/": <CAR CID>}, "size": n}`` (the CAR CID is
   CIDv1, codec ``car`` 0x0202, sha2-256 of the CAR bytes). ``ok.status`` is
   ``done`` (already stored: nothing to send) or ``upload`` with ``url`` and
   ``headers`` for:
2. ``PUT <url>`` with exactly those headers and the CAR as body.
3. ``upload/add`` ``{"root": {"/": <root>}, "shards": [{"/": <CAR CID>}]}``;
   ``ok.root`` must equal our root. Adding the same root again is a no-op.

``BUNDLEKIT_WEB3_STORAGE_URL`` sets the base (default
``https://api.web3.storage`` in legacy mode, ``https://up.storacha.network``
in bridge mode).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import IO, Any, BinaryIO
from urllib.parse import quote

import httpx

from bundlekit.car.format import encode_header
from bundlekit.car.index import CarIndex
from bundlekit.car.writer import CarWriter
from bundlekit.errors import CIDMismatch, PinnerNotConfigured, PinRejected, PinServiceSunset, PinUnavailable
from bundlekit.ipld.cid import cid_from_digest, cid_to_str
from bundlekit.ipld.walk import block_links
from bundlekit.net.http import HttpOptions, HttpRequest
from bundlekit.pinning.http import UPLOAD_OPTIONS, HttpClient, ServiceRules, service_url
from bundlekit.pinning.orchestrate import same_cid
from bundlekit.pinning.protocol import MISSING, PINNED, PINNING, BasePinner, PinResult, require_env

__all__ = ["SPLIT_SIZE", "Web3StoragePinner", "car_cid", "is_sunset"]

LEGACY_URL = "https://api.web3.storage"
BRIDGE_URL = "https://up.storacha.network"
CAR_CODEC = 0x0202
# The official client's chunk size (it splits every CAR with a tree walk to parts of about this).
SPLIT_SIZE = 10 * 1024 * 1024
SUNSET_HINT = "publish with Pinata (--pinner pinata), Filebase (--pinner filebase) or a kubo node (--pinner kubo)"
_SUNSET_WORDS = ("sunset", "no longer available", "no longer accept", "has been shut down", "decommissioned")
LEGACY_ENV = ("WEB3_STORAGE_TOKEN",)
BRIDGE_ENV = ("STORACHA_AUTH_SECRET", "STORACHA_AUTH_TOKEN", "STORACHA_SPACE_DID")
# status in bridge mode looks the root up in upload/list: at most this many pages of this many uploads.
_STATUS_PAGE_SIZE = 100
_STATUS_MAX_PAGES = 100


def is_sunset(response: httpx.Response) -> bool:
    """True for the services' documented shutdown answers (410, or an error body saying the API is sunset)."""
    if response.status_code == 410:
        return True
    if response.is_success:
        return False
    text = response.text.lower()
    return any(word in text for word in _SUNSET_WORDS)


def car_cid(stream: BinaryIO) -> tuple[bytes, int]:
    """The CAR's own CID (CIDv1, codec car, sha2-256 of its bytes) and length; reads from the current position."""
    digest = hashlib.sha256()
    size = 0
    while chunk := stream.read(1024 * 1024):
        digest.update(chunk)
        size += len(chunk)
    return cid_from_digest(1, CAR_CODEC, digest.digest()), size


def _any_set(env: Mapping[str, str], names: tuple[str, ...]) -> bool:
    return any(env.get(n, "").strip() for n in names)


def _all_set(env: Mapping[str, str], names: tuple[str, ...]) -> bool:
    return all(env.get(n, "").strip() for n in names)


def _link(cid: bytes | str) -> dict[str, str]:
    return {"/": cid if isinstance(cid, str) else cid_to_str(cid)}


class Web3StoragePinner(BasePinner):
    """web3.storage legacy API or Storacha bridge, chosen by which credentials are set."""

    name = "web3-storage"
    description = "web3.storage legacy API or the Storacha HTTP bridge (public services sunset)"
    env_vars = LEGACY_ENV
    optional_env = BRIDGE_ENV + ("BUNDLEKIT_WEB3_STORAGE_URL",)

    def __init__(
        self,
        *,
        token: str | None = None,
        bridge: tuple[str, str, str] | None = None,
        base_url: str | None = None,
        split_size: int = SPLIT_SIZE,
        options: HttpOptions = UPLOAD_OPTIONS,
    ) -> None:
        if (token is None) == (bridge is None):
            raise PinnerNotConfigured(
                "web3-storage needs either WEB3_STORAGE_TOKEN (legacy API) or STORACHA_AUTH_SECRET, "
                "STORACHA_AUTH_TOKEN and STORACHA_SPACE_DID (bridge), not both"
            )
        self.mode = "legacy" if token is not None else "bridge"
        self.base_url = (base_url or (LEGACY_URL if token is not None else BRIDGE_URL)).rstrip("/")
        self.split_size = split_size
        self._headers: dict[str, str]
        if token is not None:
            self._headers = {"Authorization": f"Bearer {token}"}
            secrets = [token]
            self.space = ""
        else:
            assert bridge is not None
            secret, auth, self.space = bridge
            self._headers = {"X-Auth-Secret": secret, "Authorization": auth}
            secrets = [secret, auth]
        # Credentials go per request, never as client defaults: the bridge's PUT
        # goes to a presigned storage URL that must not see them.
        self.http = HttpClient("web3.storage", secrets=secrets, options=options,
                               rules=ServiceRules(sunset=is_sunset, sunset_hint=SUNSET_HINT))

    @classmethod
    def is_configured(cls, env: Mapping[str, str]) -> bool:
        """True when every variable of one mode is set and not blank (as ``require_env`` counts them)."""
        return _all_set(env, LEGACY_ENV) or _all_set(env, BRIDGE_ENV)

    @classmethod
    def from_env(cls, env: Mapping[str, str], *, options: HttpOptions = UPLOAD_OPTIONS) -> Web3StoragePinner:
        """Legacy mode when WEB3_STORAGE_TOKEN is set, else bridge mode.

        PinnerNotConfigured names what is missing, or a variable holding a line
        break or control character (``require_env``'s rules, per mode).
        """
        base = env.get("BUNDLEKIT_WEB3_STORAGE_URL") or None
        if _any_set(env, LEGACY_ENV):
            token = require_env(env, LEGACY_ENV, cls.name)["WEB3_STORAGE_TOKEN"]
            return cls(token=token, base_url=base, options=options)
        if _any_set(env, BRIDGE_ENV):
            v = require_env(env, BRIDGE_ENV, cls.name)
            bridge = (v["STORACHA_AUTH_SECRET"], v["STORACHA_AUTH_TOKEN"], v["STORACHA_SPACE_DID"])
            return cls(bridge=bridge, base_url=base, options=options)
        raise PinnerNotConfigured(
            "pinner 'web3-storage' is not configured: set WEB3_STORAGE_TOKEN (legacy API) or "
            "STORACHA_AUTH_SECRET, STORACHA_AUTH_TOKEN and STORACHA_SPACE_DID (bridge). "
            f"The public services no longer take uploads: {SUNSET_HINT}"
        )

    # -- pin ------------------------------------------------------------------

    def pin(self, car: BinaryIO, root: bytes, *, name: str | None = None, size: int | None = None) -> PinResult:
        """Publish the CAR. Raises PinServiceSunset, CIDMismatch, PinRejected and the HTTP errors."""
        if self.mode == "legacy":
            cid = self._pin_legacy(car, root, name, size)
        else:
            cid = self._pin_bridge(car, root)
        if not same_cid(cid, root):
            raise CIDMismatch(
                f"web3.storage reports CID {cid or '(none)'} but the local root is {cid_to_str(root)}; "
                "the service did not keep the CAR's root"
            )
        return PinResult(self.name, cid, PINNED, url=f"ipfs://{cid}")

    def _post_car(self, body: Callable[[], dict[str, Any]], length: int, name: str | None) -> str:
        # An explicit length: streamed bodies would otherwise go chunked, which
        # storage front ends (and presigned S3 URLs) refuse.
        headers = {**self._headers, "Content-Type": "application/vnd.ipld.car", "Content-Length": str(length)}
        if name:
            headers["X-NAME"] = quote(name)
        response = self.http.request(HttpRequest("POST", service_url(self.base_url, "/car"), headers=headers, body=body),
                                     "upload CAR")
        return str(self.http.json(response, "upload CAR").get("cid", ""))

    def _pin_legacy(self, car: BinaryIO, root: bytes, name: str | None, size: int | None) -> str:
        start = car.tell()
        if size is None:
            size = car.seek(0, os.SEEK_END) - start
            car.seek(start)
        if size <= self.split_size:
            def body() -> dict[str, Any]:
                car.seek(start)
                return {"content": _iter_file(car)}

            return self._post_car(body, size, name)
        cid = ""
        for part in _treewalk_parts(car, root, self.split_size):
            with part:
                def part_body(part: IO[bytes] = part) -> dict[str, Any]:
                    part.seek(0)
                    return {"content": _iter_file(part)}

                length = part.seek(0, os.SEEK_END)
                cid = self._post_car(part_body, length, name)
                if not same_cid(cid, root):
                    return cid  # reported as a mismatch by pin()
        return cid

    def _bridge(self, capability: str, args: dict[str, Any], what: str, *, retry: bool = True) -> dict[str, Any]:
        """One bridge task; return its ``ok`` value. PinRejected carries the task's error name and message."""
        response = self.http.request(HttpRequest(
            "POST", service_url(self.base_url, "/bridge"), headers=self._headers,
            json={"tasks": [[capability, self.space, args]]}, retry=retry,
        ), what)
        receipts = self.http.json(response, what, anything=True)
        try:
            out = receipts[0]["p"]["out"]
        except (KeyError, IndexError, TypeError) as exc:
            raise PinRejected(f"web3.storage bridge: {capability} answered no receipt; is the URL a bridge?") from exc
        if "error" in out:
            error = out["error"] if isinstance(out["error"], dict) else {"message": str(out["error"])}
            message = self.http.redact(f"{error.get('name', 'Error')}: {error.get('message', '')}")
            if any(word in message.lower() for word in _SUNSET_WORDS):
                raise PinServiceSunset(f"web3.storage bridge: {capability} refused: {message}; {SUNSET_HINT}")
            raise PinRejected(f"web3.storage bridge: {capability} refused: {message}")
        ok: dict[str, Any] = out.get("ok") or {}
        return ok

    def _pin_bridge(self, car: BinaryIO, root: bytes) -> str:
        start = car.tell()
        shard, size = car_cid(car)
        stored = self._bridge("store/add", {"link": _link(shard), "size": size}, "store/add")
        if stored.get("status") == "upload":
            url = str(stored.get("url", ""))
            put_headers = {str(k): str(v) for k, v in (stored.get("headers") or {}).items()}
            put_headers.setdefault("Content-Length", str(size))

            def body() -> dict[str, Any]:
                car.seek(start)
                return {"content": _iter_file(car)}

            self.http.request(HttpRequest("PUT", url, headers=put_headers, body=body), "PUT CAR")
        added = self._bridge("upload/add", {"root": _link(root), "shards": [_link(shard)]}, "upload/add")
        return str((added.get("root") or {}).get("/", ""))

    # -- status / unpin / check ----------------------------------------------

    def status(self, cid: bytes) -> PinResult:
        text = cid_to_str(cid)
        if self.mode == "legacy":
            response = self.http.request(HttpRequest(
                "GET", service_url(self.base_url, f"/status/{text}"), headers=self._headers,
                ok=lambda r: r.is_success or r.status_code == 404,
            ), "status")
            if response.status_code == 404:
                return PinResult(self.name, text, MISSING)
            pins = self.http.json(response, "status").get("pins") or []
            state = PINNED if any(p.get("status") == "Pinned" for p in pins) else PINNING
            return PinResult(self.name, text, state, url=f"ipfs://{text}")
        cursor: str | None = None
        for _ in range(_STATUS_MAX_PAGES):  # bounded: a service that never ends its listing cannot hold us
            args: dict[str, Any] = {"size": _STATUS_PAGE_SIZE}
            if cursor:
                args["cursor"] = cursor
            page = self._bridge("upload/list", args, "upload/list")
            for item in page.get("results") or []:
                if same_cid(str((item.get("root") or {}).get("/", "")), cid):
                    return PinResult(self.name, text, PINNED, url=f"ipfs://{text}")
            cursor = page.get("cursor") or page.get("after")
            if not cursor or not page.get("results"):
                return PinResult(self.name, text, MISSING)  # the whole listing read: it is not there
        # Not "missing": only the first pages were read, and the upload may be further on.
        raise PinUnavailable(
            f"{self.name}: {text} is not in the first {_STATUS_MAX_PAGES * _STATUS_PAGE_SIZE:,} uploads of "
            "upload/list and the listing goes on; its status is unknown (check it in the web3.storage console)"
        )

    def unpin(self, cid: bytes) -> None:
        if self.mode == "legacy":
            self.http.request(HttpRequest(
                "DELETE", service_url(self.base_url, f"/user/uploads/{cid_to_str(cid)}"), headers=self._headers,
                ok=lambda r: r.is_success or r.status_code == 404,
            ), "delete upload")
        else:
            self._bridge("upload/remove", {"root": _link(cid)}, "upload/remove")

    def check(self) -> None:
        if self.mode == "legacy":
            self.http.request(HttpRequest("GET", service_url(self.base_url, "/user/uploads"), params={"size": "1"},
                                          headers=self._headers, retry=False), "list uploads")
        else:
            self._bridge("space/info", {}, "space/info", retry=False)

    def close(self) -> None:
        self.http.close()


def _iter_file(stream: IO[bytes], chunk: int = 256 * 1024) -> Iterator[bytes]:
    while data := stream.read(chunk):
        yield data


def _treewalk_parts(car: BinaryIO, root: bytes, limit: int) -> Iterator[IO[bytes]]:
    """The CAR as parts of at most ``limit`` bytes by a depth-first tree walk from ``root``.

    Each part has header roots ``[root]`` and starts with the blocks on the
    path from ``root`` to its first block, so every part holds the root block
    and reaches each of its blocks from it. Parts are spooled to temporary
    files (memory stays bounded) and yielded rewound; the caller closes each.
    Raises PinRejected when ``root`` is not the CAR's root.
    """
    with _car_file(car) as path, CarIndex(path) as index:
        if root not in index.roots:
            raise PinRejected(
                f"web3.storage: the CAR's roots do not include {cid_to_str(root)}; pass the matching CAR")
        header = len(encode_header([root]))
        part: IO[bytes] | None = None
        writer: CarWriter | None = None
        used = 0
        stack: list[tuple[bytes, tuple[bytes, ...]]] = [(root, ())]
        while stack:
            cid, parents = stack.pop()
            data = index.get(cid)
            if writer is not None and part is not None and used + _section(cid, data) > limit:
                writer.close()
                part.seek(0)
                yield part
                writer = None
            if writer is None:
                part = tempfile.SpooledTemporaryFile(max_size=8 * 1024 * 1024)  # noqa: SIM115 - the caller closes it
                writer = CarWriter(part, [root])  # type: ignore[arg-type]
                used = header
                for parent in parents:  # the path from the root to this block
                    parent_data = index.get(parent)
                    writer.put(parent, parent_data)
                    used += _section(parent, parent_data)
            writer.put(cid, data)
            used += _section(cid, data)
            path_here = (*parents, cid)
            stack.extend((child, path_here) for child, _name in reversed(block_links(cid, data)))
        if writer is not None and part is not None:
            writer.close()
            part.seek(0)
            yield part


def _section(cid: bytes, data: bytes) -> int:
    """A block's bytes in a CAR, at most: CID, data and the length varint (at most 10 bytes)."""
    return len(cid) + len(data) + 10


@contextmanager
def _car_file(car: BinaryIO) -> Iterator[str]:
    """The CAR's path on disk: the stream's own file, or a temporary copy of a stream that has none."""
    name = getattr(car, "name", None)
    if isinstance(name, str) and os.path.isfile(name) and car.tell() == 0:
        yield name
        return
    with tempfile.NamedTemporaryFile(suffix=".car") as copy:
        while chunk := car.read(1024 * 1024):
            copy.write(chunk)
        copy.flush()
        yield copy.name
