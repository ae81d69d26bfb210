"""Cost per keystroke: typing in an open buffer opened through a symbolic link
(ws/alias.txt -> ws/notes.txt) that no pipeline reads by any name. ``_track_buffers``
already resolves the edited buffer (one ``os.path.realpath``) and puts its real path
(ws/notes.txt) among the changed paths; the new ``_readers`` then resolves that real path
AGAIN on every keystroke (it is in no ``dependents`` key and is not itself an open buffer),
although it is a real path already. Before the change a keystroke cost one
``os.path.realpath``; now two, for a file nobody reads.

Right answer: one ``os.path.realpath`` per keystroke (a real path ``_track_buffers``
produced needs no second resolution), and nothing checked. Found by a review
(review27b); failed before."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from budgetlens_lsp.workspace_index import IndexMode, Snapshot, WorkspaceIndex, norm
from tests.core.contract.helpers import make_workspace
from tests.server.linked_helpers import CONFIG, pipeline_text


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
