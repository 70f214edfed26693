"""The kept listing (``memory/listfile``, ``.bundlekit/listing.bin``): the first ``memory list`` of an index state
keeps the lines SQLite joined, every later one of the state reads them back, and only when they list exactly the
tree's files, key for key and in key order (``_statscan.listing_matches``); a kept file made or changed by hand
changes at most what a line prints after its key, as a hand-edited ``line`` column can (specs/memory.md,
"Derived index")."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bundlekit.memory import Memory, listfile

from .conftest import count_joins, fields

pytestmark = pytest.mark.skipif(listfile._listing_matches is None, reason="the compiled listing check is not built here")

_HEADER = struct.Struct("<8sIIqqQQ")


def _tree(root: Path, keys: list[str]) -> Memory:
    mem = Memory(root)
    for key in keys:
        mem.write(key, **fields(name=f"Name of {key}", description=f"about {key}"))
    return mem


def _fresh(root: Path) -> str:
    (root / ".bundlekit" / listfile.LISTING_FILE).unlink(missing_ok=True)
    return Memory(root).list_text()


def _rewrite(path: Path, text: str, flags: str = "") -> None:
    """The kept file with ``text`` and ``flags`` in place of its own, its header otherwise as it was."""
    magic, version, reserved, gen, written_ns, _t, _f = _HEADER.unpack_from(path.read_bytes())
    body, flagged = text.encode("utf-8"), flags.encode("utf-8")
    path.write_bytes(_HEADER.pack(magic, version, reserved, gen, written_ns, len(body), len(flagged)) + body + flagged)


def test_a_second_list_reads_the_kept_lines_and_prints_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _tree(tmp_path, ["alpha", "beta", "gamma"])
    joined = count_joins(monkeypatch)
    first = Memory(tmp_path).list_text()
    assert (tmp_path / ".bundlekit" / listfile.LISTING_FILE).is_file() and joined == [1]
    assert Memory(tmp_path).list_text() == first and joined == [1]
    assert first.split("\n")[0].startswith("alpha\t")


def test_a_write_makes_a_new_state_so_the_next_list_shows_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mem = _tree(tmp_path, ["alpha", "beta"])
    mem.list_text()
    mem.write("beta", **fields(name="Renamed beta", description="changed"))
    mem.write("delta", **fields(name="Delta", description="new"))
    shown = Memory(tmp_path).list_text()
    assert "Renamed beta" in shown and shown.split("\n")[-1].startswith("delta\t")
    assert shown == _fresh(tmp_path)


@pytest.mark.parametrize(
    "forge",
    [
        lambda lines: [lines[0].replace("alpha", "alphb", 1), *lines[1:]],  # a key not its file's
        lambda lines: [lines[1], lines[0], lines[2]],  # out of key order
        lambda lines: lines[:2],  # a file left out
        lambda lines: [*lines, lines[2]],  # a line twice
        lambda lines: [lines[0], lines[1] + "\n" + "zeta\tuser\tr1\tnow\tplanted", lines[2]],  # a line for no file
        lambda lines: ["../x" + lines[0][5:], *lines[1:]],  # a key that is a path
    ],
)
def test_kept_lines_that_are_not_the_files_key_for_key_are_not_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forge: object
) -> None:
    _tree(tmp_path, ["alpha", "beta", "gamma"])
    first = Memory(tmp_path).list_text()
    kept = tmp_path / ".bundlekit" / listfile.LISTING_FILE
    assert callable(forge)
    _rewrite(kept, "\n".join(forge(first.split("\n"))))
    joined = count_joins(monkeypatch)
    assert Memory(tmp_path).list_text() == first and joined == [1]


def test_a_kept_line_changed_after_its_key_is_shown_escaped(tmp_path: Path) -> None:
    _tree(tmp_path, ["alpha", "beta"])
    first = Memory(tmp_path).list_text().split("\n")
    forged = "alpha\tuser\tr9\tthen\tplanted \x1b[2J"
    _rewrite(tmp_path / ".bundlekit" / listfile.LISTING_FILE, "\n".join([forged, first[1]]))
    shown = Memory(tmp_path).list_text()
    assert shown.split("\n") == ["alpha\tuser\tr9\tthen\tplanted \\x1b[2J", first[1]]


@pytest.mark.parametrize("separator", ["\u2028", "\u2029"])
def test_a_kept_line_holding_a_line_separator_is_not_shown(tmp_path: Path, separator: str) -> None:
    """A reader splitting lines as ``str.splitlines`` does would see a row whose key is not a file's."""
    _tree(tmp_path, ["alpha", "beta"])
    first = Memory(tmp_path).list_text()
    forged = f"alpha\tuser\tr1\tthen\tname{separator}planted\tuser\tr1\tthen\tforged row"
    _rewrite(tmp_path / ".bundlekit" / listfile.LISTING_FILE, "\n".join([forged, first.split("\n")[1]]))
    shown = Memory(tmp_path).list_text()
    assert shown == first and [line.split("\t", 1)[0] for line in shown.splitlines()] == ["alpha", "beta"]


def test_a_kept_line_showing_a_credential_is_made_from_its_file(tmp_path: Path) -> None:
    _tree(tmp_path, ["alpha", "beta"])
    first = Memory(tmp_path).list_text()
    forged = "alpha\tuser\tr9\tthen\tplanted sk-ant-api03-Qz7aB3cD4eF5gH6iJ7kL8mN9x9K"
    _rewrite(tmp_path / ".bundlekit" / listfile.LISTING_FILE, "\n".join([forged, first.split("\n")[1]]))
    assert Memory(tmp_path).list_text() == first


def test_a_flag_naming_a_file_not_listed_makes_the_kept_file_foreign(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _tree(tmp_path, ["alpha", "beta"])
    first = Memory(tmp_path).list_text()
    _rewrite(tmp_path / ".bundlekit" / listfile.LISTING_FILE, first, flags="../../outside.md")
    joined = count_joins(monkeypatch)
    assert Memory(tmp_path).list_text() == first and joined == [1]


def test_keys_whose_file_names_sort_otherwise_are_listed_without_a_kept_file(tmp_path: Path) -> None:
    _tree(tmp_path, ["a", "a-b", "a0"])  # "a-b.md" sorts before "a.md", the key "a" before "a-b"
    shown = Memory(tmp_path).list_text()
    assert [line.split("\t", 1)[0] for line in shown.split("\n")] == ["a", "a-b", "a0"]
    assert not (tmp_path / ".bundlekit" / listfile.LISTING_FILE).exists()
    assert Memory(tmp_path).list_text() == shown


@pytest.mark.parametrize("plant", ["symlink", "fifo", "directory", "short", "other-state"])
def test_a_kept_file_that_is_not_one_is_passed_over(tmp_path: Path, plant: str) -> None:
    _tree(tmp_path, ["alpha", "beta"])
    first = Memory(tmp_path).list_text()
    kept = tmp_path / ".bundlekit" / listfile.LISTING_FILE
    data = kept.read_bytes()
    kept.unlink()
    if plant == "symlink":
        (tmp_path / "elsewhere.bin").write_bytes(data)
        kept.symlink_to(tmp_path / "elsewhere.bin")
    elif plant == "fifo":
        os.mkfifo(kept)
    elif plant == "directory":
        kept.mkdir()
    elif plant == "short":
        kept.write_bytes(data[:-5])
    else:
        header = list(_HEADER.unpack_from(data))
        header[3] += 1  # another generation
        kept.write_bytes(_HEADER.pack(*header) + data[_HEADER.size :])
    assert Memory(tmp_path).list_text() == first  # no hang on the FIFO, no read through the link


def _matches_in_python(text: str, names: bytes) -> bool:
    if not text or not names:
        return False
    lines, files = text.split("\n"), names.split(b"\0")
    keys = [line.split("\t", 1)[0] if "\t" in line else None for line in lines]
    if len(lines) != len(files) or any(k is None or not k or not k.isascii() or "\0" in k for k in keys):
        return False
    return all(f == (k or "").encode() + b".md" for k, f in zip(keys, files, strict=True)) and all(
        a.encode() < b.encode() for a, b in zip(keys, keys[1:], strict=False) if a is not None and b is not None
    )


_KEY = st.sampled_from(["a", "a-b", "a0", "b", "ab", "a_b", "é", "x\ty", "", "zz", "a.md"])


@settings(max_examples=300, deadline=None)
@given(
    keys=st.lists(_KEY, max_size=6),
    names=st.lists(_KEY, max_size=6),
    rest=st.sampled_from(["\tuser\tr1", "", "\t", "\t—\u202e", "\n"]),
)
def test_the_compiled_check_is_the_python_one(keys: list[str], names: list[str], rest: str) -> None:
    text = "\n".join(key + rest for key in keys)
    packed = b"\0".join(name.encode() + b".md" for name in names)
    assert listfile._listing_matches is not None
    assert listfile._listing_matches(text, packed) == _matches_in_python(text, packed)
    same = b"\0".join(key.encode() + b".md" for key in keys)
    assert listfile._listing_matches(text, same) == _matches_in_python(text, same)



@settings(max_examples=300, deadline=None)
@given(
    keys=st.lists(_KEY, max_size=6),
    names=st.lists(_KEY, max_size=6),
    rest=st.lists(st.sampled_from(["\tuser\tr1", "", "\t", "\t—\u202e", "\n", "\x00", "é", "\U0001f600",
                                   "\u2028", "\r"]), max_size=4).map("".join),
)
def test_the_utf8_of_a_listing_matches_exactly_when_its_text_does(keys: list[str], names: list[str], rest: str) -> None:
    # listfile.read checks the kept bytes, never decoded: each string width of the text (Latin-1, UCS-2, UCS-4
    # characters after the key) and its UTF-8 answer alike.
    text = "\n".join(key + rest for key in keys)
    assert listfile._listing_matches is not None
    for packed in (b"\0".join(n.encode() + b".md" for n in names), b"\0".join(k.encode() + b".md" for k in keys)):
        assert listfile._listing_matches(text.encode(), packed) == listfile._listing_matches(text, packed)
        assert listfile._listing_matches(text.encode(), packed) == _matches_in_python(text, packed)


def test_without_the_compiled_check_nothing_is_kept_and_the_rows_are_joined(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tree(tmp_path, ["alpha", "beta"])
    shown = Memory(tmp_path).list_text()
    monkeypatch.setattr(listfile, "_listing_matches", None)  # an install whose C module predates the check
    (tmp_path / ".bundlekit" / listfile.LISTING_FILE).unlink()
    joined = count_joins(monkeypatch)
    assert Memory(tmp_path).list_text() == shown and Memory(tmp_path).list_text() == shown and joined == [1, 1]
    assert not (tmp_path / ".bundlekit" / listfile.LISTING_FILE).exists()


@settings(max_examples=60, deadline=None)
@given(
    cuts=st.lists(st.tuples(st.integers(0, 10**6), st.binary(max_size=6)), min_size=1, max_size=4),
)
def test_a_tampered_kept_file_never_shows_a_key_that_is_not_a_files_or_leaves_one_out(
    tmp_path_factory: pytest.TempPathFactory, cuts: list[tuple[int, bytes]]
) -> None:
    root = tmp_path_factory.mktemp("tree")
    keys = ["alpha", "beta", "gamma", "zeta"]
    _tree(root, keys)
    Memory(root).list_text()
    kept = root / ".bundlekit" / listfile.LISTING_FILE
    data = bytearray(kept.read_bytes())
    for at, piece in cuts:  # bytes replaced anywhere, header included
        start = at % len(data)
        data[start : start + len(piece)] = piece
    kept.write_bytes(bytes(data))
    shown = Memory(root).list_text()
    assert [line.split("\t", 1)[0] for line in shown.split("\n")] == keys


def test_a_compiled_check_built_before_it_took_bytes_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    """An install whose C module was not rebuilt since the check took the lines as bytes: asked once at import,
    it is treated as not built (nothing kept, the rows joined), never a TypeError at a ``memory list``."""

    class Old:
        @staticmethod
        def listing_matches(text: object, names: bytes) -> bool:
            if not isinstance(text, str):
                raise TypeError("listing_matches() argument 1 must be str")
            return False

    monkeypatch.setattr(listfile, "_statscan", Old)
    assert listfile._compiled_check() is None
    monkeypatch.setattr(listfile, "_statscan", None)
    assert listfile._compiled_check() is None
