"""The size bound of one memory file: what a reader takes of a file, and what a write or a merge may store.

A memory is text an agent reads into its context: the real ones are kilobytes (the largest Claude Code
and Letta memories we carry are about 10 KB), and :data:`MAX_MEMORY_BYTES`, 4 MiB, is about a million
tokens, as much as the largest context window of today's models takes in one go: a file past it is not a
memory anyone can use as one, but a log, a dump or a mistaken copy (a 300 MB file took ``memory list``
7 s and 1.25 GB). Such a file is never read whole: its size is checked before it is read (the listing's
stat, then ``fstat`` of the open file) and the read stops after ``MAX_MEMORY_BYTES + 1`` bytes (the file
may grow in between), in Python (``backend``) and in C (``_statscan.read_files``). It is then a memory
file that does not parse (:class:`MemoryFileTooLarge`, a ``FrontmatterError``): listed as broken with
its size, left out of every read with a warning naming it, ``--strict`` an error (specs/memory.md,
"A file over the size bound"). A memory file the OS refuses to read (permission denied, an I/O error) takes the
same road (:func:`unreadable`, :class:`MemoryFileUnreadable`): listed as broken, left out with a warning
naming it, never shown.
"""

from __future__ import annotations

from typing import Final

from bundlekit.errors import MemoryFileTooLarge, MemoryFileUnreadable

__all__ = ["MAX_MEMORY_BYTES", "check_size", "check_text_size", "forget_hint", "remedy", "shown_whole", "too_large",
           "unreadable"]

#: The most bytes one memory file may hold (4 MiB).
MAX_MEMORY_BYTES: Final = 4 * 1024 * 1024
_ADVICE = "move it out of the memory tree or split it into smaller memories"
_UNREADABLE_ADVICE = "fix its permissions or move it out of the memory tree"


def too_large(where: str, size: int | None) -> MemoryFileTooLarge:
    """The error for ``where`` (the file as messages name it) holding ``size`` bytes (``None``: more than the
    bound, seen while reading a file that grew), naming the size, the bound and what to do."""
    held = f"more than {_mib(MAX_MEMORY_BYTES)}" if size is None else f"{_mib(size)} ({size} bytes)"
    return MemoryFileTooLarge(
        f"{where} holds {held}, over the {_mib(MAX_MEMORY_BYTES)} a memory file may hold, so it is not read; "
        f"{_ADVICE}"
    )


def unreadable(where: str, reason: str) -> MemoryFileUnreadable:
    """The error for the memory file ``where`` (as messages name it) whose bytes the OS refused, ``reason``
    saying why in words (``_fs.os_reason``), and what to do."""
    return MemoryFileUnreadable(f"cannot read {where}: {reason}; {_UNREADABLE_ADVICE}")


def forget_hint(key: str, problem: str) -> str:
    """``bundlekit memory forget KEY` removes it`` for the broken file ``key`` whose problem is ``problem``; ""
    for one the OS refuses to read (:func:`unreadable`): a forget records the SHA-256 of the version it
    removes (a merge's tombstone), so it refuses a file it cannot read, and the problem says what to do."""
    if problem.endswith(_UNREADABLE_ADVICE):
        return ""
    return f"`bundlekit memory forget {key}` removes it"


def remedy(key: str, problem: str) -> str:
    """What a refusal over the broken file ``key`` (a write, a merge, ``--strict``) tells to do: fix it, or
    forget it where a forget can (:func:`forget_hint`)."""
    forget = forget_hint(key, problem)
    return f"fix the file, or {forget}" if forget else "fix the file"


def shown_whole(problem: str) -> bool:
    """Whether ``memory show`` prints the broken file ``problem`` is about: not one over the bound (the
    problem :func:`too_large` made), which is never read whole, nor one the OS refused (:func:`unreadable`)."""
    return not problem.endswith((_ADVICE, _UNREADABLE_ADVICE))


def check_text_size(text: str, where: str) -> None:
    """Raise :class:`MemoryFileTooLarge` when ``text`` encoded as UTF-8 is over the bound (a write, a merge, a
    first load: never store a memory every reader would then leave out). A character is at most 4 bytes, so
    only text of more than a quarter of the bound in characters is encoded to be measured."""
    if len(text) * 4 <= MAX_MEMORY_BYTES:
        return
    check_size(len(text.encode("utf-8", "surrogatepass")), where)


def check_size(size: int, where: str) -> None:
    """Raise :class:`MemoryFileTooLarge` when ``size`` bytes to be stored at ``where`` are over the bound (a
    memory's text, a merged timeline day)."""
    if size > MAX_MEMORY_BYTES:
        raise MemoryFileTooLarge(
            f"{where} would hold {_mib(size)} ({size} bytes), over the {_mib(MAX_MEMORY_BYTES)} a memory file "
            "may hold; split it into smaller memories"
        )

def _mib(size: int) -> str:
    """``size`` bytes in MiB, as a person reads it (``4 MiB``, ``300.5 MiB``)."""
    mib = size / (1024 * 1024)
    return f"{mib:.0f} MiB" if mib == int(mib) or mib >= 100 else f"{mib:.1f} MiB"
