"""The entries of the result cache of ``budgetlens check`` (``budgetlens_cli.cache``): the
fingerprints of each pipeline's inputs, the results as plain data (``_plain``: marshal's
types, tagged tuples for tuples, sets, XML elements and the result classes of ``_CLASSES``),
and the cache file of one run key, sealed with the user's cache key (``usercache``).

Imported when a run reads its cache file: a run that the cache's recorded answer serves
(``cache.replay``) never loads it (nor marshal, dataclasses or the core's file sources).
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import hashlib
import importlib
import marshal
import os
import stat
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from budgetlens import __version__, usercache
from budgetlens.files import (
    MAX_FILE_BYTES,
    MISSING_FINGERPRINT,
    OUTSIDE_FINGERPRINT,
    DiskFiles,
    Unreadable,
    read_capped,
    stat_fingerprint,
)

MAGIC = b"budgetlens-check-cache 3\n"
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
        (``record``), or given to a tokenizer library (``check_run._tokenizer_bytes``); the
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
def cache_file(folder: Path, key: str) -> Path:
    """The cache file of run key ``key`` in the cache folder ``folder``: the one place a
    cache file is read from and written to."""
    return folder / VERSION_FOLDER() / f"{key[:40]}.cache"


@dataclass
class Entry:
    """One pipeline's cached result: the content fingerprints of its inputs and ``result``
    (the CLI's ``PipelineResult``: diagnostics, counts and rendered pieces)."""

    deps: dict[str, tuple[str, str]]
    result: Any


#: The classes a result is made of, by name: only these are made again from a cache file
#: (their module imported when first met, as a result of that kind is loaded).
_CLASSES = MappingProxyType({
    "PipelineResult": ("budgetlens_cli.check_result", "PipelineResult"),
    "Diagnostic": ("budgetlens.source", "Diagnostic"),
    "Related": ("budgetlens.source", "Related"),
    "Location": ("budgetlens.source", "Location"),
    "Range": ("budgetlens.source", "Range"),
    "Position": ("budgetlens.source", "Position"),
    "Severity": ("budgetlens.source", "Severity"),
    # Diagnostic.data: every member of source.FixData (tests/cli/cache keeps this complete)
    "RenameKey": ("budgetlens.source", "RenameKey"),
    "ClampFix": ("budgetlens.source", "ClampFix"),
    "FailureStage": ("budgetlens.source", "FailureStage"),
    "JsonCut": ("budgetlens.source", "JsonCut"),
    "JsonTooLarge": ("budgetlens.source", "JsonTooLarge"),
    "TargetMatrix": ("budgetlens.contract.targets", "TargetMatrix"),
    "TargetFit": ("budgetlens.contract.targets", "TargetFit"),
})
_NAMES: dict[type, str] = {}  # class -> its name above, once loaded
_LOADED: dict[str, type] = {}
_FIELDS: dict[type, tuple[str, ...]] = {}
_SCALARS = (type(None), bool, int, float, str, bytes)
_SCALAR_TYPES = frozenset(_SCALARS)


class Unplain(ValueError):
    """A value that is not plain data of a result (no entry is kept for it)."""


def _class(name: str) -> type:
    cls = _LOADED.get(name)
    if cls is None:
        where = _CLASSES.get(name)
        if where is None:
            raise Unplain(f"not a result class: {name!r}")
        cls = getattr(importlib.import_module(where[0]), where[1])
        _LOADED[name] = cls
        _NAMES[cls] = name
    return cls


def _name_of(cls: type) -> str | None:
    name = _NAMES.get(cls)
    if name is None:
        for candidate, (module, attr) in _CLASSES.items():
            if cls.__name__ == attr and cls.__module__ == module and _class(candidate) is cls:
                return candidate
    return name


def _is_element(value: Any) -> bool:
    """``value`` is an XML element (a JUnit suite); never true before ElementTree is loaded."""
    tree = sys.modules.get("xml.etree.ElementTree")
    return tree is not None and isinstance(value, tree.Element)


def _fields(cls: type) -> tuple[str, ...]:
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return names


def _plain(value: Any) -> Any:
    """``value`` as plain data (marshal's types): a tuple, set, result class or XML element
    becomes a tuple tagged by its first item; raises ``Unplain`` for anything else."""
    cls = type(value)
    if cls in _SCALARS:
        return value
    if cls is list:
        return [_plain(v) for v in value]
    if cls is tuple:
        return ("t", *(_plain(v) for v in value))
    if cls is dict:
        return {_plain(k): _plain(v) for k, v in value.items()}
    if cls is frozenset or cls is set:
        return ("f" if cls is frozenset else "s", *(_plain(v) for v in value))
    if _is_element(value):
        return _plain_element(value)
    name = _name_of(cls)
    if name is None:
        raise Unplain(f"not plain data: {cls.__name__}")
    if isinstance(value, enum.Enum):
        return ("e", name, _plain(value.value))
    if name == "Range":  # the most common result class, in four numbers
        start, end = value.start, value.end
        return ("r", start.line, start.character, end.line, end.character)
    return ("d", name, *(_plain(getattr(value, f)) for f in _fields(cls)))


def _from_plain(value: Any) -> Any:
    """The value ``_plain`` made ``value`` of; raises ``Unplain`` for anything it does not
    make (a type, a tag, a class or a number of fields). Scalars are taken in place, not
    through a call (most of a result is strings and numbers)."""
    cls = type(value)
    if cls in _SCALARS:
        return value
    if cls is list:
        if _SCALAR_TYPES.issuperset(map(type, value)):
            return value  # marshal made it: nothing else holds it
        return [v if type(v) in _SCALARS else _from_plain(v) for v in value]
    if cls is dict:
        if _SCALAR_TYPES.issuperset(map(type, value.values())) and \
                _SCALAR_TYPES.issuperset(map(type, value)):
            return value
        return {k if type(k) in _SCALARS else _from_plain(k):
                v if type(v) in _SCALARS else _from_plain(v) for k, v in value.items()}
    if cls is not tuple or not value or type(value[0]) is not str:
        raise Unplain(f"not plain data: {cls.__name__}")
    return _from_tagged(value[0], value)


def _from_tagged(tag: str, value: tuple[Any, ...]) -> Any:
    """``_from_plain`` of a tagged tuple (``_plain``)."""
    if tag == "d" and len(value) >= 2 and type(value[1]) is str:
        made, size = _dataclass(value[1])
        if len(value) - 2 != size:
            raise Unplain(f"not the fields of {value[1]}")
        return made(*[v if type(v) in _SCALARS else _from_plain(v) for v in value[2:]])
    if tag == "r" and len(value) == 5 and all(type(v) is int for v in value[1:]):
        position = _class("Position")
        return _class("Range")(position(value[1], value[2]), position(value[3], value[4]))
    if tag == "t":
        return tuple([v if type(v) in _SCALARS else _from_plain(v) for v in value[1:]])
    if tag in ("f", "s"):
        items = [_from_plain(v) for v in value[1:]]
        return frozenset(items) if tag == "f" else set(items)
    if tag == "X" and len(value) == 3 and type(value[1]) is str and \
            (value[2] is None or type(value[2]) is str):
        return _parsed_element(value[1], value[2])
    if tag == "x" and len(value) == 6:
        return _element(*value[1:])
    if tag == "e" and len(value) == 3 and type(value[1]) is str:
        made = _class(value[1])
        if not issubclass(made, enum.Enum):
            raise Unplain("not an enum")
        return made(_from_plain(value[2]))
    raise Unplain(f"unknown tag {tag!r}")


_DATACLASSES: dict[str, tuple[Any, int]] = {}


def _dataclass(name: str) -> tuple[Any, int]:
    """The result dataclass named ``name`` and its number of fields."""
    got = _DATACLASSES.get(name)
    if got is None:
        made = _class(name)
        if not dataclasses.is_dataclass(made):
            raise Unplain(f"not a dataclass: {name}")
        got = _DATACLASSES[name] = (made, len(_fields(made)))
    return got


def _plain_element(value: Any) -> tuple[Any, ...]:
    """An XML element as its XML text and tail (``X``: parsed back by expat, much faster
    than a walk), when that text gives the same element back; else as its parts (``x``)."""
    import xml.etree.ElementTree as ET  # loaded already: ``value`` is one of its elements

    bare = ET.Element(value.tag, value.attrib)  # without its tail, which XML cannot hold
    bare.text = value.text
    bare.extend(value)
    text = ET.tostring(bare, encoding="unicode")
    try:
        same = _same_element(ET.fromstring(text), bare)
    except ET.ParseError:  # a character XML 1.0 cannot carry
        same = False
    if same and (value.tail is None or type(value.tail) is str):
        return ("X", text, value.tail)
    return ("x", value.tag, _plain(dict(value.attrib)), value.text, value.tail,
            [_plain(child) for child in value])


def _same_element(a: Any, b: Any) -> bool:
    return (a.tag == b.tag and a.attrib == b.attrib and a.text == b.text
            and a.tail == b.tail and len(a) == len(b)
            and all(_same_element(x, y) for x, y in zip(a, b, strict=True)))


def _parsed_element(text: str, tail: str | None) -> Any:
    import xml.etree.ElementTree as ET  # lazy: start-up speed (only a JUnit piece has one)

    try:
        element = ET.fromstring(text)
    except ET.ParseError:
        raise Unplain("not an XML element") from None
    element.tail = tail
    return element


def _element(tag: Any, attrib: Any, text: Any, tail: Any, children: Any) -> Any:
    import xml.etree.ElementTree as ET  # lazy: start-up speed (only a JUnit piece has one)

    attrib = _from_plain(attrib)
    if type(tag) is not str or type(attrib) is not dict or type(children) is not list or \
            not all(type(k) is str and type(v) is str for k, v in attrib.items()) or \
            not all(t is None or type(t) is str for t in (text, tail)):
        raise Unplain("not an XML element")
    element = ET.Element(tag, attrib)
    element.text, element.tail = text, tail
    for child in children:
        made = _from_plain(child)
        if not isinstance(made, ET.Element):
            raise Unplain("not an XML element")
        element.append(made)
    return element


def _plain_entry(entry: Entry) -> tuple[dict[str, tuple[str, str]], Any] | None:
    """An entry as plain data; None when its result is not (it is not kept)."""
    try:
        return dict(entry.deps), _plain(entry.result)
    except (Unplain, RecursionError):
        return None


def _entry(value: Any) -> Entry:
    """The entry of plain data ``value`` (``_plain_entry``), checked; raises ``Unplain``."""
    if type(value) is not tuple or len(value) != 2 or type(value[0]) is not dict:
        raise Unplain("not an entry")
    deps: dict[str, tuple[str, str]] = {}
    for path, fps in value[0].items():
        if type(path) is not str or type(fps) is not tuple or len(fps) != 2 or \
                type(fps[0]) is not str or type(fps[1]) is not str:
            raise Unplain("not the fingerprints of an entry")
        deps[path] = fps
    result = _from_plain(value[1])
    if type(result) is not _class("PipelineResult"):
        raise Unplain("not a pipeline's result")
    return Entry(deps, result)


#: The largest cache file read (a larger one is ignored with a note).
MAX_CACHE_BYTES = 256 * 1024 * 1024
_PURPOSE = b"result cache"


def _decode(data: bytes, key: str, path: str | None = None) -> dict[str, Entry] | None:
    """The entries of a cache file's bytes, or None when they are not a whole file of this
    run key sealed with this user's cache key (``usercache``; noted once, with ``path``),
    or hold anything but the plain data of results."""
    secret = usercache.user_key()
    if secret is None:
        return None
    payload = usercache.unseal(data, secret, _PURPOSE, MAGIC + key.encode() + b"\n", path)
    if payload is None:
        return None
    try:
        plain = marshal.loads(payload)
        if type(plain) is not dict:
            return None
        entries = {}
        for name, value in plain.items():
            if type(name) is not str:
                return None
            entries[name] = _entry(value)
    except (Unplain, ValueError, EOFError, TypeError, RecursionError):
        return None  # sealed by this user, yet not what this version writes: a miss
    return entries


def _encode(entries: dict[str, Entry], key: str) -> bytes:
    """The bytes of a cache file of ``entries`` (those whose result is plain data), sealed
    with this user's cache key; raises ``CacheDirError`` when there is no usable key."""
    secret = usercache.user_key()
    if secret is None:
        raise CacheDirError("no usable cache key (see the note above)")
    plain = {}
    for name, entry in entries.items():
        got = _plain_entry(entry)
        if got is not None:
            plain[name] = got
    return usercache.sealed(secret, _PURPOSE, MAGIC + key.encode() + b"\n",
                            marshal.dumps(plain))


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
        return cache_file(self.folder, self.key)

    def load(self) -> None:
        """Read the file; a missing or bad one leaves the cache empty (a bad one, noted once,
        makes it dirty, so the end of the run rewrites it)."""
        path = str(cache_file(self.folder, self.key))
        data = usercache.read_file(path, MAX_CACHE_BYTES)
        entries = _decode(data, self.key, path) if data else None
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
        data = _encode(self.entries, self.key)
        if len(data) > MAX_CACHE_BYTES:
            raise CacheDirError(f"more than {MAX_CACHE_BYTES:,} bytes of results")
        folder = self._prepare()
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".cache", dir=folder)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, cache_file(self.folder, self.key))  # never a path read from a file
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


