"""The ``bundlekit`` command line: one declarative table of lazily loaded commands.

Each command lives in its own small module and is imported only when it runs,
so ``bundlekit --help`` stays fast (no boto3, no server, no crypto). The CLI
parses, calls the library and prints through ``cli.output`` (data on
stdout, everything else on stderr); it never computes. Errors are handled
once, here: a ``BundlekitError`` becomes one ``error: ...`` line on stderr and
the error's exit code; click's own usage errors (a missing argument, a bad
value, a mistyped command, which names the closest one) become one
``error: ...`` line and exit 2; Ctrl-C becomes ``interrupted`` and exit 130,
and SIGTERM and SIGHUP take the same path (``_signals``: every cleanup runs) with
exit 143 and 129 (128 + the signal, as shells report it).

Modules: ``output`` (the output contract every command prints through); the commands, one
module per family: ``build``, ``load`` (and ``fork``), ``pack`` (and ``cid``), ``car``
(``verify``, ``unpack``, ``ls``), ``pin`` (and ``pinners``), ``unpin``, ``store``, ``serve``
(and ``open``), ``memory`` (with ``seed``: ``memory seed`` and ``memory unseed``), ``convert``, ``diff``, ``log``, ``merge``, ``sync``, ``names``
(``name``), ``key`` and ``mcp``; shared pieces: ``_keyopts`` (the key options), ``_shareopts`` (``--share``), ``_embedopts``
(the options of the commands that embed), ``_params`` (parameter types and the tree option), ``_urls``
(``check_urls``: a URI or ``--gateway`` checked as typed),
``_examples`` (each command's ``--help`` examples), ``_suggest`` (the closest command to a
mistyped one), ``_extras`` (a command's optional extra) and ``_loglines`` (library log records as
one-line warnings).
"""

from __future__ import annotations

import importlib
import os
import sys
import traceback
from collections.abc import Sequence
from typing import Any

import click

from bundlekit._gcpause import gc_paused, keep_for_life
from bundlekit._signals import exit_code, stop_signals_interrupt
from bundlekit.cli import output
from bundlekit.cli._examples import add_examples
from bundlekit.cli._suggest import SuggestingGroup
from bundlekit.errors import BundlekitError

__all__ = ["EXIT_INTERRUPTED", "cli", "main"]

EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it
# click 8.2+ raises this for a bare group (8.1 prints the help itself)
_NO_ARGS_IS_HELP: Any = getattr(click.exceptions, "NoArgsIsHelpError", ())

# name -> (module, attribute, short help). The help is repeated here so that
# listing commands does not import every module.
COMMANDS: dict[str, tuple[str, str, str]] = {
    "pack": ("bundlekit.cli.pack", "pack", "Pack a directory or file into a CAR; print the root CID."),
    "cid": ("bundlekit.cli.pack", "cid", "Print the CID of a file or directory; write nothing."),
    "verify": ("bundlekit.cli.car", "verify", "Check every block of a CAR and the completeness of its DAG."),
    "unpack": ("bundlekit.cli.car", "unpack", "Extract a verified UnixFS DAG from a CAR into a directory."),
    "ls": ("bundlekit.cli.car", "ls", "List path, CID and size of every entry in a CAR."),
    "memory": ("bundlekit.cli.memory", "memory", "Read and write a memory tree."),
    "build": ("bundlekit.cli.build", "build", "Build a memory bundle (CAR) from a memory tree."),
    "serve": ("bundlekit.cli.serve", "serve", "Serve blocks over a local trustless HTTP gateway."),
    "open": ("bundlekit.cli.serve", "open_cmd", "Show one bundle, verified, in the browsing interface."),
    "store": ("bundlekit.cli.store", "store", "Inspect and clean the local block store."),
    "load": ("bundlekit.cli.load", "load", "Load a bundle from a manifest URI, verified, into a memory tree."),
    "fork": ("bundlekit.cli.load", "fork", "Import a bundle into another memory tree."),
    "diff": ("bundlekit.cli.diff", "diff", "Show memories added, removed and changed between two bundles or trees."),
    "key": ("bundlekit.cli.key", "key", "Key helpers: the message a wallet signs; age identities for recipients."),
    "pin": ("bundlekit.cli.pin", "pin", "Build or pack, then publish to one or more pinners."),
    "pinners": ("bundlekit.cli.pin", "pinners", "List the registered pinners and whether each is configured."),
    "seeders": ("bundlekit.cli.seed", "seeders", "List the registered seeders (memory seed's lanes) and their setup."),
    "mcp": ("bundlekit.cli.mcp", "mcp", "Serve memory tools to MCP clients (needs bundlekit[mcp])."),
    "unpin": ("bundlekit.cli.unpin", "unpin", "Retire old releases: keep the newest N pins named PREFIX*."),
    "convert": ("bundlekit.cli.convert", "convert", "Convert memory between bundlekit and other agent-memory systems."),
    "name": ("bundlekit.cli.names", "name", "IPNS names: create one, publish a bundle under it, resolve it."),
    "log": ("bundlekit.cli.log", "log", "Walk a bundle's parents back: root, created, publisher, changes."),
    "merge": ("bundlekit.cli.merge", "merge", "Merge a bundle into a memory tree over their common ancestor."),
    "sync": ("bundlekit.cli.sync", "sync_cmd", "Keep a memory tree in step with an IPNS name (merge, pin, publish)."),
}


class LazyGroup(SuggestingGroup):
    """A click group whose subcommands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        spec = COMMANDS.get(cmd_name)
        if spec is None:
            return None
        module_name, attr, _help = spec
        try:
            with gc_paused():  # a command's modules: ~70 collections of objects that live on (~10 ms, issue 37)
                module = importlib.import_module(module_name)
                if _one_command:  # the process runs this command alone: no collection walks them after (~7 ms)
                    keep_for_life()
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                raise click.ClickException(f"command {cmd_name!r} is not available in this build") from exc
            raise
        command: click.Command = getattr(module, attr)
        return add_examples(cmd_name, command)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][2]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def main(  # type: ignore[override]  # one signature for click's two overloads
        self, args: Sequence[str] | None = None, prog_name: str | None = None, standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        """Run the CLI; standalone, every error is one ``error: ...`` line (click's own would be four)."""
        if not standalone_mode:
            return super().main(args, prog_name, standalone_mode=False, **extra)
        try:
            result = super().main(args, prog_name, standalone_mode=False, **extra)
        except _NO_ARGS_IS_HELP as exc:  # a bare group prints its help, as click does
            exc.show()
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            output.error(" ".join(exc.format_message().split()))  # one line, even where click lists choices
            sys.exit(exc.exit_code)
        except click.Abort:  # Ctrl-C while click parses
            output.status("interrupted")
            sys.exit(EXIT_INTERRUPTED)
        except Exception as exc:  # a defect of ours: still one line, and through the one redaction
            _report_defect(exc)
            sys.exit(1)
        sys.exit(result if isinstance(result, int) else 0)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            with stop_signals_interrupt():  # SIGTERM and SIGHUP unwind like Ctrl-C: every cleanup runs
                return super().invoke(ctx)
        except BundlekitError as exc:
            output.error(str(exc))
            ctx.exit(exc.exit_code)
        except KeyboardInterrupt as exc:  # Ctrl-C, or a stop signal (_signals.Interrupted)
            output.status("interrupted")
            ctx.exit(exit_code(exc))
        except MemoryError:
            # The last net: an input larger than the memory this process may use (a capped
            # address space, a small machine) is one error line, never a traceback.
            output.error(
                "out of memory: the input is larger than this process can hold; "
                "give it a smaller input or more memory"
            )
            ctx.exit(1)


def _report_defect(exc: Exception) -> None:
    """An exception no layer translated: one ``error:`` line naming it, never a raw traceback, which
    Python's own hook would print past the redaction with whatever the message and the frames' source
    lines hold. ``BUNDLEKIT_TRACEBACK=1`` adds the traceback, redacted like every other line."""
    output.error(f"internal error ({type(exc).__name__}: {exc}); please report it")
    if os.environ.get("BUNDLEKIT_TRACEBACK") == "1":
        output.status("".join(traceback.format_exception(exc)).rstrip("\n"))


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(None, "-V", "--version", package_name="bundlekit")
def cli() -> None:
    """bundlekit: agent memory as content-addressed, verifiable, optionally encrypted bundles."""


#: Whether this process runs one command and ends (:func:`main`): its modules are then kept for life
#: (``_gcpause.keep_for_life``) once imported; a host that invokes ``cli`` again and again (a test's runner) keeps
#: collecting what earlier commands left.
_one_command = False


def main() -> None:
    """Console-script entry point (``bundlekit``, ``python -m bundlekit``): one command, then the process ends."""
    global _one_command
    _one_command = True
    cli(prog_name="bundlekit")


if __name__ == "__main__":  # pragma: no cover
    main()
