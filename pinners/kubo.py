"""The ``kubo`` pinner: a kubo (go-ipfs) node's RPC API.

``POST {base}/api/v0/dag/import?pin-roots=true&allow-big-block=true`` with
the CAR as the multipart ``file`` field (kubo refuses blocks over its soft
limit of 1 MiB unless ``allow-big-block`` is set; our profiles allow 2 MiB).
kubo answers NDJSON, one object per line; a root line is
``{"Root": {"Cid": {"/": "<cid>"}, "PinErrorMsg": ""}}`` and a non-empty
``PinErrorMsg`` means the pin failed. kubo's pin set is keyed by CID, so
importing again creates no duplicate.

kubo answers an ordinary command error (a bad CAR, a block too big, a CID
that is not pinned) with HTTP 500 and ``{"Message": ..., "Code": ...,
"Type": "error"}`` (go-ipfs-cmds' error encoding). That is a refusal, not an
outage: it is never retried and becomes ``PinRejected`` quoting the message.
A 5xx without that body (a proxy's 502/503/504) is retried as usual.

With a name, ``pin/add?arg=<cid>&name=<name>`` then labels the pin, which
``list(name_prefix)`` (``pin/ls?type=recursive&names=true``) reads back for
retention.

``origins()`` reads ``id``'s ``Addresses`` (each ending ``/p2p/<ID>``): the
node's multiaddrs, which a Pinning Service API pins from (``psa``).

Settings: ``BUNDLEKIT_KUBO_URL`` (default ``http://127.0.0.1:5001``), and for
a node behind a proxy either ``BUNDLEKIT_KUBO_TOKEN`` (bearer) or
``BUNDLEKIT_KUBO_BASIC_AUTH`` (``user:password``). The pinner counts as
configured only when ``BUNDLEKIT_KUBO_URL`` is set (naming it is how a user
says a node is there).

Sources: ipfs/kubo ``core/commands/dag/dag.go`` (``dag import`` options) and
``core/commands/cmdutils/utils.go`` (``allow-big-block``, ``SoftBlockLimit``),
``core/commands/pin/pin.go`` (``pin add --name``, ``pin ls --names``), ``core/commands/id.go``,
ipfs/go-ipfs-cmds ``http/responseemitter.go`` (errors as 500 + ``cmds.Error`` JSON).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, BinaryIO

from bundlekit.errors import CIDMismatch, PinRejected, PinUnavailable
from bundlekit.ipld.cid import cid_to_str
from bundlekit.net.http import HttpOptions, HttpRequest
from bundlekit.pinning.http import UPLOAD_OPTIONS, HttpClient, ServiceRules, node_credentials, service_url
from bundlekit.pinning.orchestrate import same_cid
from bundlekit.pinning.protocol import MISSING, PINNED, BasePinner, PinEntry, PinResult, require_env

if TYPE_CHECKING:
    import httpx

__all__ = ["DEFAULT_URL", "KuboPinner", "is_command_error"]

DEFAULT_URL = "http://127.0.0.1:5001"


def is_command_error(response: httpx.Response) -> bool:
    """True for kubo's own refusal: HTTP 500 whose body is a cmds error ``{"Message": ..., "Type": "error"}``."""
    if response.status_code != 500:
        return False
    try:
        body = response.json()
    except ValueError:
        return False
    return isinstance(body, dict) and isinstance(body.get("Message"), str) and body.get("Type", "error") == "error"


def _message(response: httpx.Response) -> str:
    try:
        return str(response.json().get("Message", ""))
    except (ValueError, AttributeError):
        return ""


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
        creds = node_credentials(token, basic_auth, "BUNDLEKIT_KUBO_BASIC_AUTH")
        self.http = HttpClient("kubo", headers=creds.headers, auth=creds.auth, secrets=creds.secrets,
                               options=options, rules=ServiceRules(refused=is_command_error))

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
        """True only when ``BUNDLEKIT_KUBO_URL`` is set: the default URL is a guess, not a configuration."""
        return bool(env.get("BUNDLEKIT_KUBO_URL", "").strip())

    def _rpc(self, command: str, *, what: str, **call: Any) -> httpx.Response:
        # kubo's RPC is POST-only; an error answers 500 with {"Message": ...}.
        return self.http.request(HttpRequest("POST", service_url(self.base_url, f"/api/v0/{command}"), **call), what)

    def pin(self, car: BinaryIO, root: bytes, *, name: str | None = None, size: int | None = None) -> PinResult:
        """Import and pin. Raises PinRejected (kubo's pin error), CIDMismatch, and the HTTP errors."""
        start = car.tell()

        def body() -> dict[str, Any]:
            car.seek(start)
            return {"files": {"file": ("bundle.car", car, "application/vnd.ipld.car")}}

        response = self._rpc(
            "dag/import", params={"pin-roots": "true", "allow-big-block": "true"}, body=body, what="dag/import"
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
        if name:
            # dag/import pins without a name; pin/add names the pin (kubo >= 0.26), which retention lists.
            self._rpc("pin/add", params={"arg": cid, "name": name}, what="pin/add")
        return PinResult(self.name, cid, PINNED, url=f"ipfs://{cid}")

    def status(self, cid: bytes) -> PinResult:
        """``pin/ls?arg=<cid>&type=recursive``: pinned, or missing when kubo says it is not pinned."""
        text = cid_to_str(cid)
        response = self._rpc(
            "pin/ls",
            params={"arg": text, "type": "recursive"},
            ok=_ok_or_not_pinned,
            what="pin/ls",
        )
        if response.is_success and text in (self.http.json(response, "pin/ls").get("Keys") or {}):
            return PinResult(self.name, text, PINNED, url=f"ipfs://{text}")
        return PinResult(self.name, text, MISSING)

    def unpin(self, cid: bytes) -> None:
        """``pin/rm``; a CID that is not pinned is fine."""
        self._rpc(
            "pin/rm",
            params={"arg": cid_to_str(cid)},
            ok=_ok_or_not_pinned,
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

    def origins(self) -> list[str]:
        """The node's multiaddrs from ``id`` (``Addresses``), for a Pinning Service API to fetch from."""
        response = self._rpc("id", what="id")
        addresses = self.http.json(response, "id").get("Addresses") or []
        return [str(a) for a in addresses if isinstance(a, str) and "/p2p/" in a]

    def list(self, name_prefix: str = "") -> list[PinEntry]:
        """``pin/ls?type=recursive&names=true``: recursive pins whose name starts with ``name_prefix``."""
        response = self._rpc("pin/ls", params={"type": "recursive", "names": "true"}, what="pin/ls")
        keys = self.http.json(response, "pin/ls").get("Keys") or {}
        found = [PinEntry(cid, str(info.get("Name") or "") or None)
                 for cid, info in keys.items() if isinstance(info, dict)]
        return [e for e in found if (e.name or "").startswith(name_prefix)]

    def check(self) -> None:
        """``version``: cheap, and authenticated when the node sits behind a proxy."""
        self._rpc("version", retry=False, what="version")

    def close(self) -> None:
        self.http.close()


def _ok_or_not_pinned(response: httpx.Response) -> bool:
    """Success, or kubo's "not pinned" command error (the outcome ``status``/``unpin`` accept)."""
    return response.is_success or (is_command_error(response) and "not pinned" in _message(response))
