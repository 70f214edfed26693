"""``bundlekit serve --ui`` and ``bundlekit open`` as processes: the printed URL answers; bad input fails cleanly."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx

from tests.isolation import HOME_VARIABLES
from tests.ui.conftest import Bundles

ROOT = Path(__file__).resolve().parents[2]


def _home() -> dict[str, str]:
    """The test's own home (tests/conftest.py): a child given no ``HOME`` would find the user's in the password
    database, and ``serve`` would list the user's store."""
    return {name: os.environ[name] for name in HOME_VARIABLES if name in os.environ}


def _start(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "bundlekit", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                            env={**_home(), "PYTHONPATH": str(ROOT), "CI": "true", **(env or {})})


def _stop(proc: subprocess.Popen[str], sig: int = signal.SIGTERM) -> tuple[int, str]:
    proc.send_signal(sig)
    _out, err = proc.communicate(timeout=30)
    return proc.returncode, err


def test_open_a_car_prints_the_bundle_page_url_which_answers(bundles: Bundles) -> None:
    proc = _start("open", str(bundles.old_car))
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith(f"/ui/bundle/{bundles.old}")
        page = httpx.get(url, timeout=30)
        assert page.status_code == 200 and "Season goal" in page.text
    finally:
        code, err = _stop(proc, signal.SIGINT)
    assert code == 130 and "interrupted" in err and "Traceback" not in err


def test_open_json_prints_one_line_with_the_url_and_root(bundles: Bundles) -> None:
    proc = _start("open", str(bundles.old_car), "--json")
    try:
        assert proc.stdout is not None
        doc = json.loads(proc.stdout.readline())
        assert doc["root"] == bundles.old and doc["url"].endswith(f"/ui/bundle/{bundles.old}")
        assert httpx.get(doc["url"], timeout=30).status_code == 200
    finally:
        code, _err = _stop(proc)
    assert code == 143  # SIGTERM, as the CLI contract says


def test_open_through_a_gateway_fetches_and_verifies_the_bundle(bundles: Bundles) -> None:
    gateway = _start("serve", "--port", "0", str(bundles.new_car))
    try:
        assert gateway.stdout is not None
        base = gateway.stdout.readline().strip()
        proc = _start("open", f"ipfs://{bundles.new}", "--gateway", base)
        try:
            assert proc.stdout is not None
            url = proc.stdout.readline().strip()
            assert "Tournament in July" in httpx.get(f"{url}/memory/project_season", timeout=30).text
        finally:
            _stop(proc)
    finally:
        _stop(gateway)


def test_serve_ui_mounts_the_interface_beside_the_gateway(bundles: Bundles) -> None:
    proc = _start("serve", "--ui", "--port", "0", str(bundles.old_car))
    try:
        assert proc.stdout is not None
        base = proc.stdout.readline().strip()
        assert bundles.old in httpx.get(f"{base}/ui/", timeout=30).text
        assert httpx.get(f"{base}/ipfs/{bundles.old}/manifest.json", timeout=30).json()["namespace"] == "coach"
    finally:
        code, err = _stop(proc)
    assert code == 143 and "interface at" in err


def test_serve_without_ui_has_no_interface(bundles: Bundles) -> None:
    proc = _start("serve", "--port", "0", str(bundles.old_car))
    try:
        assert proc.stdout is not None
        base = proc.stdout.readline().strip()
        assert httpx.get(f"{base}/ui/", timeout=30).status_code == 404
    finally:
        _stop(proc)


def test_open_refuses_a_plain_manifest_url() -> None:
    run = subprocess.run([sys.executable, "-m", "bundlekit", "open", "https://example.org/bundle/manifest.json"],
                         capture_output=True, text=True, timeout=60, check=False,
                         env={**_home(), "PYTHONPATH": str(ROOT), "CI": "true"})
    assert run.returncode == 2
    assert "not content-addressed" in run.stderr and "Traceback" not in run.stderr


def test_an_unreachable_gateway_is_a_load_error_not_an_integrity_failure(bundles: Bundles) -> None:
    # A loopback port bound but not listening: connection refused at once. Held bound while the child runs: a
    # port closed first could be given to another test's server before the child connects.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        run = subprocess.run([sys.executable, "-m", "bundlekit", "open", f"ipfs://{bundles.new}", "--gateway",
                              f"http://127.0.0.1:{port}"], capture_output=True, text=True, timeout=120, check=False,
                             env={**_home(), "PYTHONPATH": str(ROOT), "CI": "true"})
    assert run.returncode == 1 and run.stdout == ""
    assert "not available from any source" in run.stderr and "connection failed" in run.stderr
    assert "Traceback" not in run.stderr


def test_a_tampered_car_is_refused_before_serving(tmp_path: Path, bundles: Bundles) -> None:
    data = bundles.old_car.read_bytes()
    at = data.index(b"Direct critique")
    tampered = tmp_path / "tampered.car"
    tampered.write_bytes(data[:at] + b"Direct praise!!" + data[at + len(b"Direct critique"):])
    run = subprocess.run([sys.executable, "-m", "bundlekit", "open", str(tampered)], capture_output=True,
                         text=True, timeout=60, check=False, env={**_home(), "PYTHONPATH": str(ROOT), "CI": "true"})
    assert run.returncode == 3 and run.stdout == ""
    assert "does not match" in run.stderr and "Traceback" not in run.stderr


def test_a_missing_extra_is_named(tmp_path: Path, bundles: Bundles) -> None:
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "jinja2.py").write_text("raise ModuleNotFoundError(\"No module named 'jinja2'\", name='jinja2')\n")
    run = subprocess.run([sys.executable, "-m", "bundlekit", "serve", "--ui", "--port", "0", str(bundles.old_car)],
                         capture_output=True, text=True, timeout=60, check=False,
                         env={**_home(), "PYTHONPATH": f"{blocker}:{ROOT}", "CI": "true"})
    assert run.returncode == 2
    assert "pip install -e '.[ui]'" in run.stderr and "Traceback" not in run.stderr


def test_help_does_not_import_the_interface_libraries() -> None:
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from bundlekit.cli import cli\n"
        "for args in ([], ['serve'], ['open'], ['mcp']):\n"
        "    result = CliRunner().invoke(cli, [*args, '--help'])\n"
        "    assert result.exit_code == 0, result.output\n"
        "print(sorted(m for m in ('jinja2', 'markdown_it', 'markupsafe', 'mcp') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True,
                         env={**_home(), "PYTHONPATH": str(ROOT), "CI": "true"})
    assert out.stdout.strip() == "[]"
