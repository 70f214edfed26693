"""Every client bundlekit opens verifies TLS with one shared context, made once per trust setting.

httpx (0.28+, ``httpx/_config.py`` ``create_ssl_context``) makes a new context for every client, reading the
whole CA bundle each time; :func:`bundlekit.net.http.tls_context` keeps httpx's trust rule (``SSL_CERT_FILE``,
else ``SSL_CERT_DIR``, else certifi's bundle) and makes each context once.
"""

from __future__ import annotations

import ssl
from pathlib import Path

import certifi
import pytest

from bundlekit.net.http import HttpOptions, open_client, tls_context
from bundlekit.pinning.http import HttpClient


def _ca_count(context: ssl.SSLContext) -> int:
    return int(context.cert_store_stats()["x509_ca"])


def test_the_context_is_made_once_and_verifies_servers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    context = tls_context()
    assert tls_context() is context
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert _ca_count(context) == _ca_count(ssl.create_default_context(cafile=certifi.where())) > 0


def test_ssl_cert_file_chooses_the_trusted_authorities_as_httpx_would(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    bundle = tmp_path / "one.pem"
    pem = Path(certifi.where()).read_text(encoding="ascii")
    bundle.write_text(pem[: pem.index("-----END CERTIFICATE-----") + 26], encoding="ascii")  # the first authority
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    context = tls_context()
    assert _ca_count(context) == 1
    assert tls_context() is context
    monkeypatch.delenv("SSL_CERT_FILE")
    assert _ca_count(tls_context()) > 1


def test_every_client_bundlekit_opens_shares_it() -> None:
    client, owned = open_client(HttpOptions())
    pinner = HttpClient("a service")
    try:
        assert owned
        for opened in (client, pinner._client):
            pool = opened._transport._pool  # httpx's HTTPTransport over httpcore's ConnectionPool
            assert pool._ssl_context is tls_context()
    finally:
        client.close()
        pinner.close()
