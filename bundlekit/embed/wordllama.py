"""The built-in offline embedder: WordLlama's static token embeddings, from the files its wheel ships.

WordLlama (MIT; dleemiller/WordLlama, wheel ``wordllama-0.4.0.post1``, commit
``g20da7aad4`` per its ``_version.py``) is a table of 256-dimension token
vectors (``wordllama/weights/l2_supercat_256.safetensors``, 16 MB) and a
tokenizer (``wordllama/tokenizers/l2_supercat_tokenizer_config.json``); a
text's vector is the mean of its tokens' vectors (``WordLlamaInference.embed``
and ``avg_pool`` in ``wordllama/inference.py``: no special tokens, padding
masked out). We read those two files from the installed package ourselves
and never import its Python: ``WordLlama.load()`` (``wordllama/wordllama.py``,
``resolve_file``) looks for the tokenizer under ``tokenizer/`` while the wheel
stores it under ``tokenizers/``, then downloads it from Hugging Face into a
cache, and the package's ``__init__`` configures the root logger at import.
Here nothing is downloaded and nothing is written anywhere. The files are read once per
process while they stay the same: every embedder shares the last model read (read-only).

Bounds: a text is cut to :data:`MAX_CHARS` characters and :data:`MAX_TOKENS`
tokens, and each text's token vectors are gathered on their own (at most
4 MiB), so one huge memory cannot make a batch take gigabytes.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import stat
import struct
import threading
from array import array
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from bundlekit._closing import Closing
from bundlekit.embed.protocol import EmbedderSettings
from bundlekit.errors import EmbedderError, UsageError

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["MAX_CHARS", "MAX_TOKENS", "WordLlamaEmbedder", "joinable"]

CONFIG = "l2_supercat"
DIMENSION = 256
WEIGHTS = f"weights/{CONFIG}_{DIMENSION}.safetensors"
TOKENIZER = f"tokenizers/{CONFIG}_tokenizer_config.json"
TENSOR = "embedding.weight"
MAX_CHARS = 32_768  # what is embedded of a memory: its start (a mean of token vectors changes little past it)
MAX_TOKENS = 4_096
_BATCH = 256  # texts tokenized in one call
_VERSION = re.compile(r"""__version__\s*=\s*(?:version\s*=\s*)?['"]([A-Za-z0-9.+-]{1,40})['"]""")


def package_dir() -> Path:
    """Where the ``wordllama`` package is installed (found, not imported); ``UsageError`` when it is not."""
    spec = importlib.util.find_spec("wordllama")
    locations = list(spec.submodule_search_locations or ()) if spec is not None else []
    if not locations:
        raise UsageError("the wordllama embedder needs the package wordllama (the optional extra 'semantic')")
    return Path(locations[0])


class WordLlamaEmbedder(Closing):
    """WordLlama ``l2_supercat`` (256 dimensions), loaded from its wheel's files on first use."""

    name = "wordllama"

    def __init__(self, root: Path | None = None) -> None:
        self._root = package_dir() if root is None else root
        self._version = self._read_version()
        self._table: NDArray[Any] | None = None
        self._tokenizer: Any = None

    @classmethod
    def from_settings(cls, settings: EmbedderSettings) -> WordLlamaEmbedder:
        if settings.url or settings.model:
            raise UsageError("the wordllama embedder takes no --embed-url or --embed-model (it runs offline)")
        return cls()

    @property
    def model_id(self) -> str:
        return f"wordllama-{self._version}/{CONFIG}_{DIMENSION}"

    @property
    def dimension(self) -> int:
        return DIMENSION

    def _read_version(self) -> str:
        try:
            found = _VERSION.search((self._root / "_version.py").read_text(encoding="utf-8")[:8192])
        except OSError:
            found = None
        return found.group(1) if found else "unknown"

    def _load(self) -> tuple[NDArray[Any], Any]:
        # Asked of _model every time (two stats): a weights file cut short in place since it was mapped is
        # refused, never touched past its end through the old mapping (SIGBUS would end the process).
        self._table, self._tokenizer = _model(self._root)
        return self._table, self._tokenizer

    @property
    def tokens_key(self) -> str:
        """What token ids are valid for: the model and its tokenizer file as it is now (a derived cache of
        :meth:`word_ids` keyed by it is stale when either changes)."""
        return f"{self.model_id}|{_identity(self._root / TOKENIZER)}"

    def word_ids(self, words: Sequence[str]) -> list[list[int]]:
        """Each word's token ids, tokenized alone. The tokenizer (``l2_supercat_tokenizer_config.json``: BPE, no
        pre-tokenizer, normalizer ``Prepend "▁"`` then ``Replace " " -> "▁"``) has no token holding a "▁" after
        its first character other than runs of "▁", so no merge crosses a single space: the ids of words
        joined by single spaces are their ids tokenized alone, concatenated (:func:`joinable` says when)."""
        _table, tokenizer = self._load()
        return [list(enc.ids) for enc in tokenizer.encode_batch(list(words), add_special_tokens=False)]

    def mean_vector(self, ids: Sequence[int]) -> list[float]:
        """The mean token vector of ``ids`` (the first :data:`MAX_TOKENS`), the very floats :meth:`embed` makes of
        a text of those tokens (float32 sums, row by row, then the division), without loading the tokenizer
        and without mapping the file: each token's row is read with ``pread``, so a weights file cut short
        meanwhile is an error, never a SIGBUS. A query's few tokens are summed in Python; numpy is loaded only past
        :data:`_NUMPY_ROWS` rows (``_mean_rows``)."""
        return _mean_rows(self._root / WEIGHTS, ids[:MAX_TOKENS])

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """The mean token vector of each text (zeros for a text without tokens), float32: tokenized
        :data:`_BATCH` texts at a time, each text's tokens gathered on their own (at most :data:`MAX_TOKENS`
        rows), so memory stays bounded whatever the texts hold."""
        import numpy as np

        table, tokenizer = self._load()
        out = np.zeros((len(texts), DIMENSION), dtype=np.float32)
        for start in range(0, len(texts), _BATCH):
            encoded = tokenizer.encode_batch([t[:MAX_CHARS] for t in texts[start : start + _BATCH]], add_special_tokens=False)
            for at, enc in enumerate(encoded, start):
                if enc.ids:
                    index = np.clip(np.asarray(enc.ids, dtype=np.int64), 0, table.shape[0] - 1)
                    out[at] = table[index].mean(axis=0, dtype=np.float32)
        return out

    def close(self) -> None:
        self._table = None
        self._tokenizer = None


#: The model last read in this process, with the identity of its files: every embedder of a process (each
#: ``Memory`` a server or a test process opens makes one) shares it while the files stay the same, instead of
#: reading 16 MB of weights and the tokenizer again (half a second, and memory Python does not give back).
_LAST: list[tuple[tuple[object, ...], NDArray[Any], Any]] = []
_LAST_LOCK = threading.Lock()


def _identity(path: Path) -> tuple[int, int, int] | None:
    try:
        info = path.stat()
    except OSError:
        return None  # reading it fails, saying why
    return info.st_ino, info.st_size, info.st_mtime_ns


def _model(root: Path) -> tuple[NDArray[Any], Any]:
    """The read-only token table and the tokenizer of the model files under ``root``: read once per process
    while those files stay the same (:data:`_LAST`), else read now."""
    identity = (root, _identity(root / WEIGHTS), _identity(root / TOKENIZER))
    with _LAST_LOCK:
        if _LAST and _LAST[0][0] == identity:
            return _LAST[0][1], _LAST[0][2]
        table, tokenizer = _read_model(root)
        _LAST[:] = [(identity, table, tokenizer)]
        return table, tokenizer


_DTYPES = {"F16": "<f2", "F32": "<f4"}
_MAX_HEADER = 1 << 20  # a safetensors header of one tensor is some 100 bytes
_MAX_TOKENIZER = 64 << 20  # the tokenizer's JSON is 1.8 MB


def _open_regular(path: Path) -> BinaryIO:
    """``path`` opened for reading when it is a regular file (a link to one is followed): never waits on a FIFO
    planted there (``O_NONBLOCK``), ``ValueError`` for a FIFO, device or directory."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError(f"{path.name} is not a regular file")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _whole(value: object) -> int:
    """``value`` when it is a whole number of at least 0 (JSON's ``true`` is not), else ``ValueError``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{str(value)[:40]!r} is not a whole number")
    return value


def _layout(file: BinaryIO) -> tuple[int, int, int, str]:
    """Where the token table of the open safetensors file ``file`` lies: (byte offset, rows, columns, dtype:
    F16 or F32). The format is an 8-byte little-endian header length, a JSON header naming each tensor's
    dtype, shape and byte range, then the bytes (huggingface/safetensors ``README.md``, "Format").
    ``ValueError`` for a file that is not that: a header past :data:`_MAX_HEADER`, a dtype other than F16 or
    F32, a shape other than two whole numbers (at least one row), or a byte range that is not that shape's,
    lies outside the data (before it, in the header; past the file's end)."""
    size = int.from_bytes(file.read(8), "little")
    if not 0 < size <= _MAX_HEADER:
        raise ValueError(f"a safetensors header of {size} bytes")
    header = json.loads(file.read(size))
    entry = header.get(TENSOR) if isinstance(header, dict) else None
    if not isinstance(entry, dict) or entry.get("dtype") not in _DTYPES:
        raise ValueError(f"no {TENSOR} tensor of a float dtype")
    rows, columns = map(_whole, entry["shape"])
    start, end = map(_whole, entry["data_offsets"])
    width = 2 if entry["dtype"] == "F16" else 4
    if rows < 1 or rows * columns * width != end - start or end + 8 + size > os.fstat(file.fileno()).st_size:
        raise ValueError("a tensor whose bytes are not its shape's, or lie outside the file's data")
    return 8 + size + start, rows, columns, entry["dtype"]


def _mapped_table(weights: Path) -> NDArray[Any]:
    """The token table of the safetensors file ``weights`` (:func:`_layout`), memory-mapped read-only as stored
    (float16): nothing is copied, a text touches the pages of its tokens' rows."""
    import numpy as np

    with _open_regular(weights) as file:
        offset, rows, columns, dtype = _layout(file)
        return np.memmap(file, dtype=np.dtype(_DTYPES[dtype]), mode="r", offset=offset, shape=(rows, columns))


#: Past this many tokens a query's mean is summed by numpy (imported then, ~65 ms): in Python each row costs
#: ~0.1 ms (a padded 4,096-token question 0.4 s), in numpy the whole gather a few ms. A question of a few words never
#: imports it.
_NUMPY_ROWS = 512


def _mean_rows(weights: Path, ids: Sequence[int]) -> list[float]:
    """The mean of the rows ``ids`` of the token table in ``weights`` (ids past the table: its last row, as
    :meth:`WordLlamaEmbedder.embed` clips them), summed in float32 row by row and divided in float32 as
    numpy's mean does, each row read with ``pread``: past :data:`_NUMPY_ROWS` rows, by numpy's mean itself
    over the rows read (the expression :meth:`WordLlamaEmbedder.embed` uses). ``EmbedderError`` for a file that
    is not a :data:`DIMENSION`-wide table or cannot be read."""
    try:
        with _open_regular(weights) as file:
            offset, rows, columns, dtype = _layout(file)
            if columns != DIMENSION:
                raise ValueError(f"a table {columns} wide")
            row = struct.Struct(f"<{columns}{'e' if dtype == 'F16' else 'f'}")
            read = (os.pread(file.fileno(), row.size, offset + min(max(token, 0), rows - 1) * row.size) for token in ids)
            if len(ids) > _NUMPY_ROWS:
                return _numpy_mean(b"".join(read), len(ids), columns, dtype)
            total = array("f", bytes(4 * columns))
            for data in read:
                total = array("f", map(float.__add__, total, row.unpack(data)))  # float32 sums, as numpy's
    except (OSError, ValueError, KeyError, TypeError, RecursionError, struct.error) as exc:
        raise _unreadable(weights.parent.parent, exc) from exc
    return list(array("f", (value / len(ids) for value in total))) if ids else list(total)


def _numpy_mean(data: bytes, count: int, columns: int, dtype: str) -> list[float]:
    """The mean of ``count`` rows of ``columns`` values stored as ``dtype`` in ``data``, as ``embed`` takes it."""
    import numpy as np

    table = np.frombuffer(data, dtype=np.dtype(_DTYPES[dtype])).reshape(count, columns)
    return [float(value) for value in table.mean(axis=0, dtype=np.float32)]


def _tokenizer(vocab: Path) -> Any:
    """The tokenizer of the JSON file ``vocab`` (a regular file of at most :data:`_MAX_TOKENIZER` bytes)."""
    # Imported here: the tokenizer library loads only when a text is embedded.
    from tokenizers import Tokenizer

    with _open_regular(vocab) as file:
        size = os.fstat(file.fileno()).st_size
        if size > _MAX_TOKENIZER:
            raise ValueError(f"a tokenizer file of more than {_MAX_TOKENIZER} bytes")
        data = file.read(size)  # its size, not the bound: a read allocates what it is asked for
    return Tokenizer.from_buffer(data)  # bytes as they are: no decoded copy (Tokenizer.from_file reads them so)


# The tokenizer's added tokens (split out of the raw text before it is normalized), and its "▁" (a word that
# holds one could merge with the next word's "▁" into a run of them)
_UNJOINABLE = ("<unk>", "<s>", "</s>", "\u2581")


def joinable(text: str) -> list[str] | None:
    """The words of ``text`` whose ids, tokenized alone and concatenated, are ``text``'s (see
    :meth:`WordLlamaEmbedder.word_ids`): words joined by single spaces, none holding an added token or a "▁",
    the whole within :data:`MAX_CHARS`; None for any other text."""
    words = text.split(" ")
    if not text or len(text) > MAX_CHARS or not all(words) or any(a in text for a in _UNJOINABLE):
        return None
    return words


def _checked_table(root: Path) -> NDArray[Any]:
    """The token table of the model files under ``root`` (:func:`_mapped_table`), ``EmbedderError`` when it
    cannot be read or is not :data:`DIMENSION` wide."""
    try:
        table = _mapped_table(root / WEIGHTS)
    except (OSError, ValueError, KeyError, TypeError, RecursionError) as exc:  # a header nested past recursion
        raise _unreadable(root, exc) from exc
    if table.ndim != 2 or table.shape[1] != DIMENSION:
        raise EmbedderError(f"{root / WEIGHTS} does not hold a {DIMENSION}-dimension table; reinstall the 'semantic' extra")
    return table


def _unreadable(root: Path, exc: BaseException) -> EmbedderError:
    """The one error for model files under ``root`` that cannot be read: the kind of failure, never its text."""
    return EmbedderError(
        f"the wordllama model files in {root} cannot be read ({type(exc).__name__}); reinstall the 'semantic' extra"
    )


def _read_model(root: Path) -> tuple[NDArray[Any], Any]:
    """Open the model files under ``root``: the token table memory-mapped as stored (:func:`_mapped_table`) and
    the tokenizer, no padding, truncating."""
    # Hugging Face tokenizers warns on stderr when a process forks after using its thread pool; an MCP
    # server or a test runner may fork. One batch at a time here: its pool is not needed.
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    table = _checked_table(root)
    try:
        tokenizer = _tokenizer(root / TOKENIZER)
    except Exception as exc:  # the tokenizers library raises Exception itself
        raise _unreadable(root, exc) from exc
    tokenizer.no_padding()
    tokenizer.enable_truncation(MAX_TOKENS)
    return table, tokenizer
