"""The memory operations ``bundlekit mcp`` offers, as plain Python over a :class:`ServedMemory`.

Each method returns JSON-ready data and raises :class:`~bundlekit.errors.BundlekitError`
on bad input (the server turns that into a tool error carrying the message). Nothing
here knows about the MCP SDK, so the rules (read-only, publish opt-in, argument checks)
are tested without it. The shapes match ``bundlekit memory ... --json``.
"""

from __future__ import annotations

import builtins
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bundlekit._bounds import CONTEXT_TOKENS, shown_value
from bundlekit.bundle.workspace import workspace_context, workspace_recall
from bundlekit.crypto import KeySpec
from bundlekit.errors import MemoryNotFoundError, SecretDetectedError, UsageError
from bundlekit.flows.publish import PublishOptions, publish
from bundlekit.mcp_server.source import ServedMemory
from bundlekit.memory.ranking import RANKS
from bundlekit.memory.record import MemoryRecord
from bundlekit.memory.screen import record_values_clean
from bundlekit.pinning.protocol import REQUIRE_MODES

__all__ = ["DEFAULT_CONTEXT_TOKENS", "MAX_RECALL_LIMIT", "MemoryTools", "PublishSettings"]

DEFAULT_CONTEXT_TOKENS = 8192
MAX_RECALL_LIMIT = 100
_DATE_RE = re.compile(r"\d{4}-\d{2}-\d{2}")
_NOTE_RESERVED = frozenset({"ts", "type"})


@dataclass(frozen=True)
class PublishSettings:
    """What ``bundle_publish`` may use: the key that encrypts the bundle, the default pinners."""

    key: KeySpec | None = None
    default_pinners: tuple[str, ...] = ("local",)


class MemoryTools:
    """The tools and resources of one server, over ``served``.

    ``publish`` is None unless the server was started with ``--allow-publish``;
    ``bundle_publish`` is then offered (and refused otherwise).
    """

    def __init__(self, served: ServedMemory, *, publish: PublishSettings | None = None) -> None:
        self.served = served
        self.publish_settings = publish

    @property
    def read_only(self) -> bool:
        return self.served.read_only

    @property
    def can_publish(self) -> bool:
        return self.publish_settings is not None and self.served.tree_dir is not None

    def _writable(self, tool: str) -> None:
        if self.read_only:
            raise UsageError(
                f"{tool}: this server is read-only ({self.served.origin}); "
                "restart it with -d DIR to say where writes go"
            )

    # -- reading ----------------------------------------------------------------

    def recall(
        self, query: str, limit: int = 5, rank: str | None = None, min_similarity: float | None = None,
        usage_boost: bool = True,
    ) -> list[dict[str, Any]]:
        """Memories matching ``query``, best first, with their bodies: by meaning and words (``hybrid``) when an
        embedder is available (the served tree keeps it loaded), else containing it (``salience``); ``rank``
        chooses (``Memory.recall``), ``min_similarity`` keeps by meaning only hits at least that similar. Each
        hit names its ``ranking`` (by meaning, its ``similarity``); with a workspace, each names its ``source``
        (``own``, or the publisher of the read-only layer it came from). ``usage_boost``: memories read after an
        earlier recall rank a little higher, and these hits are noted as returned (``Memory.recall``'s usage)."""
        if not query.strip():
            raise UsageError("memory_recall: query is empty; give a word or phrase to look for")
        if limit < 1 or limit > MAX_RECALL_LIMIT:
            raise UsageError(f"memory_recall: limit must be between 1 and {MAX_RECALL_LIMIT}, not {limit}")
        if rank is not None and rank not in RANKS:
            shown = shown_value(rank, quoted=40)
            raise UsageError(f"memory_recall: rank must be one of {', '.join(RANKS)}, not {shown}")
        memory = self.served.memory
        if self.served.workspace:
            return workspace_recall(memory, self.served.workspace, query, limit, rank=rank,
                                    min_similarity=min_similarity)
        hits = memory.recall(query, limit, rank=memory.ranking_for(rank), min_similarity=min_similarity,
                             usage=usage_boost)
        return [{**hit.to_dict(rank), "body": hit.record.body} for rank, hit in enumerate(hits, 1)]

    def context(self, max_tokens: int = DEFAULT_CONTEXT_TOKENS) -> str:
        """The context block (index, top memories, recent timeline) within ``max_tokens``."""
        try:
            budget = CONTEXT_TOKENS.check(max_tokens, "memory_context: max_tokens")
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        if budget < 1:
            raise UsageError(f"memory_context: max_tokens must be at least 1, not {budget}")
        if self.served.workspace:
            return workspace_context(self.served.memory, self.served.workspace, budget)
        return self.served.memory.context_block(budget)

    def show(self, key: str, usage_boost: bool = True) -> dict[str, Any]:
        """One memory: its frontmatter and body (what looks like a credential withheld); a read that, with
        ``usage_boost``, raises its rank when a recent recall returned it (``Memory.read``'s ``used``)."""
        record = self._record(key, withhold=True, used=usage_boost)
        return {"key": record.key, "meta": record.meta, "body": record.body}

    def raw(self, key: str) -> str:
        """One memory file exactly as stored (frontmatter and body); refused for a file holding what looks
        like a credential (a YAML escape can hide one from the stored text, not from a reader)."""
        record = self._record(key, used=True)
        if not record_values_clean(record):
            raise UsageError(
                f"memory://{key}: {record.filename} holds what looks like a credential, so its file is withheld; "
                "memory_show gives the memory with it withheld"
            )
        return record.raw

    def _record(self, key: str, *, withhold: bool = False, used: bool = False) -> MemoryRecord:
        record = self.served.memory.read(key, withhold=withhold, used=used)
        if record is None:
            raise MemoryNotFoundError(f"no memory {key!r}; memory_list names the keys there are")
        return record

    def list(self) -> list[dict[str, Any]]:
        """Every memory without bodies, sorted by key; with a workspace, each layer's after, named by ``source``."""
        rows = [record.summary() for record in self.served.memory.list(withhold=True)]
        if not self.served.workspace:
            return rows
        rows = [{**row, "source": "own"} for row in rows]
        for layer in self.served.workspace:
            rows += [{**r.summary(), "source": layer.publisher, "read_only": True} for r in layer.memory.list(withhold=True)]
        return rows

    def index(self) -> str:
        """The tree's ``MEMORY.md``, as the tree would write it now."""
        return self.served.memory.index_text()

    def timeline_day(self, date: str) -> builtins.list[dict[str, Any]]:
        """The timeline entries of one UTC day (``YYYY-MM-DD``), oldest first (what looks like a credential withheld)."""
        if not _DATE_RE.fullmatch(date):
            raise UsageError(f"timeline date {date!r} is not YYYY-MM-DD")
        return [entry for entry in self.served.memory.timeline(withhold=True) if str(entry.get("ts", ""))[:10] == date]

    # -- writing ----------------------------------------------------------------

    def write(
        self,
        key: str,
        name: str,
        description: str,
        type: str,
        body: str,
        tags: Sequence[str] | None = None,
        important: bool | None = None,
        expected_revision: int | None = None,
    ) -> dict[str, Any]:
        """Create or update ``key``; the secret guard and the revision check apply as in the CLI.

        A refusal by the guard names the field and line and says what the client can do: this tool has no
        ``allow_secrets`` argument (a model must not be able to waive the guard), so only removing it helps.
        """
        self._writable("memory_write")
        try:
            record = self.served.memory.write(
                key,
                name=name,
                description=description,
                type=type,
                body=body,
                tags=None if tags is None else list(tags),
                important=important,
                expected_revision=expected_revision,
            )
        except SecretDetectedError as exc:
            raise SecretDetectedError(
                f"{exc.finding}; memory must not carry credentials: remove it and call memory_write again "
                "(the guard has no bypass here)",
                finding=exc.finding,
            ) from exc
        return {"key": record.key, "revision": record.revision, "file": record.key + ".md"}

    def forget(self, key: str) -> dict[str, Any]:
        """Delete ``key`` (the timeline notes that it was forgotten, never its body)."""
        self._writable("memory_forget")
        self.served.memory.forget(key)
        return {"forgot": key}

    def note(self, type: str, data: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Append an event to today's timeline; returns the entry as written.

        ``data`` may not hold ``ts`` or ``type``: the server sets both (a model
        passing them would otherwise see its value dropped, or a crash).
        """
        self._writable("memory_note")
        fields = dict(data or {})
        reserved = sorted(_NOTE_RESERVED & fields.keys())
        if reserved:
            raise UsageError(
                f"memory_note: data may not set {', '.join(map(repr, reserved))}: the server writes the time "
                "and the type argument; rename that field"
            )
        return self.served.memory.note(type, **fields)

    # -- publishing -------------------------------------------------------------

    def publish(self, pinners: Sequence[str] | None = None, require: str = "all") -> dict[str, Any]:
        """Build the tree into a bundle and pin it; the ``bundlekit pin --json`` report."""
        settings = self.publish_settings
        tree = self.served.tree_dir
        if settings is None or tree is None:
            raise UsageError("bundle_publish: start the server with --allow-publish and a tree on disk")
        if require not in REQUIRE_MODES:
            shown = shown_value(require, quoted=40)
            raise UsageError(f"bundle_publish: require must be one of {', '.join(REQUIRE_MODES)}, not {shown}")
        report = publish(PublishOptions(tree, pinners=tuple(pinners or settings.default_pinners),
                                        require=require, key=settings.key, workdir_prefix="bundlekit-mcp-pin-"))
        return {**report.pins.to_json(), "ok": report.pins.ok}

