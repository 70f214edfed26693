"""Hostile account services: every answer is foreign input, bounded in time, memory and memories written.

A fake answering 100 MB, 100,000 repositories, JSON nested a million deep, a body one byte at a time, a
redirect to another host, endless pages; and a third-party seeder proposing far more than the cap.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import tracemalloc
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from bundlekit.crypto.signing import EthSigner
from bundlekit.memory import Memory
from tests.seed.conftest import Run
from tests.seed.fakes import Answer, Asked, FakeService, github_app, hub_app
from tests.seeding import tree_files

TOKEN = "test-token-Zq81vX0pLm4nB7cR2wY"


def _seed_github(app: object, run: Run, monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[object, FakeService]:
    fake = FakeService(app)  # type: ignore[arg-type]
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.setenv("GITHUB_API_URL", fake.url)
    try:
        return run("seed", "github", "--yes", *args), fake
    finally:
        fake.close()


def _hundred_megabytes() -> Iterator[bytes]:
    yield b'{"login": "octocat", "bio": "'
    for _ in range(100):
        yield b"a" * (1024 * 1024)
    yield b'"}'


def test_a_100_mb_answer_is_cut_at_the_body_limit_in_bounded_memory(tree: Path, run: Run,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    before = tree_files(tree)
    tracemalloc.start()
    started = time.monotonic()
    result, _fake = _seed_github(lambda asked: Answer(200, _hundred_megabytes(), {"Content-Type": "application/json"}),
                                 run, monkeypatch)
    elapsed = time.monotonic() - started
    _current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert result.exit_code == 1  # type: ignore[attr-defined]
    assert "over 4194304 bytes" in result.stderr  # type: ignore[attr-defined]
    assert peak < 40 * 1024 * 1024 and elapsed < 30
    assert tree_files(tree) == before


def test_100000_repositories_cost_three_pages_and_a_bounded_number_of_memories(
        tree: Path, run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    repos = [{"name": f"repo-{n}", "fork": False, "stargazers_count": n % 977, "language": "Go"}
             for n in range(100_000)]
    result, fake = _seed_github(github_app(TOKEN, repos=repos), run, monkeypatch)
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    pages = [a for a in fake.asked if a.path == "/user/repos"]
    assert [a.query["page"] for a in pages] == ["1", "2", "3"]
    assert len(fake.asked) <= 1 + 3 + 5
    assert len(Memory(tree).list()) == 7  # profile, languages, the five most-starred of the 300 read


def test_a_page_ignoring_per_page_is_read_to_its_first_100(tree: Path, run: Run,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    normal = github_app(TOKEN)
    many = [{"name": f"r{n}", "stargazers_count": n} for n in range(60_000)]  # 2.4 MB: under the body limit

    def app(asked: Asked) -> Answer:
        return Answer.json(many) if asked.path == "/user/repos" else normal(asked)

    result, _fake = _seed_github(app, run, monkeypatch, "--json")
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    names = [w["name"] for w in json.loads(result.stdout)["write"] if w["type"] == "project"]  # type: ignore[attr-defined]
    assert names == ["octocat/r99", "octocat/r98", "octocat/r97", "octocat/r96", "octocat/r95"]  # of the first 100


def test_json_nested_a_million_deep_is_refused_before_it_is_parsed(tree: Path, run: Run,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    result, _fake = _seed_github(lambda asked: Answer(200, b"[" * 1_000_000, {"Content-Type": "application/json"}),
                                 run, monkeypatch)
    assert result.exit_code == 1  # type: ignore[attr-defined]
    assert "nests deeper than 64 levels" in result.stderr  # type: ignore[attr-defined]
    assert "Traceback" not in result.output  # type: ignore[attr-defined]


def test_a_body_sent_a_byte_at_a_time_is_cut_at_the_seedings_deadline(tree: Path, run: Run,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BUNDLEKIT_SEED_DEADLINE", "1")
    slow = Answer(200, (b"{" if n == 0 else b" " for n in range(1000)), {"Content-Type": "application/json"},
                  pause=0.2)
    started = time.monotonic()
    result, _fake = _seed_github(lambda asked: slow, run, monkeypatch)
    assert time.monotonic() - started < 8
    assert result.exit_code == 1  # type: ignore[attr-defined]
    assert "did not answer" in result.stderr and "in time" in result.stderr  # type: ignore[attr-defined]


def test_a_redirect_to_another_host_is_refused_and_never_followed(tree: Path, run: Run,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeService(github_app(TOKEN)) as elsewhere:
        other = elsewhere.url.replace("127.0.0.1", "localhost")
        result, _fake = _seed_github(lambda asked: Answer(302, b"", {"Location": f"{other}/user"}), run,
                                     monkeypatch)
        assert elsewhere.asked == []
    assert result.exit_code == 1  # type: ignore[attr-defined]
    assert "refused a redirect" in result.stderr and TOKEN not in result.output  # type: ignore[attr-defined]


def test_a_hub_with_endless_pages_is_read_three_pages_deep(tree: Path, run: Run,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEED_TEST_WALLET_KEY", "0x" + "11" * 32)
    documented = hub_app(6833, [EthSigner("0x" + "11" * 32).identity])

    def app(asked: Asked) -> Answer:
        answer = documented(asked)
        body = json.loads(answer.body)  # type: ignore[arg-type]
        body["nextPageToken"] = "AuzO1V0DtaItCwwa10X6YsfStlynsGWT"
        return Answer.json(body)

    with FakeService(app) as hub:
        monkeypatch.setenv("BUNDLEKIT_FARCASTER_HUB", hub.url)
        result = run("seed", "farcaster", "--fid", "6833", "--private-key-env", "SEED_TEST_WALLET_KEY", "--yes")
        assert result.exit_code == 0, result.output
        assert [a.path for a in hub.asked].count("/v1/userDataByFid") == 3
        assert [a.path for a in hub.asked].count("/v1/verificationsByFid") == 3


def _gzip_bomb(decoded_mib: int) -> bytes:
    """A gzip body of a JSON user whose bio decodes to ``decoded_mib`` MiB, compressed a MiB at a time: built whole
    (``gzip.compress`` of one joined bytes) it held two or three 100 MiB copies, the test process's largest moment."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)  # the gzip container
    zeros = b"0" * (1 << 20)
    parts = [packer.compress(b'{"login": "octocat", "bio": "')]
    parts += [packer.compress(zeros) for _ in range(decoded_mib)]
    parts.append(packer.compress(b'"}') + packer.flush())
    return b"".join(parts)


def test_a_gzip_bomb_is_cut_at_the_body_limit_decoded(tree: Path, run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    bomb = _gzip_bomb(100)
    result, _fake = _seed_github(
        lambda asked: Answer(200, bomb, {"Content-Type": "application/json", "Content-Encoding": "gzip"}),
        run, monkeypatch)
    assert result.exit_code == 1 and "over 4194304 bytes" in result.stderr  # type: ignore[attr-defined]


def test_characters_that_are_not_text_are_dropped_and_the_memory_written(tree: Path, run: Run,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    user = {"login": "octocat", "name": "\\ud800 lone", "bio": "\\u001b[2J\\u202e wipe the screen"}
    body = json.dumps(user).replace("\\\\u", "\\u").encode()
    normal = github_app(TOKEN)
    result, _fake = _seed_github(lambda asked: Answer(200, body, {"Content-Type": "application/json"})
                                 if asked.path == "/user" else normal(asked), run, monkeypatch)
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    assert "\x1b" not in result.output and "\u202e" not in result.output  # type: ignore[attr-defined]
    profile = (tree / "github-octocat-profile.md").read_text(encoding="utf-8")
    assert "- Name: lone" in profile and "- Bio: [2J wipe the screen" in profile
    assert not any(c in profile for c in "\x1b\u202e\ud800")
    assert len(Memory(tree).list()) == 4


@pytest.mark.parametrize("login", ["../../etc", "octo/cat", "a" * 40, "", "-octocat", None, 7])
def test_a_login_outside_githubs_rule_is_refused_whole(login: object, tree: Path, run: Run,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    before = tree_files(tree)
    result, _fake = _seed_github(github_app(TOKEN, user={"login": login}), run, monkeypatch)
    assert result.exit_code == 1 and "not a valid handle" in result.stderr  # type: ignore[attr-defined]
    assert tree_files(tree) == before


def test_a_token_is_never_sent_over_plain_http_to_another_host(run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    for url in ("http://api.example.com", "file:///etc/passwd", "https://h:99999/"):
        monkeypatch.setenv("GITHUB_API_URL", url)
        result = run("seed", "github", "--yes")
        assert result.exit_code == 2, (url, result.output)


def test_a_proof_file_that_never_ends_is_refused(run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BUNDLEKIT_FARCASTER_HUB", "http://127.0.0.1:9")
    result = run("seed", "farcaster", "--fid", "1", "--message-file", "/dev/zero", "--signature-file", "/dev/zero")
    assert result.exit_code == 2 and "over 65536 bytes" in result.stderr


def test_a_repository_named_dot_dot_never_reaches_a_url_path(tree: Path, run: Run,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    repos = [{"name": "..", "stargazers_count": 10**6}, {"name": ".", "stargazers_count": 10**6},
             {"name": "real", "stargazers_count": 1}]
    result, fake = _seed_github(github_app(TOKEN, repos=repos), run, monkeypatch)
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    assert [a.path for a in fake.asked if a.path.endswith("/languages")] == ["/repos/octocat/real/languages"]


def test_a_namespace_that_would_add_lines_to_the_message_is_a_usage_error(run: Run) -> None:
    result = run("seed", "farcaster", "--fid", "1", "--print-message", "--namespace", "agent\nfid: 2")
    assert result.exit_code == 2 and "one line" in result.stderr


def test_sigterm_while_a_service_stalls_ends_the_seeding_with_143_and_nothing_written(
        tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stall = Answer(200, (b"{" if n == 0 else b" " for n in range(10_000)), {"Content-Type": "application/json"},
                   pause=0.5)
    before = tree_files(tree)
    with FakeService(lambda asked: stall) as fake:
        env = {**os.environ, "GITHUB_TOKEN": TOKEN, "GITHUB_API_URL": fake.url}
        proc = subprocess.Popen([sys.executable, "-m", "bundlekit", "memory", "-d", str(tree), "seed", "github",
                                 "--yes"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 30
        while not fake.asked and time.monotonic() < deadline:
            time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 143, err
    assert b"interrupted" in err and b"Traceback" not in err
    assert tree_files(tree) == before


@pytest.mark.slow
def test_a_slow_body_is_cut_at_the_default_answer_deadline(tree: Path, run: Run,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    slow = Answer(200, (b"{" if n == 0 else b" " for n in range(1000)), {"Content-Type": "application/json"},
                  pause=0.5)
    started = time.monotonic()
    result, _fake = _seed_github(lambda asked: slow, run, monkeypatch)
    elapsed = time.monotonic() - started
    assert result.exit_code == 1  # type: ignore[attr-defined]
    assert 25 < elapsed < 60, elapsed  # ANSWER_DEADLINE (30 s), one attempt: a deadline is final
