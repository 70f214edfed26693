"""``with`` support for objects that hold a resource and have ``close()``.

One definition for the file indexes, HTTP clients, pinners and progress bars
that all promised the same thing: ``with obj:`` gives ``obj`` back and calls
``obj.close()`` on the way out, whatever happened inside.
"""

from __future__ import annotations

from typing import Self

__all__ = ["Closing"]


class Closing:
    """Mixin: ``__enter__`` returns ``self``; ``__exit__`` calls ``close()`` and never swallows an exception."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
