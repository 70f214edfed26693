"""Memories said in words their questions do not use: the trees the recall-by-meaning tests start from."""

from __future__ import annotations

from pathlib import Path

from bundlekit.memory import Memory

MEMORIES = {
    "reel": ("Highlight reel", "match footage", "Highlight reel of match clips is stored in a shared Drive folder."),
    "drinks": ("Drinks", "what the user likes", "The user prefers green tea in the morning, never coffee."),
    "deploy": ("Release steps", "how to ship", "Run make release, then push the tag so CI publishes the wheel."),
    "team": ("Team", "who is who", "Ana leads the backend; Jo owns the mobile app."),
}


def write_memories(mem: Memory, keys: tuple[str, ...] = tuple(MEMORIES)) -> Memory:
    """``mem`` with the memories ``keys`` written (type project)."""
    for key in keys:
        name, description, body = MEMORIES[key]
        mem.write(key, name=name, description=description, type="project", body=body)
    return mem


def memory_tree(root: Path, keys: tuple[str, ...] = tuple(MEMORIES)) -> Path:
    """A tree at ``root`` holding the memories ``keys``, its index closed."""
    write_memories(Memory(root), keys).close()
    return root
