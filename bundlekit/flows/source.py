"""What ``bundlekit pin SRC`` publishes: a CAR, a memory tree's bundle, or a packed directory."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from bundlekit._lazy import lazy_module
from bundlekit.bundle.build import BuildOptions, build_bundle
from bundlekit.bundle.signature import ExternalSignature
from bundlekit.car.reader import read_car
from bundlekit.car.writer import CarFileWriter
from bundlekit.crypto import KeySpec
from bundlekit.crypto.signing import Signer
from bundlekit.errors import UsageError
from bundlekit.memory.naming import INDEX_NAME
from bundlekit.unixfs.importer import import_path
from bundlekit.unixfs.profiles import get_profile

if TYPE_CHECKING:
    from bundlekit.car import verify
else:  # imported when a CAR file is the source (DEVELOPERS.md, "Lazy imports": a sync round builds its own)
    verify = lazy_module("bundlekit.car.verify")

__all__ = ["PreparedSource", "is_memory_dir", "prepare_source"]


@dataclass
class PreparedSource:
    """The CAR to publish, its root, what SRC was (``car``, ``memory`` or ``directory``), and who signed it."""

    car: Path
    root: bytes
    kind: str
    signer: str | None = None


def _has_frontmatter(path: Path) -> bool:
    """True when the file's first line is ``---`` and a later line (within 200) is ``---``."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            if fh.readline().rstrip("\r\n") != "---":
                return False
            for _, line in zip(range(200), fh):
                if line.rstrip("\r\n") == "---":
                    return True
    except OSError:
        return False
    return False


def is_memory_dir(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` is a memory directory.

    A memory directory is a directory with a top-level ``MEMORY.md``, or with
    at least one top-level, non-hidden ``*.md`` file that opens with a YAML
    frontmatter block (first line exactly ``---``, closed by a later line
    exactly ``---``). Subdirectories are not searched: a repository that
    merely contains a memory tree somewhere is packed as a plain directory.
    """
    root = Path(path)
    if not root.is_dir():
        return False
    if (root / INDEX_NAME).is_file():
        return True
    return any(
        entry.is_file() and _has_frontmatter(entry)
        for entry in sorted(root.glob("*.md"))
        if not entry.name.startswith(".")
    )


def prepare_source(
    src: str | os.PathLike[str],
    workdir: str | os.PathLike[str],
    *,
    key: KeySpec | None = None,
    sign: Signer | ExternalSignature | None = None,
    options: BuildOptions | None = None,
) -> PreparedSource:
    """Turn SRC into a CAR and its root, writing any new CAR under ``workdir``.

    * a file is read as a CAR; its header must name exactly one root;
    * a memory directory (``is_memory_dir``) is built with
      ``bundlekit.bundle.build_bundle`` (encrypted when ``key`` is given, its
      manifest signed by ``sign`` when given);
    * any other directory is packed with ``bundlekit.unixfs.import_path``.

    Raises UsageError (missing SRC, several roots, build options for a CAR,
    a key for a non-memory source), CARError (a file that is not a CAR),
    VerificationError / CodecError (a CAR whose blocks do not verify or whose
    DAG is incomplete: nothing is published), and the builders' errors.
    ``options`` are the build's (a memory directory's ``BuildOptions``, of which a packed
    directory uses ``profile`` and ``progress``): ``options.progress(done, total)`` reports the
    build of a memory directory (files, ``build_bundle``'s callback) or the packing of a
    directory (bytes, ``import_path``'s); a CAR does not report. A memory file that does not
    parse is left out with a warning to ``options.warn``, or refused under ``options.strict``.
    """
    options = options or BuildOptions()
    profile, namespace, progress = options.profile, options.namespace, options.progress
    path = Path(src)
    out = Path(workdir) / "bundle.car"
    if path.is_file():
        if key is not None or profile is not None or namespace is not None or sign is not None or options.share is not None:
            raise UsageError(
                f"{path} is a CAR: it is published as is, so key options, --sign, --profile, --namespace "
                "and --share cannot apply"
            )
        with open(path, "rb") as fh:
            roots, _blocks = read_car(fh, verify=False)
        if len(roots) != 1:
            raise UsageError(
                f"{path} names {len(roots)} roots; bundlekit pins single-root CARs: re-pack it with `bundlekit pack`"
            )
        # A pin of a partial or corrupt DAG is a pin no one can fetch: check before any upload.
        report = verify.verify_car(path)
        if report.problem is not None:
            raise report.problem
        return PreparedSource(path, roots[0], "car")
    if not path.is_dir():
        raise UsageError(f"{path} does not exist; give a memory directory, a CAR file or a directory to pack")
    if is_memory_dir(path):
        result = build_bundle(path, out, key=key, sign=sign, options=options)
        return PreparedSource(Path(result.car), result.root, "memory", result.signer)
    if key is not None or sign is not None:
        raise UsageError(
            f"{path} is not a memory directory (no {INDEX_NAME}, no memory files): only bundles can be "
            "encrypted or signed; drop the key option or --sign, or point at the memory tree"
        )
    if namespace is not None or options.share is not None:
        raise UsageError("--namespace and --share apply to memory directories only (nothing was published)")
    with CarFileWriter(out) as writer:
        imported = import_path(path, writer, get_profile(profile), progress=progress)
        writer.finish(imported.root)
    return PreparedSource(out, imported.root, "directory")
