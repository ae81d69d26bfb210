"""The server's index with inputs that are symbolic links: the dependency graph
(``WorkspaceIndex.dependents``, which decides what an INCREMENTAL update re-checks) and the
open buffers know an input by the name a pipeline reads it by and by its real path. Found
by a review (review26c); each failed before (edges and buffers by name only)."""

from __future__ import annotations

from pathlib import Path

from budgetlens_lsp.workspace_index import IndexMode, Snapshot, WorkspaceIndex, norm
from tests.server.linked_helpers import LONGER, linked_prompt, tokens


def test_a_linked_prompt_edited_on_disk_at_its_target(tmp_path: Path) -> None:
    """The link's target is changed on disk (a checkout, another tool); the file watcher
    reports the file that changed (ws/kept/sys.txt: the link's own name did not change).
    ``dependents`` knows only ws/prompts/sys.txt, so nothing is re-checked and the editor
    keeps the old count, where a fresh server counts the new text."""
    ws, pipeline, target = linked_prompt(tmp_path)
    snap = Snapshot(roots=(norm(ws),))
    index = WorkspaceIndex()
    index.update(snap, frozenset(), IndexMode.FULL)
    Path(target).write_text(LONGER, "utf-8")
    index.update(snap, frozenset([target]), IndexMode.INCREMENTAL)
    fresh = WorkspaceIndex()
    fresh.update(snap, frozenset(), IndexMode.FULL)
    assert tokens(index, pipeline) == tokens(fresh, pipeline)


def test_an_open_buffer_of_a_linked_prompt_s_target(tmp_path: Path) -> None:
    """The same file opened by its real name (ws/kept/sys.txt, from the explorer) and
    edited, unsaved: "buffers beat disk", but the overlay is keyed by name, so the pipeline
    reading ws/prompts/sys.txt counts the disk text, and is not even re-checked."""
    ws, pipeline, target = linked_prompt(tmp_path)
    index = WorkspaceIndex()
    index.update(Snapshot(roots=(norm(ws),)), frozenset(), IndexMode.FULL)
    before = tokens(index, pipeline)
    index.update(Snapshot(overlay={target: LONGER}, roots=(norm(ws),)), frozenset([target]),
                 IndexMode.INCREMENTAL)
    assert tokens(index, pipeline) > before
