"""One or two real examples for every command's ``--help``, kept in one table.

``LazyGroup`` hands each command it loads to :func:`add_examples`, which sets the
command's epilog (and its subcommands', for ``memory``, ``name``, ``store`` and
``key``) from :data:`EXAMPLES`. tests/cli/test_help.py parses every example
against the real command table, so an example cannot name an option that is gone.
"""

from __future__ import annotations

import click

__all__ = ["EXAMPLES", "add_examples"]

# command path (as typed after `bundlekit`) -> command lines, each run as written
EXAMPLES: dict[str, tuple[str, ...]] = {
    "pack": ("bundlekit pack some/dir -o some.car", "bundlekit pack some/dir --profile kubo-cidv1 --json"),
    "cid": ("bundlekit cid some/file.bin --profile unixfs-v0-2015",),
    "verify": ("bundlekit verify some.car", "bundlekit verify some.car --check-expansion --json"),
    "unpack": ("bundlekit unpack some.car -o out/",),
    "ls": ("bundlekit ls some.car", "bundlekit ls bundle.car --json"),
    "memory": ("bundlekit memory init", "bundlekit memory -d ./memory recall critique --json"),
    "memory init": ("bundlekit memory init -d ./memory",),
    "memory write": (
        'bundlekit memory write feedback_tone --type feedback --name Tone --description "direct critique" '
        '--body "Lead with the issue."',
    ),
    "memory show": ("bundlekit memory show feedback_tone",),
    "memory list": ("bundlekit memory list", "bundlekit memory list --json"),
    "memory forget": ("bundlekit memory forget feedback_tone",),
    "memory note": ("bundlekit memory note played_clip name=demo-kick",),
    "memory recall": ("bundlekit memory recall critique --limit 3", "bundlekit memory recall critique --json"),
    "memory context": ("bundlekit memory context --max-tokens 2000",),
    "memory export": ("bundlekit memory export -o memory.json",),
    "memory import": ("bundlekit memory import memory.json --strategy merge",),
    "memory seed": ("bundlekit memory seed github --dry-run", "bundlekit memory seed x --posts 5 --yes",
                    "bundlekit memory seed farcaster --fid 6833 --message-file msg.txt --signature-file sig.txt"),
    "seeders": ("bundlekit seeders", "bundlekit seeders --json"),
    "memory unseed": ("bundlekit memory unseed github", "bundlekit memory unseed x --dry-run --json"),
    "build": ("bundlekit build -d memory -o bundle.car --json",
              "bundlekit build --sign-key agent.pem -o signed.car"),
    "serve": ("bundlekit serve bundle.car --port 8080", "bundlekit serve --ui --port 0"),
    "open": ("bundlekit open bundle.car",),
    "store": ("bundlekit store ls", "bundlekit store gc"),
    "load": ("bundlekit load bundle.car -o loaded/",
             "bundlekit load ipfs://bafy.../manifest.json --gateway http://127.0.0.1:8080 -o loaded/"),
    "fork": ("bundlekit fork bundle.car -d other-agent/ --strategy merge",),
    "diff": ("bundlekit diff bundle.car --exit-code", "bundlekit diff old.car new.car --json"),
    "key": ("bundlekit key message --namespace my-agent",),
    "key message": ("bundlekit key message --namespace my-agent",),
    "pin": ("bundlekit pin", "bundlekit pin bundle.car --pinner local --json",
            "bundlekit pin -d memory --sign-key agent.pem --name-key agent.pem --json"),
    "pinners": ("bundlekit pinners", "bundlekit pinners --check"),
    "mcp": ("bundlekit mcp -d ./memory", "bundlekit mcp --from bundle.car --http 8765"),
    "unpin": ("bundlekit unpin --pinner local --name-prefix memory- --keep 5",),
    "convert": ("bundlekit convert --from claude-code ~/.claude/projects/x/memory -d memory --strategy merge",
                "bundlekit convert --to massgen -d memory -o workspace1"),
    "name": ("bundlekit name create --name-key agent.pem",),
    "name create": ("bundlekit name create --name-key agent.pem",),
    "merge": ("bundlekit merge other.car --dry-run",
              "bundlekit merge ipfs://bafy.../manifest.json -d memory --on-conflict newer --json"),
    "sync": ("bundlekit sync --name-key agent.pem", "bundlekit sync -d memory --name k51... --interval 60"),
    "log": ("bundlekit log bundle.car", "bundlekit log ipfs://bafy.../manifest.json --gateway http://127.0.0.1:8080"),
}


def _epilog(lines: tuple[str, ...]) -> str:
    # "\b" keeps click from re-wrapping the command lines into one paragraph.
    return "Examples:\n\n\b\n" + "\n".join(f"  {line}" for line in lines)


def add_examples(path: str, command: click.Command) -> click.Command:
    """Give ``command`` (typed as ``bundlekit PATH``) and its subcommands their examples; returns it."""
    if path in EXAMPLES and "Examples:" not in (command.epilog or ""):
        command.epilog = "\n\n".join(filter(None, [command.epilog, _epilog(EXAMPLES[path])]))
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            add_examples(f"{path} {name}", sub)
    return command
