"""The entries of the result cache of ``budgetlens check`` (``budgetlens_cli.cache``): the
fingerprints of each pipeline's inputs, the pickled results, and the cache file of one run key.

Imported when a run reads its cache file: a run that the cache's recorded answer serves
(``cache.replay``) never loads it (nor pickle, dataclasses or the core's file sources).
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import hashlib
import io
import os
import pickle
import stat
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from budgetlens import __version__
from budgetlens.files import (
    MAX_FILE_BYTES,
    MISSING_FINGERPRINT,
    OUTSIDE_FINGERPRINT,
    DiskFiles,
    Unreadable,
    read_capped,
    stat_fingerprint,
)

MAGIC = b"budgetlens-check-cache\n"
GITIGNORE = "# Created by budgetlens automatically.\n*\n"
CACHEDIR_TAG = ("Signature: 8a477f597d28d172789f06886806bc55\n"
                "# This file is a cache directory tag created by budgetlens.\n"
                "# For information about cache directory tags see https://bford.info/cachedir/\n")
#: At most this many entries are kept in one cache file (the oldest unused ones go first).
MAX_ENTRIES = 100_000
UNCACHEABLE = "unreadable"
#: Marks the stat part of an entry's fingerprints when the file was racy for the run that
#: read it (``ContentHashes.settled``). Such a stat never equals a file's, so the next run
#: compares the file's bytes instead (and keeps the stat it has then, once settled), and a
#: run that used the entry records no answer (``cache.answer_checks``).
RACY_PREFIX = "racy:"


class CacheDirError(Exception):
    """The cache folder cannot be used (the message says why); the run goes on without it."""


def _create_once(path: Path, text: str) -> None:
    """Create ``path`` with ``text`` unless something is there already (never follows or
    replaces an existing name)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return
    except OSError as exc:
        raise CacheDirError(f"cannot write {path}: {exc.strerror or exc}") from None
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)


def _version_folder() -> str:
    return "".join(ch if ch.isalnum() or ch in ".-_+" else "_" for ch in __version__)


#: The name of the folder of this version (``budgetlens_cli.cache`` sets its own, which
#: follows its ``__version__``).
VERSION_FOLDER: Callable[[], str] = _version_folder
#: Told of each cache file loaded (``budgetlens_cli.cache.note_opened``: the run's answer).
ON_LOAD: Callable[[Any], None] | None = None


# ---------------------------------------------------------------------------- fingerprints
def _read_fingerprint(path: str) -> str:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "missing"
    except NotADirectoryError:
        return "missing:notdir"
    except (OSError, ValueError):
        return UNCACHEABLE
    if stat.S_ISDIR(st.st_mode):
        return "dir"
    if not stat.S_ISREG(st.st_mode):
        return "special"
    if st.st_size > MAX_FILE_BYTES:
        return _large_fingerprint(path, st)
    try:
        with open(path, "rb", buffering=0) as fh:  # unbuffered: see read_capped
            data = read_capped(fh, st.st_size, MAX_FILE_BYTES)
    except OSError:
        return UNCACHEABLE
    return _bytes_fingerprint(len(data), hashlib.blake2b(data, digest_size=16).hexdigest())


def _bytes_fingerprint(size: int, digest: str) -> str:
    """The content fingerprint of ``size`` bytes whose blake2b (16 bytes) is ``digest``:
    ``b2:<hex>`` for a text input, ``large:<size>:b2:<hex>`` above the text cap."""
    return f"b2:{digest}" if size <= MAX_FILE_BYTES else f"large:{size}:b2:{digest}"


#: The largest file :func:`_large_fingerprint` hashes; a larger one is known by its stat.
MAX_HASHED_BYTES = 512 * 1024 * 1024


def _large_fingerprint(path: str, st: os.stat_result) -> str:
    """A file above the text cap. A prompt or pipeline that large is refused whatever it
    holds, but a tokenizer.json is read whole by its library (Llama 3's is 9 MB), so its
    bytes decide the counts: hashed whole, a megabyte at a time, up to
    :data:`MAX_HASHED_BYTES`; a larger file is known by its size, modified time and inode
    (another checkout of it is checked again)."""
    if st.st_size > MAX_HASHED_BYTES:
        return f"large:{st.st_size}:{st.st_mtime_ns}:{st.st_ino}"
    digest = hashlib.blake2b(digest_size=16)
    try:
        with open(path, "rb", buffering=0) as fh:
            while chunk := fh.read(1 << 20):
                digest.update(chunk)
    except OSError:
        return UNCACHEABLE
    return _bytes_fingerprint(st.st_size, digest.hexdigest())


def content_fingerprint(path: str, stat_of: Callable[[str], str]) -> tuple[str, str]:
    """``(stat fingerprint, content fingerprint)`` of ``path``. The content fingerprint is
    what decides the text the core gets: ``missing``, ``dir``, ``special``, the hash of the
    bytes (``large:<size>:...`` above the text cap: :func:`_large_fingerprint`);
    ``unreadable`` (never cached) when the file cannot be read or
    changed while it was read (its stat fingerprint, ``stat_of``, differs before and after).
    """
    before = stat_of(path)
    fp = _read_fingerprint(path)
    if stat_of(path) != before:
        return before, UNCACHEABLE
    return before, fp


class ContentHashes:
    """The fingerprints of each file, taken once per run (a prompt or config.json that many
    pipelines read is looked at once): its stat fingerprint (``stat_of``: size, times, inode)
    and, when that is not enough, its content fingerprint with the stat it was taken at."""

    def __init__(self, stat_of: Callable[[str], str],
                 racy: Callable[[str, int], bool] | None = None,
                 where: Callable[..., str] | None = None) -> None:
        self.stat_of = stat_of
        #: where a file lies (``cache.location_of``; None: not looked at)
        self.where = where
        #: whether a stat fingerprint was stamped too close to a time to stand for the file
        #: (``cache.is_racy``; None: never), and that time: before anything was read
        #: through these hashes
        self._racy = racy
        self.started_ns = time.time_ns()
        self._stats: dict[str, str] = {}
        self._contents: dict[str, tuple[str, str]] = {}
        #: files a check of this run could not read (``failed``): for the whole run, as the
        #: core keeps the error for the other steps and pipelines that use the file
        self._failed: set[str] = set()
        #: files whose fingerprint in ``_contents`` is of the bytes a check read (``record``)
        self._read: set[str] = set()
        self._real_folders: dict[str, str] = {}
        self._places: dict[str, str] = {}  # path -> where it lies (``_located``), this run
        self._settled: dict[str, str] = {}  # stat fingerprint -> ``settled`` of it
        self.hashed = 0
        #: the run's memoised ``abspath`` and ``realpath`` (``RunFiles``'s), when a checker
        #: shares them (``resolve_with``): a file the check resolved already is not
        #: resolved again here
        self._abspath: Callable[[str], str] | None = None
        self._realpath: Callable[[str], str] | None = None

    def resolve_with(self, abspath: Callable[[str], str], realpath: Callable[[str], str],
                     ) -> None:
        """Resolve paths with these (``RunFiles.abspath`` and ``RunFiles.realpath`` of the
        run that reads the files: the same answers as ``os.path``'s, each path resolved
        once for both: the check asks whether a file is inside the workspace before it
        reads it, then its bytes are located here)."""
        self._abspath, self._realpath = abspath, realpath

    def _located(self, path: str, fp: str) -> str:
        """``fp`` with where ``path`` really lies when that is elsewhere (``where``:
        through a symbolic link, the file itself or a folder above it). A check depends on
        that as on the bytes: a prompt outside the workspace is an error (BL041), so a link
        relinked to the same file across the workspace's edge is another input, and so is a
        workspace relinked to another folder. Each folder is resolved once per run; the file
        itself costs one ``lstat`` (none when the run's ``realpath``, ``resolve_with``,
        resolved it already)."""
        if self.where is None:
            return fp
        where = self._places.get(path)
        if where is None:
            where = self._places[path] = self.where(
                path, self._real_folders, realpath=self._realpath,
                abspath=self._abspath or os.path.abspath)
        return f"{fp}@{where}" if where else fp

    def stat(self, path: str) -> str:
        got = self._stats.get(path)
        if got is None:
            got = self._stats[path] = self.stat_of(path)
        return got

    def content(self, path: str, *, fresh: bool = False) -> tuple[str, str]:
        got = None if fresh else self._contents.get(path)
        if got is None:
            at, fp = content_fingerprint(path, self.stat_of)
            if fp != UNCACHEABLE:
                fp = self._located(path, fp)
            got = self._contents[path] = (at, fp)
            self.hashed += 1
        return got

    def settled(self, at: str) -> str:
        """The stat fingerprint ``at`` as an entry keeps it: marked (``RACY_PREFIX``) when
        it is racy against the start of these hashes (a file stamped in the same clock tick
        as the run read it), so that no later stat is taken as proof that it is unchanged."""
        got = self._settled.get(at)  # a file many pipelines read: asked once
        if got is None:
            racy = self._racy is not None and self._racy(at, self.started_ns)
            got = self._settled[at] = RACY_PREFIX + at if racy else at
        return got

    def matches(self, path: str, fingerprints: tuple[str, str]) -> bool:
        """Whether ``path`` still has the text it had when ``fingerprints`` (stat, content)
        were taken: the same stat fingerprint (nothing touched it), else the same bytes (a
        fresh clone, a restored cache, a file saved unchanged, a racy stat: ``settled``)."""
        at, fp = fingerprints
        if self.stat(path) == at:  # the same file; and still in the same place?
            return fp == UNCACHEABLE or self._located(path, fp.partition("@")[0]) == fp
        return self.content(path)[1] == fp

    def stat_taken(self, path: str) -> str | None:
        """The stat fingerprint of ``path`` taken in this run (``stat``), if any."""
        return self._stats.get(path)

    def known(self, path: str) -> tuple[str, str] | None:
        """The ``(stat, content)`` fingerprints of ``path`` taken in this run, if any."""
        return self._contents.get(path)

    def failed(self, path: str) -> None:
        """A check could not read ``path`` (an I/O error; its report says so): every result of
        this run that depends on it is kept out of the cache (``at``), even when a read for
        the hash, or another check's read, succeeds (the error may have been passing, and the
        core keeps it for the file's other uses in the run: the next run reads it again)."""
        self._failed.add(path)
        self._contents.pop(path, None)
        self._read.discard(path)

    def record(self, path: str, at: str, data: bytes) -> None:
        """Keep the content fingerprint of bytes a check has just read from ``path`` while
        its stat fingerprint was ``at`` (``HashingFiles``): no second read to hash them."""
        if len(data) <= MAX_FILE_BYTES:
            self.record_digest(path, at, hashlib.blake2b(data, digest_size=16).hexdigest(),
                               len(data))

    def record_digest(self, path: str, at: str, digest: str, size: int) -> None:
        """Keep the content fingerprint of ``size`` bytes of blake2b ``digest`` (16 bytes,
        hex) a check used from ``path`` while its stat fingerprint was ``at``: read by it
        (``record``), or given to a tokenizer library (``check_cmd._tokenizer_bytes``); the
        fingerprint a read for the hash would give (``_read_fingerprint``)."""
        if path not in self._failed and size <= MAX_HASHED_BYTES:
            self._contents[path] = (at, self._located(path, _bytes_fingerprint(size, digest)))
            self._read.add(path)

    def at(self, path: str, seen: str) -> str:
        """The content fingerprint of ``path`` as it is with the stat fingerprint ``seen``
        (the one a check read it at), else ``unreadable``: also when the check's own read
        failed (``failed``), and when the hash would come from another read than the check's
        (a tokenizer.json, which its library reads) while ``seen`` is racy (a save in the
        same tick between the two reads would key the old bytes' result by the new ones)."""
        if path in self._failed:
            return UNCACHEABLE
        if path not in self._read and self.settled(seen) != seen:
            return UNCACHEABLE
        at, fp = self.content(path)
        if at != seen:
            at, fp = self.content(path, fresh=True)
        return fp if at == seen else UNCACHEABLE


class HashingFiles(DiskFiles):
    """The files on disk, each file's bytes hashed as the check reads them (into
    ``hashes``), so the result cache need not read them again to key an entry. Bytes are
    kept only when the file's stat fingerprint is the same before and after the read (a file
    saved meanwhile is hashed again, or found unreadable, by ``ContentHashes.at``).

    One ``stat`` and one ``fstat`` a read: the check fingerprints a file just before it reads
    it (``RecordingFiles``), and that ``stat`` (kept until the next fingerprint, of any
    path) is the one the read checks the file by and its bytes are recorded at; after the
    read, the open file's own ``fstat`` (the same facts as a ``stat`` of its path: the same
    file, its inode in the fingerprint) tells whether it changed since."""

    def __init__(self, hashes: ContentHashes) -> None:
        super().__init__()
        self.hashes = hashes
        self._taken: tuple[str, os.stat_result] | None = None  # the last fingerprint's stat

    def fingerprint(self, path: Path | str) -> str:
        self._taken = None
        try:
            st = os.stat(path)
        except (OSError, ValueError):  # ValueError: a NUL in the path (no such file)
            return MISSING_FINGERPRINT
        self._taken = (str(path), st)
        return stat_fingerprint(st)

    def read_bytes(self, path: Path) -> bytes:
        taken, self._taken = self._taken, None
        key = str(path)
        try:
            data, st, once_read = self.read_stat(
                path, taken[1] if taken is not None and taken[0] == key else None, after=True)
        except Unreadable:
            self.hashes.failed(key)
            raise
        before = stat_fingerprint(st)  # taken before the file was opened
        if once_read is not None and stat_fingerprint(once_read) == before:
            self.hashes.record(key, before, data)
        return data


# ---------------------------------------------------------------------------- entries
@dataclass
class Entry:
    """One pipeline's cached result: the content fingerprints of its inputs and ``result``
    (the CLI's ``PipelineResult``: diagnostics, counts and rendered pieces)."""

    deps: dict[str, tuple[str, str]]
    result: Any


_SAFE_BUILTINS = frozenset({"frozenset", "set", "list", "dict", "tuple", "str", "int", "bool",
                            "float", "bytes", "slice", "range"})
_SAFE_GLOBALS = {("xml.etree.ElementTree", "Element"),
                 ("pathlib", "PosixPath"), ("pathlib", "PurePosixPath"),
                 ("pathlib", "WindowsPath"), ("pathlib", "PureWindowsPath"),
                 ("collections", "OrderedDict")}


class _ResultUnpickler(pickle.Unpickler):
    """Loads plain data and result types only: a dataclass or enum of budgetlens (or of this
    CLI) and the few classes above. A function, or any other class, is refused, so a planted
    cache file can neither run code nor call a budgetlens function (one that writes files)."""

    def find_class(self, module: str, name: str) -> Any:
        if (module == "builtins" and name in _SAFE_BUILTINS) or (module, name) in _SAFE_GLOBALS:
            return super().find_class(module, name)
        if module.split(".")[0] in ("budgetlens", "budgetlens_cli") and "." not in name:
            found = super().find_class(module, name)
            if isinstance(found, type) and (dataclasses.is_dataclass(found)
                                            or issubclass(found, enum.Enum)):
                return found
        raise pickle.UnpicklingError(f"refused global {module}.{name}")


def _decode(data: bytes, key: str) -> dict[str, Entry] | None:
    """The entries of a cache file's bytes, or None when they are not a whole, valid file
    of this run key."""
    header = MAGIC + key.encode() + b"\n"
    if not data.startswith(header) or len(data) < len(header) + 33:
        return None
    checksum = data[len(header):len(header) + 32]
    payload = data[len(header) + 33:]
    if data[len(header) + 32:len(header) + 33] != b"\n" or \
            hashlib.blake2b(payload, digest_size=16).hexdigest().encode() != checksum:
        return None
    try:
        entries = _ResultUnpickler(io.BytesIO(payload)).load()
    except Exception:  # a damaged or foreign payload is a miss, never a crash
        return None
    if not isinstance(entries, dict) or not all(
            isinstance(k, str) and isinstance(v, Entry) for k, v in entries.items()):
        return None
    return entries


def _encode(entries: dict[str, Entry], key: str) -> bytes:
    payload = pickle.dumps(entries, protocol=pickle.HIGHEST_PROTOCOL)
    checksum = hashlib.blake2b(payload, digest_size=16).hexdigest().encode()
    return MAGIC + key.encode() + b"\n" + checksum + b"\n" + payload


def entry_fingerprints(deps: Mapping[str, str],
                       hashes: ContentHashes) -> dict[str, tuple[str, str]] | None:
    """``path -> (stat fingerprint, content fingerprint)`` of the inputs ``deps`` (path ->
    the stat fingerprint the check read it at); None when one of them changed since the
    check read it or cannot be read, or the check left it unread because it resolves
    outside the workspace (``OUTSIDE_FINGERPRINT``: nothing there is read, not even to hash
    it): the pipeline stays out of the cache."""
    fps: dict[str, tuple[str, str]] = {}
    for path, seen in deps.items():
        if seen == OUTSIDE_FINGERPRINT:
            return None
        fp = hashes.at(path, seen)
        if fp == UNCACHEABLE:
            return None
        fps[path] = (hashes.settled(seen), fp)
    return fps


@dataclass
class ResultCache:
    """The cache file of one run key in ``folder``: read once, written once at the end."""

    folder: Path
    key: str
    explicit: bool
    hashes: ContentHashes
    entries: dict[str, Entry] = field(default_factory=dict)
    touched: set[str] = field(default_factory=set)
    dirty: bool = False
    loaded: bool = False
    asked: list[str] = field(default_factory=list)
    """Every pipeline ``get`` was asked for, in order: the run's pipelines."""
    put_names: set[str] = field(default_factory=set)
    """The pipelines ``put_entry`` kept an entry for in this run."""

    @property
    def path(self) -> Path:
        return self.folder / VERSION_FOLDER() / f"{self.key[:40]}.cache"

    def load(self) -> None:
        """Read the cache file; a missing or bad one leaves the cache empty (a bad one makes
        it dirty, so the end of the run rewrites it)."""
        try:
            with open(self.path, "rb") as fh:
                data = fh.read()
        except OSError:
            data = b""
        entries = _decode(data, self.key) if data else None
        self.loaded = entries is not None
        self.entries = entries if entries is not None else {}
        self.dirty = bool(data) and entries is None
        if ON_LOAD is not None:
            ON_LOAD(self)

    def get(self, pipeline: str) -> Any | None:
        """The cached result of ``pipeline`` if every input it read is unchanged, else None."""
        self.asked.append(pipeline)
        entry = self.entries.get(pipeline)
        if entry is None:
            return None
        racy = []
        for path, fingerprints in entry.deps.items():
            if not self.hashes.matches(path, fingerprints):
                return None
            if fingerprints[0].startswith(RACY_PREFIX):
                racy.append(path)
        for path in racy:  # the same bytes: keep the stat they have now, once it is settled
            taken = self.hashes.known(path)
            if taken is not None and not (at := self.hashes.settled(taken[0])).startswith(
                    RACY_PREFIX):
                entry.deps[path] = (at, taken[1])
                self.dirty = True
        self.touched.add(pipeline)
        return entry.result

    def put(self, pipeline: str, deps: Mapping[str, str], result: Any) -> None:
        """Keep ``result`` under the content fingerprints of ``deps`` (path -> the stat
        fingerprint the check read it at). A file whose stat fingerprint is no longer that
        (it changed during the run) or that cannot be read keeps the pipeline out of the
        cache: the next run checks it."""
        self.put_entry(pipeline, entry_fingerprints(deps, self.hashes), result)

    def put_entry(self, pipeline: str, fps: dict[str, tuple[str, str]] | None,
                  result: Any) -> None:
        """Keep ``result`` under ``fps`` (``entry_fingerprints``, possibly taken in a worker
        process); None keeps the pipeline out of the cache."""
        if fps is None:
            self.entries.pop(pipeline, None)
            self.put_names.discard(pipeline)
            self.dirty = True
            return
        self.entries[pipeline] = Entry(fps, result)
        self.touched.add(pipeline)
        self.put_names.add(pipeline)
        self.dirty = True

    def save(self) -> None:
        """Write the file when something changed; raises ``CacheDirError`` or ``OSError``."""
        if not self.dirty:
            return
        if len(self.entries) > MAX_ENTRIES:  # keep this run's entries, then the newest
            order = sorted(self.entries, key=lambda p: p in self.touched)
            self.entries = {p: self.entries[p] for p in order[-MAX_ENTRIES:]}
        folder = self._prepare()
        data = _encode(self.entries, self.key)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".cache", dir=folder)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        self.dirty = False

    def _prepare(self) -> Path:
        """Make the cache folder (not its parents), its ``.gitignore``, ``CACHEDIR.TAG`` and
        version folder; the folder the file goes in is never a symbolic link."""
        root = self.folder
        if not self.explicit and root.is_symlink():
            raise CacheDirError(f"{root} is a symbolic link; not writing through it")
        try:
            root.mkdir(exist_ok=True)
        except OSError as exc:
            raise CacheDirError(f"cannot create {root}: {exc.strerror or exc}") from None
        for name, text in ((".gitignore", GITIGNORE), ("CACHEDIR.TAG", CACHEDIR_TAG)):
            _create_once(root / name, text)
        version = root / VERSION_FOLDER()
        try:
            version.mkdir(exist_ok=True)
        except OSError as exc:
            raise CacheDirError(f"cannot create {version}: {exc.strerror or exc}") from None
        if version.is_symlink() or not version.is_dir():
            raise CacheDirError(f"{version} is not a folder")
        return version


