"""The server's index with inputs that are symbolic links: the dependency graph
(``WorkspaceIndex.dependents``, which decides what an INCREMENTAL update re-checks) and the
open buffers know an input by the name a pipeline reads it by and by its real path. Found
by a review (review26c); each failed before (edges and buffers by name only).

The server's index with inputs that are symbolic links, at its edges (edges by name and
real path, buffers under the names of links to them): found by a review of 54303a7
(review26d), each failing on it.
"""

from __future__ import annotations

import os
from pathlib import Path

from budgetlens_lsp.workspace_index import IndexMode, Snapshot, WorkspaceIndex, norm
from tests.core.contract.helpers import make_workspace
from tests.server.links.helpers import (
    CONFIG,
    LONGER,
    PIPELINE,
    linked_prompt,
    realpaths_per_prompt_edit,
    tokens,
)


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


def test_a_buffer_with_a_nul_in_its_path_does_not_fail_every_pipeline(tmp_path: Path
                                                                      ) -> None:
    """An open buffer whose path has a NUL (a ``file:`` URI with ``%00``): ``_aliases``
    calls ``os.path.realpath`` on every open buffer's path, which raises ValueError, inside
    ``files_for``, so every pipeline of that root fails with BL009 as long as the buffer is
    open (before 54303a7 nothing resolved buffer paths)."""
    ws, pipeline, _ = linked_prompt(tmp_path)
    bad = norm(ws / "prompts") + os.sep + "a\x00b.txt"
    index = WorkspaceIndex()
    index.update(Snapshot(overlay={bad: "x"}, roots=(norm(ws),)), frozenset([bad]),
                 IndexMode.FULL)
    assert pipeline not in index.failures, index.failures.get(pipeline)
    assert pipeline in index.reports


def test_linked_names_do_not_pile_up_across_relinks(tmp_path: Path) -> None:
    """The links the index remembers are those of the reports it holds: a link pointed at 20
    files in turn (a "current version" link) leaves one (before: a map of every link name
    ever read, only added to, 21 entries here)."""
    ws, _, _ = linked_prompt(tmp_path)
    snap = Snapshot(roots=(norm(ws),))
    index = WorkspaceIndex()
    index.update(snap, frozenset(), IndexMode.FULL)
    link = ws / "prompts" / "sys.txt"
    for i in range(20):
        version = ws / "kept" / f"v{i}.txt"
        version.write_text(f"version {i}\n", "utf-8")
        os.unlink(link)
        os.symlink(version, link)
        index.update(snap, frozenset([norm(link)]), IndexMode.INCREMENTAL)
    live = {k for keys in index._edges.values() for k in keys}
    held = [pair for pairs in index.links.by_pipeline.values() for pair in pairs]
    assert len(held) == 1 and set(held[0]) <= live, held


def test_text_of_a_link_name_is_the_text_the_report_read(tmp_path: Path) -> None:
    """The check of the pipeline read the buffer of ws/kept/sys.txt under the link's name
    ws/prompts/sys.txt (``_aliases``), but ``text_of`` (what the diagnostics' ranges are
    converted with, what BL052's first-line range of the prompt is taken from) still gives
    the disk text for that name: the report and its positions disagree (for a linked
    pipeline file, every diagnostic's range is converted against the wrong text)."""
    ws, pipeline, target = linked_prompt(tmp_path)
    index = WorkspaceIndex()
    index.update(Snapshot(roots=(norm(ws),)), frozenset(), IndexMode.FULL)
    index.update(Snapshot(overlay={target: LONGER}, roots=(norm(ws),)), frozenset([target]),
                 IndexMode.INCREMENTAL)
    assert tokens(index, pipeline) > 3  # the buffer was counted
    assert index.text_of(norm(ws / "prompts" / "sys.txt")) == LONGER


def test_a_prompt_edit_does_not_resolve_every_open_buffer(tmp_path: Path,
                                                          monkeypatch) -> None:
    """``_aliases`` runs ``os.path.realpath`` (one lstat per path component) on every open
    buffer, per project root and per update, even in a workspace without one link (and
    ``_linked`` empty): a keystroke with 30 pipelines open makes 30 more realpath calls
    (about 5 lstat each here; 208 -> 713 lstat on a 200-dependents edit with 100 open),
    where before 54303a7 it made none."""
    none_open = realpaths_per_prompt_edit(tmp_path / "w0", monkeypatch, 0)
    many_open = realpaths_per_prompt_edit(tmp_path / "w30", monkeypatch, 30)
    assert many_open <= none_open, (none_open, many_open)


def test_a_buffer_open_before_the_link_is_known_is_counted(tmp_path: Path) -> None:
    """The target of a linked prompt is open with unsaved text when the server starts (an
    editor restoring its session; or the link is made, or a pipeline reading it created,
    while the buffer is open). ``_aliases`` knows a link only from a report stored by an
    earlier update, so the first check of the pipeline reads the disk, and the count stays
    wrong until the next keystroke in that buffer: the same editor state gave 17 tokens
    or 3 depending on history. Now a check that read such a link is made again in the
    same update, with the buffer."""
    ws, pipeline, target = linked_prompt(tmp_path)
    snap = Snapshot(overlay={target: LONGER}, roots=(norm(ws),))
    index = WorkspaceIndex()
    index.update(snap, frozenset(), IndexMode.FULL)
    later = WorkspaceIndex()  # the buffer opened after the first check
    later.update(Snapshot(roots=(norm(ws),)), frozenset(), IndexMode.FULL)
    later.update(snap, frozenset([target]), IndexMode.INCREMENTAL)
    assert tokens(index, pipeline) == tokens(later, pipeline)


def test_a_buffer_opened_by_a_link_s_name_is_counted_by_pipelines_reading_the_file(
        tmp_path: Path) -> None:
    """The other way round: the prompt ws/prompts/sys.txt is a plain file, the user opens it
    through a link to it (ws/alias/sys.txt) and edits it. ``_linked`` maps a real path to
    the names of links reports read, never to the real name itself, and ``_affected`` looks
    the changed link name up as it is: the pipeline was neither re-checked nor would it
    read the buffer ("a buffer beats the disk whichever name a pipeline reads it by").
    Now a buffer's real path is resolved once while it is open."""
    ws = make_workspace(tmp_path / "ws", config=CONFIG, pipelines={"p.yaml": PIPELINE},
                        prompts={"sys.txt": "hello prompt\n"})
    (ws / "alias").mkdir()
    os.symlink(ws / "prompts" / "sys.txt", ws / "alias" / "sys.txt")
    pipeline, link = norm(ws / "pipelines" / "p.yaml"), norm(ws / "alias" / "sys.txt")
    index = WorkspaceIndex()
    index.update(Snapshot(roots=(norm(ws),)), frozenset(), IndexMode.FULL)
    before = tokens(index, pipeline)
    index.update(Snapshot(overlay={link: LONGER}, roots=(norm(ws),)), frozenset([link]),
                 IndexMode.INCREMENTAL)
    assert tokens(index, pipeline) > before
