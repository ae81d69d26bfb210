"""Where the core reads files from: the disk, or the disk with editor buffers on top.

A ``FileSource`` reads UTF-8 text and gives a cheap fingerprint of a file, so a caller can
tell whether anything a result depends on changed. Reading never hangs and never returns
garbage: a missing path, a directory, a FIFO, a binary or non-UTF-8 file, a file above the
size cap, a path with a NUL byte and a path that leaves the workspace each raise a
``SourceError`` subclass whose message says what is wrong.
"""

from __future__ import annotations

import codecs
import hashlib
import os
import stat
from collections.abc import Callable, Hashable, Mapping
from enum import Enum
from pathlib import Path
from typing import Any, BinaryIO, Protocol, TypeVar

T = TypeVar("T")


def content_hash(text: str) -> str:
    """A stable hash of a text, the key of every token-count cache and in-memory fingerprint."""
    return utf8_hash(text.encode("utf-8", "surrogatepass"))


def utf8_hash(data: bytes) -> str:
    """``content_hash`` of the text whose UTF-8 bytes are ``data`` (not encoded again)."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()

#: Files above this size are refused, not read: a prompt of 8 MiB is ~2 million tokens,
#: more than any model's context window, so counting it exactly would tell nothing new.
MAX_FILE_BYTES = 8 * 1024 * 1024

MISSING_FINGERPRINT = "missing"
#: What a check records for an input it does not read because it resolves outside the
#: workspace (a prompt file: BL041): no fingerprint of a file is ever this, so a result that
#: depends on one is never taken from a cache (relinked into the workspace, the file is
#: counted; nothing outside is read, not even to hash it).
OUTSIDE_FINGERPRINT = "outside-unread"


class SourceReason(str, Enum):
    """Why a file cannot be used as text (``SourceError.reason``): a stable word."""

    MISSING = "missing"
    NOT_A_FILE = "not_a_file"
    NOT_TEXT = "not_text"
    TOO_LARGE = "too_large"
    OUTSIDE_ROOT = "outside_root"
    UNREADABLE = "unreadable"
    BAD_PATH = "bad_path"


class SourceError(Exception):
    """A file cannot be used as text. ``reason`` is a stable word; ``str()`` says why."""

    reason = SourceReason.UNREADABLE

    def __init__(self, path: Path | str, message: str) -> None:
        super().__init__(message)
        self.path = str(path)
        self.message = message


class FileMissing(SourceError):
    reason = SourceReason.MISSING


class NotAFile(SourceError):
    reason = SourceReason.NOT_A_FILE


class NotText(SourceError):
    reason = SourceReason.NOT_TEXT


class FileTooLarge(SourceError):
    reason = SourceReason.TOO_LARGE


class OutsideRoot(SourceError):
    reason = SourceReason.OUTSIDE_ROOT


class Unreadable(SourceError):
    reason = SourceReason.UNREADABLE


class BadPath(SourceError):
    reason = SourceReason.BAD_PATH


def path_problem(path: Path | str) -> str | None:
    """Why ``path`` can name no file at all (a NUL byte in it), else ``None``."""
    if "\x00" in str(path):
        return "the path contains a NUL byte"
    return None


class FileSource(Protocol):
    """Text and fingerprints of files, as the core needs them.

    A source may also have ``read_text_utf8(path) -> (text, UTF-8 bytes or None)`` (the
    sources of this module do): see :func:`read_text_utf8`. A source whose files are not on
    the disk (a git revision) may have ``realpath(path) -> str``: where ``path`` lies once
    its own symbolic links are followed; ``RunFiles`` then asks it instead of the disk.
    """

    def read_text(self, path: Path) -> str:
        """The UTF-8 text of ``path``; raises a ``SourceError`` subclass if it has none."""
        ...

    def fingerprint(self, path: Path) -> str:
        """A string that changes whenever the text of ``path`` may have changed."""
        ...


def decode_text(data: bytes, path: Path | str) -> str:
    """Decode file bytes as UTF-8 (a leading BOM is dropped); ``NotText`` if they are not."""
    if b"\x00" in data:
        raise NotText(path, f"{path}: binary file (contains NUL bytes), expected UTF-8 text")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise NotText(path, f"{path}: not UTF-8 text (invalid byte 0x{data[exc.start]:02x}"
                            f" at offset {exc.start})") from None


def read_text_utf8(files: FileSource, path: Path) -> tuple[str, bytes | None]:
    """``files.read_text(path)`` and, when the source has them at hand (a file read from
    disk), the UTF-8 bytes of that text (``text.encode("utf-8")``, without encoding it: the
    file's bytes less a leading BOM); None when it has not (an editor buffer, a source
    without ``read_text_utf8``)."""
    reader = getattr(files, "read_text_utf8", None)
    if reader is None:
        return files.read_text(path), None
    got: tuple[str, bytes | None] = reader(path)
    return got


def read_capped(fh: BinaryIO, size: int, cap: int) -> bytes:
    """The bytes of ``fh`` up to ``cap + 1`` (one more than ``cap`` says it is too large),
    asked for in a read of the size ``stat`` gave (``size``) and one more byte: a read of
    ``cap + 1`` bytes would allocate that much for every small file. A file that grew since
    its ``stat`` is read on to the same cap.

    ``fh`` may be unbuffered (``open(path, "rb", buffering=0)``, as ``DiskFiles`` opens a
    file: one ``read`` system call for a file, where a buffered reader makes four, with a
    buffer of its own): a read that stops short of what was asked is read on to the end,
    except when it has the whole size ``stat`` gave (a buffered reader would ask once more
    only to be told the file ends there)."""
    first = min(size, cap) + 1
    data = fh.read(first)
    while len(data) < first and len(data) != size:
        more = fh.read(first - len(data))
        if not more:
            break
        data += more
    if len(data) == first and first <= cap:
        data += fh.read(cap + 1 - first)
    return data


def within(path: str, root: str) -> bool:
    """Whether the absolute path ``path`` is ``root`` or below it (as written, no resolving)."""
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def is_inside(path: Path | str, root: Path | str, *,
              realpath: Callable[[str], str] | None = None,
              abspath: Callable[[Path | str], str] | None = None) -> bool:
    """Whether ``path`` is inside ``root`` both as written and after resolving symlinks
    (with ``realpath``, default ``os.path.realpath``, and ``abspath``; ``RunFiles`` passes
    its memos)."""
    if abspath is None:
        abspath = os.path.abspath
    p = abspath(path)
    r = abspath(root)
    if not within(p, r):
        return False
    if realpath is None:
        realpath = os.path.realpath
    try:
        return within(realpath(p), realpath(r))
    except (OSError, ValueError):  # pragma: no cover - realpath does not raise on loops
        return False


def path_key(path: Path | str) -> str:
    """The key of a path in a per-file table: absolute, case-normalised as the platform does."""
    return os.path.normcase(os.path.abspath(path))


def _stat(path: Path) -> os.stat_result:
    """``os.stat(path)``, its failures as ``SourceError`` subclasses."""
    try:
        return os.stat(path)
    except FileNotFoundError:
        raise FileMissing(path, f"{path}: no such file") from None
    except NotADirectoryError:
        raise FileMissing(path, f"{path}: no such file (a parent is not a folder)") from None
    except OSError as exc:
        raise Unreadable(path, f"{path}: cannot read ({exc.strerror or exc})") from None


class _Replaced(Exception):
    """A path's file was replaced by one that is not a regular file since its ``stat``."""


def _open_nonblocking(path: str, flags: int) -> int:
    """``open``'s opener: ``os.open`` with ``O_NONBLOCK`` (where the platform has it), so
    opening a FIFO returns at once instead of waiting for a writer."""
    return os.open(path, flags | getattr(os, "O_NONBLOCK", 0))


class DiskFiles:
    """Files on disk. With a ``root``, a path that resolves outside it raises ``OutsideRoot``."""

    def __init__(self, root: Path | str | None = None, *, max_bytes: int = MAX_FILE_BYTES) -> None:
        self.root = Path(root) if root is not None else None
        self.max_bytes = max_bytes

    def read_text(self, path: Path) -> str:
        return decode_text(self.read_bytes(path), path)

    def read_text_utf8(self, path: Path) -> tuple[str, bytes | None]:
        """``read_text(path)`` and its UTF-8 bytes (see :func:`read_text_utf8`): the bytes
        read, less the BOM ``decode_text`` drops. A valid UTF-8 text decodes to a ``str``
        that encodes to the very same bytes (no lone surrogates; one encoding per
        character), so they are ``text.encode("utf-8", "surrogatepass")``. A subclass that
        reads text its own way (its own ``read_text``) gives its text and no bytes."""
        if type(self).read_text is not DiskFiles.read_text:
            return self.read_text(path), None
        data = self.read_bytes(path)
        text = decode_text(data, path)
        return text, (data[len(codecs.BOM_UTF8):] if data.startswith(codecs.BOM_UTF8)
                      else data)

    def read_bytes(self, path: Path) -> bytes:
        """The raw bytes of ``path`` after the checks of ``read_text`` (not decoded)."""
        return self.read_stat(path)[0]

    def read_stat(self, path: Path, taken: os.stat_result | None = None, *,
                  after: bool = False,
                  ) -> tuple[bytes, os.stat_result, os.stat_result | None]:
        """``read_bytes(path)``, the ``stat`` taken just before the file was opened and, with
        ``after``, the ``fstat`` of the open file once it was read (None without): a file
        written to while it was read has another ``stat_fingerprint`` by then.

        ``taken``: a ``stat`` of ``path`` the caller took just before (``HashingFiles``: the
        one of its fingerprint), checked and returned instead of a second one. A file that
        cannot be opened then is read anew from a fresh ``stat``, which tells the error.

        The file is opened without blocking and is read only if the open file is a regular
        one: a FIFO put in its place after the ``stat`` is refused (``not a regular file``),
        never waited on."""
        problem = path_problem(path)
        if problem is not None:
            raise BadPath(path, f"{str(path)!r}: {problem}")
        if self.root is not None and not is_inside(path, self.root):
            raise OutsideRoot(path, f"{path}: resolves outside the workspace root {self.root}")
        st = _stat(path) if taken is None else taken
        self._check_stat(path, st)
        try:
            data, once_read = self._read_open(path, st, after)
        except _Replaced:  # no longer a regular file since the stat
            if taken is not None:
                return self.read_stat(path, after=after)
            raise NotAFile(path, f"{path}: not a regular file") from None
        except OSError as exc:
            if taken is not None:
                return self.read_stat(path, after=after)
            raise Unreadable(path, f"{path}: cannot read ({exc.strerror or exc})") from None
        if len(data) > self.max_bytes:
            raise FileTooLarge(path, f"{path}: above the {self.max_bytes} byte cap"
                                     " for a text input")
        return data, st, once_read

    def _check_stat(self, path: Path, st: os.stat_result) -> None:
        """Refuse what ``st`` says is no text input: a folder, a special file, too large."""
        if stat.S_ISDIR(st.st_mode):
            raise NotAFile(path, f"{path}: is a directory, expected a file")
        if not stat.S_ISREG(st.st_mode):
            raise NotAFile(path, f"{path}: not a regular file")
        if st.st_size > self.max_bytes:
            raise FileTooLarge(path, f"{path}: {st.st_size} bytes, above the"
                                     f" {self.max_bytes} byte cap for a text input")

    def _read_open(self, path: Path, st: os.stat_result,
                   after: bool) -> tuple[bytes, os.stat_result | None]:
        """The bytes of ``path`` (``stat`` said ``st``) and, with ``after``, the open file's
        ``fstat`` once read; ``_Replaced`` when the file opened is not a regular one."""
        # unbuffered (see read_capped), and an open that never blocks (a FIFO)
        with open(path, "rb", buffering=0, opener=_open_nonblocking) as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                raise _Replaced
            data = read_capped(fh, st.st_size, self.max_bytes)
            return data, (os.fstat(fh.fileno()) if after else None)

    def fingerprint(self, path: Path | str) -> str:
        try:
            st = os.stat(path)
        except (OSError, ValueError):  # ValueError: a NUL in the path (no such file)
            return MISSING_FINGERPRINT
        return stat_fingerprint(st)


def stat_fingerprint(st: os.stat_result) -> str:
    """``DiskFiles.fingerprint`` of a file with this ``stat``."""
    return f"disk:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_size}:{st.st_ino}:{st.st_mode}"


class OverlayFiles:
    """Editor buffers over another source: a path in ``overlay`` reads its in-memory text.

    The overlay is copied when the object is made (keys normalised to absolute paths), so a
    caller makes a new ``OverlayFiles`` when its buffers change. In-memory texts are
    fingerprinted by content hash and by the base source's fingerprint of the same path
    (saving a buffer changes it: a file that is read from disk whatever the buffer holds, a
    tokenizer.json, is read again once saved), other files by the base source.
    """

    def __init__(self, base: FileSource, overlay: Mapping[Path, str] | Mapping[str, str], *,
                 max_chars: int = MAX_FILE_BYTES) -> None:
        self.base = base
        self.max_chars = max_chars
        self._texts: dict[str, str] = {path_key(p): t for p, t in overlay.items()}
        self._hashes: dict[str, str] = {}  # the texts never change: each is hashed once

    def __contains__(self, path: object) -> bool:
        return isinstance(path, (str, Path)) and path_key(path) in self._texts

    def read_text(self, path: Path) -> str:
        text = self._texts.get(path_key(path))
        if text is None:
            return self.base.read_text(path)
        if len(text) > self.max_chars:
            raise FileTooLarge(path, f"{path}: above the {self.max_chars} character cap"
                                     " for a text input")
        if "\x00" in text:
            raise NotText(path, f"{path}: binary text (contains NUL characters)")
        return text[1:] if text.startswith("\ufeff") else text

    def read_text_utf8(self, path: Path) -> tuple[str, bytes | None]:
        """``read_text(path)``, with the base source's UTF-8 bytes for a file not in the
        overlay (:func:`read_text_utf8`)."""
        if path_key(path) in self._texts:
            return self.read_text(path), None
        return read_text_utf8(self.base, path)

    def fingerprint(self, path: Path | str) -> str:
        key = path_key(path)
        text = self._texts.get(key)
        if text is None:
            return _fingerprint(self.base, path)
        fp = self._hashes.get(key)
        if fp is None:
            fp = self._hashes[key] = f"mem:{content_hash(text)}|{_fingerprint(self.base, path)}"
        return fp


def _fingerprint(files: FileSource, path: Path | str) -> str:
    """``files.fingerprint(path)``; the sources of this module take a ``str`` as it is (no
    ``Path`` made for it), any other source gets a ``Path``."""
    if isinstance(path, str) and not isinstance(files, (DiskFiles, OverlayFiles, RunFiles)):
        return files.fingerprint(Path(path))
    return files.fingerprint(path)  # type: ignore[arg-type]  # these take a str too


def _by_folder(path: str, folder_real: Callable[[str], str]) -> str:
    """``os.path.realpath(path)`` from the resolved folder (``folder_real``, a memo): the
    same answer, as ``realpath`` resolves the folder first and then looks at the name in
    that resolved folder (one that is no link, or cannot be ``lstat``'ed, is appended as it
    is; a link is left to ``realpath``). The top folder is itself."""
    if path == os.sep and os.path.altsep is None:
        return path
    folder, name = os.path.split(path)
    if not folder or not name or name in (os.curdir, os.pardir) \
            or os.path.altsep is not None or os.path.normpath(path) != path \
            or "\0" in path:
        # `..` after a link, or a NUL: realpath's own answer (or error)
        return os.path.realpath(path)
    joined = os.path.join(folder_real(folder), name)
    try:
        link = stat.S_ISLNK(os.lstat(joined).st_mode)
    except (OSError, ValueError):
        link = False
    if link:
        return os.path.realpath(path)
    return joined


class RunFiles:
    """Another ``FileSource`` with its file-system facts memoised for one run.

    Within a run (one ``check_pipeline`` call, or a batch of them that a caller knows sees
    one unchanging state of the files, e.g. one editor update) every path is fingerprinted
    (``stat``) at most once and resolved (``os.path.realpath``) at most once, and facts
    derived from the files alone (where the nearest config.json of a folder is) are kept
    with ``remembered``. The texts are read through to the base source. Make a new one for
    the next run: nothing it memoised is ever checked again, so a ``RunFiles`` that outlives
    its run goes stale.
    """

    def __init__(self, base: FileSource, *, resolve_by_folder: bool = False) -> None:
        self.base = base
        #: resolve a path as its folder's resolved path (memoised) and its own name, the name
        #: followed only when ``lstat`` finds a symbolic link (``os.path.realpath``'s answer,
        #: with one ``lstat`` per file instead of one per component): a batch of many files
        #: in few folders (the CLI's run) resolves each folder once
        self.resolve_by_folder = resolve_by_folder
        #: the base source's own ``realpath`` (see ``FileSource``), used instead of the disk's
        self._own_realpath: Callable[[str], str] | None = getattr(base, "realpath", None)
        self._fingerprints: dict[str, str] = {}
        self._real: dict[str, str] = {}
        self._places: dict[str, str] = {}
        self._absolute: dict[str, str] = {}
        self._inside: dict[tuple[str, str], bool] = {}
        self._facts: dict[Hashable, Any] = {}

    def read_text(self, path: Path) -> str:
        return self.base.read_text(path)

    def read_text_utf8(self, path: Path) -> tuple[str, bytes | None]:
        """The base source's :func:`read_text_utf8`."""
        return read_text_utf8(self.base, path)

    def fingerprint(self, path: Path | str) -> str:
        """The base source's fingerprint of ``path``, once per path (a ``str`` is taken as
        well as a ``Path``)."""
        key = str(path)
        fp = self._fingerprints.get(key)
        if fp is None:
            fp = self._fingerprints[key] = _fingerprint(self.base, path)
        return fp

    def realpath(self, path: str) -> str:
        """``os.path.realpath(path)`` (or the base source's own ``realpath``), once per
        path."""
        real = self._real.get(path)
        if real is None:
            if self._own_realpath is not None:
                real = self._real[path] = self._own_realpath(path)
            else:
                real = self._real[path] = (_by_folder(path, self.realpath)
                                           if self.resolve_by_folder
                                           else os.path.realpath(path))
        return real

    def place(self, path: str) -> str:
        """Where ``path`` lies: ``os.path.realpath`` of its absolute path, the check's own
        answer when it resolved the path, else resolved by folder whatever
        ``resolve_by_folder`` says (one ``lstat`` per file and per folder this run,
        ``os.path.realpath`` itself only at a symbolic link) — what the budget cache keeps a
        result for (``cache.with_places``), asked for every input of every lookup. A path
        with a NUL byte, or a relative one once the current folder is deleted, names no
        file: it is its own place."""
        try:
            absolute = self.abspath(path)
            if self.resolve_by_folder or self._own_realpath is not None:
                return self.realpath(absolute)
            real = self._real.get(absolute) or self._places.get(absolute)
            if real is None:
                real = self._places[absolute] = _by_folder(absolute, self.place)
            return real
        except (OSError, ValueError):
            return path

    def is_inside(self, path: Path | str, root: Path | str) -> bool:
        """``is_inside(path, root)``, once per (path, root), with the realpaths memoised."""
        key = (str(path), str(root))
        inside = self._inside.get(key)
        if inside is None:
            inside = self._inside[key] = is_inside(path, root, realpath=self.realpath,
                                                   abspath=self.abspath)
        return inside

    def abspath(self, path: Path | str) -> str:
        """``os.path.abspath(path)``, once per path (a root is asked for again and again,
        a pipeline's own path by each check of its extends chain)."""
        key = str(path)
        absolute = self._absolute.get(key)
        if absolute is None:
            absolute = self._absolute[key] = os.path.abspath(key)
        return absolute

    def remembered(self, key: Hashable, make: Callable[[], T]) -> T:
        """``make()`` once per ``key`` in this run: a fact that depends on nothing but the
        files, which one unchanging state of them answers once (a caller that needs the
        files' fingerprints for its own records takes them again: they are memoised)."""
        if key in self._facts:
            value: T = self._facts[key]
            return value
        value = self._facts[key] = make()
        return value
