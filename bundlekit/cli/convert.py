"""``bundlekit convert``: memory between bundlekit trees and other agent-memory systems.

    bundlekit convert --from FORMAT SRC [-d DIR]     # foreign store -> bundlekit tree
    bundlekit convert --to FORMAT [-d DIR] -o DEST   # bundlekit tree -> foreign store

The bundlekit side is the memory tree of every command (``-d``, ``$BUNDLEKIT_MEMORY_DIR``, else
``./memory``). Its older spellings still work: an import's ``-o DEST``, an export's positional ``SRC``; naming
the tree twice, differently, is a usage error.

The command only maps options to :func:`bundlekit.convert.import_from` /
:func:`bundlekit.convert.export_to` and prints a summary; the library does the work.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from bundlekit.bundle.keyoptions import KeyOptions
from bundlekit.cli import output
from bundlekit.cli._keyopts import key_options, resolve_key_spec
from bundlekit.cli._params import MEMORY_DIR_ENV, same_path, tree_option
from bundlekit.convert import FORMATS, export_to, get_format, import_from
from bundlekit.errors import UsageError
from bundlekit.memory.naming import INDEX_NAME

__all__ = ["convert"]

# CLI option -> (library option, formats that take it on import, formats that take it on export)
_OPTION_MAP: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "agent_id": ("agent_id", ("three.ws", "letta"), ("massgen", "letta")),
    "namespace": ("namespace", (), ("three.ws",)),
    "mode": ("mode", (), ("three.ws",)),
    "local_storage": ("storage", (), ("three.ws",)),
    "now": ("now", ("three.ws",), ()),
    "project": ("project", ("magic-context",), ("magic-context",)),
    "repo": ("repo", ("magic-context",), ()),
    "form": ("form", (), ("claude-code",)),
    "dimension": ("dimension", ("magicfrog",), ("magicfrog",)),
    "project_dir": ("project", ("magicfrog",), ("magicfrog",)),
    "effective": ("effective", ("magicfrog",), ()),
    "agent": ("agent", ("magicfrog",), ()),
    "task": ("task", ("magicfrog",), ()),
    "timezone": ("timezone", ("massgen",), ()),
    "letta_model": ("model", (), ("letta",)),
    "all_blocks": ("all_blocks", ("letta",), ()),
}
_DEVICE = ("include_device", "local_only", "exclude_device")


def _options(fmt: str, importing: bool, params: dict[str, Any]) -> dict[str, Any]:
    """The library options for ``fmt``, refusing CLI options that format does not take."""
    out: dict[str, Any] = {}
    for cli_name, (lib_name, on_import, on_export) in _OPTION_MAP.items():
        value = params.get(cli_name)
        if value is None or value is False:
            continue
        allowed = on_import if importing else on_export
        if fmt not in allowed:
            flag = "--" + cli_name.replace("_", "-")
            raise UsageError(f"{flag} does not apply to {'--from' if importing else '--to'} {fmt}")
        out[lib_name] = value
    return out


def _lossy_epilog() -> str:
    """The help text's list of what each format cannot hold, from the format registry."""
    lines = ["\b", "Lossy (warnings naming each memory, also in --json's losses; --strict: exit 1):"]
    lines += [f"  {name}: {get_format(name).lossy}" for name in FORMATS]
    return "\n".join(lines)


@click.command("convert", epilog=_lossy_epilog())
@click.option(
    "--from",
    "from_fmt",
    type=click.Choice(FORMATS),
    metavar="FORMAT",
    help=f"Import SRC, a store of FORMAT ({', '.join(FORMATS)}), into the bundlekit tree (-d).",
)
@click.option(
    "--to",
    "to_fmt",
    type=click.Choice(FORMATS),
    metavar="FORMAT",
    help="Export the bundlekit tree (-d) as FORMAT at -o DEST.",
)
@click.argument("src", required=False, type=click.Path(exists=True, path_type=Path))
@tree_option("The memory tree: where --from imports into, what --to exports.")
@click.option(
    "-o", "--output", "dest", type=click.Path(path_type=Path),
    help="Where an export writes (needed with --to); an import's tree, if -d is not given.",
)
@click.option(
    "--strategy",
    type=click.Choice(["replace", "merge"]),
    default=None,
    help="Import: on a key already in DEST, take the incoming memory (replace) or keep DEST's (merge); "
         "needed when DEST already holds memories.",
)
@click.option(
    "--allow-secrets", is_flag=True, help="Import: let content that looks like a credential through."
)
@click.option(
    "--agent-id",
    help="three.ws import: the agent in a localStorage dump (and the key's agent); "
    "massgen export: agent_id for memories without one; letta: the agent (id or name) to read, "
    "or the name of the agent written.",
)
@click.option("--namespace", help="three.ws export: the agent id (namespace) of the blob.")
@click.option("--mode", help="three.ws export: the blob's mode (default local, encrypted-ipfs with a key).")
@click.option("--local-storage", is_flag=True, help="three.ws export: write a localStorage dump, not a blob.")
@click.option("--now", help="three.ws import: ISO 8601 time for files missing created/updated.")
@click.option(
    "--project",
    help="magic-context: the project identity git:<root commit sha> "
    "(import default: the current repository's).",
)
@click.option(
    "--repo",
    type=click.Path(file_okay=False, path_type=Path),
    help="magic-context import: derive the project identity from this repository.",
)
@click.option(
    "--form",
    type=click.Choice(["top", "metadata", "source"]),
    help="claude-code export: frontmatter at the top level (default), under metadata:, or as read.",
)
@click.option(
    "--dimension",
    type=click.Choice(["account", "user", "agent", "task", "device"]),
    help="magicfrog: import only this dimension (path-only keys); export default dimension.",
)
@click.option(
    "--project-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="magicfrog: a project whose .magicfrog/memory/ holds task notes.",
)
@click.option(
    "--effective",
    is_flag=True,
    help="magicfrog import: the merged view (the most specific dimension wins for a path).",
)
@click.option("--agent", help="magicfrog --effective: the agent the view is for (agent/<ID>/ notes win).")
@click.option("--task", help="magicfrog --effective: the task the view is for (task/<ID>/ notes win).")
@click.option(
    "--timezone",
    help="massgen import: the zone its naive timestamps were written in (IANA name or UTC; "
    "default: this machine's, with a warning).",
)
@click.option(
    "--letta-model",
    metavar="HANDLE",
    help="letta export: the model (a Letta handle, provider/model) whose llm_config the agent carries, "
    "which a Letta server needs to import it (default: letta/letta-free, the one model a server lists "
    "with no provider set up).",
)
@click.option(
    "--all-blocks",
    is_flag=True,
    help="letta import: also the blocks no chosen agent holds (kept unattached on the way back).",
)
@click.option("--include-device", is_flag=True, help="Carry device-bound memory (needs --local-only).")
@click.option("--local-only", is_flag=True, help="Confirm the result stays on this machine.")
@click.option("--exclude-device", is_flag=True, help="Leave device-bound memory out instead of refusing.")
@click.option(
    "--strict",
    is_flag=True,
    help="Fail (exit 1, nothing written) when anything would be lost: a field or timeline event the "
    "format has no place for, a memory written changed or left out.",
)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary.")
@key_options
def convert(
    from_fmt: str | None,
    to_fmt: str | None,
    src: Path | None,
    tree: Path,
    dest: Path | None,
    strategy: str | None,
    allow_secrets: bool,
    strict: bool,
    as_json: bool,
    **params: Any,
) -> None:
    """Convert memory between bundlekit trees and MassGen, Claude Code, three.ws, Magic Context, MagicFrog, Letta.

    Each format's own fields travel in x-<format>-* frontmatter keys, so
    converting back gives the original. What a conversion cannot carry
    (fields, timeline events, skipped files or rows) is printed as warnings,
    and every loss is in --json's "losses". Every memory is exported: one the
    format cannot hold exactly is written in its nearest form or left out, and
    named in a warning; --strict makes any loss an error before anything is
    written.
    Device memory (MagicFrog's device dimension) is refused unless
    --include-device --local-only.
    """
    if (from_fmt is None) == (to_fmt is None):
        raise UsageError("give exactly one of --from FORMAT (import) or --to FORMAT (export)")
    importing = from_fmt is not None
    fmt = from_fmt or to_fmt or ""
    src, dest = _sides(importing, src, tree, dest)
    options = _options(fmt, importing, params)
    used = KeyOptions.from_params(params).flags()
    if used and fmt != "three.ws":
        raise UsageError(f"{', '.join(used)} only applies to three.ws (its encrypted per-file form)")
    key = resolve_key_spec(identity_env=False, **params)
    if key is not None:
        options["key"] = key
    device = {name: bool(params.get(name)) for name in _DEVICE}
    existing: set[str] = set()
    if importing:
        if fmt == "magicfrog":
            options.update(device)
        elif any(device.values()):
            raise UsageError("--include-device, --local-only and --exclude-device apply to --from magicfrog")
        existing = _existing_keys(dest)
        if existing and strategy is None:
            raise UsageError(
                f"{dest} already holds {len(existing)} memories: say --strategy merge (keep them on a clash) "
                "or --strategy replace (take the incoming ones)"
            )
        result = import_from(fmt, src, dest, strategy=strategy or "replace", allow_secrets=allow_secrets,
                             strict=strict, **options)
    else:
        if allow_secrets or strategy is not None:
            raise UsageError("--strategy and --allow-secrets apply to imports (--from)")
        result = export_to(fmt, src, dest, **device, strict=strict, **options)
    output.warn_all(result.warnings)
    if as_json:
        output.data_json(result.to_dict())
        return
    # Counts of what was written: events a format cannot hold were warned about above.
    what = f"{result.memories} {'memory' if result.memories == 1 else 'memories'}"
    if result.timeline:
        events = "event" if result.timeline == 1 else "events"
        what += f" and {result.timeline} {'new ' if importing else ''}timeline {events}"
    direction = f"from {fmt}" if importing else f"as {fmt}"
    output.status(f"converted {what} {direction} into {result.dest}")
    if importing and existing:
        incoming = {path.stem for path in result.paths}
        clashes = len(incoming & existing)
        output.status(f"{len(incoming - existing)} added, {clashes} "
                      f"{'kept as they were (merge)' if strategy == 'merge' else 'replaced'}, "
                      f"{len(existing - incoming)} untouched")


def _sides(importing: bool, src: Path | None, tree: Path, dest: Path | None) -> tuple[Path, Path]:
    """SRC and DEST of the conversion: the bundlekit side is the memory tree (``-d``, else
    ``$BUNDLEKIT_MEMORY_DIR``, else ``./memory``), or its older spelling (an import's ``-o``, an export's
    SRC), which wins over a tree that only came from the environment or the default."""
    if importing:
        if src is None:
            raise UsageError("--from needs SRC: the store to import")
        return src, _tree(tree, dest, "-o", must_exist=False)
    if dest is None:
        raise UsageError("--to needs -o DEST: where to write the export")
    return _tree(tree, src, "SRC", must_exist=True), dest


def _tree(tree: Path, old: Path | None, old_name: str, *, must_exist: bool) -> Path:
    """The memory tree: ``old`` (the older spelling) if given, else ``tree``; both given on the command
    line and naming different directories (``cli._params.same_path``) is a usage error, as is an older
    spelling naming a file (``-d`` refuses one); an export's tree from ``-d`` must be there."""
    tree_given = click.get_current_context().get_parameter_source("tree") is click.core.ParameterSource.COMMANDLINE
    if old is not None:
        if tree_given and not same_path(old, tree):
            raise UsageError(f"two memory trees named ({old_name} {str(old)[:80]!r} and -d {str(tree)[:80]!r}); "
                             "name the tree once, with -d DIR")
        if old.exists() and not old.is_dir():  # as -d and every command's old positional refuse a file
            raise UsageError(f"the memory tree ({old_name}) {str(old)[:80]!r} is a file, not a directory")
        return old
    if must_exist and not tree.is_dir():
        raise UsageError(f"no memory tree at {tree}: give -d DIR or set ${MEMORY_DIR_ENV}")
    return tree


def _existing_keys(dest: Path) -> set[str]:
    """The keys of the memory files already in DEST (its top-level ``KEY.md`` files but the index), unparsed."""
    if not dest.is_dir():
        return set()
    return {p.stem for p in dest.glob("*.md") if p.name != INDEX_NAME and not p.name.startswith(".") and p.is_file()}
