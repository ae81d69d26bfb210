"""The server's index with inputs that are symbolic links: the dependency graph
(``WorkspaceIndex.dependents``, which decides what an INCREMENTAL update re-checks) and the
open buffers know an input by the name a pipeline reads it by and by its real path. Found
by a review (review26c); each failed before (edges and buffers by name only)."""

from __future__ import annotations

import os
from pathlib import Path

from budgetlens_lsp.workspace_index import IndexMode, Snapshot, WorkspaceIndex, norm
from tests.core.contract.helpers import make_workspace

CONFIG = {"model_context_window": 8192, "model_max_tokens": 512, "prompts_dir": "prompts"}
PIPELINE = ("settings:\n  max_context_tokens: 1000\nsteps:\n  - id: s\n    type: call_model\n"
            "    prompt_key: sys\n    max_output_tokens: 100\n")
LONGER = "hello prompt with many many more words in it than before, quite a few more\n"


def _linked_prompt(tmp_path: Path) -> tuple[Path, str, str]:
    """ws/prompts/sys.txt a link to ws/kept/sys.txt (inside the workspace: no error);
    (ws, the pipeline, the link's target)."""
    ws = make_workspace(tmp_path / "ws", config=CONFIG, pipelines={"p.yaml": PIPELINE})
    (ws / "prompts").mkdir(exist_ok=True)
    (ws / "kept").mkdir()
    (ws / "kept" / "sys.txt").write_text("hello prompt\n", "utf-8")
    os.symlink(ws / "kept" / "sys.txt", ws / "prompts" / "sys.txt")
    return ws, norm(ws / "pipelines" / "p.yaml"), norm(ws / "kept" / "sys.txt")


def _tokens(index: WorkspaceIndex, pipeline: str) -> int:
    value = index.reports[pipeline].steps[0].system_prompt.value
    assert isinstance(value, int)
    return value


def test_a_linked_prompt_edited_on_disk_at_its_target(tmp_path: Path) -> None:
    """The link's target is changed on disk (a checkout, another tool); the file watcher
    reports the file that changed (ws/kept/sys.txt: the link's own name did not change).
    ``dependents`` knows only ws/prompts/sys.txt, so nothing is re-checked and the editor
    keeps the old count, where a fresh server counts the new text."""
    ws, pipeline, target = _linked_prompt(tmp_path)
    snap = Snapshot(roots=(norm(ws),))
    index = WorkspaceIndex()
    index.update(snap, frozenset(), IndexMode.FULL)
    Path(target).write_text(LONGER, "utf-8")
    index.update(snap, frozenset([target]), IndexMode.INCREMENTAL)
    fresh = WorkspaceIndex()
    fresh.update(snap, frozenset(), IndexMode.FULL)
    assert _tokens(index, pipeline) == _tokens(fresh, pipeline)


def test_an_open_buffer_of_a_linked_prompt_s_target(tmp_path: Path) -> None:
    """The same file opened by its real name (ws/kept/sys.txt, from the explorer) and
    edited, unsaved: "buffers beat disk", but the overlay is keyed by name, so the pipeline
    reading ws/prompts/sys.txt counts the disk text, and is not even re-checked."""
    ws, pipeline, target = _linked_prompt(tmp_path)
    index = WorkspaceIndex()
    index.update(Snapshot(roots=(norm(ws),)), frozenset(), IndexMode.FULL)
    before = _tokens(index, pipeline)
    index.update(Snapshot(overlay={target: LONGER}, roots=(norm(ws),)), frozenset([target]),
                 IndexMode.INCREMENTAL)
    assert _tokens(index, pipeline) > before
