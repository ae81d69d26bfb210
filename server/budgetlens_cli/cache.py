"""The persistent cache of ``budgetlens check``: per-pipeline results kept between runs.

Like ruff's ``.ruff_cache``: a second ``check`` of an unchanged workspace (CI, pre-commit)
re-checks nothing. Where it lives, first match wins: ``--cache-dir DIR``, the environment
variable ``BUDGETLENS_CACHE_DIR``, else ``.budgetlens_cache`` in the current folder. The folder
holds a ``.gitignore`` (``*``: git never sees it), a ``CACHEDIR.TAG`` (backup tools skip it) and
one file per *run key* under a folder named after the version. ``--no-cache`` (or
``BUDGETLENS_NO_CACHE=1``) neither reads nor writes it; deleting the folder clears it.

- **Run key**: the tool version, a fingerprint of the installed code of budgetlens and of the
  libraries whose behaviour shows in a report (pydantic, PyYAML, tiktoken), the current folder
  (paths print as given), and the check options with the policy variables of the environment
  (``CheckOptions.key``). The output format is not in it: one entry serves every format.
- **Entry**: per pipeline, the content hash of every file its report read (the pipeline, its
  ``extends`` chain, its prompts, config.json, and every place probed for a config.json, as
  the core's ``BudgetCache`` recorded them; a ``tokenizer.json`` too), and what the output
  needs: the diagnostics, the step counts and the rendered pieces of each format used so far.
  An entry is used only when every hash still matches; a format whose piece is missing
  re-checks that pipeline.
- **Safety**: a file is written to a temporary file in the same folder and renamed over the
  old one, so a reader sees the old file or the new one, never a torn one; two runs at once
  each write a complete file (the last one stays). A file that is unreadable, truncated,
  from another version or whose checksum does not match is ignored and rewritten. Loading
  accepts only budgetlens result types (a restricted unpickler), so a planted file cannot
  run code; treat the folder like any build output and never restore it from an untrusted
  source (``--no-cache`` in a job checking untrusted changes). Nothing is written outside the
  chosen folder; the default folder is not used when it is a symbolic link.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import hashlib
import importlib.util
import io
import os
import pickle
import stat
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from budgetlens import __version__
from budgetlens.files import MAX_FILE_BYTES, DiskFiles, read_capped, stat_fingerprint

CACHE_DIR_NAME = ".budgetlens_cache"
CACHE_DIR_ENV = "BUDGETLENS_CACHE_DIR"
NO_CACHE_ENV = "BUDGETLENS_NO_CACHE"
#: The layout of a cache file; a change makes every older file a miss.
LAYOUT = 1
MAGIC = b"budgetlens-check-cache\n"
GITIGNORE = "# Created by budgetlens automatically.\n*\n"
CACHEDIR_TAG = ("Signature: 8a477f597d28d172789f06886806bc55\n"
                "# This file is a cache directory tag created by budgetlens.\n"
                "# For information about cache directory tags see https://bford.info/cachedir/\n")
#: Libraries whose messages or counts show in a report: their installed files are part of the
#: run key, so an upgrade is a miss.
LIBRARIES = ("pydantic", "pydantic_core", "yaml", "tiktoken")
#: At most this many entries are kept in one cache file (the oldest unused ones go first).
MAX_ENTRIES = 100_000
UNCACHEABLE = "unreadable"


class CacheDirError(Exception):
    """The cache folder cannot be used (the message says why); the run goes on without it."""


def cache_dir(option: str | None, environ: Mapping[str, str]) -> tuple[Path, bool]:
    """The cache folder and whether it was chosen explicitly (option or environment)."""
    if option:
        return Path(option), True
    if environ.get(CACHE_DIR_ENV):
        return Path(environ[CACHE_DIR_ENV]), True
    return Path(CACHE_DIR_NAME), False


def cache_disabled(flag: bool, environ: Mapping[str, str]) -> bool:
    return flag or environ.get(NO_CACHE_ENV, "") not in ("", "0")


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
        return f"large:{st.st_size}"
    try:
        with open(path, "rb") as fh:
            data = read_capped(fh, st.st_size, MAX_FILE_BYTES)
    except OSError:
        return UNCACHEABLE
    return "b2:" + hashlib.blake2b(data, digest_size=16).hexdigest()


def content_fingerprint(path: str, stat_of: Callable[[str], str]) -> tuple[str, str]:
    """``(stat fingerprint, content fingerprint)`` of ``path``. The content fingerprint is
    what decides the text the core gets: ``missing``, ``dir``, ``special``, ``large:<size>``
    or the hash of the bytes; ``unreadable`` (never cached) when the file cannot be read or
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

    def __init__(self, stat_of: Callable[[str], str]) -> None:
        self.stat_of = stat_of
        self._stats: dict[str, str] = {}
        self._contents: dict[str, tuple[str, str]] = {}
        self.hashed = 0

    def stat(self, path: str) -> str:
        got = self._stats.get(path)
        if got is None:
            got = self._stats[path] = self.stat_of(path)
        return got

    def content(self, path: str, *, fresh: bool = False) -> tuple[str, str]:
        got = None if fresh else self._contents.get(path)
        if got is None:
            got = self._contents[path] = content_fingerprint(path, self.stat_of)
            self.hashed += 1
        return got

    def matches(self, path: str, fingerprints: tuple[str, str]) -> bool:
        """Whether ``path`` still has the text it had when ``fingerprints`` (stat, content)
        were taken: the same stat fingerprint (nothing touched it), else the same bytes (a
        fresh clone, a restored cache, a file saved unchanged)."""
        at, fp = fingerprints
        if self.stat(path) == at:
            return True
        return self.content(path)[1] == fp

    def record(self, path: str, at: str, data: bytes) -> None:
        """Keep the content fingerprint of bytes a check has just read from ``path`` while
        its stat fingerprint was ``at`` (``HashingFiles``): no second read to hash them."""
        if len(data) <= MAX_FILE_BYTES:
            self._contents[path] = (at, "b2:" + hashlib.blake2b(data, digest_size=16).hexdigest())

    def at(self, path: str, seen: str) -> str:
        """The content fingerprint of ``path`` as it is with the stat fingerprint ``seen``
        (the one a check read it at), else ``unreadable``."""
        at, fp = self.content(path)
        if at != seen:
            at, fp = self.content(path, fresh=True)
        return fp if at == seen else UNCACHEABLE


class HashingFiles(DiskFiles):
    """The files on disk, each file's bytes hashed as the check reads them (into
    ``hashes``), so the result cache need not read them again to key an entry. Bytes are
    kept only when the file's stat fingerprint is the same before and after the read (a file
    saved meanwhile is hashed again, or found unreadable, by ``ContentHashes.at``)."""

    def __init__(self, hashes: ContentHashes) -> None:
        super().__init__()
        self.hashes = hashes

    def read_bytes(self, path: Path) -> bytes:
        data, st = self.read_stat(path)
        before = stat_fingerprint(st)  # taken before the file was opened
        if self.fingerprint(path) == before:
            self.hashes.record(str(path), before, data)
        return data


def _tree_fingerprint(folder: str, digest: Any) -> None:
    """Add the name, size and mtime of every file below ``folder`` to ``digest``."""
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        digest.update(f"unreadable {folder}\n".encode("utf-8", "surrogateescape"))
        return
    for entry in entries:
        if entry.name == "__pycache__" or entry.name.startswith("."):
            continue
        if entry.is_dir(follow_symlinks=False):
            _tree_fingerprint(entry.path, digest)
            continue
        with contextlib.suppress(OSError):
            st = entry.stat()
            digest.update(f"{entry.path} {st.st_size} {st.st_mtime_ns}\n".encode(
                "utf-8", "surrogateescape"))


def code_fingerprint() -> str:
    """A fingerprint of the installed code: budgetlens, this CLI and the ``LIBRARIES`` (an
    edit or an upgrade with the same version number still makes every entry a miss)."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(f"{__version__} {LAYOUT} {sys.version_info[:2]}\n".encode())
    for name in ("budgetlens", "budgetlens_cli", *LIBRARIES):
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        origin = spec.origin if spec is not None else None
        if origin is None:
            digest.update(f"{name} absent\n".encode())
        elif os.path.basename(origin) == "__init__.py":
            _tree_fingerprint(os.path.dirname(origin), digest)
        else:
            with contextlib.suppress(OSError):
                st = os.stat(origin)
                digest.update(f"{origin} {st.st_size} {st.st_mtime_ns}\n".encode(
                    "utf-8", "surrogateescape"))
    return digest.hexdigest()


def run_key(options_key: tuple[str, ...], extra: str = "") -> str:
    """The key of one cache file: version, code, current folder and the check options."""
    parts = [str(LAYOUT), __version__, code_fingerprint(), os.getcwd(), repr(options_key),
             extra]
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogateescape")).hexdigest()


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
    check read it or cannot be read (the pipeline stays out of the cache)."""
    fps: dict[str, tuple[str, str]] = {}
    for path, seen in deps.items():
        fp = hashes.at(path, seen)
        if fp == UNCACHEABLE:
            return None
        fps[path] = (seen, fp)
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

    @property
    def path(self) -> Path:
        return self.folder / _safe_version() / f"{self.key[:40]}.cache"

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

    def get(self, pipeline: str) -> Any | None:
        """The cached result of ``pipeline`` if every input it read is unchanged, else None."""
        entry = self.entries.get(pipeline)
        if entry is None:
            return None
        for path, fingerprints in entry.deps.items():
            if not self.hashes.matches(path, fingerprints):
                return None
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
            self.dirty = True
            return
        self.entries[pipeline] = Entry(fps, result)
        self.touched.add(pipeline)
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
        version = root / _safe_version()
        try:
            version.mkdir(exist_ok=True)
        except OSError as exc:
            raise CacheDirError(f"cannot create {version}: {exc.strerror or exc}") from None
        if version.is_symlink() or not version.is_dir():
            raise CacheDirError(f"{version} is not a folder")
        return version


def _safe_version() -> str:
    return "".join(ch if ch.isalnum() or ch in ".-_+" else "_" for ch in __version__)


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
