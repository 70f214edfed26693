"""The derived index of a memory tree: a stat cache and lookup tables, never a copy of a memory.

Stored in ``<tree>/.bundlekit/index.sqlite`` (WAL mode, so ``-wal`` and ``-shm``
sit beside it), in the tree's one hidden folder with the lock; a tree in memory
gets a private in-memory database. It is built like git's index or restic's:
it tells which files changed since they were indexed and chooses and ranks
memories, and it holds nothing that output is made of but the listing fields
of ``memory list`` (as ``git ls-files`` lists from git's index). Whatever else
leaves the process (a shown memory, a recall hit, a context block, an export, a
bundle, ``list --json``) is read from the memory file at that moment
(``tree``), so editing the index can change what is chosen and what a ``memory
list`` line prints, never the bytes shown or published (specs/memory.md,
"Derived index").

Tables:

* ``memory``: one row per memory file: its name and key, its ``type`` (which
  section of ``MEMORY.md`` it goes in), its signature (inode, mtime in ns,
  size, and the SHA-256 of the bytes it was indexed from) and its ranking
  fields (salience, ``updated`` in POSIX seconds, decay horizon, context-block
  piece length); its listing fields (``line``: the ``memory list`` line after
  its key, name and description with credentials withheld; ``withheld``: the
  line made from the file shows a credential), which with the key from the file
  name make a ``memory list`` line (:meth:`Listing.listed`),
  only when the rows are exactly the files of the tree's listing;
* ``search``: name, description and body as recall matches them (credentials
  withheld, ``withhold.mask``; case-folded with ``str.casefold``, as recall
  folds the query), an FTS5 table with the trigram tokenizer (``case_sensitive
  1``: the folding is ours), or a plain table scanned with ``instr`` where this
  SQLite has no FTS5; with FTS5, ``terms`` (the same text as stemmed English
  words: porter over unicode61, external content read from ``search``, recall's
  term-level BM25) and ``terms_df`` (its fts5vocab: how many memories hold each
  stem);
* ``vector``: one embedding per memory row (``id``), float16, unit length, of
  the model named in ``state`` as ``vec_model`` (its id and dimension): the
  vector of the row's search text (``memory/semantic``) and of its name and
  description (``head``), never text. A row put
  or removed drops its vector; a model of another id or dimension drops them
  all. They are computed when a recall by meaning asks for them
  (``Memory.recall``), once per changed file;
* ``usage``: by key, when a recall last returned the memory and a decaying
  boost its reads after that earned (``catalog.usage``): ranking only;
* ``state``: ``gen`` (bumped by every change of ``memory``), the signature and
  generation of the ``MEMORY.md`` last written from it, ``written_ns`` (when the
  last transaction that changed ``memory`` began: rows whose file's mtime is
  within :data:`~stat.RACY_NS` of it are *racy*, compared by SHA-256, git's rule) and
  ``sigs``: every row's stat signature in one blob sorted by file name
  (:func:`~stat.pack`), rewritten whole in each transaction that changes a row, with
  the generation it is of (``sigs_gen``). Checking an unchanged tree compares
  the tree's sorted listing with it byte for byte (one small read); where
  ``sigs_gen`` is not ``gen`` the rows are read instead.

``PRAGMA user_version`` is :data:`DERIVED_VERSION`: it covers everything
stored and every rule it is derived by (the schema, the ranking constants, the
secret rules the search text is withheld by, the folding). A file of another
version or application, or one SQLite cannot read, raises
:class:`CatalogUnusable`; the indexer then deletes and rebuilds it.

The package splits the one database by concern, as restic splits its index (``index.go``, ``indexmap.go``,
``master_index.go``): ``database`` (the connection, its version, read and write transactions, the ``state``
values), ``stat`` (the ``memory`` rows and the signature blob: which files changed), ``search`` (the
``search`` table and recall's ranking), ``listing`` (keys by type, the ``memory list`` lines),
``vectors`` (the ``vector`` table) and ``usage`` (the ``usage`` table: reads after a recall); each a small
object on the one connection, reached through :class:`Catalog` (``catalog.stat``, ``catalog.search``,
``catalog.listing``, ``catalog.vectors``, ``catalog.usage``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bundlekit.memory.catalog.database import (
    APPLICATION_ID,
    CATALOG_FILE,
    DERIVED_VERSION,
    CatalogUnavailable,
    CatalogUnusable,
    Database,
    Signature,
    catalog_files,
    fts5_available,
    moved,
)
from bundlekit.memory.catalog.listing import Listing
from bundlekit.memory.catalog.search import Ranked, Search
from bundlekit.memory.catalog.stat import RACY_NS, Row, StatCache, pack
from bundlekit.memory.catalog.usage import Usage
from bundlekit.memory.catalog.vectors import Vectors

__all__ = [
    "APPLICATION_ID",
    "CATALOG_FILE",
    "DERIVED_VERSION",
    "RACY_NS",
    "Catalog",
    "CatalogUnavailable",
    "CatalogUnusable",
    "Ranked",
    "Row",
    "Signature",
    "catalog_files",
    "fts5_available",
    "moved",
    "pack",
]


class Catalog:
    """One open index database, one per :class:`Memory`, which serializes the threads that use it: the
    :class:`Database` and the objects on its connection (``stat``, ``search``, ``listing``, ``vectors``,
    ``usage``).

    Reads run in :meth:`reading` (one snapshot), changes in :meth:`writing`
    (one transaction, taken only under the tree lock).
    """

    def __init__(self, path: Path | None, *, fts: bool | None = None, timeout: float = 30.0) -> None:
        self.db = Database(path, fts=fts, timeout=timeout)
        self.path = path
        self.stat = StatCache(self.db)
        self.search = Search(self.db)
        self.listing = Listing(self.db)
        self.vectors = Vectors(self.db)
        self.usage = Usage(self.db)

    def close(self) -> None:
        """Close the connection."""
        self.db.close()

    @contextmanager
    def reading(self) -> Iterator[Catalog]:
        """One consistent snapshot for the queries in the ``with`` body (inside another, that one's)."""
        with self.db.reading():
            yield self

    @contextmanager
    def writing(self, now_ns: int | None = None) -> Iterator[Catalog]:
        """One transaction (all or nothing) for the changes in the ``with`` body.

        ``now_ns``: the time the caller took before reading the files it indexes (and before comparing the racy
        rows' bytes): when the transaction changes a row, or when ``stat.settle`` is called, it becomes
        ``written_ns`` and the signature blob is rewritten whole."""
        with self.db.transaction():
            self.stat.begin()
            try:
                yield self
                self.stat.finish(now_ns)
            finally:
                self.stat.begin()
        self.stat.committed()

    def data_version(self) -> int:
        """SQLite's ``data_version``: it moves when another connection commits a change."""
        return self.db.data_version()

    @property
    def gen(self) -> int:
        """The generation: bumped by every change to the indexed memories."""
        return self.db.gen
