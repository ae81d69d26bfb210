"""The server's index with open buffers under the other names of their files (opened
through a link, closed, relinked while open, read through another link) and the cost of a
keystroke under a linked folder: found by a review of 54303a7..72ac3f8 (review26e); each
test but the startup one failed on 72ac3f8.

Cost per keystroke: typing in an open buffer opened through a symbolic link
(ws/alias.txt -> ws/notes.txt) that no pipeline reads by any name. ``_track_buffers``
already resolves the edited buffer (one ``os.path.realpath``) and puts its real path
(ws/notes.txt) among the changed paths; the new ``_readers`` then resolves that real path
AGAIN on every keystroke (it is in no ``dependents`` key and is not itself an open buffer),
although it is a real path already. Before the change a keystroke cost one
``os.path.realpath``; now two, for a file nobody reads.

Right answer: one ``os.path.realpath`` per keystroke (a real path ``_track_buffers``
produced needs no second resolution), and nothing checked. Found by a review
(review27b); failed before.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

import budgetlens_lsp.workspace_index as wi
from budgetlens_lsp.workspace_index import IndexMode, Snapshot, WorkspaceIndex, norm
from tests.core.contract.helpers import make_workspace
from tests.server.links.helpers import (
    CONFIG,
    LONGER,
    PIPELINE,
    fresh,
    pipeline_text,
    realpaths_per_prompt_edit,
    tokens,
)


def _opened_through_a_link(tmp_path: Path) -> tuple[Path, str, str]:
    """ws/prompts/sys.txt a plain file that p.yaml reads; ws/alias/sys.txt a link to it, the
    name the user opens it by. (ws, the pipeline, the link)."""
    ws = make_workspace(tmp_path / "ws", config=CONFIG, pipelines={"p.yaml": PIPELINE},
                        prompts={"sys.txt": "hello prompt\n", "other.txt": "other\n"})
    (ws / "alias").mkdir()
    os.symlink(ws / "prompts" / "sys.txt", ws / "alias" / "sys.txt")
    return ws, norm(ws / "pipelines" / "p.yaml"), norm(ws / "alias" / "sys.txt")


def test_closing_a_buffer_opened_through_a_link_drops_its_unsaved_text(tmp_path: Path
                                                                       ) -> None:
    """The user edits ws/alias/sys.txt (a link to the prompt p.yaml reads) and closes it
    without saving: the session marks the link's name changed. ``_buffer_reals`` is cut to
    the open buffers before ``_real_names`` looks the closed one up, so its real path is
    not among ``changed``; nothing reads the link's name, so p.yaml is not re-checked and
    keeps counting the discarded text."""
    ws, pipeline, link = _opened_through_a_link(tmp_path)
    roots = (norm(ws),)
    index = WorkspaceIndex()
    index.update(Snapshot(roots=roots), frozenset(), IndexMode.FULL)
    index.update(Snapshot(overlay={link: LONGER}, roots=roots), frozenset([link]))
    closed = Snapshot(roots=roots)
    index.update(closed, frozenset([link]))
    assert tokens(index, pipeline) == tokens(fresh(closed), pipeline)


def test_a_link_retargeted_while_its_buffer_is_open(tmp_path: Path) -> None:
    """ws/alias/sys.txt is open (edited) and is pointed at ws/prompts/other.txt, which
    p2.yaml reads (``ln -sfn``: the watcher reports the link Changed, an INCREMENTAL
    update). ``_buffer_reals`` keeps the old real path while the buffer is open, so the
    buffer is not read under other.txt and p2.yaml is not re-checked: it counts the disk,
    where a fresh index counts the buffer."""
    ws, _, link = _opened_through_a_link(tmp_path)
    p2 = ws / "pipelines" / "p2.yaml"
    p2.write_text(pipeline_text("other"), "utf-8")
    roots = (norm(ws),)
    index = WorkspaceIndex()
    index.update(Snapshot(roots=roots), frozenset(), IndexMode.FULL)
    snap = Snapshot(overlay={link: LONGER}, roots=roots)
    index.update(snap, frozenset([link]))
    tmp = ws / "alias" / "tmp"
    os.symlink(ws / "prompts" / "other.txt", tmp)
    os.replace(tmp, link)
    index.update(snap, frozenset([link]))
    assert tokens(index, norm(p2)) == tokens(fresh(snap), norm(p2))


def test_a_relink_with_the_same_edges_does_not_check_twice_per_keystroke(
        tmp_path: Path, monkeypatch) -> None:
    """p.yaml reads a.txt, b.txt and sys.txt, a link to a.txt; the link is pointed at b.txt
    (a REDISCOVER update). The edges are the same set, so ``_store`` takes its shortcut
    and keeps the old ``_links`` ((sys.txt, a.txt)). With b.txt open, ``_aliases`` never
    puts the buffer under sys.txt, so every keystroke in b.txt checks p.yaml, learns the
    alias (``_learn_aliases``), and checks it again: two checks per keystroke, forever."""
    ws = make_workspace(tmp_path / "ws", config=CONFIG,
                        pipelines={"p.yaml": pipeline_text("sys", "a", "b")},
                        prompts={"a.txt": "a\n", "b.txt": "b b\n"})
    link = ws / "prompts" / "sys.txt"
    os.symlink(ws / "prompts" / "a.txt", link)
    roots = (norm(ws),)
    index = WorkspaceIndex()
    index.update(Snapshot(roots=roots), frozenset(), IndexMode.FULL)
    os.unlink(link)
    os.symlink(ws / "prompts" / "b.txt", link)
    index.update(Snapshot(roots=roots), frozenset([norm(link)]), IndexMode.REDISCOVER)
    b = norm(ws / "prompts" / "b.txt")
    index.update(Snapshot(overlay={b: "b b b\n"}, roots=roots), frozenset([b]))
    calls = 0
    real = wi.check_pipeline

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        nonlocal calls
        calls += 1
        return real(*args, **kwargs)
    monkeypatch.setattr(wi, "check_pipeline", counted)
    snap = Snapshot(overlay={b: LONGER}, roots=roots)
    index.update(snap, frozenset([b]))
    per_keystroke = calls
    monkeypatch.undo()
    pipeline = norm(ws / "pipelines" / "p.yaml")
    assert tokens(index, pipeline, 0) == tokens(fresh(snap), pipeline, 0)
    assert per_keystroke == 1, index.links.by_pipeline


def test_a_linked_pipeline_open_by_its_real_name_at_startup(tmp_path: Path) -> None:
    """ws/pipelines/p.yaml is a link to ws/shared/p.yaml, open (edited: it now reads
    long.txt) when the server starts. ``_learn_aliases`` looks only at ``report.inputs``,
    not the pipeline's own path, so the first check reads the pipeline from the disk."""
    ws = make_workspace(tmp_path / "ws", config=CONFIG, pipelines={},
                        prompts={"sys.txt": "hello\n", "long.txt": LONGER})
    (ws / "shared").mkdir()
    (ws / "pipelines").mkdir(exist_ok=True)
    real = ws / "shared" / "p.yaml"
    real.write_text(PIPELINE, "utf-8")
    os.symlink(real, ws / "pipelines" / "p.yaml")
    roots = (norm(ws),)
    snap = Snapshot(overlay={norm(real): pipeline_text("long")}, roots=roots)
    index = WorkspaceIndex()
    index.update(snap, frozenset(), IndexMode.FULL)
    later = WorkspaceIndex()
    later.update(Snapshot(roots=roots), frozenset(), IndexMode.FULL)
    later.update(snap, frozenset([norm(real)]))
    pipeline = norm(ws / "pipelines" / "p.yaml")
    assert tokens(index, pipeline) == tokens(later, pipeline)


def _realpaths_per_edit_under_a_linked_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              open_pipelines: int) -> int:
    """``realpaths_per_prompt_edit`` with the workspace under a folder reached through a
    symbolic link (a home folder on another disk, macOS's /tmp and /var)."""
    (tmp_path / f"real{open_pipelines}").mkdir()
    os.symlink(tmp_path / f"real{open_pipelines}", tmp_path / f"home{open_pipelines}")
    return realpaths_per_prompt_edit(tmp_path / f"home{open_pipelines}", monkeypatch,
                                     open_pipelines)


def test_a_keystroke_under_a_linked_folder_does_not_resolve_every_open_buffer(
        tmp_path: Path, monkeypatch) -> None:
    """Under a folder reached through a link every open buffer is "opened through a link"
    (its real path differs from its name), so ``_aliases`` checks each one with
    ``os.path.realpath`` (one lstat per component) at every keystroke: 30 open pipelines,
    30 more realpath calls per keystroke (2 -> 22 with 20 open, 104 -> 284 lstat; before
    54303a7 the same)."""
    none_open = _realpaths_per_edit_under_a_linked_folder(tmp_path, monkeypatch, 0)
    many_open = _realpaths_per_edit_under_a_linked_folder(tmp_path, monkeypatch, 30)
    assert many_open <= none_open + 1, (none_open, many_open)


def test_a_buffer_opened_through_one_link_read_through_another(tmp_path: Path) -> None:
    """ws/prompts/sys.txt (what p.yaml reads) and ws/alias/sys.txt are both links to
    ws/kept/sys.txt; the user opens and edits ws/alias/sys.txt. The buffer is put under
    kept/sys.txt (its real path), but ``_aliases`` and ``_learn_aliases`` look a link's
    real path up among the buffers' own names only (``real in overlay``), never among the
    aliases: p.yaml counts the disk at startup and at every keystroke after (2 tokens,
    where the buffer has 9)."""
    ws = make_workspace(tmp_path / "ws", config=CONFIG, pipelines={"p.yaml": PIPELINE})
    for folder in ("prompts", "kept", "alias"):
        (ws / folder).mkdir(exist_ok=True)
    (ws / "kept" / "sys.txt").write_text("hello prompt\n", "utf-8")
    os.symlink(ws / "kept" / "sys.txt", ws / "prompts" / "sys.txt")
    os.symlink(ws / "kept" / "sys.txt", ws / "alias" / "sys.txt")
    pipeline, link = norm(ws / "pipelines" / "p.yaml"), norm(ws / "alias" / "sys.txt")
    roots = (norm(ws),)
    index = WorkspaceIndex()
    index.update(Snapshot(roots=roots), frozenset(), IndexMode.FULL)
    before = tokens(index, pipeline)
    index.update(Snapshot(overlay={link: "a b\n"}, roots=roots), frozenset([link]))
    index.update(Snapshot(overlay={link: LONGER}, roots=roots), frozenset([link]))
    assert tokens(index, pipeline) > before


def test_dependents_do_not_pile_up_across_relinks(tmp_path: Path) -> None:
    """A "current version" link (ws/prompts/sys.txt) pointed at 20 files in turn: each
    target's real path became a key of ``dependents``, and ``_forget`` only empties the
    sets, so 20 keys are kept (19 of them empty) where a fresh index has the live one."""
    ws = make_workspace(tmp_path / "ws", config=CONFIG, pipelines={"p.yaml": PIPELINE})
    (ws / "prompts").mkdir(exist_ok=True)
    (ws / "kept").mkdir()
    link = ws / "prompts" / "sys.txt"
    snap = Snapshot(roots=(norm(ws),))
    index = WorkspaceIndex()
    for i in range(20):
        version = ws / "kept" / f"v{i}.txt"
        version.write_text(f"version {i}\n", "utf-8")
        if i:
            os.unlink(link)
        os.symlink(version, link)
        index.update(snap, frozenset([norm(link)]),
                     IndexMode.FULL if i == 0 else IndexMode.INCREMENTAL)
    assert set(index.dependents) == set(fresh(snap).dependents)


def test_typing_in_a_linked_buffer_nobody_reads(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    ws = make_workspace(tmp_path / "ws", config=CONFIG,
                        pipelines={"p.yaml": pipeline_text("sys")},
                        prompts={"sys.txt": "hello prompt\n"})
    (ws / "notes.txt").write_text("notes\n", "utf-8")
    os.symlink(ws / "notes.txt", ws / "alias.txt")
    alias = norm(ws / "alias.txt")
    roots = (norm(ws),)
    index = WorkspaceIndex()
    index.update(Snapshot(roots=roots), frozenset(), IndexMode.FULL)
    index.update(Snapshot(overlay={alias: "notes\n"}, roots=roots), frozenset([alias]))
    calls: list[str] = []
    real = os.path.realpath

    def counted(path: Any, *args: Any, **kwargs: Any) -> str:
        calls.append(str(path))
        return real(path, *args, **kwargs)
    with monkeypatch.context() as m:
        m.setattr(os.path, "realpath", counted)
        changes = index.update(Snapshot(overlay={alias: "notes and more\n"}, roots=roots),
                               frozenset([alias]))
    assert changes.checked == 0
    assert calls == [alias]
