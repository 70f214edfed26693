"""``bundlekit memory``: read and write a memory tree (thin: parse, call ``bundlekit.memory``, print).

Data goes to stdout (memory files, listings, the context block, and
``--json`` results as one line); what was done ("forgot x.md", "wrote x.md
revision 2") goes to stderr; errors are ``BundlekitError`` and are printed
once by the top-level group.
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from typing import Any

import click

from bundlekit._bounds import CONTEXT_TOKENS, RECALL_LIMIT
from bundlekit.cli import output
from bundlekit.cli._examples import add_examples
from bundlekit.cli._params import Count
from bundlekit.cli._suggest import SuggestingGroup
from bundlekit.cli._embedopts import embedder_options, embedder_settings
from bundlekit.embed.protocol import EmbedderSettings
from bundlekit.errors import (
    FrontmatterError,
    InvalidKeyError,
    MemoryFileTooLarge,
    MemoryFileUnreadable,
    MemoryNotFoundError,
    MemoryStoreError,
    UsageError,
)
from bundlekit.memory import Memory
from bundlekit.memory.backend import atomic_write_bytes
from bundlekit.memory.filesize import MAX_MEMORY_BYTES
from bundlekit.memory.naming import validate_key
from bundlekit.memory.ranking import RANKS
from bundlekit.memory.record import DECAY_VALUES, MEMORY_TYPES

__all__ = ["memory"]

DEFAULT_DIR = "memory"
DEFAULT_MAX_TOKENS = 8192
MAGIC_CONTEXT_MAX_TOKENS = 4000



_json_option = click.option(
    "--json", "as_json", is_flag=True, help="Print the result as one line of JSON."
)


class _MemoryKey(click.ParamType[str]):
    """A memory key given on the command line: a malformed one is a usage error (exit 2), as a bad CID is."""

    name = "key"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        try:
            return validate_key(value)
        except InvalidKeyError as exc:
            self.fail(str(exc), param, ctx)


MEMORY_KEY = _MemoryKey()

_DIR_KEY = "bundlekit.memory.dir"


def _set_dir(ctx: click.Context, _param: click.Parameter, value: Path | None) -> None:
    if value is not None:
        ctx.meta[_DIR_KEY] = value


_dir_option = click.option(
    "-d",
    "--dir",
    "sub_directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    expose_value=False,
    callback=_set_dir,
    help="The memory tree (also accepted before the subcommand).",
)


def _mem(ctx: click.Context, *, existing: bool = False, embedder: EmbedderSettings | None = None) -> Memory:
    """The tree named by ``-d`` (after the subcommand, else before it, else $BUNDLEKIT_MEMORY_DIR, else ./memory).

    ``existing``: refuse a tree that is not there (exit 2, nothing created): every command but ``init``
    asks for it, so a mistyped ``-d`` never creates a folder. ``embedder``: what it ranks by meaning with
    (default: the environment's, else the ``semantic`` extra's model).
    """
    directory: Path = ctx.meta.get(_DIR_KEY) or ctx.obj
    memory = Memory(directory, on_warning=output.warn, embedder=embedder)
    if existing and not memory.exists():
        raise UsageError(
            f"no memory tree at {directory} (no MEMORY.md, no memory files): run `bundlekit memory init`"
        )
    return memory


_RANK_HELP = (
    "salience: memories containing QUERY, by salience x recency; relevance: also weigh how well the text "
    "matches (BM25); semantic: by meaning (embeddings); hybrid: meaning and BM25, then salience x recency. "
    "[default: hybrid with an embedder (the 'semantic' extra), else salience]"
)


def _load_on_use(module: str, attr: str) -> Any:
    """``module.attr``, imported only when an option needs it.

    The layered view pulls in the loader (network, crypto) and Magic Context's
    renderer the converters: ~70 ms that every other ``memory`` command, run
    on each agent turn, does not pay.
    """
    return getattr(importlib.import_module(module), attr)


class _MemoryGroup(SuggestingGroup):
    """The ``memory`` group; ``seed`` and ``unseed`` (``cli/seed``) are imported on first use: they load the
    HTTP layer and the account lanes, which no other memory command needs."""

    _LAZY = {"seed": ("bundlekit.cli.seed", "seed_cmd"), "unseed": ("bundlekit.cli.seed", "unseed_cmd")}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *self._LAZY])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self._LAZY:
            return add_examples(f"memory {cmd_name}", _load_on_use(*self._LAZY[cmd_name]))
        return super().get_command(ctx, cmd_name)


@click.group("memory", cls=_MemoryGroup)
@click.option(
    "-d",
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    envvar="BUNDLEKIT_MEMORY_DIR",
    default=DEFAULT_DIR,
    show_default="$BUNDLEKIT_MEMORY_DIR, else ./memory",
    help="The memory tree.",
)
@click.pass_context
def memory(ctx: click.Context, directory: Path) -> None:
    """Read and write a memory tree."""
    ctx.obj = directory


@memory.command("init")
@_dir_option
@_json_option
@click.pass_context
def init_cmd(ctx: click.Context, as_json: bool) -> None:
    """Create the tree (directory, timeline/, MEMORY.md)."""
    mem = _mem(ctx)
    mem.init()
    if as_json:
        output.data_json({"root": str(mem.root)})
    else:
        output.status(f"memory tree ready at {mem.root}")


@memory.command("write")
@_dir_option
@click.argument("key", type=MEMORY_KEY)
@click.option("--name", required=True, help="Human-readable title.")
@click.option("--description", required=True, help="One-line summary (shown in the index).")
@click.option("--type", "type_", required=True, type=click.Choice(MEMORY_TYPES), help="Memory type.")
@click.option("--body", help="The Markdown body (required: this or --body-file).")
@click.option(
    "--body-file", type=click.File("r", encoding="utf-8"),
    help="Read the body from a file ('-': stdin) instead of --body.",
)
@click.option("--tag", "tags", multiple=True, help="A tag (repeatable).")
@click.option("--important/--not-important", default=None, help="Pin salience to 1.0 (or unpin).")
@click.option("--decay", type=click.Choice(DECAY_VALUES), help="Retrieval decay hint.")
@click.option("--source", help="Which conversation or event produced this memory.")
@click.option(
    "--expect-revision", type=Count(0), help="Refuse the write unless at this revision."
)
@click.option(
    "--allow-secrets", is_flag=True, help="Skip the secret guard (only for text that is not a credential)."
)
@click.option("--json", "as_json", is_flag=True, help="Print the written frontmatter as JSON.")
@click.pass_context
def write_cmd(
    ctx: click.Context,
    key: str,
    name: str,
    description: str,
    type_: str,
    body: str | None,
    body_file: Any,
    tags: tuple[str, ...],
    important: bool | None,
    decay: str | None,
    source: str | None,
    expect_revision: int | None,
    allow_secrets: bool,
    as_json: bool,
) -> None:
    """Create or update the memory KEY.

    The tree must exist (`memory init` makes one); the body comes from --body or --body-file (exactly one
    of them). --name and --description take any one-line text, stored and read back as given."""
    if (body is None) == (body_file is None):
        raise UsageError("give exactly one of --body TEXT or --body-file FILE ('-' for stdin)")
    if body is not None:
        text = body
    else:
        try:
            text = body_file.read(MAX_MEMORY_BYTES + 1)  # characters: more can never be a memory's body
        except UnicodeDecodeError as exc:
            raise UsageError(f"--body-file {body_file.name} is not UTF-8 text; re-save it as UTF-8") from exc
        if len(text) > MAX_MEMORY_BYTES:
            raise MemoryFileTooLarge(f"--body-file {body_file.name} holds more than the 4 MiB a memory file may "
                                     "hold; split it into smaller memories")
    record = _mem(ctx, existing=True).write(
        key,
        name=name,
        description=description,
        type=type_,
        body=text,
        source=source,
        decay=decay,
        tags=list(tags) if tags else None,
        important=important,
        expected_revision=expect_revision,
        allow_secrets=allow_secrets,
    )
    if as_json:
        output.data_json({"key": record.key, "meta": record.meta})
    else:
        output.status(f"wrote {record.filename} revision {record.revision}")


# Usage that ranks (specs/memory.md): one option name for recall, context and show.
_usage_option = click.option(
    "--usage-boost/--no-usage-boost", "usage_boost", default=True, show_default=True,
    help="Let reads of memories an earlier recall returned raise their rank (kept in the derived index).",
)


@memory.command("show", short_help="Print the memory KEY's file as stored.")
@_dir_option
@click.argument("key", type=MEMORY_KEY)
@_usage_option
@click.option("--json", "as_json", is_flag=True, help="Print key, frontmatter and body as JSON.")
@click.pass_context
def show_cmd(ctx: click.Context, key: str, usage_boost: bool, as_json: bool) -> None:
    """Print the memory KEY (its file as stored; one holding what looks like a credential, with it withheld).
    A file that does not parse is printed as stored, what is wrong with it on stderr."""
    mem = _mem(ctx, existing=True)
    try:
        record = mem.read(key, withhold=True, used=usage_boost)
    except MemoryFileTooLarge as exc:  # never printed: gigabytes on a terminal or to an agent help no one
        raise MemoryFileTooLarge(f"{exc}; not shown (`bundlekit memory forget {key}` removes it)") from exc
    except MemoryFileUnreadable:  # nothing to print: the error names the file and why (exit 1)
        raise
    except FrontmatterError as exc:
        _show_broken(mem, key, str(exc), as_json)
        return
    if record is None:
        raise MemoryNotFoundError(f"no memory {key}.md in {mem.root}; `bundlekit memory list` shows the keys")
    if as_json:
        output.data_json({"key": record.key, "meta": record.meta, "body": record.body})
    else:
        output.data(output.printable(record.raw), newline=False)


def _show_broken(mem: Memory, key: str, problem: str, as_json: bool) -> None:
    text = mem.stored_text(key)
    if text is None:  # removed since it was read
        raise MemoryNotFoundError(f"no memory {key}.md in {mem.root}; `bundlekit memory list` shows the keys")
    output.warn(f"{problem}; shown as stored (fix the file, or `bundlekit memory forget {key}` removes it)")
    if as_json:
        output.data_json({"key": key, "broken": problem, "text": text})
    else:
        output.data(output.printable(text), newline=False)


@memory.command("list")
@_dir_option
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array.")
@click.pass_context
def list_cmd(ctx: click.Context, as_json: bool) -> None:
    """List the memories, sorted by key.

    A file that does not parse is listed as broken (type `broken`), with what is wrong."""
    mem = _mem(ctx, existing=True)
    if not as_json:  # the stored lines (already terminal-safe), one write: no record loaded, no per-line echo
        listing = mem.list_text(printed=True)
        if listing:
            output.data(listing)
        return
    records, broken = mem.listing()
    rows: list[dict[str, Any]] = [r.summary() for r in records]
    rows += [{"key": key, "broken": problem} for key, problem in broken.items()]
    output.data_json(sorted(rows, key=lambda row: str(row["key"])))


@memory.command("forget", short_help="Delete the memory KEY (the timeline records it).")
@_dir_option
@click.argument("key", type=MEMORY_KEY)
@_json_option
@click.pass_context
def forget_cmd(ctx: click.Context, key: str, as_json: bool) -> None:
    """Delete the memory KEY (the timeline records that it was forgotten)."""
    _mem(ctx, existing=True).forget(key)
    if as_json:
        output.data_json({"forgot": key})
    else:
        output.status(f"forgot {key}.md")


@memory.command("note")
@_dir_option
@click.argument("type_", metavar="TYPE")
@click.argument("pairs", nargs=-1, metavar="[KEY=VALUE]...")
@click.option("--json", "as_json", is_flag=True, help="Accepted for uniformity: the entry is always one line of JSON.")
@click.pass_context
def note_cmd(ctx: click.Context, type_: str, pairs: tuple[str, ...], as_json: bool) -> None:
    """Append a TYPE event to today's timeline; values are strings. Prints the entry as JSON.

    The tree must exist (`memory init` makes one)."""
    data: dict[str, str] = {}
    for pair in pairs:
        field, sep, value = pair.partition("=")
        if not sep or not field:
            raise UsageError(f"timeline data must be KEY=VALUE, got {pair!r}")
        data[field] = value
    entry = _mem(ctx, existing=True).note(type_, **data)
    output.data_json(entry)


_workspace_option = click.option(
    "--workspace", "workspace", multiple=True, metavar="[LABEL=]URI",
    help="A teammate's shared bundle (plaintext; .car, ipfs://, ipns://, URL, IPNS name) seen read-only beside "
         "the tree, labelled with its publisher (repeatable; encrypted ones: `bundlekit mcp --workspace`).")


@memory.command("recall", short_help="Find memories matching QUERY, best first.")
@_dir_option
@click.argument("query")
@click.option("--limit", type=Count(RECALL_LIMIT.low, RECALL_LIMIT.high), default=5, show_default=True,
              help="At most this many hits, best first.")
@click.option("--rank", type=click.Choice(RANKS), default=None, help=_RANK_HELP)
@click.option("--min-similarity", type=float, default=None, metavar="X",
              help="By meaning: only memories whose cosine similarity to QUERY is at least X (-1 to 1). "
                   "[default: none, the nearest --limit]")
@embedder_options
@_workspace_option
@_usage_option
@click.option("--json", "as_json", is_flag=True,
              help="Print a JSON array (each hit names its \"ranking\", by meaning its \"similarity\").")
@click.pass_context
def recall_cmd(
    ctx: click.Context, query: str, limit: int, rank: str | None, min_similarity: float | None,
    embedder: str | None, embed_url: str | None, embed_model: str | None, usage_boost: bool,
    workspace: tuple[str, ...], as_json: bool,
) -> None:
    """Find memories matching QUERY, best first: by meaning and words (hybrid) when an embedder is available,
    else those containing QUERY (case-insensitive) by salience x recency. Says on stderr which ranking it used."""
    mem = _mem(ctx, existing=True, embedder=embedder_settings(embedder, embed_url, embed_model))
    ranking = mem.ranking_for(rank)
    if workspace:  # teammates' shared bundles beside the tree, read-only (bundle/workspace)
        _workspace_recall(mem, _workspace(workspace), query, limit, ranking, min_similarity, as_json)
        return
    hits = mem.recall(query, limit=limit, rank=ranking, min_similarity=min_similarity, usage=usage_boost)
    output.status(f"ranked by {ranking}")
    if not hits:
        output.status(f"no memory matches {output.printable(query)!r}")
    if as_json:
        output.data_json([hit.to_dict(place) for place, hit in enumerate(hits, 1)])
        return
    for hit in hits:
        similar = f"\tsimilarity {hit.similarity:.3f}" if hit.similarity is not None else ""
        output.data(output.printable(f"{hit.score:.6g}\t{hit.key}\t{hit.record.name} — {hit.record.description}")
                    + similar)


def _workspace(values: tuple[str, ...]) -> list[Any]:
    """The ``--workspace`` layers, loaded and verified (``bundle.workspace``; imported only then), their
    warnings on stderr."""
    workspace = importlib.import_module("bundlekit.bundle.workspace")
    layers: list[Any] = workspace.open_workspace(workspace.parse_workspace_option(values))
    for layer in layers:
        for warning in layer.warnings:
            output.warn(warning)
    return layers


def _workspace_recall(mem: Memory, layers: list[Any], query: str, limit: int, ranking: str,
                      min_similarity: float | None, as_json: bool) -> None:
    """Recall over the tree and the workspace layers; each hit names its ``source`` (``own`` or a publisher)."""
    recall = _load_on_use("bundlekit.bundle.workspace", "workspace_recall")
    rows = recall(mem, layers, query, limit, rank=ranking, min_similarity=min_similarity)
    output.status(f"ranked by {ranking}")
    if not rows:
        output.status(f"no memory matches {output.printable(query)!r}")
    if as_json:
        output.data_json([{k: v for k, v in row.items() if k != "body"} for row in rows])
        return
    for row in rows:
        output.data(output.printable(f"{row['score']:.6g}\t{row['key']}\t{row['name']} — {row['description']}"
                                     f"\t[{row['source']}]"))


def _parse_layer(value: str) -> tuple[str, str]:
    name, sep, directory = value.partition("=")
    if not sep or not name or not directory:
        raise UsageError(f"--layer must be NAME=DIR, got {value!r}")
    return name, directory


@memory.command("context")
@_dir_option
@click.option(
    "--max-tokens", type=Count(CONTEXT_TOKENS.low, CONTEXT_TOKENS.high), help="Token budget (4 characters each). [default: 8192]"
)
@click.option(
    "--style",
    type=click.Choice(["default", "magic-context"]),
    default="default",
    show_default=True,
    help="magic-context: render the tree as a Magic Context project memory.",
)
@click.option(
    "--layer", "layers", multiple=True, metavar="NAME=DIR", help="Layer several trees (repeatable)."
)
@click.option("--query", metavar="TEXT", help="Put the memories recall ranks first for TEXT first (see --rank).")
@click.option("--rank", type=click.Choice(RANKS), default=None, help="With --query: how to rank (as recall).")
@embedder_options
@_workspace_option
@_usage_option
@click.option("--json", "as_json", is_flag=True, help='Print {"context": TEXT} as one line of JSON.')
@click.pass_context
def context_cmd(
    ctx: click.Context, max_tokens: int | None, style: str, layers: tuple[str, ...], query: str | None,
    rank: str | None, embedder: str | None, embed_url: str | None, embed_model: str | None, usage_boost: bool,
    workspace: tuple[str, ...], as_json: bool,
) -> None:
    """Print the context block an agent would inject before an LLM turn."""
    if workspace and (query is not None or layers or style != "default"):
        raise UsageError("--workspace cannot be combined with --query, --layer or --style magic-context")
    if (query is not None or rank is not None) and (layers or style != "default"):
        raise UsageError("--query and --rank cannot be combined with --layer or --style magic-context")
    if rank is not None and query is None:
        raise UsageError("--rank orders the context block by a --query; add --query TEXT")
    if layers:
        if style != "default":
            raise UsageError("--layer and --style magic-context cannot be combined")
        render_layered = _load_on_use("bundlekit.bundle.layers", "render_layered_context")
        text = render_layered(
            [_parse_layer(v) for v in layers],
            max_tokens=DEFAULT_MAX_TOKENS if max_tokens is None else max_tokens,
            on_warning=output.warn,
        )
    elif style == "magic-context":
        render = _load_on_use("bundlekit.convert.magic_context", "render_project_memory")
        text = render(_mem(ctx, existing=True), max_tokens=MAGIC_CONTEXT_MAX_TOKENS if max_tokens is None else max_tokens)
    elif workspace:
        render_workspace = _load_on_use("bundlekit.bundle.workspace", "workspace_context")
        text = render_workspace(_mem(ctx, existing=True), _workspace(workspace),
                                DEFAULT_MAX_TOKENS if max_tokens is None else max_tokens, on_warning=output.warn)
    else:
        mem = _mem(ctx, existing=True, embedder=embedder_settings(embedder, embed_url, embed_model))
        budget = DEFAULT_MAX_TOKENS if max_tokens is None else max_tokens
        if query is not None:
            rank = mem.ranking_for(rank)
        text = mem.context_block(budget, query=query, rank=rank, usage=usage_boost)
        if query is not None:
            output.status(f"ranked by {rank}")  # once it did: a refused query or a failed embedder says only that
    if as_json:
        output.data_json({"context": str(text)})
    else:
        output.data(output.printable(str(text)), newline=not str(text).endswith("\n"))


@memory.command("export")
@_dir_option
@click.option(
    "-o", "--output", "output_path", type=click.Path(dir_okay=False, path_type=Path),
    help="Write here (atomically).",
)
@click.option("--json", "as_json", is_flag=True,
              help='With -o, print {"path", "files", "timeline"} (without -o the blob is JSON already).')
@click.pass_context
def export_cmd(ctx: click.Context, output_path: Path | None, as_json: bool) -> None:
    """Export the tree as a JSON blob, one line (stdout, or -o FILE)."""
    blob = _mem(ctx, existing=True).export()
    if output_path is None:
        output.data_json(blob)
        return
    atomic_write_bytes(output_path, (output.json_line(blob) + "\n").encode("utf-8"))
    if as_json:
        output.data_json({"path": str(output_path), "files": len(blob["files"]), "timeline": len(blob["timeline"])})
    else:
        output.status(f"exported to {output_path}")


@memory.command("import")
@_dir_option
@click.argument("file", type=click.File("rb"))
@click.option("--strategy", type=click.Choice(["merge", "replace"]), default="merge", show_default=True)
@click.option("--allow-secrets", is_flag=True, help="Skip the secret guard.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
def import_cmd(ctx: click.Context, file: Any, strategy: str, allow_secrets: bool, as_json: bool) -> None:
    """Import an export blob (FILE, '-' for stdin): all or nothing.

    The tree must exist (`memory init` makes one)."""
    try:
        blob = json.loads(file.read())
    except (ValueError, RecursionError) as exc:  # RecursionError: absurdly deep nesting
        raise MemoryStoreError(f"{file.name} is not a JSON export blob; export it again") from exc
    report = _mem(ctx, existing=True).import_(blob, strategy, allow_secrets=allow_secrets)
    if as_json:
        output.data_json(report.to_dict())
    else:
        output.status(
            f"added {len(report.added)}, replaced {len(report.replaced)}, kept {len(report.kept)}, "
            f"timeline entries added {report.timeline_added}"
        )


if __name__ == "__main__":  # pragma: no cover
    sys.exit(memory())
