"""The per-user cache folder, the key that authenticates every cache file, and safe reads.

Every cache budgetlens keeps (the CLI's result cache and its answers, the token counts, the
parsed rank tables) is sealed with a key only this user's runs know: a file a change or
anyone else planted cannot pass for one (docs/cli.md, "The caches' threat model").

- **The secret**: 32 random bytes in ``$XDG_CACHE_HOME/budgetlens/secret`` (else
  ``~/.cache/budgetlens/secret``), outside every workspace. Created on first use, mode 0600,
  whole or not at all (written to a temporary name, then linked to its name). It is used
  only when it is a regular file, not a link, owned by this user, with mode 0600, holding
  32 bytes. Otherwise every cache is off, with one note.
- **The key**: keyed blake2b of the secret's inode and change time. A copy of the secret
  (a restored backup, a planted file) has another inode and change time, so another key.
- **A seal**: keyed blake2b over a purpose, the file's header and its payload. A file whose
  seal does not match is ignored with one note, never trusted and never written through.
- **Reads**: opened without following a link and without waiting (``O_NOFOLLOW``,
  ``O_NONBLOCK``); only a regular file under a size cap is read, and never past the cap.

This module is light (``os`` and ``_blake2``): the CLI's replayed answer imports it.
"""

from __future__ import annotations

import os
import stat as _stat
from _operator import _compare_digest  # hmac.compare_digest without loading hashlib

try:
    from _blake2 import blake2b as _blake2b  # hashlib's blake2b without loading OpenSSL
except ImportError:  # pragma: no cover - an interpreter without it
    from hashlib import blake2b as _blake2b

#: ``typing.TYPE_CHECKING`` without importing ``typing`` (start-up speed).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

SECRET_NAME = "secret"
SECRET_BYTES = 32
#: The seal's length in the file: a keyed blake2b of 32 bytes, in hex.
SEAL_CHARS = 64
_FLAGS = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
          | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))

#: Where notes go (the CLI: one line on standard error); None: the ``logging`` warning of
#: this module's logger (the server's log).
NOTE: Callable[[str], None] | None = None
_noted: set[str] = set()


def note(message: str) -> None:
    """Tell the user ``message`` once per process."""
    if message in _noted:
        return
    _noted.add(message)
    if NOTE is not None:
        NOTE(message)
        return
    import logging  # lazy: only a note needs it

    logging.getLogger(__name__).warning("%s", message)


def forget_notes() -> None:
    """A new command starts: its notes are told again."""
    _noted.clear()


def cache_root() -> str | None:
    """``$XDG_CACHE_HOME/budgetlens`` (an absolute one), else ``~/.cache/budgetlens``; None
    when no home folder is known."""
    base = os.environ.get("XDG_CACHE_HOME") or ""
    if not os.path.isabs(base):
        home = os.path.expanduser("~")
        if home == "~" or not os.path.isabs(home):
            return None
        base = os.path.join(home, ".cache")
    return os.path.join(base, "budgetlens")


def _owned(st: os.stat_result) -> bool:
    getuid = getattr(os, "getuid", None)
    return getuid is None or st.st_uid == getuid()


def private_folder(path: str) -> str | None:
    """``path`` as a folder only this user writes: made (mode 0700, its parents as needed)
    when missing; None, with one note, when it is a link, not a folder, another user's, or
    writable by others and cannot be made private."""
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        st = os.lstat(path)
    except OSError as exc:
        note(f"the cache folder {path} cannot be made ({exc.strerror or exc});"
             " that cache is off")
        return None
    if not _stat.S_ISDIR(st.st_mode) or not _owned(st):
        note(f"{path} is not a folder of yours (a link, a file or another user's); that cache"
             " is off")
        return None
    if os.name != "nt" and st.st_mode & 0o022:
        try:
            os.chmod(path, _stat.S_IMODE(st.st_mode) & ~0o022)
        except OSError:
            note(f"{path} is writable by others and cannot be made private; that cache is off")
            return None
    return path


def read_file(path: str, cap: int, *, quiet: bool = False) -> bytes | None:
    """The bytes of the regular file ``path`` (opened without following a link or waiting
    for a writer), when it holds at most ``cap`` bytes; None otherwise. Anything there that
    is not such a file (a link, a FIFO, a folder, a device, a larger file) is noted once
    unless ``quiet``; a missing file is not."""
    try:  # builtins.open over os.open's flags: a test sees which files a run opens
        fh = open(path, "rb", buffering=0, opener=_opener)  # noqa: SIM115 - closed below
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        if not quiet and not isinstance(exc, NotADirectoryError):
            _ignored(path, "it cannot be opened as a file (a link?)")
        return None
    with fh:
        try:
            data, why = _read_open(fh.fileno(), cap)
        except OSError:
            return None
    if why is not None and not quiet:
        _ignored(path, why)
    return data


def _read_open(fd: int, cap: int) -> tuple[bytes | None, str | None]:
    """The bytes of the open file ``fd`` when it is a regular file of at most ``cap`` bytes,
    else None and why."""
    st = os.fstat(fd)
    if not _stat.S_ISREG(st.st_mode):
        return None, "it is not a regular file"
    if st.st_size <= cap:
        data = _read_at_most(fd, cap + 1)
        if len(data) <= cap:
            return data, None
    return None, f"it is larger than {cap:,} bytes"


def _opener(path: str, flags: int) -> int:
    return os.open(path, _FLAGS)


def _read_at_most(fd: int, limit: int) -> bytes:
    """At most ``limit`` bytes of ``fd`` (a file that grows while it is read stops there)."""
    chunks = []
    while limit > 0:
        chunk = os.read(fd, min(limit, 1 << 22))
        if not chunk:
            break
        chunks.append(chunk)
        limit -= len(chunk)
    return b"".join(chunks)


def _ignored(path: str, why: str) -> None:
    note(f"ignored the cache file {path}: {why}")


# ---------------------------------------------------------------------------- the key
def _read_secret(path: str) -> tuple[bytes, os.stat_result] | str | None:
    """The secret and its ``fstat``; None when there is none; a reason when one is there but
    cannot be used."""
    try:
        fd = os.open(path, _FLAGS)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        return f"it cannot be opened as a file ({getattr(exc, 'strerror', None) or exc})"
    try:
        st = os.fstat(fd)
        if not _stat.S_ISREG(st.st_mode):
            return "it is not a regular file"
        if not _owned(st):
            return "it is not yours"
        if os.name != "nt" and _stat.S_IMODE(st.st_mode) != 0o600:
            return f"its mode is {_stat.S_IMODE(st.st_mode):o}, not 600"
        data = os.read(fd, SECRET_BYTES + 1)
    except OSError as exc:
        return f"it cannot be read ({exc.strerror or exc})"
    finally:
        os.close(fd)
    if len(data) != SECRET_BYTES:
        return f"it does not hold {SECRET_BYTES} bytes"
    return data, st


def _create_secret(folder: str, path: str) -> None:
    """Make the secret whole under a temporary name, then link it to ``path`` (never
    replacing one that another process made meanwhile)."""
    tmp = os.path.join(folder, f".secret-{os.getpid()}-{os.urandom(6).hex()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
                 | getattr(os, "O_BINARY", 0), 0o600)
    try:
        try:
            os.write(fd, os.urandom(SECRET_BYTES))
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)
        except FileExistsError:  # another process made it meanwhile: that one is used
            return
        except OSError:  # a file system without hard links: rename is atomic too
            if not os.path.lexists(path):
                os.replace(tmp, path)
    finally:
        try:  # noqa: SIM105 - contextlib is not loaded for this (start-up speed)
            os.unlink(tmp)
        except OSError:
            pass


def user_key(*, create: bool = True) -> bytes | None:
    """The key that seals this user's cache files; None (with one note) when the caches are
    off: no home folder, a secret that cannot be made, or one that is not a regular file
    owned by this user with mode 0600. ``create``: make the secret when there is none."""
    root = cache_root()
    if root is None:
        note("no home folder and no XDG_CACHE_HOME: the caches are off")
        return None
    path = os.path.join(root, SECRET_NAME)
    got = _read_secret(path)
    if got is None and create:
        if private_folder(root) is None:
            return None
        try:
            _create_secret(root, path)
        except OSError as exc:
            note(f"the cache key {path} cannot be made ({exc.strerror or exc}): the caches"
                 " are off")
            return None
        got = _read_secret(path)
    if got is None:
        return None
    if isinstance(got, str):
        note(f"the cache key {path} is not used ({got}): the caches are off; delete it to"
             " make a new one")
        return None
    secret, st = got
    if st.st_nlink != 1:  # being linked into place this moment, or linked elsewhere
        note(f"the cache key {path} has {st.st_nlink} names (another process is making it,"
             " or it is linked elsewhere): the caches are off for this command")
        return None
    return _blake2b(b"budgetlens cache key\0%d\0%d" % (st.st_ino, st.st_ctime_ns),
                    key=secret, digest_size=32).digest()


def seal(key: bytes, purpose: bytes, header: bytes, payload: bytes | memoryview) -> bytes:
    """The seal (hex, :data:`SEAL_CHARS` characters) of a file of ``purpose`` made of
    ``header`` and ``payload``."""
    mac = _blake2b(purpose + b"\0", key=key, digest_size=32)
    mac.update(b"%d\0" % len(header))
    mac.update(header)
    mac.update(payload)
    return mac.hexdigest().encode()


def sealed(key: bytes, purpose: bytes, header: bytes, payload: bytes) -> bytes:
    """A whole file: ``header``, its seal and a newline, then ``payload``."""
    return header + seal(key, purpose, header, payload) + b"\n" + payload


def unseal(data: bytes, key: bytes, purpose: bytes, header: bytes,
           path: str | None = None) -> memoryview | None:
    """The payload of a file ``sealed`` with ``key``, ``purpose`` and ``header``; None
    otherwise (noted once when ``path`` is given and the file is not empty)."""
    head = len(header) + SEAL_CHARS + 1
    if data.startswith(header) and len(data) >= head and data[head - 1:head] == b"\n":
        payload = memoryview(data)[head:]
        if _compare_digest(seal(key, purpose, header, payload), data[len(header):head - 1]):
            return payload
    if path is not None and data:
        _ignored(path, "it is not sealed with your cache key (damaged, from another user or"
                       " machine, or planted); it is rewritten")
    return None


def write_file(folder: str, name: str, data: bytes) -> None:
    """``data`` as ``folder/name``: written to a new temporary file (mode 0600) in
    ``folder``, then renamed over the name (a link there is replaced, never followed).
    Raises ``OSError``."""
    import tempfile  # lazy: start-up speed (only a write needs it)

    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, os.path.join(folder, name))
    except BaseException:
        try:  # noqa: SIM105 - contextlib is not loaded for this (start-up speed)
            os.unlink(tmp)
        except OSError:
            pass
        raise
