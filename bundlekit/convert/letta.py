"""Letta Agent File (``.af``) memory blocks <-> neutral records.

An agent file is one JSON document (``letta.schemas.agent_file.AgentFileSchema``):
``agents``, ``groups``, ``blocks``, ``files``, ``sources``, ``tools``,
``mcp_servers``, ``metadata``, ``created_at``. Each agent lists the ids of its
core-memory blocks in ``block_ids``; a block (``BlockSchema``) is ``id``,
``label``, ``value``, ``limit`` (characters), ``description``, ``read_only``,
``metadata`` and template bookkeeping (``template_name``, ``is_template``,
``preserve_on_migration``, ``hidden``, ...). Letta refuses a block whose value
is longer than its limit.

Only memory blocks are memories here: messages, tools, the system prompt, the
model settings, files and sources are not carried, and an import says so. Some
published files (``customer_service.af`` in letta-ai/agent-file) are a JSON
string holding the JSON document; import decodes that second layer too.

Mapping (``specs/interop.md``): label -> key (``x-letta-label``), value -> body
(blank lines the memory store would strip are kept in ``x-letta-lead`` /
``x-letta-trail``), description -> description (raw in ``x-letta-description``, a null as
``x-letta-no-description: true``),
``limit``, ``read_only``, ``metadata``, ``id`` -> ``x-letta-*``; ``human`` reads
as type ``user``, ``persona`` as ``feedback``, every other label as ``reference``.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bundlekit.convert._common import (
    Entry,
    ForeignTree,
    atomic_write,
    derive_keys,
    first_line,
    format_time,
    parse_time,
    single_line,
)
from bundlekit.errors import ConvertError

__all__ = ["DEFAULT_LIMIT", "KEPT_FIELDS", "LABEL_TYPES", "read_letta", "write_letta"]

#: The block limit written when a memory carries none: the value every block in
#: letta-ai/agent-file's example agents uses (Letta's CORE_MEMORY_BLOCK_CHAR_LIMIT).
DEFAULT_LIMIT = 20_000

#: Block label -> bundlekit type; any other label is ``reference``.
LABEL_TYPES = {"human": "user", "persona": "feedback"}

#: The bundlekit fields an export carries (the key becomes the label, the body the value).
KEPT_FIELDS = frozenset({"description"})

_BLOCK_FIELDS = ("id", "label", "value", "limit", "description", "read_only", "metadata")
# Top-level parts of an agent file that are not memory blocks, as an import reports them.
_OTHER_PARTS = ("groups", "files", "sources", "tools", "mcp_servers")
_AGENT_PARTS = ("messages", "tool_ids", "tools", "source_ids", "tool_rules")


def _load(path: Path) -> dict[str, Any]:
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(data, str):
            data = json.loads(data)  # a JSON string holding the document (double-encoded)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise ConvertError(f"{path} is not a Letta agent file (JSON): {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("blocks"), list):
        raise ConvertError(f"{path} is not a Letta agent file: no 'blocks' list; pass an .af file")
    return data


def _pick_agent(data: dict[str, Any], agent: str | None, path: Path) -> dict[str, Any] | None:
    agents = [a for a in data.get("agents") or [] if isinstance(a, dict)]
    if agent is not None:
        for a in agents:
            if agent in (a.get("id"), a.get("name")):
                return a
        names = ", ".join(str(a.get("name") or a.get("id")) for a in agents) or "none"
        raise ConvertError(f"{path} has no agent {agent!r}; its agents: {names}")
    if len(agents) > 1:
        names = ", ".join(str(a.get("name") or a.get("id")) for a in agents)
        raise ConvertError(f"{path} holds several agents ({names}); choose one with --agent-id")
    return agents[0] if agents else None


def _left_out(data: dict[str, Any], chosen: dict[str, Any] | None, skipped_blocks: int) -> str | None:
    parts = []
    if chosen is not None:
        for part in _AGENT_PARTS:
            value = chosen.get(part)
            if isinstance(value, list) and value:
                parts.append(f"{len(value)} {part.replace('_', ' ')}")
        if chosen.get("system"):
            parts.append("the system prompt")
        if chosen.get("llm_config") or chosen.get("model"):
            parts.append("the model settings")
    for part in _OTHER_PARTS:
        value = data.get(part)
        if isinstance(value, list) and value:
            parts.append(f"{len(value)} {part.replace('_', ' ')}")
    if skipped_blocks:
        parts.append(f"{skipped_blocks} blocks of other agents")
    return f"left out what is not a memory block: {', '.join(parts)}" if parts else None


def _check_block_types(block: dict[str, Any]) -> None:
    """Refuse a ``limit``, ``read_only`` or ``metadata`` of another type than Letta's ``Block`` schema.

    Carried as they are, they would fail the export back (a limit of ``"big"``)
    or be lost there (a list as ``metadata``).
    """
    limit, read_only, metadata = block.get("limit"), block.get("read_only"), block.get("metadata")
    problems = []
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
        problems.append("limit is not a positive integer")
    if read_only is not None and not isinstance(read_only, bool):
        problems.append("read_only is not true or false")
    if metadata is not None and not isinstance(metadata, dict):
        problems.append("metadata is not a JSON object")
    if problems:
        raise ConvertError(f"block {block.get('id')!r}: {', '.join(problems)}; fix the agent file")


def _block_meta(block: dict[str, Any], when: str) -> tuple[dict[str, Any], str]:
    label = str(block.get("label") or "")
    value = block.get("value")
    if not label or not isinstance(value, str):
        raise ConvertError(f"block {block.get('id')!r} has no label or no text value; fix the agent file")
    _check_block_types(block)
    body = value.strip("\n")
    description = block.get("description")
    meta: dict[str, Any] = {
        "name": label,
        "description": single_line(description) if description else (first_line(body) or label),
        "type": LABEL_TYPES.get(label, "reference"),
        "created": when,
        "updated": when,
        "x-letta-label": label,
    }
    if description is None:
        meta["x-letta-no-description"] = True  # a null the tree cannot hold as a value
    else:
        meta["x-letta-description"] = description
    lead, trail = value[: len(value) - len(value.lstrip("\n"))], value[len(value.rstrip("\n")) :]
    if body and lead:
        meta["x-letta-lead"] = lead
    if body and trail:
        meta["x-letta-trail"] = trail
    for field in ("id", "limit", "read_only", "metadata"):
        if block.get(field) is not None:
            meta[f"x-letta-{field.replace('_', '-')}"] = block[field]
    extra = {k: v for k, v in block.items() if k not in _BLOCK_FIELDS}
    if extra:
        meta["x-letta-extra"] = extra
    return meta, body


def read_letta(src: str | os.PathLike[str], *, agent_id: str | None = None) -> ForeignTree:
    """Read the memory blocks of one agent of a Letta agent file.

    ``agent_id`` (id or name) chooses the agent when the file holds several;
    its ``block_ids`` are read in their order (a file without agents: every
    block). A double-encoded file is accepted. Timestamps come from the file's
    ``created_at``, else its modification time. What is not a memory block is
    named in a warning. Raises ``ConvertError`` on a file that is not an agent
    file, an unknown or ambiguous agent, or a block without label or value.
    """
    path = Path(src)
    if not path.is_file():
        raise ConvertError(f"{path} is not a file; pass a Letta agent file (.af)")
    data = _load(path)
    chosen = _pick_agent(data, agent_id, path)
    blocks = [b for b in data["blocks"] if isinstance(b, dict)]
    if chosen is not None and isinstance(chosen.get("block_ids"), list):
        by_id = {b.get("id"): b for b in blocks}
        missing = [i for i in chosen["block_ids"] if i not in by_id]
        if missing:
            raise ConvertError(f"agent {chosen.get('name')!r} names blocks the file lacks: {missing}")
        mine = [by_id[i] for i in chosen["block_ids"]]
    else:
        mine = blocks
    try:
        when = format_time(parse_time(data["created_at"])) if data.get("created_at") else None
    except ConvertError:
        when = None
    if when is None:
        when = format_time(datetime.fromtimestamp(path.stat().st_mtime, UTC).replace(microsecond=0))
    tree = ForeignTree()
    parsed = [_block_meta(b, when) for b in mine]
    for key, (meta, body) in zip(derive_keys(m["x-letta-label"] for m, _b in parsed), parsed):
        tree.entries.append(Entry(key, meta, body))
    note = _left_out(data, chosen, len(blocks) - len(mine))
    if note:
        tree.warnings.append(note)
    return tree


def _block(entry: Entry, index: int) -> dict[str, Any]:
    meta = entry.meta
    value = str(meta.get("x-letta-lead", "")) + entry.body + str(meta.get("x-letta-trail", ""))
    limit = meta.get("x-letta-limit", DEFAULT_LIMIT)
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise ConvertError(f"memory {entry.key!r} has a bad x-letta-limit {limit!r}; use a positive integer")
    description = (
        None
        if meta.get("x-letta-no-description") is True
        else meta.get("x-letta-description", meta.get("description"))
    )
    block: dict[str, Any] = {
        "value": value,
        "limit": limit,
        "label": str(meta.get("x-letta-label") or entry.key),
        "read_only": bool(meta.get("x-letta-read-only", False)),
        "description": description,
        "metadata": meta.get("x-letta-metadata") if isinstance(meta.get("x-letta-metadata"), dict) else {},
    }
    extra = meta.get("x-letta-extra")
    if isinstance(extra, dict):
        block.update({str(k): v for k, v in extra.items() if k not in block and k != "id"})
    block["id"] = f"block-{index}"
    return block


def write_letta(
    tree: ForeignTree, dest: str | os.PathLike[str], *, agent_id: str | None = None
) -> list[Path]:
    """Write ``tree`` as a Letta agent file at ``dest``: one agent whose core memory is one block per memory.

    The agent is named ``agent_id`` (default: ``dest``'s stem) and has no
    messages, tools or model settings. Block ids are ``block-0``, ``block-1``,
    ... in key order. Every block must fit its limit (``x-letta-limit``, else
    :data:`DEFAULT_LIMIT` characters): when one does not, nothing is written
    and ``ConvertError`` lists every block that does not fit with its size.
    """
    entries = sorted(tree.entries, key=lambda e: e.key)
    blocks = [_block(e, i) for i, e in enumerate(entries)]
    too_long = [
        f"{b['label']} ({len(b['value'])} characters, limit {b['limit']})"
        for b in blocks
        if len(b["value"]) > b["limit"]
    ]
    if too_long:
        raise ConvertError(
            f"{len(too_long)} memory block{'s do' if len(too_long) != 1 else ' does'} not fit Letta's "
            f"per-block character limit: {'; '.join(too_long)}; shorten them or raise x-letta-limit"
        )
    labels = [b["label"] for b in blocks]
    dupes = sorted({label for label in labels if labels.count(label) > 1})
    if dupes:
        raise ConvertError(
            f"two memories share the Letta block label {dupes[0]!r}; rename one (x-letta-label)"
        )
    newest = max((str(e.meta.get("updated", "")) for e in entries), default="")
    document: dict[str, Any] = {
        "agents": [
            {
                "name": agent_id or Path(dest).stem,
                "id": "agent-0",
                "block_ids": [b["id"] for b in blocks],
                "memory_blocks": [],
                "tool_ids": [],
                "source_ids": [],
                "tags": [],
                "messages": [],
                "in_context_message_ids": [],
                "files_agents": [],
                "group_ids": [],
            }
        ],
        "groups": [],
        "blocks": blocks,
        "files": [],
        "sources": [],
        "tools": [],
        "mcp_servers": [],
        "metadata": {},
        "created_at": newest or None,
    }
    path = Path(dest)
    atomic_write(path, json.dumps(document, indent=2, ensure_ascii=False) + "\n")
    return [path]
