"""The persistent per-user cache of token counts.

A start of the language server on a workspace whose prompts it has counted before need not
load a vocabulary (the rank table and tiktoken's ``Encoding``: most of a start's CPU time)
before its first diagnostics: the counts are kept on disk, per counting identity, and a
tokenizer consults them before it encodes (``tokens.core.TiktokenTokenizer.count``).

- **Key**: the counting identity (everything that decides a count: the encoding's name, the
  sha256 of its rank file, its split pattern and special tokens, the tiktoken version; see
  ``core._identity``) names the file; inside it, the sha256 of the text's UTF-8 bytes maps
  to its count. Only counts are kept: anything that needs token ids (``encode``, clamps,
  truncation) loads the encoding.
- **Where**: ``$XDG_CACHE_HOME/budgetlens/counts/`` (else ``~/.cache/budgetlens/counts/``),
  next to the rank cache; one file per identity. Deleting the folder clears it;
  ``BUDGETLENS_NO_CACHE=1`` neither reads nor writes it (counts are still memoised in the
  process).
- **Bounded**: the :data:`MAX_ENTRIES` most recently used counts per identity (about 50
  bytes each on disk).
- **Safe**: a file is written whole to a temporary name and renamed over the old one
  (``os.replace``), so a reader never sees half of it; a writer merges what another process
  wrote meanwhile. A file is used only when it is sealed with this user's cache key
  (``budgetlens.usercache``): a planted, damaged, truncated or foreign file is ignored with
  one note and the texts are counted again. It is opened without following a link or
  waiting for a writer, and read only as a regular file under :data:`MAX_FILE_BYTES`.
  Writes happen only when the host calls :func:`flush` (the server: after its first
  diagnostics, then periodically, and at exit), never inside a count.
"""

from __future__ import annotations

import hashlib
import itertools
import marshal
import os
import threading
from pathlib import Path

from budgetlens import usercache

NO_CACHE_ENV = "BUDGETLENS_NO_CACHE"
#: Counts kept per counting identity (the most recently used ones).
MAX_ENTRIES = 16_384
_MAGIC = b"budgetlens-counts 2\n"
_DIGEST_SIZE = 32  # sha256
_PURPOSE = b"counts"
#: The largest count file read (:data:`MAX_ENTRIES` counts take under 1 MB).
MAX_FILE_BYTES = 8 * 1024 * 1024


def user_cache_dir() -> Path | None:
    """``$XDG_CACHE_HOME/budgetlens`` (an absolute one), else ``~/.cache/budgetlens``; None
    when no home folder is known."""
    root = usercache.cache_root()
    return Path(root) if root is not None else None


def disabled() -> bool:
    """``BUDGETLENS_NO_CACHE`` is set (to anything but ``0``): no file is read or written."""
    return os.environ.get(NO_CACHE_ENV, "") not in ("", "0")


def count_cache_dir() -> Path | None:
    """The folder of the count files, or None when the cache is off or no home is known."""
    if disabled():
        return None
    base = user_cache_dir()
    return base / "counts" if base is not None else None


def text_digest(text: str) -> bytes:
    """The key of a text: the sha256 of its UTF-8 bytes (lone surrogates kept)."""
    return utf8_digest(text.encode("utf-8", "surrogatepass"))


def utf8_digest(data: bytes) -> bytes:
    """``text_digest`` of the text whose UTF-8 bytes are ``data`` (not encoded again)."""
    return hashlib.sha256(data).digest()


def _valid(key: object, value: object) -> bool:
    return (isinstance(key, bytes) and len(key) == _DIGEST_SIZE and isinstance(value, int)
            and not isinstance(value, bool) and value >= 0)


class CountStore:
    """The counts of one counting identity: in memory, backed by one file."""

    def __init__(self, name: str, identity: str, *, max_entries: int = MAX_ENTRIES) -> None:
        self.name = name
        self.identity = identity  # a hex digest
        self.max_entries = max_entries
        self._entries: dict[bytes, int] = {}  # oldest first
        self._loaded = False
        self._new = 0  # counts added since the last flush
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    # -- the file ----------------------------------------------------------------------
    def file(self) -> Path | None:
        folder = count_cache_dir()
        if folder is None:
            return None
        return folder / f"{self.name}-{self.identity[:32]}-sealed.marshal"  # _MAGIC 2

    def _header(self) -> bytes:
        return _MAGIC + self.identity.encode("ascii") + b"\n"

    def _read(self, file: Path) -> dict[bytes, int]:
        """The counts in ``file``; empty for a missing, damaged, truncated, foreign or
        planted one (not sealed with this user's key: ``usercache``)."""
        data = usercache.read_file(str(file), MAX_FILE_BYTES)
        if data is None:
            return {}
        key = usercache.user_key()
        if key is None:
            return {}
        payload = usercache.unseal(data, key, _PURPOSE, self._header(), str(file))
        if payload is None:
            return {}
        try:
            entries = marshal.loads(payload)
        except (ValueError, EOFError, TypeError):
            return {}
        if not isinstance(entries, dict):
            return {}
        return entries

    def load(self) -> None:
        """Read the file once (the first count does it; ``warm_up`` may do it earlier)."""
        if self._loaded:
            return
        file = self.file()
        disk = self._read(file) if file is not None else {}
        with self._lock:
            if not self._loaded:
                self._loaded = True
                # kept entries first (older), then any counted in the meantime
                merged = {k: v for k, v in disk.items() if k not in self._entries}
                merged.update(self._entries)
                self._entries = merged
                self._trim()

    def _trim(self) -> None:
        excess = len(self._entries) - self.max_entries
        if excess > 0:  # the oldest: first in order (a slice of the keys, not all of them)
            for key in list(itertools.islice(self._entries, excess)):
                del self._entries[key]

    # -- counts ------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: bytes) -> int | None:
        """The count kept for a text's digest, or None."""
        if not self._loaded:
            self.load()
        with self._lock:
            value = self._entries.pop(key, None)
            if value is None or not _valid(key, value):
                self.misses += 1
                return None
            self._entries[key] = value  # most recently used: last
            self.hits += 1
            return value

    def put(self, key: bytes, value: int) -> None:
        with self._lock:
            if key not in self._entries:
                self._new += 1
            self._entries[key] = value
            self._trim()

    @property
    def dirty(self) -> bool:
        return self._new > 0

    def flush(self) -> bool:
        """Write the counts (merged with what another process wrote meanwhile) if any were
        added; True when a file was written. Never raises for a file-system failure."""
        file = self.file()
        if file is None or not self._new:
            return False
        disk = self._read(file)
        with self._lock:
            merged = {k: v for k, v in disk.items() if k not in self._entries and _valid(k, v)}
            merged.update((k, v) for k, v in self._entries.items() if _valid(k, v))
            new, self._new = self._new, 0
        excess = len(merged) - self.max_entries
        if excess > 0:
            merged = dict(list(merged.items())[excess:])
        key = usercache.user_key()
        data = None if key is None else usercache.sealed(key, _PURPOSE, self._header(),
                                                         marshal.dumps(merged))
        if data is None or not write_atomic(file, data):
            with self._lock:
                self._new += new  # try again at the next flush
            return False
        return True


def write_atomic(file: Path, data: bytes) -> bool:
    """``data`` in ``file``, through a temporary file renamed over it, in a folder only this
    user writes (``usercache.private_folder``: never through a link); False on failure."""
    folder = usercache.private_folder(str(file.parent))
    if folder is None:
        return False
    try:
        usercache.write_file(folder, file.name, data)
    except OSError:
        return False
    return True


_STORES: dict[str, CountStore] = {}
_STORES_LOCK = threading.Lock()


def store_for(name: str, identity: str) -> CountStore:
    """The process's one store of a counting identity."""
    with _STORES_LOCK:
        store = _STORES.get(identity)
        if store is None:
            store = _STORES[identity] = CountStore(name, identity)
        return store


def pending() -> bool:
    """Some store holds counts not yet written."""
    with _STORES_LOCK:
        stores = list(_STORES.values())
    return any(s.dirty for s in stores)


def flush() -> int:
    """Write every store holding new counts; the number of files written."""
    with _STORES_LOCK:
        stores = list(_STORES.values())
    return sum(s.flush() for s in stores)
