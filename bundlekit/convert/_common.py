"""Neutral records shared by every format module, and the helpers they all need.

A format module reads its foreign store into a :class:`ForeignTree` (a list of
:class:`Entry`: a bundlekit key, the full bundlekit frontmatter, the body) and
writes one back out of a ``ForeignTree``. Those two directions are pure
functions over files or databases; only :mod:`bundlekit.convert._tree` touches a
bundlekit memory tree. That keeps each format testable alone.

Conventions every format follows (``specs/interop.md`` has the tables):

* A format's own fields live in frontmatter keys named ``x-<format>-<field>``.
* Timestamps in bundlekit frontmatter are ISO 8601 strings in UTC with a ``Z``
  suffix. A foreign timestamp without a zone is read as UTC.
* Keys derived from foreign names are valid bundlekit keys (see :func:`derive_keys`).
* An export never fails as a whole because of one memory: a writer plans every
  file in an :class:`ExportPlan`, writes a value the target cannot hold exactly
  in its nearest faithful form (:meth:`ExportPlan.altered`) or leaves the
  memory out (:meth:`ExportPlan.left_out`, or :class:`Unholdable` raised from
  :meth:`ExportPlan.memories`), and :func:`write_planned` writes the plan in
  one step: with ``strict`` any such loss refuses the export before the first
  byte is written (``specs/interop.md`` section 1.4).
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any, TypeVar

import yaml

from bundlekit._fs import atomic_write_bytes, os_reason
from bundlekit.errors import ConvertError, DeviceMemoryError, FrontmatterError, InvalidKeyError
from bundlekit.memory.device import is_device_bound
from bundlekit.memory.frontmatter import JS_WHITESPACE, load_frontmatter
from bundlekit.memory.index import link_line
from bundlekit.memory.naming import MAX_KEY_LENGTH, validate_key
from bundlekit.memory.record import MEMORY_TYPES, without_timestamps
from bundlekit.memory.timefmt import format_timestamp

__all__ = [
    "JS_WHITESPACE",
    "KEY_MAX",
    "MAX_MEMORY_FILE",
    "MAX_STORE_FILE",
    "MEMORY_TYPES",
    "Entry",
    "ExportPlan",
    "ForeignTree",
    "Loss",
    "Unholdable",
    "atomic_write",
    "bad_time",
    "check_device",
    "derive_keys",
    "dropped_fields",
    "field_losses",
    "dump_yaml",
    "first_line",
    "index_line_loss",
    "format_time",
    "is_device_entry",
    "is_valid_key",
    "left_out_file",
    "line_fields",
    "line_key_problem",
    "merge_extra",
    "recorded_path_problem",
    "load_yaml",
    "output_dir_problem",
    "parse_time",
    "read_foreign_text",
    "read_frontmatter",
    "read_markdown",
    "render_markdown",
    "same_instant",
    "sanitize_key",
    "single_line",
    "skipped_link",
    "split_at_dashes",
    "split_frontmatter",
    "strict_refusal",
    "time_or",
    "DELIMITER_STANDIN",
    "without_delimiter",
    "write_planned",
]

#: Longest bundlekit key (the memory store's limit).
KEY_MAX = MAX_KEY_LENGTH
_BAD_CHARS = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass
class Entry:
    """One memory in neutral form: its bundlekit key, full frontmatter and body.

    ``meta`` holds the bundlekit fields (``name``, ``description``, ``type``,
    ``created``, ``updated``, optional ``important``, ``revision``, ...) plus the
    namespaced ``x-<format>-*`` keys that carry what only the foreign format has.
    """

    key: str
    meta: dict[str, Any]
    body: str


@dataclass(frozen=True)
class Loss:
    """One memory a conversion could not carry exactly: written changed (``change`` says how) or ``left_out``.

    ``key`` is ``None`` for what is no one memory's: the timeline events a
    format has no place for (``--json``: ``"memory": null``).
    """

    key: str | None
    change: str
    left_out: bool = False

    def warning(self) -> str:
        """The warning naming the memory: ``memory 'k': <change>`` or ``left out memory 'k': <why>``."""
        if self.key is None:
            return self.change
        return f"{'left out memory' if self.left_out else 'memory'} {self.key!r}: {self.change}"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form (``--json``'s ``losses``)."""
        return {"memory": self.key, "change": self.change, "left_out": self.left_out}


@dataclass
class ForeignTree:
    """What a format module reads or writes: entries plus timeline events."""

    entries: list[Entry] = field(default_factory=list)
    timeline: list[dict[str, Any]] = field(default_factory=list)
    #: Things a reader skipped or could not carry, one sentence each.
    warnings: list[str] = field(default_factory=list)
    #: Memories an export wrote changed or left out (each also one of ``warnings``).
    losses: list[Loss] = field(default_factory=list)


class Unholdable(Exception):  # noqa: N818 - a verdict on one memory, caught by ExportPlan.memories
    """Raised while planning one memory: the target cannot hold it in any faithful form, so it is left out.

    The message says why, without the value (it may be anything, a credential included).
    """


_T = TypeVar("_T")


class ExportPlan:
    """Everything an export will write, and every memory it cannot carry exactly, before anything is written.

    A format's planner adds each output file (:meth:`add`) and records each
    loss: a memory written in its nearest faithful form (:meth:`altered`) or
    left out (:meth:`left_out`). :meth:`commit` then writes the files, each
    atomically; with ``strict`` it refuses instead (``ConvertError``, nothing
    written) when there is any loss. One place decides, so no writer can write
    half an export under ``strict``.
    """

    def __init__(self, fmt: str, *, strict: bool = False, earlier: Iterable[Loss] = ()) -> None:
        self.fmt = fmt
        self.strict = strict
        self.losses: list[Loss] = []
        #: Losses found before the plan (fields and timeline the format has no place for, device memory
        #: left out): not the plan's own, but ``strict`` refuses them as well.
        self.earlier = list(earlier)
        self._files: list[tuple[Path, bytes, bool]] = []

    def altered(self, key: str, change: str) -> None:
        """Record that memory ``key`` is written changed, as ``change`` says (the field, never the value)."""
        self.losses.append(Loss(key, change))

    def left_out(self, key: str, why: str) -> None:
        """Record that memory ``key`` is not written at all, and why."""
        self.losses.append(Loss(key, why, left_out=True))

    def lost(self, what: str) -> None:
        """Record a loss that is no one memory's (timeline events left out): ``what`` says it whole."""
        self.losses.append(Loss(None, what, left_out=True))

    def memories(self, entries: Iterable[Entry], plan: Callable[[Entry], _T]) -> list[tuple[Entry, _T]]:
        """``plan(entry)`` for each entry, in order; one raising :class:`Unholdable` is left out."""
        out: list[tuple[Entry, _T]] = []
        for entry in entries:
            try:
                out.append((entry, plan(entry)))
            except Unholdable as exc:
                self.left_out(entry.key, str(exc))
        return out

    def add(self, path: str | os.PathLike[str], data: bytes | str, *, new: bool = False) -> None:
        """Plan ``data`` for ``path``; with ``new`` the export refuses to replace an existing file there."""
        raw = data.encode("utf-8") if isinstance(data, str) else data
        self._files.append((Path(path), raw, new))

    @property
    def paths(self) -> list[Path]:
        """The paths planned, in order."""
        return [path for path, _data, _new in self._files]

    def commit(self) -> list[Path]:
        """Write every planned file (each atomically); return the paths.

        Refuses with ``ConvertError`` before writing anything when ``strict``
        and anything is lost (a memory altered or left out here or
        ``earlier``), or when a ``new`` file exists.
        """
        if self.strict and (self.earlier or self.losses):
            # The plan's own losses first: they are particular to a memory, the earlier ones to the format.
            raise strict_refusal(self.losses + self.earlier, f"as {self.fmt}")
        for path, _data, new in self._files:
            if new and (path.exists() or path.is_symlink()):
                raise ConvertError(f"{path} already exists; export to a new file")
            if problem := _in_the_way(path):
                raise ConvertError(f"cannot write {path}: {problem}; choose another output path (nothing was written)")
        for path, data, _new in self._files:
            atomic_write(path, data)
        return self.paths


def _in_the_way(path: Path) -> str | None:
    """Why ``path`` cannot be written as a file, found before any file of an export is: a directory (or a link
    to one, which the rename would replace) at it, or a file where one of its parents must be a directory."""
    if path.is_dir():
        return "a directory is in the way"
    for parent in path.parents:
        if parent.exists():
            return None if parent.is_dir() else f"a file is in the way at {parent}, where a directory is needed"
    return None


def merge_extra(
    plan: ExportPlan,
    key: str,
    field: str,
    extra: object,
    into: dict[str, Any],
    *,
    reserved: Iterable[str] = (),
) -> None:
    """Add a memory's ``x-<format>-extra`` mapping ``extra`` to the fields ``into``; fields already there win.

    A key a line reader could misread (:func:`line_key_problem`) or one of
    ``reserved`` (a field the format has, which an extra must not steer) is not
    written, and that is recorded in ``plan`` as a change to memory ``key``.
    """
    if not isinstance(extra, Mapping):
        return
    taboo = set(reserved)
    for k, v in extra.items():
        name = str(k)
        problem = line_key_problem(name) or ("is a field the format has" if name in taboo else None)
        if problem:
            plan.altered(key, f"{field} key {name!r} {problem}; not written")
        elif name not in into:
            into[name] = v


def index_line_loss(
    plan: ExportPlan, key: str, title: str, target: str, description: str, index: str
) -> None:
    """Record a loss when memory ``key``'s link line in the target's ``index`` cannot show its text as is.

    The one index renderer (``bundlekit.memory.index.link_line``) writes ``[``,
    ``]`` and ``\\`` as ``&#91;``, ``&#93;``, ``&#92;`` and withholds what looks
    like a credential; a target that shows its index text raw (Claude Code's
    ``MEMORY.md``, three.ws's stored index in a prompt) shows that instead of
    the name or description. The memory's own file still holds it exactly.
    """
    raw = f"- [{title}]({target})" + (f" \u2014 {description}" if description else "")
    if link_line(title, target, description) != raw:
        plan.altered(
            key,
            f"name or description: its {index} link line shows '[', ']' or '\\' as &#91; &#93; &#92; "
            "(or withholds a credential-like text); the memory's file holds it as is",
        )


def strict_refusal(losses: list[Loss], where: str) -> ConvertError:
    """The error of a strict conversion with ``losses`` (``where``: "as massgen", ...), naming the first five.

    It counts the memories (and says whether the timeline) that cannot be carried.
    """
    keys = {loss.key for loss in losses if loss.key is not None}
    what = [f"{len(keys)} {'memory' if len(keys) == 1 else 'memories'}"] if keys else []
    if any(loss.key is None for loss in losses):
        what.append("the timeline")
    shown = "; ".join(loss.warning() for loss in losses[:5])
    more = f"; and {len(losses) - 5} more" if len(losses) > 5 else ""
    return ConvertError(
        f"{' and '.join(what)} cannot be carried exactly {where} (strict): {shown}{more}; nothing was written"
    )


def write_planned(
    fmt: str,
    planner: Callable[..., None],
    tree: ForeignTree,
    dest: str | os.PathLike[str],
    *,
    strict: bool = False,
    **options: Any,
) -> list[Path]:
    """Run ``planner(tree, dest, plan, **options)``, then commit the plan; the one way every writer writes.

    The losses reach ``tree.losses`` and, as warnings naming each memory,
    ``tree.warnings``; with ``strict``, the losses already in ``tree.losses``
    refuse the export too. Returns the paths written.
    """
    plan = ExportPlan(fmt, strict=strict, earlier=tree.losses)
    planner(tree, dest, plan, **options)
    paths = plan.commit()
    tree.losses.extend(plan.losses)
    tree.warnings.extend(loss.warning() for loss in plan.losses)
    return paths


def is_valid_key(key: str) -> bool:
    """True when ``key`` is a portable bundlekit key (ignoring uniqueness): the memory store's rules."""
    try:
        validate_key(key)
    except InvalidKeyError:
        return False
    return True


def sanitize_key(name: str) -> str:
    """Turn any foreign name into a valid bundlekit key, deterministically.

    Runs of characters outside ``[A-Za-z0-9_.-]`` become one ``_``; leading dots
    are dropped; the result is cut to :data:`KEY_MAX`; an empty result becomes
    ``untitled`` and the reserved ``MEMORY`` becomes ``MEMORY_``.
    """
    key = _BAD_CHARS.sub("_", name).lstrip(".")
    key = key[:KEY_MAX].rstrip(".") or "untitled"
    if key.upper() == "MEMORY":
        key = key + "_"
    return key


def derive_keys(names: Iterable[str]) -> list[str]:
    """Derive one unique (ignoring case) valid key per name, in input order.

    A name that is already a valid key and does not collide is kept as is.
    Colliding keys get ``-2``, ``-3``, ... in input order, so callers must pass
    names in a deterministic order. The caller records the original name in a
    namespaced key whenever the key differs from it.
    """
    taken: set[str] = set()
    out: list[str] = []
    for name in names:
        base = sanitize_key(name)
        key = base
        n = 2
        while key.lower() in taken:
            suffix = f"-{n}"
            key = base[: KEY_MAX - len(suffix)] + suffix
            n += 1
        taken.add(key.lower())
        out.append(key)
    return out


def parse_time(value: object, *, what: str = "timestamp") -> datetime:
    """Parse a timestamp from frontmatter or a foreign store into aware UTC.

    Accepts ``datetime`` (naive means UTC), ``date`` (midnight UTC), ISO 8601
    strings with or without a zone (none means UTC) and a ``Z`` suffix.
    Raises :class:`ConvertError` for anything else.
    """
    if isinstance(value, datetime):
        dt = value
    elif isinstance(value, date):
        dt = datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        text = value.strip()
        try:
            dt = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
        except ValueError as exc:
            raise ConvertError(
                f"{what} is not an ISO 8601 timestamp (e.g. 2026-04-14T12:03:12Z); fix or remove it"
            ) from exc
    else:
        raise ConvertError(
            f"{what} is not an ISO 8601 timestamp (e.g. 2026-04-14T12:03:12Z); fix or remove it"
        )
    if dt.tzinfo is None:
        return dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC)


def format_time(dt: datetime) -> str:
    """Render an aware datetime as bundlekit writes it: ISO 8601, UTC, whole seconds, ``Z``.

    Fractions of a second are dropped (the memory store keeps whole seconds);
    formats that carry finer times keep their original spelling in an
    ``x-<format>-*`` key, see :func:`same_instant`. The memory store's own
    :func:`~bundlekit.memory.timefmt.format_timestamp` (a naive value is UTC).
    """
    return format_timestamp(dt)


def _yaml_value(value: Any) -> Any:
    # Dates and datetimes become strings, so every writer of a file gets the
    # same bytes whatever type a reader handed us.
    if isinstance(value, datetime):
        return format_time(parse_time(value))
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(k): _yaml_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_yaml_value(v) for v in value]
    return value


class _KeepDumper(yaml.SafeDumper):
    """Safe dumper that writes date-like strings bare (as they were read) and never uses aliases."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


# Foreign files are read and written back with dates as text: a bare
# ``created: 2026-03-22`` stays exactly that, in both directions.
_KeepDumper.yaml_implicit_resolvers = without_timestamps(yaml.SafeDumper.yaml_implicit_resolvers)


def load_yaml(text: str, *, where: str) -> dict[str, Any]:
    """Parse foreign frontmatter (safe YAML, timestamps kept as strings) into a mapping.

    The memory store's bounded reader (``bundlekit.memory.frontmatter``: no
    aliases or tags, 64-bit integers, a value budget). Raises ``ConvertError``
    naming ``where`` for bad YAML or a non-mapping.
    """
    if not text.strip():
        return {}
    try:
        data = load_frontmatter(text, where=where)
    except FrontmatterError as exc:
        raise ConvertError(f"malformed YAML frontmatter in {where}; fix it and retry ({exc})") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConvertError(f"frontmatter of {where} is not a mapping of keys to values; fix it and retry")
    return {str(k): v for k, v in data.items()}


def dump_yaml(mapping: Mapping[str, Any]) -> str:
    """Dump a mapping as block YAML in the given key order, one line per scalar."""
    return yaml.dump(
        {str(k): _yaml_value(v) for k, v in mapping.items()},
        Dumper=_KeepDumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=1_000_000,
    )


def render_markdown(meta: Mapping[str, Any], body: str) -> str:
    """Render frontmatter (real YAML, keys in the given order) and a body."""
    dumped = dump_yaml(meta)
    text = f"---\n{dumped}---\n"
    body = body.strip("\n")
    return text + ("\n" + body + "\n" if body else "")


def split_frontmatter(text: str) -> tuple[str | None, str]:
    """Split ``---`` fenced frontmatter from a Markdown text.

    Returns ``(frontmatter_text, body)``; ``frontmatter_text`` is None when the
    text does not open with a ``---`` line or the fence is never closed.
    The body loses the blank lines right after the fence and at its end.
    """
    text = text.removeprefix("\ufeff")
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip("\r\n").rstrip() != "---":
        return None, text.strip("\r\n")
    for i in range(1, len(lines)):
        if lines[i].rstrip("\r\n").rstrip() == "---":
            fm = "".join(lines[1:i])
            body = "".join(lines[i + 1 :])
            return fm, body.strip("\r\n")
    return None, text.strip("\r\n")


def split_at_dashes(text: str) -> tuple[str | None, str]:
    """Split frontmatter the way MassGen (``content.split("---", 2)``) and Claude Code find it.

    The text must start with ``---``; the frontmatter then ends at the next
    ``---`` *anywhere*, even inside a value. Returns ``(frontmatter_text,
    body)`` with both stripped of surrounding whitespace, or ``(None, text)``
    when there is no such frontmatter.
    """
    if not text.startswith("---"):
        return None, text.strip()
    parts = text.split("---", 2)
    if len(parts) < 3:
        return None, text.strip()
    return parts[1].strip(), parts[2].strip()


def line_fields(text: str) -> dict[str, str]:
    """``key: value`` lines split on the first colon, both sides stripped (the non-YAML readers' rule)."""
    fields: dict[str, str] = {}
    for line in text.split("\n"):
        line = line.strip()
        if ":" in line:
            k, v = line.split(":", 1)
            fields[k.strip()] = v.strip()
    return fields


def read_frontmatter(fm_text: str | None, *, where: str, warnings: list[str]) -> dict[str, Any]:
    """Parse foreign frontmatter as YAML; when that fails, read it line by line and warn.

    The fallback is the first-colon line splitter (what MassGen and three.ws
    use): a file an agent wrote by hand with ``description: Note: x`` is read as
    the agent meant it, and ``warnings`` says which file was read that way.
    """
    if fm_text is None:
        return {}
    try:
        return load_yaml(fm_text, where=where)
    except ConvertError:
        warnings.append(f"{where}: frontmatter is not valid YAML; read it line by line (key: value)")
        return dict(line_fields(fm_text))


def _dropped(entry: Entry, keep: set[str], fmt: str) -> list[str]:
    """The fields of ``entry`` a writer for ``fmt`` keeping ``keep`` leaves out, sorted.

    The format's own ``x-<fmt>-*`` keys are carried by definition, and so is a
    field whose original the format recorded in ``x-<fmt>-<field>``.
    """
    own = f"x-{fmt.replace('.', '')}-"
    return sorted(
        k for k, v in entry.meta.items()
        if v is not None and k not in keep and not k.startswith(own) and f"{own}{k}" not in entry.meta
    )


def dropped_fields(entries: Iterable[Entry], kept: Iterable[str], fmt: str) -> list[str]:
    """One warning naming the frontmatter fields a writer for ``fmt`` leaves out, with counts.

    ``kept`` are the fields the writer carries (see :func:`_dropped`). Returns
    ``[]`` when nothing is left out; :func:`field_losses` names each memory.
    """
    keep = set(kept)
    counts: dict[str, int] = {}
    for entry in entries:
        for k in _dropped(entry, keep, fmt):
            counts[k] = counts.get(k, 0) + 1
    if not counts:
        return []
    parts = [f"{k} ({n} {'memory' if n == 1 else 'memories'})" for k, n in sorted(counts.items())]
    return [f"left out fields {fmt} has no place for: {', '.join(parts)}"]


def field_losses(entries: Iterable[Entry], kept: Iterable[str], fmt: str) -> list[Loss]:
    """One loss per memory holding fields a writer for ``fmt`` leaves out, naming them (never their values).

    The fields :func:`dropped_fields` counts in one warning; these go to
    ``losses``, so ``--json`` names each memory and ``--strict`` refuses them.
    """
    keep = set(kept)
    out: list[Loss] = []
    for entry in entries:
        names = _dropped(entry, keep, fmt)
        if names:
            them = "it" if len(names) == 1 else "them"
            out.append(Loss(entry.key, f"{', '.join(names)}: {fmt} has no place for {them}; not written"))
    return out


#: Bytes one foreign memory file (Markdown) may hold; a larger one is no memory.
MAX_MEMORY_FILE = 16 * 1024 * 1024
#: Bytes a whole foreign store in one file may hold (three.ws JSON: localStorage holds a few MiB).
MAX_STORE_FILE = 16 * 1024 * 1024


def read_foreign_text(path: str | os.PathLike[str], *, limit: int = MAX_MEMORY_FILE, hint: str = "") -> str:
    """The UTF-8 text of the foreign file ``path``, read only up to ``limit`` bytes.

    Raises :class:`ConvertError` naming ``path`` when it is larger than
    ``limit``, is not UTF-8 text or cannot be read (then ``hint`` follows),
    without reading more than ``limit + 1`` bytes (a 300 MB file is refused,
    not loaded).
    """
    where = os.fspath(path)
    try:
        with open(path, "rb") as fh:
            raw = fh.read(limit + 1)
    except OSError as exc:
        raise ConvertError(f"cannot read {where}: {os_reason(exc)}" + (f"; {hint}" if hint else "")) from exc
    if len(raw) > limit:
        mib = limit // (1024 * 1024)
        raise ConvertError(f"{where} is larger than {mib} MiB, more than foreign input is read")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConvertError(f"{where} is not UTF-8 text; convert it and retry") from exc


def read_markdown(path: os.PathLike[str]) -> tuple[dict[str, Any], str]:
    """Read a foreign Markdown file: its frontmatter (``{}`` when it has none) and its body.

    Raises :class:`ConvertError` naming ``path`` when it cannot be read (see
    :func:`read_foreign_text`) or its frontmatter is malformed.
    """
    fm_text, body = split_frontmatter(read_foreign_text(path))
    return (load_yaml(fm_text, where=os.fspath(path)) if fm_text is not None else {}), body


def left_out_file(tree: ForeignTree, path: str | os.PathLike[str], exc: ConvertError) -> None:
    """Record that the foreign memory file ``path`` is not imported, because of ``exc`` (a loss, a warning).

    One file that cannot be read never blocks the others (``specs/interop.md`` section 1.4).
    """
    tree.losses.append(Loss(os.fspath(path), str(exc), left_out=True))
    tree.warnings.append(f"{exc}; left out (the other files are read)")


def bad_time(tree: ForeignTree, where: str, field: str) -> None:
    """Record that ``field`` of the foreign file ``where`` is no timestamp: the file's time is used."""
    loss = Loss(where, f"{field} is not an ISO 8601 timestamp; the file's time is used")
    if tree.losses[-1:] != [loss]:  # one value read for both created and updated is one loss
        tree.losses.append(loss)
        tree.warnings.append(f"{where}: {loss.change}")


def time_or(tree: ForeignTree, value: object, fallback: str, *, where: str, field: str) -> str:
    """``value`` as a bundlekit timestamp, or ``fallback`` (the file's time) with a loss when it is none."""
    try:
        return format_time(parse_time(value, what=f"{field} in {where}"))
    except ConvertError:
        bad_time(tree, where, field)
        return fallback


def skipped_link(path: Path, warnings: list[str]) -> bool:
    """Whether ``path`` is a symbolic link, which an importer leaves out (and says so in ``warnings``).

    A link inside a foreign store may point anywhere on the machine (``/etc/passwd``, a key file);
    following it would copy that file into a memory tree that may be published.
    """
    if not path.is_symlink():
        return False
    warnings.append(f"skipped {path}: a symbolic link (not followed; copy the file in instead)")
    return True


def first_line(body: str, limit: int = 120) -> str:
    """First non-empty line of a body, without Markdown heading marks, cut to ``limit``."""
    for line in body.splitlines():
        line = line.strip().lstrip("#").strip()
        if line:
            return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"
    return ""


def _has_control(text: str) -> bool:
    """Whether ``text`` holds a control character or a line or paragraph separator (NUL, LF, U+2028...)."""
    return any(unicodedata.category(c) in ("Cc", "Zl", "Zp") for c in text)


def recorded_path_problem(rel: str) -> str | None:
    """Why a relative path recorded in a memory (``x-<format>-file``) cannot name a file, or ``None``.

    It must be relative, in ``/`` form, with no empty, ``.``, ``..`` or hidden
    part, no backslash, and no NUL or other control character (no file system
    name holds one, and a line break would split an index line).
    """
    if _has_control(rel):
        return "holds a NUL, line break or other control character"
    if "\\" in rel:
        return "holds a backslash"
    parts = rel.split("/")
    if rel.startswith("/") or any(p in ("", ".", "..") or p.startswith(".") for p in parts):
        return "is not a plain relative path (absolute, empty, '..' or hidden part)"
    return None


#: What a line-based reader must never meet inside a key: the frontmatter fence and the field separator.
_KEY_MARKS = ("---", ":")


def line_key_problem(key: str) -> str | None:
    """Why ``key`` cannot be written as the key of a ``key: value`` line, or ``None`` when it can.

    A key must be non-empty, without surrounding spaces (readers strip them, so
    `` name`` would read as ``name``), without any line break or other control
    character (Python's ``splitlines`` set included), colon or ``---``: any of
    those would let the key end its line, split it elsewhere or close the
    frontmatter, and so write a field the memory never had.
    """
    if not key or key != key.strip():
        return "is empty or has surrounding spaces"
    if _has_control(key):
        return "holds a line break or control character"
    for mark in _KEY_MARKS:
        if mark in key:
            return f"holds {mark!r}"
    return None


#: What replaces ``---`` inside a value written to a format whose reader ends the frontmatter at the
#: first ``---`` anywhere (MassGen, Claude Code): an em dash, the typographic reading of ``---``.
DELIMITER_STANDIN = "\u2014"


def without_delimiter(text: str) -> str:
    """``text`` with every ``---`` replaced by an em dash (:data:`DELIMITER_STANDIN`); the rest as is."""
    return text.replace("---", DELIMITER_STANDIN)


def single_line(value: object) -> str:
    """A value flattened to one line: line breaks and tabs become spaces, ends trimmed."""
    return " ".join(str(value).replace("\t", " ").splitlines()).strip()


def output_dir_problem(exc: OSError) -> str:
    """What went wrong creating an output directory, in words (``makedirs`` says "File exists" for a file in the way)."""
    return os_reason(exc)


def atomic_write(path: str | os.PathLike[str], data: bytes | str) -> None:
    """Write ``data`` to ``path`` atomically (``bundlekit._fs``: temp file beside it, fsync, rename).

    Parent directories are created. Nothing half-written is ever left at ``path``.
    Raises :class:`ConvertError` when the file cannot be written (a parent is a
    file, ``path`` is a directory, no permission, disk full), naming ``path``.
    """
    raw = data.encode("utf-8") if isinstance(data, str) else data
    atomic_write_bytes(path, raw, error=ConvertError, hint="choose another output path", parents=True)


def same_instant(original: Any, current: Any) -> Any:
    """``original`` when it denotes the same second as ``current``, else ``current``.

    Lets a writer give a foreign timestamp back in its own spelling (a bare
    date, no zone, milliseconds, ...) as long as nobody changed it in between.
    The comparison is to the second because bundlekit keeps whole seconds.
    """
    if current is None:
        return original
    try:
        if parse_time(original).replace(microsecond=0) == parse_time(current).replace(microsecond=0):
            return original
    except ConvertError:
        pass
    return current


# -- the device rule ------------------------------------------------------------------------------


def is_device_entry(entry: Entry) -> bool:
    """True for memory bound to one machine (a MagicFrog device note)."""
    return is_device_bound(entry.meta)


def check_device(entries: list[Entry], *, include_device: bool, local_only: bool, action: str) -> list[Entry]:
    """Apply the device rule to ``entries`` before they move anywhere.

    Returns the entries allowed to move. Device entries pass only with
    ``include_device`` and ``local_only`` both set; otherwise any device entry
    raises ``DeviceMemoryError`` naming how many there are and the two ways out.
    """
    device = [e for e in entries if is_device_entry(e)]
    if not device:
        return entries
    if include_device and local_only:
        return entries
    if include_device:
        raise DeviceMemoryError(
            f"refusing to {action} {len(device)} device memories without --local-only: "
            "device memory never leaves this machine; add --local-only to make a local copy"
        )
    raise DeviceMemoryError(
        f"refusing to {action} {len(device)} device memories (first: {device[0].key!r}): device memory "
        "never leaves this machine; pass --exclude-device to leave them out, or "
        "--include-device --local-only for a copy that stays on this machine"
    )
