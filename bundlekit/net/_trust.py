"""The TLS context every bundlekit client verifies servers with, its trusted authorities read at first use.

``ssl.create_default_context`` reads the whole CA bundle when the context is made (~20 ms of CPU for certifi's):
a follower's ``sync --gateway http://...`` opens clients but never shakes hands, and paid it every round
(issue 37). :class:`TrustOnUse` is that context made the same way (``ssl.create_default_context``, CPython
``Lib/ssl.py``: ``PROTOCOL_TLS_CLIENT``, ``CERT_REQUIRED``, hostnames checked, ``SSLKEYLOGFILE``; 3.13's
``VERIFY_X509_PARTIAL_CHAIN | VERIFY_X509_STRICT``) whose ``load_verify_locations`` runs before the first socket
or BIO it wraps (httpcore's sync backend calls ``wrap_socket``, its TLS-in-TLS stream ``wrap_bio``) and before
its store is read (``cert_store_stats``, ``get_ca_certs``). Verification is never weaker: until the authorities
are loaded the context trusts none, so a handshake reaching it any other way fails, never passes.

Authorities that cannot be read (a missing, empty or garbled ``SSL_CERT_FILE``; OpenSSL's ``FileNotFoundError`` or
``SSLError``, both ``OSError``) raise :class:`~bundlekit.errors.UsageError` naming the setting and the file: raised
inside a handshake an ``OSError`` becomes httpcore's ``ConnectError``, which bundlekit retries and reports as the
server's failure ("connection failed"), hiding the setting to fix. A file that is not there is refused when the
context is made, as ``create_default_context`` refused it when a client was made (validate, then act: a writer's
sync refused it before merging), and so is one with no PEM block in it (scanned, not parsed); one whose PEM
blocks OpenSSL cannot read, at the first handshake.
"""

from __future__ import annotations

import os
import ssl
import sys
import threading
from typing import Any

from bundlekit.errors import UsageError

__all__ = ["TrustOnUse"]

_PEM_BEGIN = b"-----BEGIN "


class TrustOnUse(ssl.SSLContext):
    """``ssl.create_default_context(cafile=..., capath=...)``, the locations loaded at first use (module doc)."""

    _where: tuple[str | None, str | None]
    _setting: str
    _loaded: bool
    _lock: threading.Lock

    def __new__(cls, cafile: str | None = None, capath: str | None = None, *, setting: str = "") -> TrustOnUse:
        return super().__new__(cls, ssl.PROTOCOL_TLS_CLIENT)

    def __init__(self, cafile: str | None = None, capath: str | None = None, *, setting: str = "") -> None:
        """``setting`` names where the locations came from (``SSL_CERT_FILE``) in the error for unreadable ones."""
        self._setting = setting or "the trusted authorities"
        if cafile is not None:
            self._check_pem(cafile)
        self.verify_mode = ssl.CERT_REQUIRED
        self.check_hostname = True
        if sys.version_info >= (3, 13):  # what 3.13's create_default_context adds for a server's authentication
            self.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN | ssl.VERIFY_X509_STRICT
        keylog = os.environ.get("SSLKEYLOGFILE")
        if keylog and not sys.flags.ignore_environment:
            self.keylog_filename = keylog
        self._where, self._loaded, self._lock = (cafile, capath), False, threading.Lock()

    def _trust(self) -> None:
        """Load the authorities, once (two threads' first handshakes load them once, both after it)."""
        if self._loaded:
            return
        with self._lock:
            if not self._loaded:
                try:
                    self.load_verify_locations(*self._where)
                except OSError as exc:  # ssl.SSLError too: a file holding no certificate
                    raise self._unreadable(self._where[0] or self._where[1] or "", str(exc)) from exc
                self._loaded = True

    def _check_pem(self, cafile: str) -> None:
        """Refuse now a ``cafile`` that cannot hold an authority: not a file, or no PEM block in it (OpenSSL reads
        a CA file as PEM only). Scanned in chunks for ``-----BEGIN``, not parsed: that is the cost saved."""
        if not os.path.isfile(cafile):
            raise self._unreadable(cafile, "not a file" if os.path.exists(cafile) else "no such file")
        tail = b""
        try:
            with open(cafile, "rb") as handle:
                while chunk := handle.read(1 << 16):
                    if _PEM_BEGIN in tail + chunk:
                        return
                    tail = chunk[-len(_PEM_BEGIN):]
        except OSError as exc:
            raise self._unreadable(cafile, exc.strerror or type(exc).__name__) from exc
        raise self._unreadable(cafile, "no PEM certificate in it")

    def _unreadable(self, where: str, why: str) -> UsageError:
        return UsageError(f"{self._setting} ({where}) cannot be read as trusted TLS authorities ({why}); "
                          "fix or unset it")

    def wrap_socket(self, *args: Any, **kwargs: Any) -> ssl.SSLSocket:
        self._trust()
        return super().wrap_socket(*args, **kwargs)

    def wrap_bio(self, *args: Any, **kwargs: Any) -> ssl.SSLObject:
        self._trust()
        return super().wrap_bio(*args, **kwargs)

    def cert_store_stats(self) -> dict[str, int]:
        self._trust()
        return super().cert_store_stats()

    def get_ca_certs(self, binary_form: bool = False) -> Any:
        self._trust()
        return super().get_ca_certs(binary_form)
