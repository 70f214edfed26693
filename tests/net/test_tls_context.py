"""Every client bundlekit opens verifies TLS with one shared context, made once per trust setting.

httpx (0.28+, ``httpx/_config.py`` ``create_ssl_context``) makes a new context for every client, reading the
whole CA bundle each time; :func:`bundlekit.net.http.tls_context` keeps httpx's trust rule (``SSL_CERT_FILE``,
else ``SSL_CERT_DIR``, else certifi's bundle) and makes each context once.
"""

from __future__ import annotations

import asyncio
import http.server
import ipaddress
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import certifi
import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from bundlekit.errors import UsageError
from bundlekit.net._trust import TrustOnUse
from bundlekit.net.http import HttpOptions, HttpRequest, _tls_context, open_client, send, tls_context
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


def _authority(tmp_path: Path, name: str) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key, as PEM files."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - timedelta(days=1))
        .not_valid_after(now + timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = tmp_path / f"{name}.pem", tmp_path / f"{name}.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_file, key_file


@contextmanager
def _https_server(cert_file: Path, key_file: Path) -> Iterator[str]:
    server = http.server.HTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_the_context_is_made_as_create_default_context_makes_it() -> None:
    ours, theirs = TrustOnUse(cafile=certifi.where()), ssl.create_default_context(cafile=certifi.where())
    for setting in ("protocol", "verify_mode", "check_hostname", "verify_flags", "options", "minimum_version",
                    "maximum_version", "keylog_filename"):
        assert getattr(ours, setting) == getattr(theirs, setting), setting
    assert ours.get_ca_certs(binary_form=True) == theirs.get_ca_certs(binary_form=True)


def test_a_client_that_never_shakes_hands_reads_no_authorities(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    _tls_context.cache_clear()
    client, _owned = open_client(HttpOptions())
    client.close()
    context = tls_context()
    assert isinstance(context, TrustOnUse) and not context._loaded  # an http:// gateway's round pays nothing
    assert _ca_count(context) > 0  # read now, as a handshake reads it


def test_a_handshake_trusts_the_named_authority_and_no_other(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    served, key = _authority(tmp_path, "served")
    other, _ = _authority(tmp_path, "other")
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    with _https_server(served, key) as url:
        monkeypatch.setenv("SSL_CERT_FILE", str(served))
        client, _owned = open_client(HttpOptions())
        with client:
            assert client.get(url).status_code == 200
        monkeypatch.setenv("SSL_CERT_FILE", str(other))
        client, _owned = open_client(HttpOptions())
        with client, pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            client.get(url)


@pytest.mark.parametrize("kind", ["missing", "directory"])
def test_an_ssl_cert_file_that_is_no_file_is_refused_when_the_client_is_made(
    kind: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "absent.pem") if kind == "missing" else str(tmp_path))
    with pytest.raises(UsageError, match=r"^SSL_CERT_FILE \(.*\) cannot be read as trusted TLS authorities"):
        open_client(HttpOptions())


@pytest.mark.parametrize("content", [b"", b"garbage\n"])
def test_an_ssl_cert_file_holding_no_pem_block_is_refused_when_the_client_is_made(
    content: bytes, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bundle = tmp_path / "bundle.pem"
    bundle.write_bytes(content)
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    with pytest.raises(UsageError, match=r"^SSL_CERT_FILE \(.*\) cannot be read.*no PEM certificate in it"):
        open_client(HttpOptions())


@pytest.mark.parametrize("content", [b"-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n"])
def test_an_ssl_cert_file_holding_no_authority_is_named_at_the_handshake_not_retried_as_the_servers_failure(
    content: bytes, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Raised inside httpcore's connect an OSError (FileNotFoundError, SSLError) became a ConnectError: reported
    as "connection failed" from the server and retried. The setting is named instead, as its own error."""
    served, key = _authority(tmp_path, "served")
    bundle = tmp_path / "bundle.pem"
    bundle.write_bytes(content)
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    with _https_server(served, key) as url:
        client, _owned = open_client(HttpOptions())
        with client, pytest.raises(UsageError, match=r"^SSL_CERT_FILE \(.*bundle\.pem\) cannot be read.*fix or unset"):
            send(client, HttpRequest("GET", url), HttpOptions())


def test_an_asyncio_client_wrapping_a_bio_verifies_as_a_sync_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """httpx's AsyncClient under asyncio shakes hands through anyio's TLSStream, which calls ``wrap_bio``."""
    served, key = _authority(tmp_path, "served")
    other, _ = _authority(tmp_path, "other")

    async def status(url: str, cafile: Path) -> int:
        async with httpx.AsyncClient(verify=TrustOnUse(cafile=str(cafile))) as client:
            return (await client.get(url)).status_code

    with _https_server(served, key) as url:
        assert asyncio.run(status(url, served)) == 200
        with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            asyncio.run(status(url, other))
