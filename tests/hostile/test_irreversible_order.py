"""Validate, then act: every irreversible step runs after every check that can refuse it (issue 24).

Found by going through the irreversible steps (forget has its own file, test_forget_order.py):

* ``unpin --pinner local --pinner pinata --yes`` unpinned the local releases, then failed to
  build the pinata pinner (no secret): half the retention done. Now every pinner is built,
  listed and planned before the first unpin.
* ``retire`` parsed each CID as it unpinned: a malformed one from a service stopped it part-way.
  Now every CID is parsed first; a failure of the service part-way names what was unpinned.
* ``name publish`` (and ``pin --name-key``, after its uploads) kept the new record in the store,
  then found ``$BUNDLEKIT_KUBO_*`` unusable (a token with a line break, a non-http URL): the store
  had moved the name, kubo had not. Now kubo's configuration is checked before anything.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from bundlekit.blockstore import BlockStore
from bundlekit.cli import cli
from bundlekit.crypto.signing import Ed25519Signer
from bundlekit.errors import CIDError, PinError, PinUnavailable
from bundlekit.ipld.cid import cid_to_str
from bundlekit.names.record import name_from_key
from bundlekit.pinning.protocol import PinEntry
from bundlekit.pinning.retention import RetirePlan, carry_out
from bundlekit.unixfs.importer import import_tree
from bundlekit.unixfs.profiles import get_profile

CIDS = [cid_to_str(bytes([1, 0x55, 0, 1, i])) for i in range(3)]  # identity CIDs of one byte


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("BUNDLEKIT_HOME", str(tmp_path / "home"))
    for var in ("CI", "BUNDLEKIT_KUBO_URL", "BUNDLEKIT_KUBO_TOKEN", "BUNDLEKIT_GATEWAYS", "PINATA_JWT"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path / "home"


class _Pinner:
    """A pinner that records its unpins and fails the one named in ``fail_at``."""

    name = "fake"

    def __init__(self, fail_at: int | None = None) -> None:
        self.unpinned: list[bytes] = []
        self.fail_at = fail_at

    def unpin(self, cid: bytes) -> None:
        if len(self.unpinned) == self.fail_at:
            raise PinUnavailable("fake: connection reset")
        self.unpinned.append(cid)


def _plan(cids: list[str]) -> RetirePlan:
    return RetirePlan("fake", keep=[], retire=[PinEntry(c, f"memory-{i}") for i, c in enumerate(cids)])


def _released(home: Path, names: list[str]) -> BlockStore:
    """The local store at ``home`` with one small release pinned per name."""
    store = BlockStore(home, fsync=False)
    for i, name in enumerate(names):
        result = import_tree([(f"f{i}", f"release {i}".encode())], store, get_profile())
        store.pin(result.root, name)
    return store


def test_a_malformed_cid_in_the_plan_stops_retirement_before_the_first_unpin() -> None:
    pinner = _Pinner()
    with pytest.raises(CIDError):
        carry_out(pinner, _plan([CIDS[0], "not-a-cid", CIDS[1]]))
    assert pinner.unpinned == []


def test_a_failure_part_way_names_what_was_unpinned_and_what_failed() -> None:
    pinner = _Pinner(fail_at=1)
    plan = _plan(CIDS)
    with pytest.raises(PinError, match=rf"unpinned 1 of 3 pin\(s\) \({CIDS[0]}\), then {CIDS[1]} failed: "
                                       "fake: connection reset; run the same command again"):
        carry_out(pinner, plan)
    assert len(pinner.unpinned) == 1 and not plan.acted


def test_unpin_with_a_second_pinner_that_cannot_be_built_unpins_nothing(home: Path) -> None:
    store = _released(home, ["memory-1", "memory-2", "memory-3"])
    result = CliRunner().invoke(cli, ["unpin", "--pinner", "local", "--pinner", "pinata", "--name-prefix", "memory-",
                                      "--keep", "1", "--yes"])
    assert result.exit_code == 2, result.output
    assert len(store.pins()) == 3


def test_unpin_with_a_second_pinner_that_cannot_list_unpins_nothing(home: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    store = _released(home, ["memory-1", "memory-2"])
    for var, value in (("FILEBASE_ACCESS_KEY_ID", "AKIA0000"), ("FILEBASE_SECRET_ACCESS_KEY", "secret-value-0000"),
                       ("FILEBASE_BUCKET", "bucket")):
        monkeypatch.setenv(var, value)
    result = CliRunner().invoke(cli, ["unpin", "--pinner", "local", "--pinner", "filebase", "--name-prefix",
                                      "memory-", "--keep", "0", "--yes"])
    assert result.exit_code != 0 and "cannot list its pins by name" in result.stderr
    assert len(store.pins()) == 2


@pytest.mark.parametrize("env", [
    {"BUNDLEKIT_KUBO_URL": "http://127.0.0.1:9", "BUNDLEKIT_KUBO_TOKEN": "line\nbreak"},
    {"BUNDLEKIT_KUBO_URL": "ftp://127.0.0.1:9"},
    {"BUNDLEKIT_KUBO_URL": "http://[::1"},
], ids=["token-with-a-line-break", "not-http", "unparsable"])
def test_name_publish_with_an_unusable_kubo_setting_leaves_the_stores_record(
    tmp_path: Path, home: Path, env: dict[str, str]
) -> None:
    key = tmp_path / "k.pem"
    signer = Ed25519Signer.from_seed(bytes([3]) * 32)
    signer.write(key)
    first = CliRunner().invoke(cli, ["name", "publish", "--key-file", str(key), "bafkqaaa"])
    assert first.exit_code == 0, first.output
    kept = BlockStore(home).get_record(name_from_key(signer.public))
    result = CliRunner().invoke(cli, ["name", "publish", "--key-file", str(key), "bafkqaddwgevxmmraojswg33smq"],
                                env=env)
    assert result.exit_code == 2, result.output
    assert BlockStore(home).get_record(name_from_key(signer.public)) == kept
    assert "line\nbreak" not in result.stderr


def test_pin_with_a_name_key_and_an_unusable_kubo_setting_uploads_nothing(tmp_path: Path, home: Path) -> None:
    key = tmp_path / "k.pem"
    Ed25519Signer.from_seed(bytes([3]) * 32).write(key)
    (tmp_path / "files").mkdir()
    (tmp_path / "files" / "a.txt").write_text("a")
    result = CliRunner().invoke(cli, ["pin", str(tmp_path / "files"), "--pinner", "local", "--name-key", str(key)],
                                env={"BUNDLEKIT_KUBO_URL": "ftp://127.0.0.1:9"})
    assert result.exit_code == 2, result.output
    assert BlockStore(home).pins() == {}
