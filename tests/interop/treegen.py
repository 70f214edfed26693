"""Seeded random input trees for differential CID tests against the reference tools.

Everything here is deterministic: a tree is a function of its seed and
parameters (``random.Random(seed)`` only), so a mismatch found once can be
rebuilt anywhere. The trees aim at the places importers disagree:

* file sizes on and around chunk boundaries (0, 1, c-1, c, c+1, and around
  ``max_links * c`` where a balanced tree gains a level);
* names whose UTF-8 byte order differs from code-point or UTF-16 order
  (mixed case, accents, CJK, astral-plane emoji), long names, names with
  spaces and punctuation, dot-files;
* nested, empty and hidden-only directories;
* flat directories that sit exactly on a HAMT threshold (entry count, exact
  block size, kubo's link estimate) and one past it.

Every tree has at least one visible regular file directly under its root:
``ipfs-car pack DIR`` roots its output at the longest directory prefix common
to all files, which is DIR itself only under that condition.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

KIB = 1024
MIB = 1024 * KIB

# Name fragments chosen for ordering traps: 'Z' < '_' < 'a' in bytes, 'ä'
# (U+00E4) > 'z', U+FF21 (3 bytes) < U+1F389 (4 bytes) in UTF-8 but not in
# UTF-16 code units, combining marks, spaces, punctuation.
_FRAGMENTS = [
    "a",
    "b",
    "z",
    "A",
    "B",
    "Z",
    "_",
    "-",
    "0",
    "9",
    " ",
    ".",
    "~",
    "+",
    "(",
    ")",
    "ä",
    "Ä",
    "é",
    "e\u0301",
    "ß",
    "ø",
    "日本",
    "語",
    "中文",
    "\uff21",
    "\ufb01",
    "\ud7ff",
    "🎉",
    "😀",
    "𝔘",
    "🇺🇳",
    "\u00a0",
    "ñ",
    "Ω",
    "я",
    "ℵ",
    "∑",
    "\u200d",
]


def _varint_len(value: int) -> int:
    n = 1
    while value >= 0x80:
        value >>= 7
        n += 1
    return n


def pb_link_size(name_len: int, cid_len: int, tsize: int) -> int:
    """Bytes one dag-pb link adds to a node (computed here independently of bundlekit)."""
    inner = 1 + _varint_len(cid_len) + cid_len + 1 + _varint_len(name_len) + name_len + 1 + _varint_len(tsize)
    return 1 + _varint_len(inner) + inner


def dagpb_leaf_len(size: int) -> int:
    """Length of a single-chunk dag-pb leaf block holding ``size`` content bytes."""
    inner = 2 + (1 + _varint_len(size) + size if size else 0) + 1 + _varint_len(size)
    return 1 + _varint_len(inner) + inner


def random_name(rng: random.Random, *, max_bytes: int = 255, long: bool = False) -> str:
    """A random valid file name (no '/', no NUL, not '.'/'..', no leading dot)."""
    parts: list[str] = []
    target = rng.randint(120, max_bytes) if long else rng.randint(1, 24)
    while True:
        frag = rng.choice(_FRAGMENTS)
        candidate = "".join(parts) + frag
        if len(candidate.encode()) > min(target, max_bytes):
            break
        parts.append(frag)
    name = "".join(parts) or rng.choice("abcXYZ")
    if name.startswith("."):
        name = "x" + name
    return name


def name_of_bytes(rng: random.Random, prefix: str, nbytes: int) -> str:
    """A name of exactly ``nbytes`` UTF-8 bytes: a unique ASCII prefix, then mixed-width characters."""
    out = prefix
    assert len(out.encode()) <= nbytes
    wide = ["ä", "日", "🎉", "Ω", "\uff21", "𝔘"]
    while True:
        room = nbytes - len(out.encode())
        if room == 0:
            return out
        choice = rng.choice(wide)
        if len(choice.encode()) <= room and rng.random() < 0.6:
            out += choice
        else:
            out += rng.choice("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")


@dataclass
class TreeSpec:
    """What the generator wrote: file sizes used, for reporting."""

    files: int = 0
    dirs: int = 0
    bytes: int = 0
    sizes: list[int] = field(default_factory=list)


def _write(path: Path, size: int, rng: random.Random, spec: TreeSpec) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(rng.randbytes(size))
    spec.files += 1
    spec.bytes += size
    spec.sizes.append(size)


def boundary_sizes(chunk: int, max_links: int) -> list[int]:
    """Sizes at the edges of one chunk and of one full tree level."""
    level = chunk * max_links
    return sorted({0, 1, chunk - 1, chunk, chunk + 1, 2 * chunk, level - 1, level, level + 1, level + chunk})


def random_tree(
    root: Path, seed: int, *, chunk: int, max_links: int, depth: int = 3, dots: bool = True
) -> TreeSpec:
    """A random nested tree; sizes around ``chunk`` and ``chunk * max_links`` boundaries."""
    rng = random.Random(seed)
    spec = TreeSpec()
    sizes = boundary_sizes(chunk, max_links)
    root.mkdir(parents=True, exist_ok=True)

    def size() -> int:
        if rng.random() < 0.7:
            return rng.choice(sizes)
        return rng.randint(0, chunk * (max_links + 2))

    def fill(d: Path, level: int, top: bool) -> None:
        used: set[str] = set()

        def fresh(long: bool = False) -> str:
            while True:
                n = random_name(rng, long=long)
                if n not in used:
                    used.add(n)
                    return n

        n_files = rng.randint(1 if top else 0, 6)
        for _ in range(n_files):
            _write(d / fresh(long=rng.random() < 0.15), size(), rng, spec)
        if top:
            _write(d / fresh(), size(), rng, spec)  # the visible top-level file ipfs-car needs
        if dots and rng.random() < 0.5:
            _write(d / ("." + fresh()), size(), rng, spec)
        if dots and rng.random() < 0.2:
            hidden_dir = d / ("." + fresh())
            _write(hidden_dir / fresh(), size(), rng, spec)
        if level < depth:
            for _ in range(rng.randint(0, 3)):
                sub = d / fresh(long=rng.random() < 0.1)
                sub.mkdir()
                spec.dirs += 1
                kind = rng.random()
                if kind < 0.15:
                    continue  # empty directory
                if kind < 0.25 and dots:
                    _write(sub / ("." + fresh()), size(), rng, spec)  # only a dot-file inside
                    continue
                fill(sub, level + 1, False)

    fill(root, 0, True)
    return spec


def count_dir(root: Path, seed: int, entries: int, *, subdirs: int = 0, empty_dirs: int = 0) -> TreeSpec:
    """A flat directory with exactly ``entries`` visible entries (files, sub-directories, empty ones)."""
    rng = random.Random(seed)
    spec = TreeSpec()
    root.mkdir(parents=True, exist_ok=True)
    n_files = entries - subdirs - empty_dirs
    for i in range(n_files):
        _write(root / f"f{i:05d}{random_name(rng)[:3]}", rng.randint(0, 3), rng, spec)
    for i in range(subdirs):
        _write(root / f"d{i:05d}" / "inner", rng.randint(0, 3), rng, spec)
    for i in range(empty_dirs):
        (root / f"e{i:05d}").mkdir()
    _write(root / ".hidden", 5, rng, spec)
    return spec


def size_threshold_dir(
    root: Path,
    seed: int,
    *,
    measure: str,
    target: int,
    cid_len: int,
    count: int,
    subdir: bool = False,
    empty_dir_cid_len: int = 0,
    sizes: tuple[int, ...] = (0,),
    dagpb_leaves: bool = False,
) -> TreeSpec:
    """A flat directory whose HAMT measure equals ``target`` exactly.

    ``measure`` is ``"block-bytes"`` (the serialized flat block: 4 bytes of
    Data plus every link) or ``"links-bytes"`` (kubo's estimate: name bytes +
    CID bytes per link). Files are single-chunk with sizes drawn from
    ``sizes`` (so Tsize varints of different widths appear) and
    ``cid_len``-byte CIDs; their Tsize is the size itself, or the dag-pb leaf
    block's length when ``dagpb_leaves``. Name lengths are solved for.
    ``subdir`` adds a non-empty sub-directory (the importer does not count
    it); ``empty_dir_cid_len`` > 0 adds an empty directory (counted, Tsize 4).
    """
    rng = random.Random(seed)
    spec = TreeSpec()
    root.mkdir(parents=True, exist_ok=True)

    def cost(n: int, clen: int, tsize: int) -> int:
        return pb_link_size(n, clen, tsize) if measure == "block-bytes" else n + clen

    remaining = target - (4 if measure == "block-bytes" else 0)
    names: list[tuple[str, str]] = []  # (kind, name)
    if empty_dir_cid_len:
        n = 30
        names.append(("empty", name_of_bytes(rng, "emptydir-", n)))
        remaining -= cost(n, empty_dir_cid_len, 4)
    # Spread the rest over `count` files with names of 130..250 bytes.
    files: list[tuple[int, int]] = []  # (name length, size)
    for i in range(count):
        left = count - i
        size = rng.choice(sizes)
        tsize = dagpb_leaf_len(size) if dagpb_leaves else size
        # choose a length so the remaining budget stays solvable
        avg = remaining // left
        n = 130
        while n < 250 and cost(n + 1, cid_len, tsize) <= avg:
            n += 1
        if left == 1:
            n = 130
            while cost(n, cid_len, tsize) < remaining and n < 255:
                n += 1
            if cost(n, cid_len, tsize) != remaining:
                raise ValueError(f"cannot hit {target} exactly: {remaining} left for the last name")
        files.append((n, size))
        remaining -= cost(n, cid_len, tsize)
    for i, (n, size) in enumerate(files):
        names.append((str(size), name_of_bytes(rng, f"{i:05d}-", n)))
    for kind, name in names:
        if kind != "empty":
            _write(root / name, int(kind), rng, spec)
        else:
            (root / name).mkdir()
            spec.dirs += 1
    if subdir:
        _write(root / "sub" / "x.txt", 10, rng, spec)
    return spec
