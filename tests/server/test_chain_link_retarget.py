"""A chain of symbolic links: the pipeline reads ws/prompts/sys.txt, a link to
ws/mid/sys.txt, itself a link to a file. Reports record (name, real path) of the name they
read only (prompts/sys.txt -> the final file); the middle link is in no ``dependents`` key.

When the middle link is retargeted (``ln -sfn``; VS Code's watcher coalesces the unlink and
the new link into one *Changed* event) the watcher reports ws/mid/sys.txt. ``_readers``
finds no reader by that name, resolves it with ``os.path.realpath`` to the NEW target,
which nobody read either, and re-checks nothing: the pipeline keeps the count of the old
target (or, when the new target lies outside the workspace, a stale all-clear where a fresh
index shows BL041).

Right answer: after the event, the index's report equals a fresh WorkspaceIndex's (the
readers of the link's OLD real path, i.e. every pipeline reading through the changed link,
must be re-checked). Found by a review (review27b); failed before."""

from __future__ import annotations

import os
from pathlib import Path

from budgetlens_lsp.workspace_index import IndexMode, Snapshot, norm
from tests.core.contract.helpers import make_workspace
from tests.server.linked_helpers import CONFIG, LONGER, fresh, pipeline_text, tokens


def _chain(tmp_path: Path) -> tuple[Path, str, Path]:
    ws = make_workspace(tmp_path / "ws", config=CONFIG,
                        pipelines={"p.yaml": pipeline_text("sys")})
    (ws / "prompts").mkdir(exist_ok=True)
    (ws / "mid").mkdir()
    (ws / "kept").mkdir()
    (ws / "kept" / "a.txt").write_text("hello prompt\n", "utf-8")
    (ws / "kept" / "b.txt").write_text(LONGER, "utf-8")
    os.symlink(ws / "kept" / "a.txt", ws / "mid" / "sys.txt")
    os.symlink(ws / "mid" / "sys.txt", ws / "prompts" / "sys.txt")
    return ws, norm(ws / "pipelines" / "p.yaml"), ws / "mid" / "sys.txt"


def _retarget(link: Path, target: Path) -> None:
    link.unlink()
    os.symlink(target, link)


def test_middle_link_of_a_chain_retargeted_inside_the_workspace(tmp_path: Path) -> None:
    ws, pipeline, mid = _chain(tmp_path)
    snap = Snapshot(roots=(norm(ws),))
    index = fresh(snap)
    before = tokens(index, pipeline)
    _retarget(mid, ws / "kept" / "b.txt")
    index.update(snap, frozenset([norm(mid)]), IndexMode.INCREMENTAL)
    expected = tokens(fresh(snap), pipeline)
    assert expected > before
    assert tokens(index, pipeline) == expected


def test_middle_link_of_a_chain_retargeted_outside_the_workspace(tmp_path: Path) -> None:
    ws, pipeline, mid = _chain(tmp_path)
    outside = tmp_path / "outside.txt"
    outside.write_text(LONGER, "utf-8")
    snap = Snapshot(roots=(norm(ws),))
    index = fresh(snap)
    assert not index.reports[pipeline].diagnostics
    _retarget(mid, outside)
    index.update(snap, frozenset([norm(mid)]), IndexMode.INCREMENTAL)
    want = sorted(d.code for d in fresh(snap).reports[pipeline].diagnostics)
    assert want  # a fresh index refuses the prompt outside the workspace
    assert sorted(d.code for d in index.reports[pipeline].diagnostics) == want
