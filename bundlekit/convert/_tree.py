"""The one place the converters touch a bundlekit memory tree.

Reading goes through ``Memory.list()`` and ``Memory.timeline()``; writing goes
through ``Memory.import_`` with an export blob, so the memory store validates
every key, every frontmatter and the secret guard before anything lands, keeps
the foreign ``created``/``updated``/``revision`` values as given, and rebuilds
``MEMORY.md`` itself. A memory the tree cannot hold is left out beforehand and
named; the rest is imported all or nothing.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from bundlekit.convert._common import Entry, ForeignTree, Loss, output_dir_problem, strict_refusal
from bundlekit.errors import ConvertError, FrontmatterError, InvalidKeyError
from bundlekit.memory import Memory
from bundlekit.memory.record import KNOWN_ORDER, parse_memory_file, render_memory_file, unplain_keys
from bundlekit.memory.transfer import ImportReport, build_export

__all__ = ["ordered_meta", "read_tree", "tree_blob", "write_tree"]


def ordered_meta(meta: dict[str, Any]) -> dict[str, Any]:
    """The frontmatter with bundlekit fields first (the memory store's KNOWN_ORDER), then the rest sorted."""
    out = {k: meta[k] for k in KNOWN_ORDER if k in meta and meta[k] is not None}
    for k in sorted(k for k in meta if k not in out and meta[k] is not None):
        out[k] = meta[k]
    return out


def _memory_file(entry: Entry) -> str:
    """``entry`` as the memory store writes it; ``FrontmatterError`` or ``InvalidKeyError`` if it cannot."""
    where = f"{entry.key}.md"
    text = render_memory_file(ordered_meta(entry.meta), entry.body, where=where)
    parse_memory_file(text, key=entry.key, where=where)  # the checks Memory.import_ makes of each file
    return text


def tree_blob(tree: ForeignTree, *, namespace: str | None = None) -> dict[str, Any]:
    """The bundlekit export blob (``memory/0.1``) holding ``tree``'s entries and timeline.

    An entry a memory tree cannot hold (a key or frontmatter the memory store
    refuses, e.g. more values than its frontmatter budget) is left out of the
    blob and of ``tree.entries``, named in ``tree.losses`` and ``tree.warnings``:
    one memory never blocks the rest (``specs/interop.md`` section 1.4).
    """
    files: dict[str, str] = {}
    kept: list[Entry] = []
    for e in tree.entries:
        try:
            files[f"{e.key}.md"] = _memory_file(e)
        except (FrontmatterError, InvalidKeyError) as exc:
            tree.losses.append(Loss(e.key, f"a memory tree cannot hold it: {exc}", left_out=True))
            tree.warnings.append(tree.losses[-1].warning())
            continue
        kept.append(e)
    tree.entries = kept
    for e in tree.entries:
        for name in unplain_keys(e.meta):
            tree.warnings.append(
                f"{e.key}.md: {name} has no plain YAML form and is kept double-quoted "
                "(three.ws's line reader will show the quotes)"
            )
    timeline = sorted(tree.timeline, key=lambda ev: str(ev.get("ts", "")))
    return build_export(namespace, "", files, timeline)


def write_tree(
    tree: ForeignTree,
    dest: str | os.PathLike[str],
    *,
    strategy: str = "replace",
    allow_secrets: bool = False,
    namespace: str | None = None,
    strict: bool = False,
) -> ImportReport:
    """Write ``tree`` into the bundlekit memory tree at ``dest`` (created if needed); return what was written.

    ``strategy`` is the memory store's import strategy: ``replace`` (incoming
    wins on a key conflict) or ``merge`` (the file already in ``dest`` wins).
    The report's ``timeline_added`` counts only events the tree did not have.
    Entries the tree cannot hold are left out (:func:`tree_blob`); with
    ``strict``, any loss the reader or this step recorded in ``tree.losses``
    raises ``ConvertError`` before ``dest`` is touched. Raises what
    ``Memory.import_`` raises (``SecretDetectedError``, ...) and
    ``ConvertError`` when ``dest`` exists and is not a directory.
    """

    blob = tree_blob(tree, namespace=namespace)
    if strict and tree.losses:
        raise strict_refusal(tree.losses, "into a bundlekit tree")
    path = Path(dest)
    if path.exists() and not path.is_dir():
        raise ConvertError(f"{path} exists and is not a directory; choose another output directory")
    created = not path.exists()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConvertError(
            f"cannot create {path}: {output_dir_problem(exc)}; choose another output directory"
        ) from exc
    try:
        return Memory(path, namespace=namespace).import_(blob, strategy=strategy, allow_secrets=allow_secrets)
    except BaseException:
        if created:
            # A refused import (a credential, a bad key or frontmatter) checks everything before
            # writing: the directory made for it is still empty and goes again, leaving nothing.
            with contextlib.suppress(OSError):
                path.rmdir()
        raise


def read_tree(src: str | os.PathLike[str]) -> ForeignTree:
    """Read every memory and the whole timeline of the bundlekit tree at ``src``.

    Entries come back sorted by key, timeline events oldest first. Raises
    ``ConvertError`` when ``src`` is not a directory, and what ``Memory`` raises
    for a malformed file.
    """

    path = Path(src)
    if not path.is_dir():
        raise ConvertError(
            f"{path} is not a bundlekit memory tree (no such directory); pass the tree's directory"
        )
    memory = Memory(path)
    entries = [Entry(r.key, dict(r.meta), r.body) for r in memory.list()]
    entries.sort(key=lambda e: e.key)
    timeline = [dict(ev) for ev in memory.timeline()]
    timeline.sort(key=lambda ev: str(ev.get("ts", "")))
    # A memory file that does not parse (or is over the size bound) is left out: a loss like any other,
    # named in a warning, and with ``strict`` refused before anything is written.
    losses = [Loss(key, problem, left_out=True) for key, problem in memory.broken().items()]
    return ForeignTree(entries, timeline, [loss.warning() for loss in losses], losses)
