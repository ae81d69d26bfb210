"""Writing the files of a plan: all of them or none, never a torn file, never outside the
workspace, never over a change made since the plan read them.

``write_plan(plan, root)`` takes, for every file, the exact bytes the plan was computed from
and the new text, and writes them in three phases:

1. **Check, writing nothing.** Every target, followed through symlinks to its real path, must
   be inside the real path of its workspace root; a regular file with a single name (a hard
   link would keep the old text under its other name); writable: its mode has the owner's
   write bit (checked from the mode itself, so a ``chmod 444`` file is refused even when
   running as root, where permissions do not stop a write) and ``os.access`` allows it, and
   its folder allows a new file; and byte-identical to what the plan read (SHA-256 of the
   bytes). Two names of one real file are written once; if the plan gives them different
   texts, that is refused. Any failure raises ``WriteRefused`` naming the file and why.
2. **Prepare.** For each file, a temporary file in the same folder gets the new bytes (a
   UTF-8 BOM the file had is kept), the file's mode (and owner, when allowed), and is
   flushed and fsynced; a second temporary file gets the original bytes, for a rollback.
   A failure here (disk full, a file size limit) removes the temporaries: nothing changed,
   ``WriteFailed`` is raised. The files are then compared with the plan's bytes once more.
3. **Replace.** ``os.replace`` puts each new file in place (atomic on one file system), the
   folders are fsynced. If a replace fails, the files already replaced are put back from
   their rollback copies (a rename, which needs no free space), so every file ends either
   as before or as planned (an interrupt during the replaces is rolled back the same way,
   then re-raised). Best effort: if putting one back fails too, the error names it and the
   rollback copy holding its previous bytes is kept next to it.

The remaining gap is the instant between the last comparison and the replace: without locks
(editors take none) a save in that instant cannot be detected.
"""

from __future__ import annotations

import codecs
import contextlib
import hashlib
import os
import stat
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from budgetlens.files import DiskFiles, path_key, within

_TMP_SUFFIX = ".budgetlens-tmp"


@dataclass(frozen=True)
class PlannedWrite:
    """One file of a plan: the bytes the plan read, the new text and the workspace root.

    ``text`` is the new text without a BOM; when ``original`` starts with a UTF-8 BOM the
    written bytes do too. ``root`` overrides the root given to ``write_plan`` for this file.
    """

    original: bytes
    text: str
    root: str | Path | None = None

    def new_bytes(self) -> bytes:
        data = self.text.encode("utf-8")
        if self.original.startswith(codecs.BOM_UTF8) and not self.text.startswith("\ufeff"):
            return codecs.BOM_UTF8 + data
        return data


class SnapshotFiles(DiskFiles):
    """Files on disk, each read once: a later read of a path returns the bytes of the first,
    so everything a plan computes comes from one version of each file, and ``snapshot(path)``
    gives those exact bytes to ``PlannedWrite.original``. (Fingerprints stay the disk's.)
    The bytes of every file read are kept for the object's life: make one per run."""

    def __init__(self, root: Path | str | None = None, **kwargs: int) -> None:
        super().__init__(root, **kwargs)
        self._bytes: dict[str, bytes] = {}

    def read_bytes(self, path: Path) -> bytes:
        key = path_key(path)
        data = self._bytes.get(key)
        if data is None:
            data = self._bytes[key] = super().read_bytes(path)
        return data

    def snapshot(self, path: Path | str) -> bytes | None:
        """The bytes read from ``path``, or None when it was not read."""
        return self._bytes.get(path_key(path))


class WriteError(Exception):
    """A plan was not written, or not completely. ``str()`` is ``"<path>: <why>"``."""

    def __init__(self, path: str, why: str) -> None:
        super().__init__(f"{path}: {why}")
        self.path = path
        self.why = why


class WriteRefused(WriteError):
    """A check before writing failed: no file was touched."""


class WriteFailed(WriteError):
    """Writing failed. ``restored`` is true when every file is as it was before."""

    def __init__(self, path: str, why: str, *, restored: bool) -> None:
        super().__init__(path, why)
        self.restored = restored


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(eq=False)
class _Target:
    names: list[str]        # the names the plan used for this file, sorted
    real: str               # the real path written
    write: PlannedWrite
    mode: int
    uid: int
    gid: int
    new_tmp: str | None = None
    backup_tmp: str | None = None


_Entry = tuple[str, PlannedWrite, bytes, os.stat_result]
"""One name of the plan: the name, its planned write, the new bytes and the file's stat."""


def _check_plan(plan: Mapping[str, PlannedWrite] | Mapping[Path, PlannedWrite],
                root: str | Path | None = None) -> list[_Target]:
    """Phase 1 of ``write_plan``: the real files to write, or ``WriteRefused``."""
    targets: list[_Target] = []
    for entries in _names_by_file(plan, root).values():
        target = _target(entries, root)
        if target is not None:
            targets.append(target)
    return sorted(targets, key=lambda t: t.names[0])


def _names_by_file(plan: Mapping[str, PlannedWrite] | Mapping[Path, PlannedWrite],
                   root: str | Path | None) -> dict[tuple[int, int], list[_Entry]]:
    """The plan's names grouped by the file (device, inode) they name; a missing file whose
    planned bytes are its original ones is left out (nothing to write)."""
    groups: dict[tuple[int, int], list[_Entry]] = {}
    for name, write in sorted((str(p), w) for p, w in plan.items()):
        if write.root is None and root is None:
            raise ValueError(f"{name}: no workspace root given")
        try:
            new = write.new_bytes()
        except UnicodeEncodeError:
            raise WriteRefused(name, "the planned text cannot be encoded as UTF-8") from None
        try:
            st = os.stat(name)
        except FileNotFoundError:
            if new == write.original:
                continue
            raise WriteRefused(name, "no longer exists") from None
        except OSError as exc:
            raise WriteRefused(name, f"cannot be checked ({exc.strerror or exc})") from None
        groups.setdefault((st.st_dev, st.st_ino), []).append((name, write, new, st))
    return groups


def _target(entries: list[_Entry], root: str | Path | None) -> _Target | None:
    """The file the names of ``entries`` share, checked; None when nothing changes."""
    first, write, new, st = entries[0]
    for name, _, other, _ in entries[1:]:
        if other != new:
            raise WriteRefused(name, f"is the same file as {first}"
                                     f" ({os.path.realpath(name)}) and the plan gives the"
                                     " two names different texts")
    if all(new == w.original for _, w, _, _ in entries):
        return None
    real = os.path.realpath(first)
    for name, w, _, _ in entries:
        where = w.root if w.root is not None else root
        assert where is not None
        if not within(real, os.path.realpath(where)):
            via = f"resolves to {real}, " if real != os.path.abspath(name) else "is "
            raise WriteRefused(name, f"{via}outside the workspace root {where}")
    _check_writable(first, real, st)
    for name, w, _, _ in entries:
        _compare(name, real, w.original)
    return _Target(sorted(n for n, _, _, _ in entries), real, write,
                   stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid)


def _check_writable(first: str, real: str, st: os.stat_result) -> None:
    """``WriteRefused`` unless ``real`` is a regular file with one name that this user may
    replace through a temporary file in its folder."""
    if not stat.S_ISREG(st.st_mode):
        raise WriteRefused(first, "not a regular file")
    if st.st_nlink > 1:   # (symlinks do not count: they are one name each)
        raise WriteRefused(first, f"has {st.st_nlink} hard links; replacing it would"
                                  " leave the old text under its other names")
    if not st.st_mode & stat.S_IWUSR:
        raise WriteRefused(first, f"is read-only (mode {stat.S_IMODE(st.st_mode):o})")
    if not os.access(real, os.W_OK):
        raise WriteRefused(first, "is not writable by this user")
    folder = os.path.dirname(real)
    if not os.access(folder, os.W_OK | os.X_OK):
        raise WriteRefused(first, f"its folder {folder} does not allow a new file"
                                  " (it is written through a temporary file)")


def _compare(name: str, real: str, original: bytes) -> None:
    """``WriteRefused`` unless the file ``real`` holds exactly ``original``."""
    try:
        fd = os.open(real, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise WriteRefused(name, f"cannot be read again before writing"
                                 f" ({exc.strerror or exc})") from None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise WriteRefused(name, "is no longer a regular file")
        current = fh.read(len(original) + 1)
    if sha256(current) != sha256(original):
        raise WriteRefused(name, "changed on disk since the plan read it; nothing was"
                                 " written (run the command again)")


def _temp_with(target: _Target, data: bytes, tag: str) -> str:
    """A new file next to the target holding ``data``, with its mode, flushed to disk."""
    folder, base = os.path.split(target.real)
    fd, tmp = tempfile.mkstemp(prefix=f".{base}.{tag}.", suffix=_TMP_SUFFIX, dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            if hasattr(os, "fchown") and (target.uid, target.gid) != (os.geteuid(),
                                                                        os.getegid()):
                # not allowed: the file gets this user as owner, like an editor's save
                with contextlib.suppress(OSError):
                    os.fchown(fh.fileno(), target.uid, target.gid)
            if hasattr(os, "fchmod"):
                os.fchmod(fh.fileno(), target.mode)
            os.fsync(fh.fileno())
        if not hasattr(os, "fchmod"):  # pragma: no cover - Windows before Python 3.13
            os.chmod(tmp, target.mode)
    except BaseException:
        _remove(tmp)
        raise
    return tmp


def _remove(path: str | None) -> None:
    if path is not None:
        with contextlib.suppress(OSError):
            os.unlink(path)


def _fsync_folder(folder: str) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _discard(targets: list[_Target]) -> None:
    for t in targets:
        _remove(t.new_tmp)
        _remove(t.backup_tmp)
        t.new_tmp = t.backup_tmp = None


def write_plan(plan: Mapping[str, PlannedWrite] | Mapping[Path, PlannedWrite],
               root: str | Path | None = None, *,
               before_replace: Callable[[], None] | None = None) -> list[str]:
    """Write every file of ``plan`` or none (see the module docstring).

    ``root`` is the workspace root of every file whose ``PlannedWrite.root`` is None.
    Returns the names written (a file whose planned bytes equal its original bytes is
    skipped). Raises ``WriteRefused`` when a check fails (nothing touched) and
    ``WriteFailed`` when writing fails (``restored`` says whether every file is as before).
    ``before_replace`` (a test hook) runs after the temporary files are written, just
    before the files are compared with the plan's bytes the second time.
    """
    targets = _check_plan(plan, root)
    _prepare(targets)
    try:
        if before_replace is not None:
            before_replace()
        for t in targets:
            for name in t.names:
                _compare(name, t.real, t.write.original)
    except BaseException:
        _discard(targets)
        raise
    _replace(targets)
    for folder in sorted({os.path.dirname(t.real) for t in targets}):
        _fsync_folder(folder)
    _discard(targets)
    return [name for t in targets for name in t.names]


def _prepare(targets: list[_Target]) -> None:
    """Phase 2: the new bytes and the rollback copy of every target in temporary files."""
    current = targets[0] if targets else None
    try:
        for current in targets:
            current.new_tmp = _temp_with(current, current.write.new_bytes(), "new")
            current.backup_tmp = _temp_with(current, current.write.original, "old")
    except BaseException as exc:
        _discard(targets)
        if not isinstance(exc, OSError):
            raise
        assert current is not None
        raise WriteFailed(current.names[0], f"cannot write a temporary file next to it"
                                            f" ({exc.strerror or exc}); nothing was written",
                          restored=True) from None


def _replace(targets: list[_Target]) -> None:
    """Phase 3: each new file in place; on a failure, those already replaced are put back."""
    done: list[_Target] = []
    for t in targets:
        assert t.new_tmp is not None
        try:
            os.replace(t.new_tmp, t.real)
        except BaseException as exc:  # an interrupt too: never leave half a plan
            failure = _roll_back(t, done, targets, exc)
            if not isinstance(exc, OSError):
                raise
            raise failure from None
        t.new_tmp = None
        done.append(t)


def _roll_back(failed: _Target, done: list[_Target], targets: list[_Target],
               exc: BaseException) -> WriteFailed:
    """Put back the files already replaced, from their rollback copies; the error to raise."""
    kept: list[str] = []
    for t in reversed(done):
        assert t.backup_tmp is not None
        try:
            os.replace(t.backup_tmp, t.real)
            t.backup_tmp = None
        except OSError:
            kept.append(f"{t.names[0]} (its previous bytes are kept in {t.backup_tmp})")
            t.backup_tmp = None     # kept on purpose, not removed below
    _discard(targets)
    reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc) or \
        type(exc).__name__
    why = f"cannot replace it ({reason})"
    if kept:
        return WriteFailed(failed.names[0], f"{why}; could not put back " + ", ".join(kept),
                           restored=False)
    undone = (f"; the {len(done)} file{'s' if len(done) != 1 else ''} already replaced"
              f" {'were' if len(done) != 1 else 'was'} put back") if done else ""
    return WriteFailed(failed.names[0], f"{why}; nothing was changed{undone}", restored=True)
