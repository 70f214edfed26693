"""The Farcaster lane: a fid's profile and verified addresses, read from a hub, after an ownership proof.

Read from the hub's HTTP API documentation (farcasterxyz/hub-monorepo, ``apps/hubble/www/docs/docs/httpapi/``:
``userdata.md`` at 662e3836282415814110822235b95edd94b850c0, ``verification.md`` at
aeab5a4ce592873aaee674aecebcadaf5989f9b0, ``httpapi.md`` at 286b3cd7ff053a0d9c6186158e805f2ce9b5ff7e):
``GET /v1/userDataByFid?fid=N`` (``messages[].data.userDataBody`` ``{type, value}``, ``USER_DATA_TYPE_DISPLAY``,
``_BIO``, ``_URL``, ``_USERNAME``, ``_LOCATION``), ``GET /v1/verificationsByFid?fid=N``
(``messages[].data.verificationAddEthAddressBody.address``, ``0x`` hex; newer hubs name the body
``verificationAddAddressBody`` with a ``protocol``), paging with ``pageSize`` and ``pageToken`` until
``nextPageToken`` is empty, and the error body ``{"errCode", "presentable", "name", "code", "details",
"metadata"}`` with HTTP 400 or 500. The hub is ``$BUNDLEKIT_FARCASTER_HUB`` (a hub's HTTP API, port 2281).

Ownership (``seed/ownership``): the message (``message`` option, or made now when ``private_key_env`` names a
wallet key that signs it here) is checked first, then the signature against the fid's verified addresses;
only then is the profile read.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from bundlekit._closing import Closing
from bundlekit.crypto._keys import parse_signature_hex
from bundlekit.crypto.signing import EthSigner
from bundlekit.errors import KeySourceError, SignatureError, UsageError
from bundlekit.seed import facts
from bundlekit.seed.ownership import check_message, ownership_message, signer_among
from bundlekit.seed.protocol import Account, Proposal, SeedRequest
from bundlekit.seed.service import JsonService, check_base

__all__ = ["FarcasterSeeder"]

ADDRESS = re.compile(r"0x[0-9a-fA-F]{40}")
PAGE_SIZE = 100
MAX_PAGES = 3  # a hostile hub's endless pages end here
MAX_ADDRESSES = 50  # signature checks against at most this many verified addresses
_FIELDS = {"USER_DATA_TYPE_USERNAME": "Username", "USER_DATA_TYPE_DISPLAY": "Display name",
           "USER_DATA_TYPE_BIO": "Bio", "USER_DATA_TYPE_URL": "URL", "USER_DATA_TYPE_LOCATION": "Location"}


class FarcasterSeeder(Closing):
    """The ``farcaster`` seeder (``bundlekit.seeders``): options ``fid``, ``message`` and ``signature``, or
    ``private_key_env``; the hub at ``$BUNDLEKIT_FARCASTER_HUB``."""

    name = "farcaster"
    options: tuple[str, ...] = ("fid", "message", "signature", "private_key_env")
    env_vars: tuple[str, ...] = ()

    def __init__(self, request: SeedRequest) -> None:
        hub = request.env.get("BUNDLEKIT_FARCASTER_HUB", "").strip()
        if not hub:
            raise UsageError("the farcaster seeder needs $BUNDLEKIT_FARCASTER_HUB (a hub's HTTP API, e.g. "
                             "http://127.0.0.1:2281)")
        fid = request.options.get("fid", "")
        if not fid.isdigit() or len(fid) > 16 or int(fid) < 1:
            raise UsageError("the farcaster seeder needs --fid (the account's fid, a positive whole number)")
        self._fid = int(fid)
        self._request = request
        self._message, self._signature = self._proof(request)
        base = check_base(hub, "$BUNDLEKIT_FARCASTER_HUB", credential=False)
        self._service = JsonService("the Farcaster hub", base, {"Accept": "application/json"}, request.http,
                                    error_fields=("errCode", "details"))
        self._data: dict[str, str] = {}
        self._addresses: list[str] = []

    def _proof(self, request: SeedRequest) -> tuple[str, bytes]:
        """The message and its signature: given, or made and signed now with the key ``private_key_env`` names."""
        key_var = request.options.get("private_key_env")
        if key_var:
            key = request.env.get(key_var, "").strip()
            if not key:
                raise UsageError(f"--private-key-env {key_var}: that variable is not set")
            message = ownership_message(self._fid, request.namespace, request.clock())
            return message, EthSigner(key).sign(message.encode("utf-8"))
        given, signature = request.options.get("message"), request.options.get("signature")
        if given is None or signature is None:
            raise UsageError("farcaster needs an ownership proof: --message-file and --signature-file (or "
                             "--signature-env), or --private-key-env; --print-message prints the message to sign")
        try:
            return given, parse_signature_hex(signature, where="the signature given")
        except KeySourceError as exc:
            raise SignatureError(f"{exc}; nothing was read or written") from exc

    @classmethod
    def from_request(cls, request: SeedRequest) -> FarcasterSeeder:
        """The seeder for ``request`` (``UsageError`` for a missing hub, fid or proof)."""
        return cls(request)

    @classmethod
    def is_configured(cls, env: Mapping[str, str]) -> bool:
        """True when ``$BUNDLEKIT_FARCASTER_HUB`` is set."""
        return bool(env.get("BUNDLEKIT_FARCASTER_HUB", "").strip())

    def account(self) -> Account:
        """The message checked (fid, namespace, time), then the signature against the verified addresses."""
        check_message(self._message, self._fid, self._request.namespace, self._request.clock())
        self._addresses = self._verified()
        signer = signer_among(self._message, self._signature, self._addresses)
        return Account("farcaster", str(self._fid), f"eip191:{signer}")

    def _pages(self, path: str, what: str) -> list[Mapping[str, Any]]:
        """Every message of a paged hub answer, at most ``MAX_PAGES`` pages."""
        found: list[Mapping[str, Any]] = []
        token = ""
        for _page in range(MAX_PAGES):
            params = {"fid": str(self._fid), "pageSize": str(PAGE_SIZE)}
            if token:
                params["pageToken"] = token
            answer = self._service.get(path, params, what=what)
            if not isinstance(answer, dict):
                break
            found += list(facts.items(answer.get("messages"), PAGE_SIZE))
            following = answer.get("nextPageToken")
            token = following if isinstance(following, str) else ""
            if not token or len(token) > 1024:
                break
        return found

    def _verified(self) -> list[str]:
        """The fid's verified Ethereum addresses (``verificationsByFid``), at most ``MAX_ADDRESSES``."""
        addresses: list[str] = []
        for message in self._pages("/v1/verificationsByFid", f"verificationsByFid (fid {self._fid})"):
            data = message.get("data")
            if not isinstance(data, dict) or data.get("fid") != self._fid:
                continue
            body = data.get("verificationAddEthAddressBody") or data.get("verificationAddAddressBody")
            address = body.get("address") if isinstance(body, dict) else None
            if isinstance(address, str) and ADDRESS.fullmatch(address) and address.lower() not in addresses:
                if not isinstance(body, dict) or body.get("protocol", "PROTOCOL_ETHEREUM") == "PROTOCOL_ETHEREUM":
                    addresses.append(address.lower())
        return addresses[:MAX_ADDRESSES]

    def propose(self, account: Account) -> Sequence[Proposal]:
        """The profile (``userDataByFid``) and the verified addresses, at most the request's limit."""
        for message in self._pages("/v1/userDataByFid", f"userDataByFid (fid {self._fid})"):
            data = message.get("data")
            body = data.get("userDataBody") if isinstance(data, dict) and data.get("fid") == self._fid else None
            if isinstance(body, dict) and body.get("type") in _FIELDS:
                value = facts.text(body.get("value"), 400)
                if value is not None:
                    self._data[str(body["type"])] = value
        fid = account.handle
        username = facts.line(self._data.get("USER_DATA_TYPE_USERNAME"), 40)
        lines = [f"- {label}: {facts.line(self._data[t], 400)}" for t, label in _FIELDS.items() if t in self._data]
        who = username or f"fid {fid}"
        bio = facts.line(self._data.get("USER_DATA_TYPE_BIO"), 120)
        proposals = [Proposal(
            key=f"farcaster-{fid}-profile", type="user", name=f"Farcaster profile of {who}",
            description=f"{who} on Farcaster (fid {fid})" + (f": {bio}" if bio else ""),
            body=f"The user is {who} on Farcaster (fid {fid}).\n\n" + ("\n".join(lines) or "- (no profile data)")
            + "\n", origin=f"userDataByFid?fid={fid}")]
        if self._addresses:
            proposals.append(Proposal(
                key=f"farcaster-{fid}-addresses", type="reference", name=f"Ethereum addresses of fid {fid}",
                description=f"{len(self._addresses)} Ethereum addresses verified by Farcaster fid {fid}",
                body="".join(f"- {a}\n" for a in self._addresses) + f"\nOwnership proven by {account.proof}.\n",
                origin=f"verificationsByFid?fid={fid}"))
        return proposals[: self._request.limit]

    def close(self) -> None:
        """Close the hub's client."""
        self._service.close()


