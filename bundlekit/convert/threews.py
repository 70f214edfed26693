"""three.ws memory <-> neutral records.

Checked against the runtime itself: ``src/memory/index.js`` and
``src/memory/crypto.js`` of ``nirholas/three.ws`` (commit
2071392cf490202c2c8a9f21a5991197c6fbc130); specs/interop.md, "three.ws".
Two plaintext forms are read and written:

* the export blob of ``memory.export()``: ``{"version": "memory/0.1", "index",
  "files": {"<key>.md": "<markdown>"}, "timeline": [...]}`` (bundlekit adds
  ``mode`` and ``namespace``, which the runtime's ``import`` ignores);
* its ``localStorage`` dump: a JSON object mapping ``agent:<agentId>:memory`` to
  the value ``_persist`` stores, ``{"index": {"text"}, "files", "timeline"}``
  serialized as a JSON string (the last 200 timeline events). A blob, or an
  object instead of the string, is read too.

Files are split and read as the runtime does: its frontmatter pattern, then
YAML; when YAML cannot read a file, the runtime's own line reader (each line
split at its first colon) with a warning. Written files hold only plain
values (``bundlekit.memory.frontmatter``), so both readers see the same text.
three.ws dates are bare ISO dates: they are read as midnight UTC and the
original spelling is kept in ``x-threews-created`` / ``x-threews-updated``
so it is written back unchanged while the instant is the same.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bundlekit.bundle.build import file_cid
from bundlekit.convert._common import (
    MAX_STORE_FILE,
    MEMORY_TYPES,
    Entry,
    ExportPlan,
    ForeignTree,
    derive_keys,
    first_line,
    format_time,
    line_key_problem,
    merge_extra,
    parse_time,
    read_foreign_text,
    same_instant,
    single_line,
    write_planned,
    index_line_loss,
)
from bundlekit.convert._format import Format, kept
from bundlekit.crypto.threews import _threews_encrypt, threews_decrypt, threews_key_from_spec
from bundlekit.errors import ConvertError, FrontmatterError, MemoryStoreError
from bundlekit.ipld.cid import cid_to_str
from bundlekit.memory import index as memory_index
from bundlekit.memory.frontmatter import (
    dump_frontmatter,
    load_frontmatter,
    plain_problem,
    plainer,
    split_lines,
)
from bundlekit.memory.timeline import validate_entry
from bundlekit.memory.transfer import EXPORT_VERSION
from bundlekit.unixfs.profiles import get_profile

if TYPE_CHECKING:
    from bundlekit.crypto._keys import KeySpec

__all__ = [
    "BLOB_VERSION",
    "FORMAT",
    "STORAGE_KEY",
    "STORAGE_TIMELINE",
    "blob_entries",
    "blob_to_tree",
    "decrypt_files",
    "encrypt_files",
    "parse_threews_file",
    "read_blob",
    "read_threews",
    "render_index",
    "storage_value",
    "timeline_dropped",
    "plan_threews",
    "tree_to_blob",
    "write_threews",
]

#: The three.ws blob is bundlekit's export blob: one version.
BLOB_VERSION = EXPORT_VERSION
#: The localStorage key three.ws keeps one agent's blob under.
STORAGE_KEY = "agent:{agent_id}:memory"

#: The fields the runtime writes as ``key: value`` lines and shows (its index lists them).
_SHOWN_FIELDS = ("name", "description")
#: How many timeline events the runtime's ``_persist`` keeps in localStorage (the last ones).
STORAGE_TIMELINE = 200

_STORAGE_RE = re.compile(r"^agent:(?P<id>.+):memory$")
# The runtime's FRONTMATTER_RE (JavaScript ``$`` without the m flag is the end of the text: ``\Z``).
_FRONTMATTER_RE = re.compile(r"---\n([\s\S]*?)\n---\n?([\s\S]*)\Z")
_B64_RE = re.compile(r"^[A-Za-z0-9+/]+={0,2}$")
# Frontmatter keys three.ws and bundlekit share, carried as they are.
_SHARED = ("name", "description", "type", "created", "updated", "source", "decay", "tags", "important")


def _check_blob(blob: Any, where: str) -> dict[str, Any]:
    if not isinstance(blob, dict) or not isinstance(blob.get("files", {}), dict):
        raise ConvertError(
            f"{where} is not a three.ws memory blob (no 'files' object); "
            "pass an export or a localStorage dump"
        )
    version = blob.get("version", BLOB_VERSION)
    if version != BLOB_VERSION:
        raise ConvertError(f"{where} has blob version {version!r}; only {BLOB_VERSION!r} is understood")
    index = blob.get("index")
    if isinstance(index, dict):  # the localStorage value keeps the index as {"text": ...}
        return {**blob, "index": str(index.get("text") or "")}
    return blob


def read_blob(data: Any, *, agent_id: str | None = None, where: str = "input") -> dict[str, Any]:
    """Pick the memory blob out of parsed JSON: a blob, or a localStorage dump.

    In a dump, ``agent_id`` selects the ``agent:<agentId>:memory`` entry; it may
    be omitted when there is exactly one. Raises ``ConvertError`` otherwise.
    """
    if isinstance(data, dict) and "files" in data:
        return _check_blob(data, where)
    if not isinstance(data, dict):
        raise ConvertError(f"{where} is neither a three.ws memory blob nor a localStorage dump")
    agents = {m.group("id"): v for k, v in data.items() if (m := _STORAGE_RE.match(str(k)))}
    if not agents:
        raise ConvertError(
            f"{where} has no 'agent:<agentId>:memory' key; pass a three.ws export or localStorage dump"
        )
    if agent_id is None:
        if len(agents) > 1:
            raise ConvertError(
                f"{where} holds memory for several agents ({', '.join(sorted(agents))}); "
                "choose one with agent_id"
            )
        agent_id = next(iter(agents))
    if agent_id not in agents:
        raise ConvertError(
            f"{where} holds no memory for agent {agent_id!r}; it has {', '.join(sorted(agents))}"
        )
    value = agents[agent_id]
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (json.JSONDecodeError, RecursionError) as exc:  # RecursionError: absurdly deep nesting
            raise ConvertError(
                f"the localStorage value for agent {agent_id!r} in {where} is not JSON"
            ) from exc
    blob = _check_blob(value, f"the localStorage value for agent {agent_id!r} in {where}")
    if blob.get("namespace") is None:
        blob = {**blob, "namespace": agent_id}
    return blob


def parse_threews_file(name: str, text: str, warnings: list[str] | None = None) -> tuple[dict[str, Any], str]:
    """A three.ws memory file's frontmatter and body, split as the runtime splits them.

    The frontmatter is read as YAML (bounded, ``bundlekit.memory.frontmatter``);
    when YAML cannot read it, by the runtime's own line reader, and a warning
    saying so is appended to ``warnings``. A file the runtime's pattern does
    not split has no frontmatter (``{}``, the whole text is the body; a warning
    says so).
    """
    m = _FRONTMATTER_RE.match(text)
    if m is None:
        if warnings is not None:
            warnings.append(f"three.ws file {name!r} has no frontmatter; name taken from the file name")
        return {}, text
    fm_text, body = m.group(1), m.group(2)
    problem: str | None = None
    try:
        loaded = load_frontmatter(fm_text, where=f"three.ws file {name!r}")
    except FrontmatterError as exc:
        loaded, problem = None, str(exc)
    if loaded is not None and not isinstance(loaded, dict):
        problem = f"three.ws file {name!r}: its frontmatter is not a YAML mapping"
    if problem is None:
        meta = {str(k): v for k, v in loaded.items()} if isinstance(loaded, dict) else {}
        return _as_runtime_shows(meta, fm_text), body
    if warnings is not None:
        reason = problem.removesuffix("; fix the syntax")
        warnings.append(f"{reason}: read line by line instead, as the three.ws runtime reads it")
    return dict(split_lines(fm_text)), body


def _as_runtime_shows(meta: dict[str, Any], fm_text: str) -> dict[str, Any]:
    """``meta`` as YAML read it, with ``name`` and ``description`` as the runtime shows them where YAML read
    their unquoted line otherwise: ``Fix issue #12`` is a comment after ``Fix issue`` to YAML and the whole
    text to three.ws, ``yes`` a boolean to YAML and text to three.ws. A quoted value (as bundlekit writes
    one with no plain form) stays as YAML read it."""
    shown = split_lines(fm_text)
    for field in _SHOWN_FIELDS:
        text = shown.get(field)
        if text and text[0] not in "'\"" and meta.get(field) != text:
            meta[field] = text
    return meta


def _plain_text(value: Any, what: str, warnings: list[str]) -> Any:
    """``value`` (recursively) with text that has no plain form only for ``': '`` or ``' #'`` made plain.

    See :func:`bundlekit.memory.frontmatter.plainer`; each change is reported in ``warnings``.
    """
    if isinstance(value, str):
        fixed = plainer(value)
        if fixed != value and plain_problem(value) is not None and plain_problem(fixed) is None:
            warnings.append(f"{what}: ': ' or ' #' kept with a no-break space, so YAML and three.ws read it alike")
            return fixed
        return value
    if isinstance(value, list):
        return [_plain_text(v, what, warnings) for v in value]
    if isinstance(value, dict):
        return {k: _plain_text(v, what, warnings) for k, v in value.items()}
    return value


def _valid_optional(field: str, value: Any) -> bool:
    """Whether a shared optional field holds a value the memory store accepts."""
    if field == "source":
        return isinstance(value, str) and bool(value.strip()) and "\n" not in value and "\r" not in value
    if field == "decay":
        return value in ("never", "30d", "90d")
    if field == "tags":
        return isinstance(value, list) and all(
            isinstance(t, str) and t.strip() and "\n" not in t for t in value
        )
    return isinstance(value, bool)


def blob_to_tree(blob: dict[str, Any], *, now: str | None = None) -> ForeignTree:
    """Turn a three.ws blob into neutral records (pure).

    ``now`` (ISO 8601) fills ``created``/``updated`` a file lacks; without it
    such a file is refused. Timeline events without ``ts`` and ``type`` are
    left out with a warning.
    """
    files = blob.get("files") or {}
    # The index is regenerated, never a memory, even when a blob lists it as a file.
    names = sorted(str(n) for n in files if str(n).lower() != "memory.md")
    for n in names:
        if not n.endswith(".md") or "/" in n or "\\" in n:
            raise ConvertError(f"three.ws file name {n!r} is not '<key>.md'; rename it and retry")
    keys = derive_keys(n[: -len(".md")] for n in names)
    tree = ForeignTree()
    for key, filename in zip(keys, names):
        raw = files[filename]
        if not isinstance(raw, str):
            raise ConvertError(f"three.ws file {filename!r} is not text")
        fm, body = parse_threews_file(filename, raw, tree.warnings)
        fm = {k: _plain_text(v, f"three.ws file {filename!r}, {k}", tree.warnings) for k, v in fm.items()}
        meta: dict[str, Any] = {}
        for k in ("source", "decay", "tags", "important"):
            if k in fm:
                # A value bundlekit would refuse is carried aside, not lost.
                meta[k if _valid_optional(k, fm[k]) else f"x-threews-{k}"] = fm[k]
        meta["name"] = single_line(fm.get("name") or key)
        meta["description"] = single_line(fm.get("description") or first_line(body) or meta["name"])
        ftype = fm.get("type")
        meta["type"] = ftype if ftype in MEMORY_TYPES else "reference"
        if ftype is not None and ftype not in MEMORY_TYPES:
            meta["x-threews-type"] = ftype
        for field in ("created", "updated"):
            value = fm.get(field) or (fm.get("created") if field == "updated" else None) or now
            if value is None:
                raise ConvertError(f"three.ws file {filename!r} has no {field}; pass --now (library: now=) with the time to fill it")
            meta[field] = format_time(parse_time(value, what=f"{field} in {filename!r}"))
            if field in fm:
                meta[f"x-threews-{field}"] = (
                    fm[field].isoformat() if isinstance(fm[field], date) else fm[field]
                )
        extra = {k: v for k, v in fm.items() if k not in _SHARED}
        if extra:
            meta["x-threews-extra"] = extra
        if key != filename[: -len(".md")]:
            meta["x-threews-file"] = filename
        tree.entries.append(Entry(key, meta, body))
    for number, event in enumerate(blob.get("timeline") or []):
        try:
            tree.timeline.append(dict(validate_entry(event, f"timeline event {number}")))
        except MemoryStoreError as exc:
            tree.warnings.append(f"{exc} (left out)")
    return tree


class _Listed:
    """An entry as the index sees it: its three.ws file stem as the key."""

    def __init__(self, entry: Entry) -> None:
        self.key = _filename(entry)[: -len(".md")]
        self.name = str(entry.meta.get("name", entry.key))
        self.description = str(entry.meta.get("description", ""))
        self.type = str(entry.meta.get("type", "reference"))


def render_index(entries: list[Entry], links: Mapping[str, str] | None = None) -> str:
    """The ``MEMORY.md`` text of ``entries`` in the form the runtime's ``_rebuildIndex`` writes.

    With ``links`` (file stem -> CID of its encrypted text), the form of its
    ``_rebuildEncryptedIndex`` without descriptions: ``- [file.md](ipfs://<cid>)``.
    The one renderer is ``bundlekit.memory.index.render_index``.
    """
    return memory_index.render_index([_Listed(e) for e in entries], links=links, redact=links is not None)


def _filename(entry: Entry) -> str:
    return str(entry.meta.get("x-threews-file") or f"{entry.key}.md")


def _runtime_line(key: str, value: Any, where: str) -> str:
    """One frontmatter line as the runtime's ``stringifyFrontmatter`` writes a string: ``key: value``, as is.

    The runtime reads it back exactly (first colon, trimmed); so does bundlekit,
    through YAML or, when YAML cannot read the line, the same line reader. A
    value that is not one line of text is written as bundlekit writes it (plain
    or flow, double-quoted where it must be).
    """
    if isinstance(value, str) and value.splitlines() == [value] and ":" not in key:
        return f"{key}: {value}\n"
    return dump_frontmatter({key: value}, where=f"memory {where!r}")


def _runtime_reads(head: str) -> dict[str, str]:
    """What the runtime's ``parseFrontmatter`` reads from frontmatter lines ``head``.

    nirholas/three.ws 2071392cf490202c2c8a9f21a5991197c6fbc130 ``src/memory/index.js``: each
    ``\\n``-separated line split at its first ``:``, both sides trimmed (JavaScript's ``trim``, which also
    removes U+FEFF), the last line of a key wins.
    """
    return split_lines(head)


def _runtime_line_checked(plan: ExportPlan, key: str, field: str, value: Any) -> str:
    """:func:`_runtime_line`, recording a loss when the value is text the runtime reads back otherwise."""
    line = _runtime_line(field, value, key)
    if isinstance(value, str) and _runtime_reads(line).get(field.strip()) != value:
        plan.altered(
            key,
            f"{field}: three.ws's line reader (first ':', trimmed) shows it otherwise "
            "(quoted, or without its surrounding spaces)",
        )
    return line


def _render_file(entry: Entry, plan: ExportPlan) -> str:
    meta = entry.meta
    fm: dict[str, Any] = {
        "name": meta.get("name", entry.key),
        "description": meta.get("description", ""),
        "type": meta.get("x-threews-type", meta.get("type", "reference")),
    }
    for field in ("created", "updated"):
        value = meta.get(field)
        original = meta.get(f"x-threews-{field}")
        if original is not None:
            value = same_instant(original, value)
        if value is not None:
            fm[field] = value if isinstance(value, str) else format_time(parse_time(value))
    for k in ("source", "decay", "tags", "important"):
        if k in meta and meta[k] is not None:
            fm[k] = meta[k]
        elif f"x-threews-{k}" in meta:
            fm[k] = meta[f"x-threews-{k}"]
    # The runtime reads line by line: a key holding a line break would write another field.
    merge_extra(plan, entry.key, "x-threews-extra", meta.get("x-threews-extra"), fm)
    head = "".join(_runtime_line_checked(plan, entry.key, k, v) for k, v in fm.items())
    body = entry.body.strip("\n")
    return f"---\n{head}---\n\n{body}\n" if body else f"---\n{head}---\n"


def tree_to_blob(
    tree: ForeignTree, *, namespace: str | None, mode: str = "local", plan: ExportPlan | None = None
) -> dict[str, Any]:
    """Build the three.ws export blob for ``tree`` (pure, deterministic).

    What the blob cannot hold is recorded in ``plan`` (without one, in
    ``tree.warnings``): an extra key that is not a plain line key is not
    written; a recorded file name that is not ``<name>.md`` without ``/`` or
    control characters gives way to ``<key>.md``; a memory whose file name
    another already takes is left out.
    """
    own = plan if plan is not None else ExportPlan("three.ws")
    files: dict[str, str] = {}
    written: list[Entry] = []
    for entry in sorted(tree.entries, key=lambda e: e.key):
        name = _filename(entry)
        if "/" in name or not name.endswith(".md") or line_key_problem(name) is not None:
            own.altered(
                entry.key, f"x-threews-file is not '<name>.md' on one line; written as {entry.key}.md"
            )
            name = f"{entry.key}.md"
        if name in files:
            own.left_out(entry.key, f"its file name {name!r} is taken by another memory")
            continue
        files[name] = _render_file(entry, own)
        if name != _filename(entry):
            entry = Entry(entry.key, {**entry.meta, "x-threews-file": name}, entry.body)
        written.append(entry)
    if plan is None:
        tree.warnings.extend(loss.warning() for loss in own.losses)
    return {
        "version": BLOB_VERSION,
        "mode": mode,
        "namespace": namespace,
        "index": render_index(written),
        "files": files,
        "timeline": sorted(tree.timeline, key=lambda ev: str(ev.get("ts", ""))),
    }


def _looks_encrypted(text: str) -> bool:
    return not text.lstrip().startswith("---") and _B64_RE.match(text.strip()) is not None


def decrypt_files(blob: dict[str, Any], key: KeySpec, agent_id: str | None) -> dict[str, Any]:
    """Decrypt every file of a blob in three.ws's encrypted per-file form (pure except the KDF).

    The key is three.ws's: HKDF over a wallet signature of
    ``agent-3d:memory:v1:<agentId>`` (see :mod:`bundlekit.crypto.threews`);
    ``agent_id`` defaults to the blob's namespace. The index stays as it is
    (three.ws pins it in plaintext). Raises ``DecryptionError`` for a wrong key
    or a tampered file, ``KeySourceError`` for a key that is not a wallet's.
    """

    agent = agent_id or blob.get("namespace")
    if not agent:
        raise ConvertError("decrypting three.ws memory needs the agent id it was keyed to; pass agent_id")
    tkey = threews_key_from_spec(key, str(agent))
    files = {}
    for name, value in (blob.get("files") or {}).items():
        if not isinstance(value, str):
            raise ConvertError(f"three.ws file {name!r} is not text")
        files[name] = threews_decrypt(value, tkey, name=str(name)).decode("utf-8")
    return {**blob, "files": files}


def encrypt_files(
    blob: dict[str, Any], key: KeySpec, agent_id: str, rng: Callable[[int], bytes] | None = None
) -> dict[str, Any]:
    """Encrypt every file of a blob into three.ws's per-file form.

    What stays in plaintext must not give the content away: the index lists
    file names only (three.ws's encrypted index lists names and CIDs, never
    descriptions), and the timeline is left out (three.ws has no encrypted
    timeline and never hydrates one from IPFS). ``rng`` supplies each 12-byte
    IV (default ``os.urandom``); inject one for reproducible output.
    """

    tkey = threews_key_from_spec(key, agent_id)
    source = rng or os.urandom
    files = {
        name: _threews_encrypt(text.encode("utf-8"), tkey, source) for name, text in blob["files"].items()
    }
    profile = get_profile(None)
    links = {name[: -len(".md")]: cid_to_str(file_cid(text.encode("ascii"), profile)) for name, text in files.items()}
    index = render_index(list(blob_entries(blob)), links)
    return {**blob, "index": index, "files": files, "timeline": []}


def blob_entries(blob: Mapping[str, Any]) -> list[Entry]:
    """The entries an index of ``blob``'s plaintext files lists (name, description, type as three.ws reads them)."""
    entries = []
    for name, text in (blob.get("files") or {}).items():
        fm, _body = parse_threews_file(str(name), str(text))
        meta = {k: fm[k] for k in ("name", "description") if isinstance(fm.get(k), str)}
        meta["type"] = fm.get("type") if fm.get("type") in MEMORY_TYPES else "reference"
        meta["x-threews-file"] = str(name)
        entries.append(Entry(str(name)[: -len(".md")], meta, ""))
    return entries


def storage_value(blob: Mapping[str, Any]) -> dict[str, Any]:
    """The value the runtime's ``_persist`` keeps in localStorage for ``blob``: index text, files, last events."""
    return {
        "index": {"text": blob.get("index", "")},
        "files": dict(blob.get("files") or {}),
        "timeline": list(blob.get("timeline") or [])[-STORAGE_TIMELINE:],
    }


def timeline_dropped(options: Mapping[str, Any]) -> str | None:
    """Why :func:`write_threews` leaves the timeline out under ``options``, or ``None`` when it writes it.

    Only the encrypted form drops it (see :func:`encrypt_files`).
    """
    return "has no timeline in its encrypted form" if options.get("key") is not None else None


def read_threews(
    src: str | os.PathLike[str],
    *,
    agent_id: str | None = None,
    now: str | None = None,
    key: KeySpec | None = None,
) -> ForeignTree:
    """Read a three.ws export blob or localStorage dump from a JSON file.

    With ``key`` the files are taken to be in the encrypted per-file form and
    decrypted first (see :func:`decrypt_files`). Without it, an encrypted file
    is refused with a message saying which key options to pass.
    """
    path = Path(src)
    if not path.exists():
        raise ConvertError(f"{path} does not exist; pass a three.ws export or localStorage dump (JSON)")
    # Read up to MAX_STORE_FILE bytes: browsers keep localStorage to a few MiB, so a larger file is no store.
    hint = "pass a three.ws export or localStorage dump (a JSON file)"
    text = read_foreign_text(path, limit=MAX_STORE_FILE, hint=hint)
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise ConvertError(f"{path} is not a JSON file; pass a three.ws export or localStorage dump") from exc
    blob = read_blob(data, agent_id=agent_id, where=str(path))
    if key is not None:
        blob = decrypt_files(blob, key, agent_id)
    else:
        for name, value in (blob.get("files") or {}).items():
            if isinstance(value, str) and _looks_encrypted(value):
                raise ConvertError(
                    f"three.ws file {name!r} in {path} is encrypted; pass the wallet key "
                    "(--signature-env, --signature-file or --private-key-env) and --agent-id"
                )
    return blob_to_tree(blob, now=now)


def write_threews(
    tree: ForeignTree,
    dest: str | os.PathLike[str],
    *,
    namespace: str | None = None,
    mode: str | None = None,
    storage: bool = False,
    key: KeySpec | None = None,
    rng: Callable[[int], bytes] | None = None,
    strict: bool = False,
) -> list[Path]:
    """Write ``tree`` as a three.ws blob to the JSON file ``dest`` (:func:`plan_threews`); return the path.

    With ``strict``, a memory that would be written changed or left out
    refuses the export (``ConvertError``, nothing written).
    """
    options = {"namespace": namespace, "mode": mode, "storage": storage, "key": key, "rng": rng}
    return write_planned("three.ws", plan_threews, tree, dest, strict=strict, **options)


def plan_threews(
    tree: ForeignTree,
    dest: str | os.PathLike[str],
    plan: ExportPlan,
    *,
    namespace: str | None = None,
    mode: str | None = None,
    storage: bool = False,
    key: KeySpec | None = None,
    rng: Callable[[int], bytes] | None = None,
) -> None:
    """Plan ``tree`` as a three.ws blob in the JSON file ``dest`` (losses: :func:`tree_to_blob`).

    With ``storage=True`` the file is a localStorage dump instead:
    ``{"agent:<namespace>:memory": "<blob as a JSON string>"}`` (``namespace``
    is then required). With ``key`` every file is written in three.ws's
    encrypted per-file form keyed to agent ``namespace`` (required), and
    ``mode`` defaults to ``encrypted-ipfs``; otherwise to ``local``.
    """
    mode = mode or ("encrypted-ipfs" if key else "local")
    blob = tree_to_blob(tree, namespace=namespace, mode=mode, plan=plan)
    if key is not None:
        if not namespace:
            raise ConvertError(
                "encrypting for three.ws needs the agent id the key is bound to: pass namespace"
            )
        blob = encrypt_files(blob, key, namespace, rng)
    if storage:
        if not namespace:
            raise ConvertError("a localStorage dump needs the agent id: pass namespace")
        if key is None:
            # The runtime shows a stored index as it is (contextBlock); a blob's it rebuilds on import.
            for entry in tree.entries:
                listed = _Listed(entry)
                index_line_loss(
                    plan, entry.key, listed.name, f"{listed.key}.md", listed.description, "stored index"
                )
        # JSON.stringify's form: no spaces, non-ASCII as itself.
        value = json.dumps(storage_value(blob), ensure_ascii=False, separators=(",", ":"))
        data: Any = {STORAGE_KEY.format(agent_id=namespace): value}
    else:
        data = blob
    plan.add(dest, json.dumps(data, ensure_ascii=False, indent=2) + "\n")


#: This format, as ``bundlekit.convert`` registers it.
FORMAT = Format(
    name="three.ws",
    summary="three.ws export blob or localStorage dump (JSON)",
    read=read_threews,
    write=write_threews,
    read_options=frozenset({"agent_id", "now", "key"}),
    write_options=frozenset({"namespace", "mode", "storage", "key", "rng"}),
    kept=kept("name", "description", "type", "created", "updated", "source", "decay", "tags", "important"),
    lossy="revision; the timeline in the encrypted form; '[', ']', '\\' in a stored index's link text",
    timeline_dropped=timeline_dropped,
)
