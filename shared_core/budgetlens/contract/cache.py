"""The budget cache: results kept for as long as their inputs do not change.

A ``BudgetCache`` is owned by its caller (an editor session, one CLI run, a pipeline runner)
and holds, each bounded:

- whole pipeline reports, one per (pipeline, options), keyed by a fingerprint of every file
  they read (pipeline, extends chain, prompt files, config.json and the places probed for it);
- the structure of each pipeline (its parsed chain, merged settings, config, templates and
  locations: everything but the prompts' token counts), one per (pipeline, options), keyed by
  the fingerprints of the pipeline, its extends chain and config.json only, so a pipeline
  whose only changed input is a prompt file gets its arithmetic and diagnostics recomputed
  without parsing any YAML again;
- parsed files (pipelines, configs, prompt token counts): only the newest version per
  (kind, path), so an edited buffer never piles up one parsed copy per keystroke;
- parsed templates by their text, and one token counter per tokenizer, whose counts are keyed
  by a hash of the text (``TokenCounter``).

Disk files are fingerprinted by mtime/size, in-memory buffers by content hash (see
``budgetlens.files``). A report and a structure are also keyed by where their files lie
(``with_places``): whether a file is inside the workspace is decided on real paths, and a
link relinked across the workspace's edge to the very same file (a hard link of it), or a
folder moved out and linked back, keeps its fingerprint. Safe to share between threads.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Hashable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from budgetlens.contract.template import ParsedTemplate, parse_template
from budgetlens.files import (
    OUTSIDE_FINGERPRINT,
    FileSource,
    RunFiles,
    SourceError,
    read_text_utf8,
)
from budgetlens.tokens.core import TokenCounter, Tokenizer, TokenizerError, counts_key

T = TypeVar("T")

#: Mark the keys of a result's inputs that stand for where a file lies, not for what it
#: holds (``with_places``); no path starts with a NUL.
PLACE = "\0place:"
_LINK = PLACE + "link:"
_REAL = PLACE + "real:"


def link_stamp(path: str) -> str:
    """The ``lstat`` of ``path`` itself: for a symbolic link, the link (relinked, even to
    the same file, it is a new link: another inode and change time); for a file, what its
    fingerprint has already."""
    try:
        st = os.lstat(path)
    except (OSError, ValueError):
        return "missing"
    return f"{st.st_mode}:{st.st_ino}:{st.st_ctime_ns}"


def _real(files: FileSource, path: str) -> str:
    """Where ``path`` lies (its real path): ``RunFiles.place`` when ``files`` is one."""
    return files.place(path) if isinstance(files, RunFiles) else os.path.realpath(path)


def with_places(files: FileSource, deps: Mapping[str, str], *roots: str) -> dict[str, str]:
    """``deps`` (path -> fingerprint) with where the files lie — what a report or structure
    is stored under: the real path of each file and of each root its places were judged
    against (the pipeline's and its chain's, the prompts'), from a
    ``RunFiles`` (``RunFiles.place``: one ``lstat`` per file and per folder of the run, the
    check's own resolved paths reused), else each file's own link (``link_stamp``). A
    prompt, parent or pipeline relinked across the workspace's edge (even to a hard link of
    the very same file), a folder of them moved out of the workspace and linked back, and a
    workspace relinked to another folder are all seen."""
    out = dict(deps)
    if isinstance(files, RunFiles):
        for path in deps:
            out[_REAL + path] = files.place(path)
    else:
        for path in deps:
            out[_LINK + path] = link_stamp(path)
    for root in roots:
        out[_REAL + root] = _real(files, root)
    return out


class RecordingFiles:
    """A ``FileSource`` that remembers the fingerprint of every file read through it.

    The fingerprint is taken before the read, so a file that changes while it is read makes
    the next lookup miss rather than keeping a stale result. Each path is fingerprinted once:
    the first fingerprint is the one recorded and returned for the rest of the run.
    """

    def __init__(self, base: FileSource) -> None:
        self.base = base
        self.seen: dict[str, str] = {}

    def read_text(self, path: Path) -> str:
        self.fingerprint(path)
        return self.base.read_text(path)

    def read_text_utf8(self, path: Path) -> tuple[str, bytes | None]:
        """``read_text(path)`` with the base source's UTF-8 bytes (``files.read_text_utf8``)."""
        self.fingerprint(path)
        return read_text_utf8(self.base, path)

    def outside(self, path: Path | str) -> None:
        """Record ``path`` as an input that is not read: it resolves outside the workspace,
        or could not be read (an I/O error, which the next check may not have)
        (``OUTSIDE_FINGERPRINT``, which no file's fingerprint matches: no cache keeps the
        result)."""
        self.seen[str(path)] = OUTSIDE_FINGERPRINT

    def fingerprint(self, path: Path | str) -> str:
        """The base source's fingerprint of ``path`` (a ``str`` is taken as well as a
        ``Path``), recorded."""
        key = str(path)
        fp = self.seen.get(key)
        if fp is None:
            fp = self.seen[key] = _fingerprint(self.base, key)
        return fp


def _fingerprint(files: FileSource, path: str) -> str:
    """``files.fingerprint(path)``: the memoising sources of a run take the path as it is,
    any other source gets a ``Path``."""
    if isinstance(files, (RunFiles, RecordingFiles)):
        return files.fingerprint(path)
    return files.fingerprint(Path(path))


class _Generations:
    """A bounded memo: entries used since the last turn-over are kept, the rest dropped.

    Lookups go to the new generation, then the old one (moving the entry up); when the new
    generation holds ``size`` entries it becomes the old one. At most ``2 * size`` entries.
    """

    def __init__(self, size: int) -> None:
        self.size = max(1, size)
        self.new: dict[Hashable, Any] = {}
        self.old: dict[Hashable, Any] = {}

    def get(self, key: Hashable) -> Any | None:
        value = self.new.get(key)
        if value is None:
            value = self.old.pop(key, None)
            if value is not None:
                self.put(key, value)
        return value

    def put(self, key: Hashable, value: Any) -> None:
        if len(self.new) >= self.size:
            self.old, self.new = self.new, {}
        self.new[key] = value

    def __len__(self) -> int:
        return len(self.new) + len(self.old)

    def clear(self) -> None:
        self.new.clear()
        self.old.clear()


class BudgetCache:
    """Caches of the budget engine; make one and pass it to every ``check_pipeline`` call.

    ``max_entries`` bounds each table (reports, structures, parsed files; templates keep up
    to twice as many): a table that is full is emptied before it grows further.

    ``keep_results=False`` makes the cache of a caller that checks each pipeline once (one
    ``budgetlens check`` run): it keeps no report and no structure, since none would be asked
    for again, only what another pipeline can use (parsed parents and config.json, token
    counts, templates). Such a caller keys its own results by the report's
    ``input_fingerprints``, and may drop a pipeline's parse once it is checked
    (``forget_parsed``).
    """

    def __init__(self, *, max_entries: int = 8192, keep_results: bool = True) -> None:
        #: reports and structures are stored (and looked up)
        self.keep_results = keep_results
        #: whether reports and structures are stored with where their files lie
        #: (``with_places``); a cache that keeps no results does without
        self.places = keep_results
        self._lock = threading.Lock()
        self._max = max_entries
        self._reports: dict[Hashable, tuple[Mapping[str, str], Any]] = {}
        self._structures: dict[Hashable, tuple[Mapping[str, str], Any]] = {}
        self._files: dict[tuple[str, str], tuple[str, Any]] = {}
        self._templates = _Generations(max_entries)
        self._counters: dict[str, TokenCounter] = {}
        #: counts are shared with other processes (``share_counts``), and the counts learned
        #: for a tokenizer whose counter is not made yet
        self._sharing = False
        self._learned: dict[str, list[tuple[str, int]]] = {}
        self.hits = 0
        self.misses = 0

    # -- results keyed by the fingerprints of the files they read --------------------------
    @staticmethod
    def _current(entry: tuple[Mapping[str, str], Any] | None, files: FileSource) -> Any | None:
        if entry is None:
            return None
        deps, value = entry
        for path, fp in deps.items():
            if not path.startswith(PLACE):
                if _fingerprint(files, path) != fp:
                    return None
            elif path.startswith(_LINK):
                if link_stamp(path[len(_LINK):]) != fp:
                    return None
            elif _real(files, path[len(_REAL):]) != fp:
                return None
        return value

    def _store(self, table: dict[Hashable, tuple[Mapping[str, str], Any]], key: Hashable,
               deps: Mapping[str, str], value: Any) -> None:
        with self._lock:
            if len(table) >= self._max and key not in table:
                table.clear()
            table[key] = (dict(deps), value)

    # -- whole reports ---------------------------------------------------------------
    def report(self, key: Hashable, files: FileSource) -> Any | None:
        """The report stored under ``key`` if none of the files it read changed."""
        with self._lock:
            entry = self._reports.get(key)
        report = self._current(entry, files)
        if report is None:
            self.misses += 1
            return None
        self.hits += 1
        return report

    def store_report(self, key: Hashable, deps: Mapping[str, str], report: Any) -> None:
        """Keep ``report`` under ``key`` (replacing the one before) with the fingerprints
        ``deps`` of the files it read (unless the cache keeps no results)."""
        if self.keep_results:
            self._store(self._reports, key, deps, report)

    # -- pipeline structures -----------------------------------------------------------
    def structure(self, key: Hashable, files: FileSource) -> Any | None:
        """The structure stored under ``key`` if none of the files it read changed."""
        with self._lock:
            entry = self._structures.get(key)
        return self._current(entry, files)

    def stale_structure(self, key: Hashable) -> Any | None:
        """The structure stored under ``key``, whether its files changed or not (to take
        over what an edit left the same)."""
        with self._lock:
            entry = self._structures.get(key)
        return entry[1] if entry is not None else None

    def store_structure(self, key: Hashable, deps: Mapping[str, str], value: Any) -> None:
        if self.keep_results:
            self._store(self._structures, key, deps, value)

    # -- parsed files ----------------------------------------------------------------
    def parsed(self, kind: str, path: str, files: FileSource, load: Callable[[], T]) -> T:
        """``load()`` once per (kind, path, fingerprint); only the newest is kept."""
        fp = _fingerprint(files, path)
        key = (kind, path)
        with self._lock:
            entry = self._files.get(key)
        if entry is not None and entry[0] == fp:
            value: T = entry[1]
            return value
        value = load()
        with self._lock:
            if len(self._files) >= self._max and key not in self._files:
                self._files.clear()
            self._files[key] = (fp, value)
        return value

    def has_parsed(self, kind: str, path: str) -> bool:
        """Whether a parse of ``path`` (of ``kind``) is kept, current or not."""
        with self._lock:
            return (kind, path) in self._files

    def forget_parsed(self, kind: str, path: str) -> None:
        """Drop the kept parse of ``path`` (of ``kind``), if any: a caller that knows no
        later check reads it again frees it now."""
        with self._lock:
            self._files.pop((kind, path), None)

    def prompt_tokens(self, path: str, files: FileSource,
                      counter: TokenCounter) -> int | SourceError:
        """Token count of a prompt file (or why it cannot be read), cached by fingerprint."""
        def load() -> int | SourceError:
            try:
                text, utf8 = read_text_utf8(files, Path(path))
                return counter.count(text, utf8=utf8)
            except SourceError as exc:
                return exc
            except TokenizerError as exc:  # a native tokenizer failed on this text
                return SourceError(path, f"{path}: {exc}")
        return self.parsed(f"tokens:{counter.key}", path, files, load)

    # -- templates -------------------------------------------------------------------
    def template(self, text: str) -> ParsedTemplate:
        """``parse_template(text)``, once per text."""
        with self._lock:
            parsed: ParsedTemplate | None = self._templates.get(text)
        if parsed is None:
            parsed = parse_template(text)
            with self._lock:
                self._templates.put(text, parsed)
        return parsed

    # -- token counters --------------------------------------------------------------
    def counter(self, tokenizer: Tokenizer) -> TokenCounter:
        key = counts_key(tokenizer)  # a tokenizer.json's version too: edited, it counts anew
        with self._lock:
            counter = self._counters.get(key)
            if counter is None:
                for old in [k for k, c in self._counters.items() if c.name == tokenizer.name]:
                    del self._counters[old]  # another version of the same file
                counter = self._counters[key] = TokenCounter(tokenizer)
                if self._sharing:
                    counter.keep_fresh()
                counter.learn(self._learned.pop(key, ()))
            return counter

    # -- counts shared between processes (``budgetlens check --jobs``) ------------------
    def share_counts(self) -> None:
        """Keep the counts made from now on for ``fresh_counts`` (every counter's)."""
        with self._lock:
            self._sharing = True
            counters = list(self._counters.values())
        for counter in counters:
            counter.keep_fresh()

    def fresh_counts(self) -> dict[str, list[tuple[str, int]]]:
        """The counts made here since the last call, per counter key (``counts_key``: the
        tokenizer's name, and a tokenizer.json's version; ``(text key, count)``; empty
        unless ``share_counts``): another process's ``learn_counts``."""
        with self._lock:
            counters = list(self._counters.items())
        fresh = {name: c.take_fresh() for name, c in counters}
        return {name: pairs for name, pairs in fresh.items() if pairs}

    def learn_counts(self, counts: Mapping[str, list[tuple[str, int]]]) -> None:
        """Counts another process made (``fresh_counts``): a text among them is not encoded
        here (a tokenizer whose counter is not made yet gets them when it is)."""
        for key, pairs in counts.items():  # by counts_key: a file's other version is apart
            with self._lock:
                counter = self._counters.get(key)
                if counter is None:
                    self._learned.setdefault(key, []).extend(pairs)
                    continue
            counter.learn(pairs)

    def sizes(self) -> dict[str, int]:
        """How many entries each table holds (for tests and memory checks)."""
        with self._lock:
            return {"reports": len(self._reports), "structures": len(self._structures),
                    "files": len(self._files), "templates": len(self._templates),
                    "counters": len(self._counters)}

    def clear(self) -> None:
        with self._lock:
            self._reports.clear()
            self._structures.clear()
            self._files.clear()
            self._templates.clear()
            self._counters.clear()
            self._learned.clear()
