"""Frontmatter text <-> mapping: a bounded YAML reader, a writer that quotes only when it must, three.ws's line reader.

Two kinds of program read a memory file's frontmatter: YAML parsers
(bundlekit, Claude Code) and line readers, which split each line at its first
``:`` and trim both sides with no unquoting (three.ws's ``parseFrontmatter`` in
``src/memory/index.js`` of ``nirholas/three.ws``; MassGen's
``_parse_memory_file``). :func:`dump_frontmatter` writes each text value plain
(no quotes, no escapes) whenever both kinds read that line as the same text,
and otherwise as a YAML double-quoted scalar, the form Claude Code itself writes
for such text: every YAML reader decodes it to exactly the text given, and a
line reader shows it with its quotes (and escapes), which an export to such a
system reports (specs/memory.md, "Canonical rendering"). Nothing a user gives
as text is refused for its characters. Lists and mappings are written in YAML
flow style on their key's line (``tags: [a, b]``: a line reader sees that text
as the value, never a stray key).

:func:`load_frontmatter` reads YAML within budgets, because a file may come
from anywhere: no anchors or aliases (a few hundred bytes of aliases expand to
gigabytes), no explicit tags (``!!int ''`` and friends crash constructors), at
most :data:`MAX_NODES` nodes nested at most :data:`MAX_DEPTH` deep, integers
within 64 bits. Every failure is a :class:`FrontmatterError` naming the line.

:func:`split_lines` is three.ws's reader, for foreign files YAML cannot read.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping
from typing import Any, Final

from bundlekit.errors import FrontmatterError

__all__ = [
    "MAX_DEPTH",
    "MAX_INT",
    "MAX_NODES",
    "YAML_TIMESTAMP_TAG",
    "dump_frontmatter",
    "load_frontmatter",
    "plain_problem",
    "plainer",
    "reads_back",
    "split_lines",
    "JS_WHITESPACE",
    "without_timestamps",
]

MAX_NODES: Final = 10_000
MAX_DEPTH: Final = 64
MAX_INT: Final = 2**63 - 1
YAML_TIMESTAMP_TAG: Final = "tag:yaml.org,2002:timestamp"
_STR_TAG = "tag:yaml.org,2002:str"
_INT_TAG = "tag:yaml.org,2002:int"
# Longer than any 64-bit integer in any YAML spelling (binary, with underscores, sexagesimal).
_MAX_INT_TEXT = 80
_NEVER_FOLD = 2**62


def without_timestamps(resolvers: dict[Any, list[tuple[str, Any]]]) -> dict[Any, list[tuple[str, Any]]]:
    """A YAML class's ``yaml_implicit_resolvers`` without the timestamp one: dates stay the text written."""
    return {
        first: [(tag, regexp) for tag, regexp in entries if tag != YAML_TIMESTAMP_TAG]
        for first, entries in resolvers.items()
    }


class _Yaml:
    """PyYAML and the objects this module builds on it, made on first use (:func:`_yaml`).

    Importing PyYAML costs about 9 ms, and a command reading an indexed tree
    that has not changed parses no YAML at all: ``recall``, ``list`` and
    ``context`` run on every agent turn, so they do not pay it.
    """

    def __init__(self) -> None:
        import yaml  # lazy: see the class docstring (tests/architecture/test_layers.py allows it)

        base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

        class Loader(base):  # type: ignore[misc,valid-type]
            """Safe YAML loader that leaves timestamps as strings (what was written is what is read)."""

        class Resolver(yaml.resolver.Resolver):
            """The implicit typing ``Loader`` applies, usable without a stream."""

        class Analyzer(yaml.SafeDumper):
            """Only for ``analyze_scalar``: whether PyYAML's emitter may write a string plain."""

        Loader.yaml_implicit_resolvers = without_timestamps(yaml.SafeLoader.yaml_implicit_resolvers)
        Resolver.yaml_implicit_resolvers = Loader.yaml_implicit_resolvers
        self.yaml = yaml
        self.loader: Any = Loader
        self.resolver = Resolver()
        self.analyzer = Analyzer(None, allow_unicode=True)  # type: ignore[arg-type]  # never writes
        self.int_builder = yaml.SafeLoader("")


@functools.cache
def _yaml() -> _Yaml:
    return _Yaml()


def _where_line(where: str, mark: Any, first_line: int) -> str:
    return f"{where} line {mark.line + first_line}" if mark is not None else f"{where}: frontmatter"


# Text that PyYAML reads as a plain string scalar, in block and flow context, without asking it (so a write of
# ordinary text loads no YAML; tests/memory/test_plain_text.py checks each claim against PyYAML itself):
# letters, digits and single inner spaces starting with a letter. PyYAML's implicit typing (yaml/resolver.py,
# PyYAML 6.0.x) picks its patterns by a scalar's first character, and the only ones for a letter are the
# boolean and null words below (y Y n N t T f F o O); the timestamp pattern is left out by our loader.
# The emitter writes such text plain anywhere (no indicator, break, or special character).
# (Patterns as text: compiled on first use by ``re``, which caches them; reads never need them.)
_PLAIN_TEXT = r"[A-Za-z][A-Za-z0-9]*(?: [A-Za-z0-9]+)*"
_YAML_WORDS = frozenset(
    "yes Yes YES no No NO true True TRUE false False FALSE on On ON off Off OFF null Null NULL".split()  # noqa: SIM905
)
# Our canonical timestamps (timefmt): a digit first, so PyYAML's number patterns are tried, and none matches
# ('-' after four digits); plain in block context (':' is never followed by a space).
_TIMESTAMP = r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z"


def _plain_text(value: str, flow: bool) -> bool:
    """Whether ``value`` is certainly read and written as plain text by PyYAML (see ``_PLAIN_TEXT``)."""
    if re.fullmatch(_PLAIN_TEXT, value):
        return value not in _YAML_WORDS
    return not flow and re.fullmatch(_TIMESTAMP, value) is not None


def reads_back(meta: Mapping[str, Any]) -> bool:
    """Whether YAML certainly reads :func:`dump_frontmatter`'s text of ``meta`` back as ``meta`` itself,
    without asking PyYAML: keys and texts plain (``_plain_text``), integers within 64 bits, booleans, and
    flat lists of plain texts, within the loader's node budget."""
    nodes = 1
    for key, value in meta.items():
        nodes += 2
        if not (isinstance(key, str) and _plain_text(key, False)):
            return False
        if isinstance(value, list):
            nodes += len(value)
            if not all(isinstance(item, str) and _plain_text(item, True) for item in value):
                return False
        elif isinstance(value, str):
            if not _plain_text(value, False):
                return False
        elif not (isinstance(value, int) and abs(value) <= MAX_INT):  # bool is an int
            return False
    return nodes <= MAX_NODES


def _resolve(value: str) -> str:
    if _plain_text(value, False):
        return _STR_TAG
    y = _yaml()
    tag: str = y.resolver.resolve(y.yaml.ScalarNode, value, (True, False))  # type: ignore[no-untyped-call]
    return tag


def _check_int(value: str, where: str, mark: Any, first_line: int) -> None:
    if len(value) > _MAX_INT_TEXT:
        raise FrontmatterError(
            f"{_where_line(where, mark, first_line)}: an integer longer than 64 bits; write it as text"
        )
    y = _yaml()
    number = y.int_builder.construct_yaml_int(y.yaml.ScalarNode(_INT_TAG, value))
    if abs(number) > MAX_INT:
        raise FrontmatterError(
            f"{_where_line(where, mark, first_line)}: an integer outside 64 bits; write it as text"
        )


def _check_events(text: str, where: str, first_line: int) -> None:
    """Walk the YAML events once, refusing what must never reach the constructor (module docstring)."""
    yaml = _yaml().yaml
    nodes = 0
    depth = 0
    for event in yaml.parse(text, Loader=_yaml().loader):
        mark = event.start_mark
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise FrontmatterError(
                f"{_where_line(where, mark, first_line)}: YAML anchors and aliases (& and *) are not accepted; write the value out"
            )
        if isinstance(event, (yaml.ScalarEvent, yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            if event.tag is not None:
                raise FrontmatterError(
                    f"{_where_line(where, mark, first_line)}: YAML tags (such as !!int or !!bool) are not accepted; "
                    "write the plain value"
                )
            nodes += 1
            if nodes > MAX_NODES:
                raise FrontmatterError(
                    f"{_where_line(where, mark, first_line)}: more than {MAX_NODES} values in the frontmatter"
                )
        if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                raise FrontmatterError(
                    f"{_where_line(where, mark, first_line)}: values nested more than {MAX_DEPTH} deep"
                )
        elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            depth -= 1
        elif isinstance(event, yaml.ScalarEvent) and event.implicit[0] and _resolve(event.value) == _INT_TAG:
            _check_int(event.value, where, mark, first_line)


def _wrong_mark(exc: Any) -> Any:
    """Where a YAML error's wrong line is: where an unclosed flow collection or quoted scalar began (PyYAML
    marks the line after it, where it noticed: ``tags: [unclosed`` then ``created: ...``), else where the
    problem was found."""
    context = getattr(exc, "context", None) or ""
    opened = getattr(exc, "context_mark", None)
    if opened is not None and ("flow" in context or "quoted" in context):
        return opened
    return getattr(exc, "problem_mark", None)


def load_frontmatter(text: str, *, where: str, first_line: int = 2) -> Any:
    """Parse frontmatter YAML (timestamps kept as strings) within the module's budgets.

    ``first_line`` is the file's line number of ``text``'s first line (2: right
    after the opening ``---``), so errors name the line of the file.
    Returns what the YAML holds (the caller checks it is a mapping). Raises
    :class:`FrontmatterError` naming ``where`` and the line for bad YAML, an
    anchor, alias or tag, too many or too deep values, an integer outside 64
    bits, and anything else a constructor trips on.
    """
    y = _yaml()
    try:
        _check_events(text, where, first_line)
        return y.yaml.load(text, Loader=y.loader)
    except FrontmatterError:
        raise
    except y.yaml.YAMLError as exc:
        mark = _wrong_mark(exc)
        raise FrontmatterError(
            f"{_where_line(where, mark, first_line)}: frontmatter is not valid YAML; fix the syntax"
        ) from exc
    except (
        ValueError,
        TypeError,
        KeyError,
        IndexError,
        AttributeError,
        OverflowError,
        RecursionError,
    ) as exc:
        raise FrontmatterError(f"{where}: frontmatter holds a value YAML cannot read; fix it") from exc


#: JavaScript's whitespace (ECMA-262 WhiteSpace and LineTerminator: what ``\s`` matches and
#: ``String.prototype.trim`` removes), which the JavaScript readers of three.ws and Magic Context use. Not
#: Python's set: ``str.strip()`` keeps U+FEFF and removes U+0085 and U+001C-U+001F, which JavaScript keeps.
JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680"
    + "".join(chr(c) for c in range(0x2000, 0x200B))
    + "\u2028\u2029\u202f\u205f\u3000\ufeff"
)


def split_lines(text: str) -> dict[str, str]:
    """three.ws's frontmatter reader: each line split at its first ``:``, both sides trimmed as JavaScript trims.

    A line without a colon becomes a key with an empty value; a line with
    nothing before its colon is skipped; a later key replaces an earlier one.
    Every value is a string, exactly as three.ws's ``parseFrontmatter`` sees it.
    """
    meta: dict[str, str] = {}
    for line in text.split("\n"):
        key, _, value = line.partition(":")
        if not key:
            continue
        meta[key.strip(JS_WHITESPACE)] = value.strip(JS_WHITESPACE)
    return meta


def _problem(value: str, flow: bool) -> str | None:
    """Why ``value`` has no plain form that YAML and a line reader both read as ``value``, or ``None``."""
    if _plain_text(value, flow):  # every check below passes such text: none is run, nor PyYAML loaded
        return None
    if not value:
        return "is empty (YAML reads an empty value as null)"
    if value != value.strip() or value != value.strip(JS_WHITESPACE):
        return "has leading or trailing white space (a line reader trims it)"
    if value.splitlines() != [value]:
        return "holds a line break"
    if ": " in value or value.endswith(":"):
        return "holds ': ' or ends with ':' (YAML reads that only in quotes)"
    if " #" in value or value.startswith("#"):
        return "holds ' #' or starts with '#' (YAML reads a comment there)"
    if _resolve(value) != _STR_TAG:
        return "reads as a boolean, number or null in YAML, not as text (e.g. yes, 12, null)"
    analysis = _yaml().analyzer.analyze_scalar(value)
    if not (analysis.allow_flow_plain if flow else analysis.allow_block_plain):
        where = "a YAML indicator ( - ? : , [ ] { } # & * ! | > ' \" % @ ` )"
        if flow:
            return f"starts with {where}, holds a flow indicator or a control character"
        return f"starts with {where} or holds a control character such as a tab"
    return None


def plain_problem(value: str, *, flow: bool = False) -> str | None:
    """Why ``value`` cannot be written as a plain scalar both kinds of reader read alike (so it is written
    double-quoted, and a line reader shows the quotes), or ``None``.

    ``flow`` is for an item inside ``[...]`` or ``{...}``, where ``,`` and
    brackets are also taken.
    """
    return _problem(value, flow)


def plainer(value: str) -> str:
    """``value`` with each ``': '`` and ``' #'`` given a no-break space (U+00A0) instead of the space.

    For an importer (which reports it) of values written by three.ws, whose
    runtime writes them unquoted (``description: Note: written by three.ws``):
    YAML reads such text only in quotes, which the runtime would then keep.
    With the no-break space the text looks the same and both kinds of reader
    read it alike. Nothing else is changed.
    """
    return value.replace(": ", ":\u00a0").replace(" #", "\u00a0#")


def _quoted(value: str) -> str:
    """``value`` as a YAML double-quoted scalar on one line (PyYAML's escapes; never folded: the width is
    beyond any text a file can hold)."""
    yaml = _yaml().yaml
    dumped = yaml.dump(value, Dumper=yaml.SafeDumper, default_style='"', allow_unicode=True, width=_NEVER_FOLD)
    return str(dumped).rstrip("\n")


def _scalar(value: Any, key: str, where: str, *, flow: bool) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        if abs(value) > MAX_INT:
            raise FrontmatterError(f"{where}: frontmatter {key!r} holds an integer outside 64 bits; write it as text")
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return ".nan"
        if math.isinf(value):
            return ".inf" if value > 0 else "-.inf"
        # PyYAML's own spelling of a float, which every YAML reader resolves back to the float.
        return str(_yaml().yaml.safe_dump(value)).split("\n", 1)[0]
    if isinstance(value, str):
        return value if _problem(value, flow) is None else _quoted(value)
    raise FrontmatterError(
        f"{where}: frontmatter {key!r} is not plain data (strings, numbers, booleans, lists, mappings) "
        "and cannot be written as YAML"
    )


def _flow(value: Any, key: str, where: str) -> str:
    if isinstance(value, Mapping):
        items = (f"{_flow_key(k, key, where)}: {_flow(v, key, where)}" for k, v in value.items())
        return "{" + ", ".join(items) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_flow(v, key, where) for v in value) + "]"
    return _scalar(value, key, where, flow=True)


def _flow_key(name: Any, key: str, where: str) -> str:
    if not isinstance(name, str):
        raise FrontmatterError(f"{where}: frontmatter {key!r} holds a mapping with a key that is not text")
    return _scalar(name, key, where, flow=True)


def dump_frontmatter(meta: Mapping[str, Any], *, where: str) -> str:
    """The frontmatter lines (each ending in ``\\n``) of ``meta`` in its order: ``key: value``.

    Scalars plain where YAML and a line reader read the same text, else
    double-quoted; lists and mappings in flow style on one line (module
    docstring); a key that is not plain text without ``:`` is double-quoted.
    Raises :class:`FrontmatterError` naming ``where`` and the key for what is
    not plain data or an integer outside 64 bits.
    """
    lines = []
    for key, value in meta.items():
        if not isinstance(key, str):
            raise FrontmatterError(f"{where}: frontmatter keys must be text, found a {type(key).__name__} key")
        # Schema keys are plain words; another key three.ws's reader could not split is quoted.
        label = key if ":" not in key and plain_problem(key) is None else _quoted(key)
        if isinstance(value, (Mapping, list, tuple)):
            lines.append(f"{label}: {_flow(value, key, where)}\n")
        else:
            lines.append(f"{label}: {_scalar(value, key, where, flow=False)}\n")
    return "".join(lines)
