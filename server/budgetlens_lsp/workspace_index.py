"""The workspace index: what the server knows about every pipeline, prompt and JSON buffer.

Only the analysis thread touches an index (see ``session.py``). ``update`` takes a snapshot
of the open buffers and the set of changed paths, re-checks what depends on them, and
returns the diagnostics to publish.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from budgetlens_lsp.convert import UTF16
from budgetlens_lsp.settings import Settings

MAX_READ_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class Snapshot:
    """The editor state an analysis runs on (buffers beat disk)."""

    overlay: Mapping[str, str] = field(default_factory=dict)
    open_uris: Mapping[str, str] = field(default_factory=dict)
    versions: Mapping[str, int | None] = field(default_factory=dict)
    settings: Settings = field(default_factory=Settings)
    roots: tuple[str, ...] = ()
    encoding: str = UTF16


@dataclass
class Results:
    """What one analysis produced for the loop to send."""

    publish: list[tuple[str, list[object]]] = field(default_factory=list)


class WorkspaceIndex:
    def __init__(self) -> None:
        self.snapshot = Snapshot()

    def text_of(self, path: str) -> str | None:
        """The buffer text of ``path`` if open, else its disk text; None if unreadable."""
        text = self.snapshot.overlay.get(path)
        if text is not None:
            return text
        try:
            p = Path(path)
            if p.stat().st_size > MAX_READ_BYTES:
                return None
            return p.read_text("utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    def update(self, snapshot: Snapshot, changed: frozenset[str], full: bool) -> Results:
        self.snapshot = snapshot
        return Results()
