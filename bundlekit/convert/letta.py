"""Letta Agent File (``.af``) memory blocks <-> neutral records.

An agent file is one JSON document (``letta.schemas.agent_file.AgentFileSchema``):
``agents``, ``groups``, ``blocks``, ``files``, ``sources``, ``tools``,
``mcp_servers``, ``metadata``, ``created_at``. Each agent lists the ids of its
core-memory blocks in ``block_ids``; a block (``BlockSchema``) is ``id``,
``label``, ``value``, ``limit`` (characters), ``description``, ``read_only``,
``metadata`` and template bookkeeping (``template_name``, ``is_template``,
``preserve_on_migration``, ...). Since Letta 0.16.7 a block's limit is only
metadata: a value longer than it is kept ("deprecate enforcing block limits").

Only memory blocks are memories here: messages, tools, the system prompt, the
model settings, files and sources are not carried, and an import says so. Some
published files (``customer_service.af`` in letta-ai/agent-file) are a JSON
string holding the JSON document; import decodes that second layer too. The
legacy single-agent format (``"version": "0.6.x"``, ``core_memory``) is refused
with a message saying so: Letta itself no longer imports it.

Mapping (``specs/interop.md``): label -> key (``x-letta-label``), value -> body
(the whitespace the memory store strips kept in ``x-letta-lead`` /
``x-letta-trail``, byte for byte), description -> description (raw in
``x-letta-description``, a null as ``x-letta-no-description: true``),
``limit``, ``read_only``, ``metadata``, ``id`` -> ``x-letta-*``; a label whose
first path part (after ``system/``) is ``human`` reads as type ``user``,
``persona`` as ``feedback``, every other as ``reference``. Every other
frontmatter field of a memory (name, type, dates, revision, tags, source,
decay, important and any other key) travels in the block's ``metadata`` under
:data:`METADATA_KEY` and is read back from there, and the timeline in the
agent's ``metadata`` under the same key, so a tree comes back whole.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from bundlekit.convert._common import (
    MAX_STORE_FILE,
    Entry,
    ExportPlan,
    ForeignTree,
    Loss,
    Unholdable,
    derive_keys,
    first_line,
    format_time,
    parse_time,
    read_foreign_text,
    single_line,
    time_or,
    write_planned,
)
from bundlekit.convert._format import Format, every_field, keeps_timeline
from bundlekit.convert._tree import ordered_meta
from bundlekit.errors import ConvertError, FrontmatterError, MemoryStoreError, UsageError
from bundlekit.memory.record import parse_memory_file, render_memory_file
from bundlekit.memory.timeline import validate_entry

__all__ = [
    "DEFAULT_LIMIT",
    "DEFAULT_MODEL",
    "FORMAT",
    "LABEL_TYPES",
    "METADATA_KEY",
    "label_type",
    "llm_config",
    "plan_letta",
    "read_letta",
    "write_letta",
]

#: The block limit written when a memory carries none: Letta's ``CORE_MEMORY_BLOCK_CHAR_LIMIT``
#: (``letta/constants.py`` at 0.16.8), the default of its ``Block`` schema.
DEFAULT_LIMIT = 100_000

#: The model an export names when none is chosen: the only one a Letta server lists without
#: any provider configured (``letta/schemas/providers/letta.py``: ``LettaProvider``).
DEFAULT_MODEL = "letta/letta-free"

#: The key, in a block's and in the agent's ``metadata``, under which bundlekit's own fields travel.
METADATA_KEY = "bundlekit"

#: First label part -> bundlekit type; any other label is ``reference``.
LABEL_TYPES = {"human": "user", "persona": "feedback"}

# letta/schemas/llm_config.py (0.16.8): LLMConfig.model_endpoint_type's values.
_ENDPOINT_TYPES = frozenset(
    "openai anthropic google_ai google_vertex azure groq ollama webui webui-legacy lmstudio "
    "lmstudio-legacy lmstudio-chatcompletions llamacpp koboldcpp vllm hugging-face minimax mistral "
    "together bedrock deepseek xai zai zai_coding baseten fireworks openrouter chatgpt_oauth".split()
)
# letta/constants.py (0.16.8): DEFAULT_CONTEXT_WINDOW, for a model this module knows nothing of.
_DEFAULT_CONTEXT_WINDOW = 128_000

_BLOCK_FIELDS = ("id", "label", "value", "limit", "description", "read_only", "metadata")
# Top-level parts of an agent file that are not memory blocks, as an import reports them.
_OTHER_PARTS = ("groups", "files", "sources", "tools", "mcp_servers")
_AGENT_PARTS = ("messages", "tool_ids", "tools", "source_ids", "tool_rules")


def label_type(label: str) -> str:
    """The bundlekit type of a block label: by its first path part, a leading ``system/`` skipped.

    ``human`` and ``system/human/family`` read as ``user``; ``persona`` and
    ``system/persona/soul`` as ``feedback``; anything else (``memory_persona``,
    ``reference/faq``) as ``reference``.
    """
    parts = [p for p in label.split("/") if p]
    if len(parts) > 1 and parts[0] == "system":
        parts = parts[1:]
    return LABEL_TYPES.get(parts[0] if parts else "", "reference")


def llm_config(handle: str) -> dict[str, Any]:
    """The ``llm_config`` an exported agent carries for the model ``handle`` (``provider/model``).

    Letta's import (``AgentSerializationManager.import_file`` -> ``create_agent_async``)
    requires an ``llm_config`` and never resolves a handle. ``letta/letta-free``
    gets the config Letta's own ``LettaProvider`` lists; another handle gets
    its provider as the endpoint type (one of Letta's) and Letta's default
    context window. Raises ``UsageError`` for a handle of another form.
    """
    provider, sep, model = handle.partition("/")
    if not sep or not provider or not model:
        raise UsageError(f"--letta-model {handle!r} is not a Letta model handle; use provider/model, e.g. {DEFAULT_MODEL}")
    if handle == DEFAULT_MODEL:
        return {
            "model": "letta-free",
            "model_endpoint_type": "openai",
            "model_endpoint": "https://inference.letta.com/v1/",
            "context_window": 30_000,
            "handle": handle,
            "provider_name": "letta",
            "provider_category": "base",
        }
    if provider not in _ENDPOINT_TYPES:
        raise UsageError(
            f"--letta-model {handle!r}: Letta knows no provider {provider!r}; "
            f"use letta or one of {', '.join(sorted(_ENDPOINT_TYPES))}"
        )
    return {
        "model": model,
        "model_endpoint_type": provider,
        "context_window": _DEFAULT_CONTEXT_WINDOW,
        "handle": handle,
        "provider_name": provider,
    }


#: Bytes an agent file may hold, the cap of every one-file foreign store (16 MiB; the largest file of
#: letta-ai/agent-file at 78212eb, lettabot-builder.af with its messages, is 1.1 MiB).
MAX_AGENT_FILE = MAX_STORE_FILE
#: How deep the JSON of an agent file may nest (objects and arrays). The files of letta-ai/agent-file
#: at 78212eb nest 7 to 23 levels (co-3.af, its tool schemas); the bound keeps every recursive step after the read (surrogate scrub,
#: frontmatter probe, the export's JSON) well inside Python's recursion limit of 1000.
MAX_AGENT_DEPTH = 256


def _depth_problem(data: Any, limit: int) -> str | None:
    """Why ``data`` (parsed JSON) nests too deep, or ``None``; walked without recursion."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children: Iterable[Any] = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth > limit:
            return f"its JSON nests deeper than {limit} levels"
        stack.extend((child, depth + 1) for child in children)
    return None


def _no_constant(name: str) -> Any:
    """Refuse ``NaN`` / ``Infinity``, which Python's ``json`` reads but JSON (RFC 8259) has not.

    Read, such a value could never be exported again (an agent file holds only JSON).
    """
    raise ValueError(f"{name} is not a JSON value (RFC 8259)")


def _load(path: Path) -> dict[str, Any]:
    """The agent file at ``path`` as a JSON object, read bounded in bytes and depth.

    Raises ``ConvertError`` for a file over :data:`MAX_AGENT_FILE` bytes (not
    read past it), nested deeper than :data:`MAX_AGENT_DEPTH`, no JSON, a
    legacy agent file (said so) or a document without ``blocks``.
    """
    text = read_foreign_text(path, limit=MAX_AGENT_FILE, hint="pass a Letta agent file (.af)")
    try:
        data: Any = json.loads(text, parse_constant=_no_constant)
        if isinstance(data, str):
            data = json.loads(data, parse_constant=_no_constant)  # a JSON string holding the document
    except RecursionError as exc:  # json's own bound, far past MAX_AGENT_DEPTH
        raise ConvertError(f"{path} is not a Letta agent file: its JSON nests deeper than {MAX_AGENT_DEPTH} levels") from exc
    except ValueError as exc:  # json.JSONDecodeError, or NaN / Infinity (_no_constant)
        raise ConvertError(f"{path} is not a Letta agent file (JSON): {exc}") from exc
    problem = _depth_problem(data, MAX_AGENT_DEPTH)
    if problem:
        raise ConvertError(f"{path} is not a Letta agent file: {problem}")
    if isinstance(data, dict) and not isinstance(data.get("agents"), list) and (
        "core_memory" in data or "version" in data
    ):
        version = data.get("version")
        raise ConvertError(
            f"{path} is a legacy Letta agent file (version {version if isinstance(version, str) else 'unknown'}, "
            "one agent with core_memory), a format Letta itself no longer imports; open it in a Letta "
            "server that still reads it and export the agent again, then convert that file"
        )
    if not isinstance(data, dict) or not isinstance(data.get("blocks"), list):
        raise ConvertError(f"{path} is not a Letta agent file: no 'blocks' list; pass an .af file")
    return data


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _scrubbed(value: Any) -> tuple[Any, bool]:
    """``value`` with every lone UTF-16 surrogate (a JSON ``\\ud800`` escape no UTF-8 file can hold)
    replaced by U+FFFD, and whether any was; ``json.loads`` already joined the valid pairs."""
    if isinstance(value, str):
        cleaned = _LONE_SURROGATE.sub("\ufffd", value)
        return cleaned, cleaned != value
    if isinstance(value, dict):
        pairs = [(_scrubbed(k), _scrubbed(v)) for k, v in value.items()]
        return {k: v for (k, _a), (v, _b) in pairs}, any(a or b for (_k, a), (_v, b) in pairs)
    if isinstance(value, list):
        items = [_scrubbed(v) for v in value]
        return [v for v, _c in items], any(c for _v, c in items)
    return value, False


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


def _left_out(data: dict[str, Any], chosen: dict[str, Any] | None, skipped: int, others: int) -> str | None:
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
    if skipped:
        whose = "attached to no agent" if not others else "of other agents or of none"
        parts.append(f"{skipped} blocks {whose} (--all-blocks imports them)")
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


def _carried(
    meta: dict[str, Any], fields: Any, label: str, warnings: list[str], losses: list[str]
) -> dict[str, Any]:
    """``meta`` with the bundlekit fields a block carried in its metadata, when the memory store takes them.

    The carried description is taken only while the block's still equals it
    (the block's is what Letta shows and edits), and ``x-letta-*`` keys are
    never taken from there. Fields the memory store
    would refuse (a foreign file's ``bundlekit`` key of another shape) leave
    ``meta`` as derived from the block: a loss (``losses``), since those fields
    are then not read at all. A ``bundlekit`` value that is no object stays in
    ``x-letta-metadata`` as it is (a warning: nothing is lost).
    """
    if not isinstance(fields, dict):
        warnings.append(f"block {label!r}: metadata.{METADATA_KEY} is not an object; kept as Letta metadata")
        return meta
    merged = dict(meta)
    merged.update({k: v for k, v in fields.items() if k != "description" and not k.startswith("x-letta-")})
    if fields.get("description") == meta.get("x-letta-description"):
        merged["description"] = fields["description"]
    try:
        where = f"block {label!r}"
        parse_memory_file(render_memory_file(ordered_meta(merged), "", where=where), where=where)
    except (FrontmatterError, ValueError, TypeError, RecursionError) as exc:
        losses.append(f"metadata.{METADATA_KEY}: does not fit a memory ({exc}); its fields are left out")
        return meta
    return merged


def _block_meta(
    block: dict[str, Any], when: str, attached: bool, warnings: list[str], losses: list[str]
) -> tuple[dict[str, Any], str]:
    """The frontmatter and body of one block; what of it is not read exactly is appended to ``losses``."""
    label = block.get("label")
    value = block.get("value")
    if not isinstance(label, str) or not label or not isinstance(value, str):
        raise ConvertError(f"block {block.get('id')!r} has no label or no text value; fix the agent file")
    _check_block_types(block)
    body = value.strip()  # what the memory store keeps of a body (str.strip)
    lead = value[: len(value) - len(value.lstrip())] if body else value
    trail = value[len(value.rstrip()) :] if body else ""
    description = block.get("description")
    meta: dict[str, Any] = {
        "name": label,
        "description": single_line(description) if description else (first_line(body) or label),
        "type": label_type(label),
        "created": when,
        "updated": when,
        "x-letta-label": label,
    }
    if description is None:
        meta["x-letta-no-description"] = True  # a null the tree cannot hold as a value
    else:
        meta["x-letta-description"] = description
    if lead:
        meta["x-letta-lead"] = lead
    if trail:
        meta["x-letta-trail"] = trail
    for field in ("id", "limit", "read_only"):
        if block.get(field) is not None:
            meta[f"x-letta-{field.replace('_', '-')}"] = block[field]
    metadata = block.get("metadata")
    if isinstance(metadata, dict):
        own = {k: v for k, v in metadata.items() if k != METADATA_KEY}
        meta["x-letta-metadata"] = own if isinstance(metadata.get(METADATA_KEY), dict) else dict(metadata)
    if not attached:
        meta["x-letta-attached"] = False
    extra = {k: v for k, v in block.items() if k not in _BLOCK_FIELDS}
    if extra:
        meta["x-letta-extra"] = extra
    for field in ("x-letta-metadata", "x-letta-extra"):
        if field in meta and not _fits_frontmatter(field, meta[field], when):
            meta[f"{field}-json"] = json.dumps(meta.pop(field), ensure_ascii=False)
            warnings.append(f"block {label!r}: {field} does not fit frontmatter (too deep or too large); kept as JSON text in {field}-json")
    if isinstance(metadata, dict) and METADATA_KEY in metadata:
        carried = _carried(meta, metadata[METADATA_KEY], label, warnings, losses)
        if carried is not meta:
            meta = _without_defaults(carried, len(value))
    return meta, body


def _fits_frontmatter(field: str, value: Any, when: str) -> bool:
    """Whether the memory store reads ``value`` back as the frontmatter key ``field`` (its depth and value budgets)."""
    probe = {"name": "n", "description": "d", "type": "reference", "created": when, "updated": when, field: value}
    try:
        parse_memory_file(render_memory_file(probe, "", where="block"), where="block")
    except (FrontmatterError, ValueError, TypeError, RecursionError):
        return False
    return True


def _json_field(meta: dict[str, Any], field: str) -> Any:
    """``meta[field]``, or the value its ``<field>-json`` text holds (see ``_fits_frontmatter``)."""
    text = meta.get(f"{field}-json")
    if isinstance(text, str):
        try:
            return json.loads(text)
        except (json.JSONDecodeError, RecursionError):
            return None
    return meta.get(field)


def _without_defaults(meta: dict[str, Any], size: int) -> dict[str, Any]:
    """A memory that came from bundlekit, without the ``x-letta-*`` keys an export writes the same without.

    The block id (renumbered on every export), the label when it is the name
    the key gives, the description when it is the memory's, the limit an
    export gives a value of ``size`` characters, ``read_only: false``, empty metadata, and template fields at
    Letta's defaults (null, false): so a tree that went to Letta and back
    reads as it was.
    """
    out = {k: v for k, v in meta.items() if k != "x-letta-id"}
    defaults = {"x-letta-limit": max(DEFAULT_LIMIT, size), "x-letta-read-only": False, "x-letta-metadata": {}}
    for key, value in defaults.items():
        if key in out and out[key] == value and type(out[key]) is type(value):
            del out[key]
    if out.get("x-letta-description") == out.get("description"):
        out.pop("x-letta-description", None)
    extra = out.pop("x-letta-extra", None)
    if isinstance(extra, dict):
        kept = {k: v for k, v in extra.items() if v is not None and v is not False}
        if kept:
            out["x-letta-extra"] = kept
    return out


def _timeline(agent: dict[str, Any] | None, tree: ForeignTree) -> None:
    """The events an export kept in the agent's ``metadata.bundlekit.timeline``, each checked."""
    metadata = agent.get("metadata") if agent is not None else None
    carried = metadata.get(METADATA_KEY) if isinstance(metadata, dict) else None
    events = carried.get("timeline") if isinstance(carried, dict) else None
    if not isinstance(events, list):
        return
    events = _scrubbed(events)[0]
    bad = 0
    for number, event in enumerate(events, start=1):
        try:
            tree.timeline.append(validate_entry(event, f"timeline event {number}"))
        except MemoryStoreError:
            bad += 1
    if bad:
        tree.warnings.append(f"left out {bad} timeline events of the agent's metadata without a valid ts and type")


def read_letta(
    src: str | os.PathLike[str], *, agent_id: str | None = None, all_blocks: bool = False
) -> ForeignTree:
    """Read the memory blocks of one agent of a Letta agent file.

    ``agent_id`` (id or name) chooses the agent when the file holds several;
    its ``block_ids`` are read in their order (a file without agents: every
    block). ``all_blocks`` reads the file's other blocks too (after the
    agent's, in file order), marked ``x-letta-attached: false``. A
    double-encoded file is accepted. Timestamps come from the file's
    ``created_at``, else its modification time, unless a block carries
    bundlekit's own fields. What is not read is named in a warning. Raises
    ``ConvertError`` on a file that is not an agent file (a legacy one said
    so), an unknown or ambiguous agent, or a block without label or value.
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
    own_ids = {id(b) for b in mine}
    rest = [b for b in blocks if id(b) not in own_ids]
    tree = ForeignTree()
    mtime = format_time(datetime.fromtimestamp(path.stat().st_mtime, UTC).replace(microsecond=0))
    created = data.get("created_at")
    when = time_or(tree, created, mtime, where=str(path), field="created_at") if created else mtime
    chosen_blocks = [(b, True) for b in mine] + ([(b, False) for b in rest] if all_blocks else [])
    parsed = []
    for block, attached in chosen_blocks:
        clean, changed = _scrubbed(block)
        losses = (
            ["lone UTF-16 surrogates (no UTF-8 text can hold them) are read as U+FFFD"] if changed else []
        )
        parsed.append((*_block_meta(clean, when, attached, tree.warnings, losses), losses))
    for key, (meta, body, losses) in zip(derive_keys(m["x-letta-label"] for m, _b, _l in parsed), parsed):
        if meta["x-letta-label"] == key and "x-letta-id" not in meta:
            # a memory that came from bundlekit (see _without_defaults): its key is its label
            meta = {k: v for k, v in meta.items() if k != "x-letta-label"}
        tree.entries.append(Entry(key, meta, body))
        for change in losses:
            tree.losses.append(Loss(key, change))
            tree.warnings.append(tree.losses[-1].warning())
    _timeline(chosen, tree)
    others = len([a for a in data.get("agents") or [] if isinstance(a, dict) and a is not chosen])
    note = _left_out(data, chosen, 0 if all_blocks else len(rest), others)
    if note:
        tree.warnings.append(note)
    return tree


def _carry(meta: dict[str, Any]) -> dict[str, Any]:
    """The frontmatter fields a block's ``metadata`` carries: all but Letta's own ``x-letta-*``."""
    return {k: v for k, v in ordered_meta(meta).items() if not k.startswith("x-letta-")}


def _json_default(value: Any) -> str:
    """A frontmatter date as JSON holds it: the text bundlekit writes (``json.dumps`` asks only for what it cannot write)."""
    if isinstance(value, datetime):
        return format_time(parse_time(value))
    if isinstance(value, date):
        return value.isoformat()
    raise TypeError(f"a {type(value).__name__} has no JSON form")


def _limit(entry: Entry, label: str, value: str, plan: ExportPlan, warnings: list[str]) -> int:
    """The block's limit: ``x-letta-limit`` as given, else :data:`DEFAULT_LIMIT` raised to fit the value.

    A limit raised to fit, or a recorded limit the value is longer than, keeps
    every byte (Letta 0.16.7 and later keep such blocks): a warning, not a loss.
    A recorded limit that is no positive integer is not written: a loss.
    """
    limit = entry.meta.get("x-letta-limit")
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
        plan.altered(entry.key, "x-letta-limit: not a positive integer; the default limit is written")
        limit = None
    if limit is None:
        if len(value) <= DEFAULT_LIMIT:
            return DEFAULT_LIMIT
        warnings.append(
            f"memory {entry.key!r} holds {len(value)} characters, over Letta's default block limit "
            f"{DEFAULT_LIMIT}: exported with limit {len(value)}"
        )
        return len(value)
    if len(value) > limit:
        warnings.append(
            f"block {label!r} holds {len(value)} characters, over its limit {limit}: kept as is "
            "(Letta 0.16.7 and later keep such blocks; older servers refuse them)"
        )
    return int(limit)


def _text_field(entry: Entry, field: str, plan: ExportPlan) -> str:
    """The text of ``x-letta-<field>`` (``""`` when absent); another value is not written, a loss."""
    value = entry.meta.get(field, "")
    if isinstance(value, str):
        return value
    plan.altered(entry.key, f"{field}: not text; not written")
    return ""


def _mapping_field(entry: Entry, field: str, plan: ExportPlan) -> dict[str, Any]:
    """``x-letta-<field>`` (or its ``-json`` text) as a mapping; another value is not written, a loss."""
    present = field in entry.meta or f"{field}-json" in entry.meta
    value = _json_field(entry.meta, field)
    if isinstance(value, dict):
        return dict(value)
    if present and value is not None:
        plan.altered(entry.key, f"{field}: not a JSON object; not written")
    elif f"{field}-json" in entry.meta:
        plan.altered(entry.key, f"{field}-json: not the JSON text of an object; not written")
    return {}


def _block(entry: Entry, plan: ExportPlan, warnings: list[str]) -> dict[str, Any]:
    """The block of one memory (its ``id`` is given when every memory is planned), every change Letta forces recorded in ``plan``.

    Raises :class:`Unholdable` when a value has no JSON form (a NaN, say), so
    that memory alone is left out.
    """
    meta = entry.meta
    value = _text_field(entry, "x-letta-lead", plan) + entry.body + _text_field(entry, "x-letta-trail", plan)
    raw_label = meta.get("x-letta-label")
    if raw_label is not None and not (isinstance(raw_label, str) and raw_label):
        plan.altered(entry.key, "x-letta-label: not a non-empty text; the key is the label")
        raw_label = None
    label = raw_label or entry.key
    description = (
        None
        if meta.get("x-letta-no-description") is True
        else meta.get("x-letta-description", meta.get("description"))
    )
    if description is not None and not isinstance(description, str):
        plan.altered(entry.key, "x-letta-description: not text; the memory's description is written")
        description = meta.get("description")
    read_only = meta.get("x-letta-read-only", False)
    if not isinstance(read_only, bool):
        plan.altered(entry.key, "x-letta-read-only: not true or false; written as false")
        read_only = False
    metadata = _mapping_field(entry, "x-letta-metadata", plan)
    if METADATA_KEY in metadata:
        plan.altered(entry.key, f"x-letta-metadata: its key {METADATA_KEY!r} is replaced by bundlekit's fields")
    metadata[METADATA_KEY] = _carry(meta)
    block: dict[str, Any] = {
        "value": value,
        "limit": _limit(entry, label, value, plan, warnings),
        "label": label,
        "read_only": read_only,
        "description": description,
        "metadata": metadata,
    }
    for k, v in _mapping_field(entry, "x-letta-extra", plan).items():
        if k in block or k == "id":
            plan.altered(entry.key, f"x-letta-extra key {k!r} is a field the block has; not written")
        else:
            block[k] = v
    try:
        json.dumps(block, allow_nan=False, default=_json_default)
    except (ValueError, TypeError, RecursionError) as exc:
        raise Unholdable(f"a value has no JSON form ({type(exc).__name__}); an agent file cannot hold it") from exc
    return block


def _attached(blocks: Iterable[tuple[Entry, dict[str, Any]]], plan: ExportPlan) -> list[str]:
    """The ids of the blocks the agent holds: every block not marked unattached, one per label.

    Letta finds an agent's blocks by label; a later memory with a label already
    held stays in the file as a block the agent does not hold: a loss, since
    the agent no longer sees it.
    """
    ids, labels = [], set()
    for entry, block in blocks:
        if entry.meta.get("x-letta-attached") is False:
            continue
        if block["label"] in labels:
            plan.altered(
                entry.key,
                f"x-letta-label: {block['label']!r} is held by an earlier memory; written as a block "
                "the agent does not hold (give it another x-letta-label)",
            )
            continue
        labels.add(block["label"])
        ids.append(block["id"])
    return ids


def write_letta(
    tree: ForeignTree,
    dest: str | os.PathLike[str],
    *,
    agent_id: str | None = None,
    model: str | None = None,
    strict: bool = False,
) -> list[Path]:
    """Write ``tree`` as a Letta agent file at ``dest``: one agent whose core memory is one block per memory.

    The agent is named ``agent_id`` (default: ``dest``'s stem), carries the
    ``llm_config`` of ``model`` (a Letta handle, default :data:`DEFAULT_MODEL`)
    so a Letta server imports it as it is, no messages or tools, and the
    timeline in its ``metadata``. Block ids are ``block-0``, ``block-1``, ...
    in key order; memories marked ``x-letta-attached: false`` are blocks the
    agent does not hold. What Letta would read differently is a loss in
    ``tree.losses`` (a duplicate label, a recorded Letta field of the wrong
    type: ``specs/interop.md`` section 1.4) or, when every byte is kept (a
    limit raised to fit), a warning; ``strict`` refuses any loss, writing
    nothing. A timeline event JSON cannot write (a NaN) is left out, a loss
    (``memory: null``), and ``tree.timeline`` keeps the events written.
    """
    return write_planned("letta", plan_letta, tree, dest, strict=strict, agent_id=agent_id, model=model)


def plan_letta(
    tree: ForeignTree,
    dest: str | os.PathLike[str],
    plan: ExportPlan,
    *,
    agent_id: str | None = None,
    model: str | None = None,
) -> None:
    """Plan the agent file of :func:`write_letta` in ``plan`` (nothing is written here)."""
    config = llm_config(model or DEFAULT_MODEL)
    ordered = sorted(tree.entries, key=lambda e: e.key)
    planned = plan.memories(ordered, lambda e: _block(e, plan, tree.warnings))
    for index, (_entry, block) in enumerate(planned):
        block["id"] = f"block-{index}"  # numbered among the blocks written, last as in Letta's own files
    entries = [e for e, _b in planned]
    blocks = [b for _e, b in planned]
    agent: dict[str, Any] = {
        "name": agent_id or Path(dest).stem,
        "id": "agent-0",
        "block_ids": _attached(planned, plan),
        "llm_config": config,
        "memory_blocks": [],
        "tool_ids": [],
        "source_ids": [],
        "tags": [],
        "messages": [],
        "in_context_message_ids": [],
        "files_agents": [],
        "group_ids": [],
    }
    events = _writable_events(tree.timeline, plan)
    tree.timeline[:] = events  # what the export counts: the events written
    if events:
        agent["metadata"] = {METADATA_KEY: {"timeline": events}}
    newest = max((str(e.meta.get("updated", "")) for e in entries), default="")
    document: dict[str, Any] = {
        "agents": [agent],
        "groups": [],
        "blocks": blocks,
        "files": [],
        "sources": [],
        "tools": [],
        "mcp_servers": [],
        "metadata": {},
        "created_at": newest or None,
    }
    # Every block and event was checked to have a JSON form; the rest is ours.
    plan.add(dest, json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False, default=_json_default) + "\n")


def _writable_events(events: list[dict[str, Any]], plan: ExportPlan) -> list[dict[str, Any]]:
    """The timeline events JSON can write; the others (a NaN a JSONL line may hold) are left out, a loss.

    The loss is no one memory's (``memory: null``), but ``strict`` refuses it
    like any other (``specs/interop.md`` section 1.4).
    """
    kept = []
    for event in events:
        try:
            json.dumps(event, allow_nan=False, default=_json_default)
        except (ValueError, TypeError, RecursionError):
            continue
        kept.append(event)
    if len(kept) < len(events):
        plan.lost(
            f"left out {len(events) - len(kept)} timeline events holding a value JSON cannot write (NaN, infinity)"
        )
    return kept


#: This format, as ``bundlekit.convert`` registers it.
FORMAT = Format(
    name="letta",
    summary="Letta Agent File (.af): one agent's core-memory blocks",
    read=read_letta,
    write=write_letta,
    read_options=frozenset({"agent_id", "all_blocks"}),
    write_options=frozenset({"agent_id", "model"}),
    kept=every_field,
    lossy="nothing of a memory (bundlekit's fields travel in block metadata, the timeline in the "
    "agent's); a block over Letta's default limit gets its limit raised to fit",
    timeline_dropped=keeps_timeline,
)
