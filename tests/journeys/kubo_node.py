"""A kubo node on loopback for the journeys: its RPC API as kubo documents it, and its gateway port.

The RPC port answers what ipfs/kubo (commit 867cdc5d) answers for the calls the ``kubo`` pinner makes,
written from its source, not from bundlekit's hub:

* ``API.Authorizations`` set (``core/corehttp/commands.go`` ``withAuthSecrets``): the ``Authorization``
  header must equal ``Bearer <secret>`` exactly, else ``403`` ``text/plain`` "Kubo RPC Access Denied:
  Please provide a valid authorization token as defined in the API.Authorizations configuration.";
* POST only (ipfs/go-ipfs-cmds ``http/handler.go``): ``405`` "405 - Method Not Allowed"; an unknown
  command ``404`` "404 page not found";
* ``dag/import`` (``core/commands/dag/import.go``): every multipart file part a CAR; blocks kept, then
  each root pinned (``pin-roots`` default true), one ``{"Root": {"Cid": {"/": cid}, "PinErrorMsg": ""}}``
  line per root; a failed import is ``500`` ``{"Message", "Code": 0, "Type": "error"}``
  (go-ipfs-cmds ``responseemitter.go`` ``sendErr``);
* ``routing/put?arg=/ipns/<name>`` (``core/commands/routing.go``: the record verified, an older one
  refused "can't replace a newer value with an older value");
* ``pin/add`` (``{"Pins": [cid]}``), ``pin/ls`` (``{"Keys": {cid: {"Type", "Name"}}}``; an arg not
  pinned: ``path '<arg>' is not pinned``), ``id``, ``version`` (``core/commands/pin/pin.go``, ``id.go``).

Its blocks live in a ``BlockStore`` (the node's blockstore); its gateway port is bundlekit's trustless
gateway over that store with the Delegated Routing API's IPNS paths mounted (kubo's gateway with
``Gateway.ExposeRoutingAPI``, boxo's routing server: no authorization on the gateway port).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from io import BytesIO
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from bundlekit.blockstore import BlockStore
from bundlekit.errors import BundlekitError
from bundlekit.gateway.server import serve_in_thread
from bundlekit.ipld.cid import cid_from_text, cid_to_str
from bundlekit.names.record import parse_name, verify_record, verify_signed
from bundlekit.hub.routing import MOUNT, RoutingAPI

DENIED = ("Kubo RPC Access Denied: Please provide a valid authorization token as defined in the "
          "API.Authorizations configuration.")


@dataclass(frozen=True)
class KuboNode:
    rpc: str
    gateway: str
    store: BlockStore


def _handler(store: BlockStore, secret: str) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def _send(self, status: int, body: bytes, kind: str = "application/json") -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _error(self, message: str) -> None:
            self._send(500, json.dumps({"Message": message, "Code": 0, "Type": "error"}).encode() + b"\n")

        def _text(self, status: int, message: str) -> None:
            self._send(status, message.encode() + b"\n", "text/plain; charset=utf-8")

        def _other(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.headers.get("Authorization") != f"Bearer {secret}":
                self._text(403, DENIED)
            else:
                self._text(405, "405 - Method Not Allowed")

        do_GET = do_PUT = do_DELETE = _other

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.headers.get("Authorization") != f"Bearer {secret}":
                return self._text(403, DENIED)
            url = urlsplit(self.path)
            query = parse_qs(url.query)
            command = url.path.removeprefix("/api/v0/")
            try:
                answer = {"dag/import": self._import, "pin/add": self._pin_add, "pin/ls": self._pin_ls,
                          "routing/put": self._routing_put, "id": self._id, "version": self._version}.get(command)
                if answer is None:
                    return self._text(404, "404 page not found")
                self._send(200, answer(query, body))
            except (BundlekitError, ValueError) as exc:
                self._error(str(exc))

        def _import(self, query: dict[str, list[str]], body: bytes) -> bytes:
            message = BytesParser(policy=HTTP).parsebytes(
                f"Content-Type: {self.headers['Content-Type']}\r\n\r\n".encode() + body)
            lines = []
            for part in message.iter_parts():
                car = part.get_payload(decode=True)
                assert isinstance(car, bytes)
                for root in store.import_car(BytesIO(car), allow_incomplete=True):
                    error = ""
                    if query.get("pin-roots", ["true"])[0] != "false":
                        try:
                            store.pin(root)
                        except BundlekitError as exc:
                            error = str(exc)
                    lines.append(json.dumps({"Root": {"Cid": {"/": cid_to_str(root)}, "PinErrorMsg": error}}))
            return "".join(line + "\n" for line in lines).encode()

        def _routing_put(self, query: dict[str, list[str]], body: bytes) -> bytes:
            message = BytesParser(policy=HTTP).parsebytes(
                f"Content-Type: {self.headers['Content-Type']}\r\n\r\n".encode() + body)
            record = next(message.iter_parts()).get_payload(decode=True)
            assert isinstance(record, bytes)
            name = query["arg"][0].removeprefix("/ipns/")
            new = verify_record(parse_name(name), record)
            kept = store.get_record(name)
            if kept is not None and kept != record and verify_signed(parse_name(name), kept).sequence >= new.sequence:
                raise ValueError("can't replace a newer value with an older value")
            store.put_record(name, record)
            return json.dumps({"Extra": "", "ID": name, "Responses": None, "Type": 5}).encode() + b"\n"

        def _pin_add(self, query: dict[str, list[str]], _body: bytes) -> bytes:
            cids = [cid_from_text(arg.removeprefix("/ipfs/")) for arg in query["arg"]]
            for cid in cids:
                store.pin(cid, query.get("name", [None])[0])
            return json.dumps({"Pins": [cid_to_str(c) for c in cids]}).encode() + b"\n"

        def _pin_ls(self, query: dict[str, list[str]], _body: bytes) -> bytes:
            pins = {cid_to_str(cid): info for cid, info in store.pins().items()}
            names = query.get("names", ["false"])[0] == "true"
            for arg in query.get("arg", []):
                if arg not in pins:
                    raise ValueError(f"path '{arg}' is not pinned")
            chosen = query.get("arg") or list(pins)
            keys = {c: {"Type": "recursive", "Name": (pins[c].get("name") or "") if names else ""} for c in chosen}
            return json.dumps({"Keys": keys}).encode() + b"\n"

        def _id(self, _query: dict[str, list[str]], _body: bytes) -> bytes:
            return json.dumps({"ID": "12D3KooWJ4Fq9P7ZpH6LkD5mcQ6zGv1X2TLqgR3bHYt8nVdWs9Xa", "PublicKey": "",
                               "Addresses": [], "AgentVersion": "kubo/0.39.0/", "Protocols": []}).encode()

        def _version(self, _query: dict[str, list[str]], _body: bytes) -> bytes:
            return json.dumps({"Version": "0.39.0", "Commit": "", "Repo": "16", "System": "amd64/linux",
                               "Golang": "go1.25"}).encode()

    return Handler


@contextmanager
def kubo_node(root: Path, secret: str) -> Iterator[KuboNode]:
    """A kubo node with ``API.Authorizations`` holding ``bearer:<secret>``: its RPC and gateway URLs."""
    store = BlockStore(root, fsync=False)
    rpc = ThreadingHTTPServer(("127.0.0.1", 0), _handler(store, secret))
    rpc.daemon_threads = True
    thread = threading.Thread(target=rpc.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        with serve_in_thread(store=store, apps={MOUNT: RoutingAPI(store).app()}) as gateway:
            yield KuboNode(f"http://127.0.0.1:{rpc.server_address[1]}", gateway.url, store)
    finally:
        rpc.shutdown()
        rpc.server_close()
        thread.join()
