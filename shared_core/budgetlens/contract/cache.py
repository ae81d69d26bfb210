"""The budget cache: results kept for as long as their inputs do not change.

A ``BudgetCache`` is owned by its caller (an editor session, one CLI run, a pipeline runner)
and holds: whole pipeline reports keyed by a fingerprint of every file they read (pipeline,
extends chain, prompt files, config.json and the places probed for it); parsed pipeline and
config files keyed by their own fingerprint; and one token counter per tokenizer, whose
counts are keyed by content hash. Disk files are fingerprinted by mtime/size, in-memory
buffers by content hash (see ``budgetlens.files``). Safe to share between threads.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from budgetlens.files import FileSource, SourceError
from budgetlens.tokens.core import TokenCounter, Tokenizer

T = TypeVar("T")


class RecordingFiles:
    """A ``FileSource`` that remembers the fingerprint of every file read through it.

    The fingerprint is taken before the read, so a file that changes while it is read makes
    the next lookup miss rather than keeping a stale result.
    """

    def __init__(self, base: FileSource) -> None:
        self.base = base
        self.seen: dict[str, str] = {}

    def read_text(self, path: Path) -> str:
        self.seen.setdefault(str(path), self.base.fingerprint(path))
        return self.base.read_text(path)

    def fingerprint(self, path: Path) -> str:
        fp = self.base.fingerprint(path)
        self.seen.setdefault(str(path), fp)
        return fp


class BudgetCache:
    """Caches of the budget engine; make one and pass it to every ``check_pipeline`` call."""

    def __init__(self, *, max_entries: int = 8192) -> None:
        self._lock = threading.Lock()
        self._max = max_entries
        self._reports: dict[Hashable, tuple[Mapping[str, str], Any]] = {}
        self._files: dict[tuple[str, str, str], Any] = {}
        self._counters: dict[str, TokenCounter] = {}
        self.hits = 0
        self.misses = 0

    # -- whole reports ---------------------------------------------------------------
    def report(self, key: Hashable, files: FileSource) -> Any | None:
        """The report stored under ``key`` if none of the files it read changed."""
        with self._lock:
            entry = self._reports.get(key)
        if entry is None:
            self.misses += 1
            return None
        deps, report = entry
        for path, fp in deps.items():
            if files.fingerprint(Path(path)) != fp:
                self.misses += 1
                return None
        self.hits += 1
        return report

    def store_report(self, key: Hashable, deps: Mapping[str, str], report: Any) -> None:
        with self._lock:
            if len(self._reports) >= self._max:
                self._reports.clear()
            self._reports[key] = (dict(deps), report)

    # -- parsed files ----------------------------------------------------------------
    def parsed(self, kind: str, path: str, files: RecordingFiles,
               load: Callable[[], T]) -> T:
        """``load()`` once per (kind, path, fingerprint)."""
        fp = files.fingerprint(Path(path))
        key = (kind, path, fp)
        with self._lock:
            if key in self._files:
                value: T = self._files[key]
                return value
        value = load()
        with self._lock:
            if len(self._files) >= self._max:
                self._files.clear()
            self._files[key] = value
        return value

    def prompt_tokens(self, path: str, files: RecordingFiles,
                      counter: TokenCounter) -> int | SourceError:
        """Token count of a prompt file (or why it cannot be read), cached by fingerprint."""
        def load() -> int | SourceError:
            try:
                return counter.count(files.read_text(Path(path)))
            except SourceError as exc:
                return exc
        return self.parsed(f"tokens:{counter.name}", path, files, load)

    # -- token counters --------------------------------------------------------------
    def counter(self, tokenizer: Tokenizer) -> TokenCounter:
        with self._lock:
            counter = self._counters.get(tokenizer.name)
            if counter is None:
                counter = self._counters[tokenizer.name] = TokenCounter(tokenizer)
            return counter

    def clear(self) -> None:
        with self._lock:
            self._reports.clear()
            self._files.clear()
            self._counters.clear()
