"""``Memory``: the memory tree API (write, read, forget, timeline, recall, context, export/import).

A tree is a directory (or, with ``Memory(None)``, dicts in memory):
``MEMORY.md`` (regenerated index), one ``<key>.md`` per memory and
``timeline/YYYY-MM-DD.jsonl``. Every change runs under the tree lock and
rewrites the index; reads take no lock (each file is replaced atomically).
Parsed files are cached per instance, keyed on (inode, mtime, size), so
repeated recall over thousands of memories does not re-parse YAML.
"""

from __future__ import annotations

import builtins
import os
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from bundlekit.errors import ConflictError, FrontmatterError, InvalidKeyError, MemoryNotFoundError, UsageError
from bundlekit.memory import ranking
from bundlekit.memory.backend import Backend, DirectoryBackend, InMemoryBackend
from bundlekit.memory.files import read_tree_files
from bundlekit.memory.index import render_index
from bundlekit.memory.lock import DEFAULT_LOCK_TIMEOUT
from bundlekit.memory.naming import INDEX_NAME, check_unique, filename_for, key_from_filename, validate_key
from bundlekit.memory.record import (
    OPTIONAL_KEYS,
    REQUIRED_KEYS,
    MemoryRecord,
    parse_memory_file,
    render_memory_file,
    validate_meta,
)
from bundlekit.memory.secrets import guard
from bundlekit.memory.timefmt import as_utc, format_timestamp, parse_timestamp, utc_now
from bundlekit.memory.timeline import (
    DAY_FILE_RE,
    day_file_for,
    encode_entry,
    make_entry,
    merge_entries,
    parse_day,
)
from bundlekit.memory.transfer import STRATEGIES, ImportReport, build_export, validate_blob

__all__ = ["Memory"]

_KNOWN = frozenset(REQUIRED_KEYS) | frozenset(OPTIONAL_KEYS)


class Memory:
    """A memory tree at ``root`` (a directory, created on first write) or in memory (``root=None``).

    ``clock`` returns the current time (a naive value is taken as UTC); inject
    one for deterministic output. ``lock_timeout`` bounds the wait for the
    cross-process lock (:class:`LockTimeoutError`).
    """

    def __init__(
        self,
        root: str | os.PathLike[str] | None,
        *,
        namespace: str | None = None,
        clock: Callable[[], datetime] | None = None,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
    ) -> None:
        self.root: Path | None = Path(root) if root is not None else None
        self._backend: Backend
        if self.root is None:
            self._backend = InMemoryBackend()
        else:
            self._backend = DirectoryBackend(self.root, lock_timeout=lock_timeout)
        self.namespace = namespace or (self.root.resolve().name if self.root is not None else "default")
        self._clock = clock or utc_now
        self._cache: dict[str, tuple[Hashable, MemoryRecord]] = {}
        self._checked_names: frozenset[str] | None = None
        self._last_scan: builtins.list[tuple[str, Hashable]] | None = None
        self._last_records: tuple[MemoryRecord, ...] = ()

    # -- basics ---------------------------------------------------------------

    @property
    def mode(self) -> str:
        """``"dir"`` for a directory tree, ``"none"`` for ``Memory(None)`` (nothing persisted)."""
        return "dir" if self._backend.persistent else "none"

    def __repr__(self) -> str:
        return f"Memory({str(self.root) if self.root is not None else None!r}, namespace={self.namespace!r})"

    def _now(self) -> datetime:
        return as_utc(self._clock())

    def _decode(self, name: str, data: bytes) -> str:
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise FrontmatterError(f"{name} is not UTF-8 text; re-save it as UTF-8") from exc

    def _load(self, name: str, signature: Hashable) -> MemoryRecord | None:
        cached = self._cache.get(name)
        if cached is not None and cached[0] == signature:
            return cached[1]
        data = self._backend.read(name)
        if data is None:  # removed between scan and read by another process
            self._cache.pop(name, None)
            return None
        record = parse_memory_file(self._decode(name, data), key=name[:-3], where=name)
        self._cache[name] = (signature, record)
        return record

    def _records(self) -> builtins.list[MemoryRecord]:
        """Every memory, sorted by key; validates names, case-uniqueness and frontmatter."""
        scanned = self._backend.scan_memories()
        if scanned == self._last_scan:
            # Same names with the same (inode, mtime, size): nothing changed since the last call.
            return builtins.list(self._last_records)
        names = frozenset(name for name, _sig in scanned)
        if names != self._checked_names:
            for name in names:
                key_from_filename(name)
            check_unique((name[:-3] for name in names), where=self._where())
            for stale in [n for n in self._cache if n not in names]:
                del self._cache[stale]
            self._checked_names = names
        records = []
        for name, signature in scanned:
            record = self._load(name, signature)
            if record is not None:
                records.append(record)
        records.sort(key=lambda r: r.key)
        if len(records) == len(scanned):
            self._last_scan, self._last_records = scanned, tuple(records)
        return records

    def _where(self) -> str:
        return f"memory tree {self.root}" if self.root is not None else "the in-memory tree"

    def _write_index(self, records: Sequence[MemoryRecord]) -> None:
        data = render_index(records).encode("utf-8")
        # Regenerated on every change, but only rewritten when it differs (a body edit leaves it alone).
        if self._backend.read(INDEX_NAME) != data:
            self._backend.write(INDEX_NAME, data)

    # -- memories -------------------------------------------------------------

    def init(self) -> None:
        """Create the tree (directory, ``timeline/``, an index) if it does not exist yet."""
        with self._backend.hold():
            if self.root is not None:
                (self.root / "timeline").mkdir(parents=True, exist_ok=True)
            self._write_index(self._records())

    def write(
        self,
        key: str,
        *,
        name: str,
        description: str,
        type: str,
        body: str,
        source: str | None = None,
        decay: str | None = None,
        tags: Sequence[str] | None = None,
        important: bool | None = None,
        expected_revision: int | None = None,
        allow_secrets: bool = False,
        extra: Mapping[str, object] | None = None,
    ) -> MemoryRecord:
        """Create or update the memory ``key``; return the record as written.

        On update ``created`` is kept and ``updated``/``revision`` move on;
        optional fields left as ``None`` keep their current value, and unknown
        frontmatter keys are carried over. ``extra`` sets unknown keys (a
        ``None`` value removes one). With ``expected_revision`` (0 means "must
        not exist yet") a stale write raises :class:`ConflictError`.

        Raises :class:`InvalidKeyError`, :class:`FrontmatterError`,
        :class:`SecretDetectedError`, :class:`ConflictError`,
        :class:`LockTimeoutError`, :class:`UsageError`; on any of them nothing changes.
        """
        # Step 1: the arguments; steps 2-3: the lock and the tree.
        filename = _check_write_args(key, body, expected_revision, extra)
        with self._backend.hold():
            records = self._records()
            current = _current(records, key)
            # Step 4: the revision; step 5: the frontmatter.
            revision = _check_revision(current, expected_revision, filename)
            given: dict[str, Any] = {
                "source": source,
                "decay": decay,
                "tags": None if tags is None else builtins.list(tags),
                "important": important,
            }
            required = {"name": name, "description": description, "type": type}
            meta = _new_meta(current, required, given, extra, format_timestamp(self._now()), revision + 1)
            # Step 6: validate, render, guard; steps 7-8: the file, then the index.
            validate_meta(meta, filename)
            text = render_memory_file(meta, body)
            guard(text, filename, allow_secrets=allow_secrets)
            record = parse_memory_file(text, key=key, where=filename)
            self._backend.write(filename, text.encode("utf-8"))
            self._write_index([r for r in records if r.key != key] + [record])
            return record

    def read(self, key: str) -> MemoryRecord | None:
        """The memory ``key``, or ``None`` if there is none. Raises :class:`FrontmatterError` for a bad file."""
        filename = filename_for(key)
        data = self._backend.read(filename)
        if data is None:
            return None
        return parse_memory_file(self._decode(filename, data), key=key, where=filename)

    def forget(self, key: str) -> None:
        """Delete a memory, rebuild the index, and note ``{"type": "forgot", "key", "name"}`` (never the body).

        Raises :class:`MemoryNotFoundError` when there is no such memory.
        """
        filename = filename_for(key)
        with self._backend.hold():
            records = self._records()
            current = next((r for r in records if r.key == key), None)
            if current is None:
                raise MemoryNotFoundError(
                    f"no memory {filename} in {self._where()}; `memory list` shows the keys"
                )
            self._backend.delete(filename)
            self._cache.pop(filename, None)
            self._write_index([r for r in records if r.key != key])
            self._append(make_entry("forgot", {"key": key, "name": current.name}, self._now()))

    def check(self) -> None:
        """Validate the whole tree: key names and case-uniqueness, frontmatter, timeline files, secret guard.

        Raises the first problem found (:class:`InvalidKeyError`, :class:`FrontmatterError`,
        :class:`MemoryStoreError`, :class:`SecretDetectedError`).
        """
        self._snapshot()

    def _snapshot(self) -> tuple[builtins.list[MemoryRecord], builtins.list[tuple[str, bytes]]]:
        records = self._records()
        for record in records:
            guard(record.raw, record.filename, can_allow=False)
        days: builtins.list[tuple[str, bytes]] = []
        for name in self._backend.timeline_files():
            data = self._backend.read_timeline(name)
            if data is None:
                continue
            parse_day(name, data)
            guard(data.decode("utf-8"), f"timeline/{name}", can_allow=False)
            days.append((name, data))
        return records, days

    def bundle_files(self) -> builtins.list[tuple[str, bytes]]:
        """The files a bundle carries, sorted by path: the regenerated ``MEMORY.md``, each
        ``<key>.md`` as stored, each ``timeline/YYYY-MM-DD.jsonl`` as stored. Validates first (see :meth:`check`).
        """
        records, days = self._snapshot()
        files = [(INDEX_NAME, render_index(records).encode("utf-8"))]
        files += [(r.filename, r.raw.encode("utf-8")) for r in records]
        files += [(f"timeline/{name}", data) for name, data in days]
        files.sort(key=lambda item: item[0])
        return files

    def index_text(self) -> str:
        """The index (``MEMORY.md``) as it would be regenerated now."""
        return render_index(self._records())

    # -- timeline -------------------------------------------------------------

    def _append(self, entry: dict[str, Any]) -> None:
        line = encode_entry(entry)
        guard(line.decode("utf-8"), f"timeline entry {entry['type']!r}", can_allow=False)
        with self._backend.hold():
            self._backend.append_timeline(day_file_for(entry), line)

    def note(self, type: str, **data: Any) -> dict[str, Any]:
        """Append ``{"ts", "type", **data}`` to today's timeline file and return it.

        ``ts`` is the clock's time with milliseconds; data cannot override ``ts`` or ``type``.
        Raises :class:`UsageError` (empty type, data not JSON) or :class:`SecretDetectedError`.
        """
        entry = make_entry(type, data, self._now())
        self._append(entry)
        return entry

    def _timeline_newest_first(self) -> Iterator[dict[str, Any]]:
        for name in reversed(self._backend.timeline_files()):
            if not DAY_FILE_RE.fullmatch(name):
                continue
            data = self._backend.read_timeline(name)
            if data is None:
                continue
            entries = parse_day(name, data, strict=False)
            entries.sort(key=lambda e: parse_timestamp(e["ts"]))
            yield from reversed(entries)

    def timeline(self, limit: int | None = None) -> builtins.list[dict[str, Any]]:
        """The most recent ``limit`` entries across days (all when ``None``), oldest first."""
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
            raise UsageError(f"timeline limit must be an integer of 0 or more, not {limit!r}")
        newest: builtins.list[dict[str, Any]] = []
        if limit == 0:
            return newest
        for entry in self._timeline_newest_first():
            newest.append(entry)
            if limit is not None and len(newest) >= limit:
                break
        newest.reverse()
        return newest

    def prune_timeline(self, keep_days: int) -> int:
        """Remove day files older than the last ``keep_days`` UTC days (today counts as one).

        ``keep_days=0`` removes every day. Returns the number of day files removed.
        """
        if isinstance(keep_days, bool) or not isinstance(keep_days, int) or keep_days < 0:
            raise UsageError(f"keep_days must be an integer of 0 or more, not {keep_days!r}")
        cutoff = (self._now() - timedelta(days=keep_days - 1)).strftime("%Y-%m-%d")
        removed = 0
        with self._backend.hold():
            for name in self._backend.timeline_files():
                match = DAY_FILE_RE.fullmatch(name)
                if match and (keep_days == 0 or match.group(1) < cutoff):
                    removed += self._backend.delete_timeline(name)
        return removed

    # -- retrieval --------------------------------------------------------------

    def recall(self, query: str, limit: int = 5) -> builtins.list[ranking.RecallHit]:
        """Memories containing ``query`` (case-insensitive, name/description/body), best first.

        Ranked by salience x recency x decay (specs/memory.md); ties by key.
        """
        return ranking.recall(self._records(), query, self._now(), limit)

    def context_block(self, max_tokens: int = 8192) -> str:
        """The text injected before an LLM turn, within ``max_tokens * 4`` characters (see specs/memory.md)."""
        records = self._records()
        now = self._now()
        return ranking.context_block(
            render_index(records),
            ranking.ranked_records(records, now),
            self._timeline_newest_first(),
            max_tokens,
        )

    # -- export / import ------------------------------------------------------

    def export(self) -> dict[str, Any]:
        """The export blob: version, namespace, index, files (raw text by file name), full timeline."""
        records = self._records()
        timeline = self.timeline()
        return build_export(
            self.namespace, render_index(records), {r.filename: r.raw for r in records}, timeline
        )

    def import_(
        self, blob: Mapping[str, Any], strategy: str = "merge", *, allow_secrets: bool = False
    ) -> ImportReport:
        """Import an export blob: all or nothing.

        Everything is validated first (names, frontmatter, timeline entries,
        secret guard); then, under the lock, incoming files are written:
        ``merge`` keeps the local file on conflict (same key ignoring case),
        ``replace`` takes the incoming one. Timelines are merged by timestamp
        without duplicates. Returns an :class:`ImportReport`.
        """
        if strategy not in STRATEGIES:
            raise UsageError(f"import strategy must be one of {', '.join(STRATEGIES)}, not {strategy!r}")
        plan = validate_blob(blob, allow_secrets=allow_secrets)
        report = ImportReport()
        with self._backend.hold():
            records = {r.key.lower(): r for r in self._records()}
            for key in sorted(plan.records):
                incoming = plan.records[key]
                local = records.get(key.lower())
                if local is None:
                    report.added.append(key)
                elif strategy == "merge" or (local.raw == incoming.raw and local.key == key):
                    report.kept.append(key)
                    continue
                else:
                    report.replaced.append(key)
                    if local.key != key:
                        self._backend.delete(local.filename)
                self._backend.write(incoming.filename, incoming.raw.encode("utf-8"))
                records[key.lower()] = incoming
            report.timeline_added = self._merge_timeline(plan.timeline)
            self._write_index(builtins.list(records.values()))
        return report

    def _merge_timeline(self, incoming: Sequence[dict[str, Any]]) -> int:
        by_day: dict[str, builtins.list[dict[str, Any]]] = {}
        for entry in incoming:
            by_day.setdefault(day_file_for(entry), []).append(entry)
        added_total = 0
        for name in sorted(by_day):
            data = self._backend.read_timeline(name)
            existing = parse_day(name, data) if data is not None else []
            merged, added = merge_entries(existing, by_day[name])
            if added:
                self._backend.write_timeline(name, b"".join(encode_entry(e) for e in merged))
                added_total += added
        return added_total

    # -- loading ----------------------------------------------------------------

    @classmethod
    def load(
        cls,
        uri: str,
        *,
        gateways: Sequence[str] = (),
        out_dir: str | os.PathLike[str] | None = None,
        **options: Any,
    ) -> Memory:
        """Load a bundle (manifest URI) verified into a tree and return it.

        Delegates to :func:`bundlekit.bundle.load.load_bundle` (``options`` go to it,
        except ``namespace``, which names the returned Memory; by default the
        bundle's own namespace from its manifest). With ``out_dir`` the files
        land in that directory and the returned Memory reads it; without, the
        result is a ``Memory(None)`` holding the loaded files.
        """
        from bundlekit.bundle.load import load_bundle  # lazy: loading pulls in the network and crypto layers

        namespace = options.pop("namespace", None)
        result = load_bundle(uri, gateways=gateways, out_dir=out_dir, **options)
        if namespace is None:
            manifest = getattr(result, "manifest", None)
            loaded_ns = manifest.get("namespace") if isinstance(manifest, Mapping) else None
            namespace = loaded_ns if isinstance(loaded_ns, str) and loaded_ns else None
        if out_dir is not None:
            return cls(out_dir, namespace=namespace)
        memory = cls(None, namespace=namespace)
        memory.import_(read_tree_files(result.files, source=uri).export_blob(), "replace")
        return memory

    def list(self) -> builtins.list[MemoryRecord]:
        """Every memory, sorted by key. Raises on an invalid file name or frontmatter."""
        return self._records()


def _check_write_args(
    key: str, body: object, expected_revision: int | None, extra: Mapping[str, object] | None
) -> str:
    """Step 1 of a write: the key, ``expected_revision``, the body, ``extra``; returns the file name."""
    validate_key(key)
    filename = filename_for(key)
    if expected_revision is not None and (
        isinstance(expected_revision, bool) or not isinstance(expected_revision, int) or expected_revision < 0
    ):
        raise UsageError(f"expected_revision must be an integer of 0 or more, not {expected_revision!r}")
    if not isinstance(body, str):
        raise UsageError(f"the body of {filename} must be a string")
    if extra:
        clash = sorted(k for k in extra if k in _KNOWN)
        if clash:
            raise UsageError(f"extra cannot set the known key(s) {', '.join(clash)}; pass them as arguments")
    return filename


def _current(records: Sequence[MemoryRecord], key: str) -> MemoryRecord | None:
    """Step 3: the stored memory ``key``, if any; a key equal to it ignoring case is refused."""
    current = None
    for record in records:
        if record.key == key:
            current = record
        elif record.key.lower() == key.lower():
            raise InvalidKeyError(
                f"memory key {key!r} differs only in case from the existing {record.key!r}; "
                "use that key or another name"
            )
    return current


def _check_revision(current: MemoryRecord | None, expected: int | None, filename: str) -> int:
    """Step 4: the current revision (0 when new), which ``expected`` must match when given."""
    revision = current.revision if current is not None else 0
    if expected is not None and expected != revision:
        state = f"is at revision {revision}" if current is not None else "does not exist"
        raise ConflictError(
            f"{filename} {state}, not revision {expected}: someone else changed it; read it again and retry"
        )
    return revision


def _new_meta(
    current: MemoryRecord | None,
    required: Mapping[str, object],
    given: Mapping[str, object],
    extra: Mapping[str, object] | None,
    now: str,
    revision: int,
) -> dict[str, Any]:
    """Step 5: the frontmatter.

    ``required`` (name, description, type) from the arguments; ``created``
    kept, else now; ``updated`` now; ``revision``; each ``given`` optional field replaces
    the stored value, or keeps it when ``None``; unknown stored keys carried
    over in order; ``extra`` last (``None`` removes a key).
    """
    meta: dict[str, Any] = dict(required)
    meta["created"] = current.meta["created"] if current is not None else now
    meta["updated"] = now
    meta["revision"] = revision
    for field_name, value in given.items():
        if value is not None:
            meta[field_name] = value
        elif current is not None and field_name in current.meta:
            meta[field_name] = current.meta[field_name]
    if current is not None:
        meta.update((k, v) for k, v in current.meta.items() if k not in _KNOWN)
    for field_name, extra_value in (extra or {}).items():
        if extra_value is None:
            meta.pop(field_name, None)
        else:
            meta[field_name] = extra_value
    return meta
