"""What the tests of the index with linked inputs and buffers share (this folder's
test_inputs.py, test_buffers.py, test_watched.py): a workspace whose prompt is a
symbolic link, token counts read from a report, and ``os.path.realpath`` calls counted over
one keystroke."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from budgetlens_lsp.workspace_index import IndexMode, Snapshot, WorkspaceIndex, norm
from tests.core.contract.helpers import make_workspace

CONFIG = {"model_context_window": 8192, "model_max_tokens": 512, "prompts_dir": "prompts"}
LONGER = "hello prompt with many many more words in it than before, quite a few more\n"


def pipeline_text(*keys: str) -> str:
    """A pipeline with one step per prompt key."""
    steps = "".join(f"  - id: s{i}\n    type: call_model\n    prompt_key: {k}\n"
                    "    max_output_tokens: 100\n" for i, k in enumerate(keys))
    return "settings:\n  max_context_tokens: 1000\nsteps:\n" + steps


PIPELINE = pipeline_text("sys")


def linked_prompt(tmp_path: Path) -> tuple[Path, str, str]:
    """ws/prompts/sys.txt a link to ws/kept/sys.txt (inside the workspace: no error);
    (ws, the pipeline, the link's target)."""
    ws = make_workspace(tmp_path / "ws", config=CONFIG, pipelines={"p.yaml": PIPELINE})
    (ws / "prompts").mkdir(exist_ok=True)
    (ws / "kept").mkdir()
    (ws / "kept" / "sys.txt").write_text("hello prompt\n", "utf-8")
    os.symlink(ws / "kept" / "sys.txt", ws / "prompts" / "sys.txt")
    return ws, norm(ws / "pipelines" / "p.yaml"), norm(ws / "kept" / "sys.txt")


def tokens(index: WorkspaceIndex, pipeline: str, step: int = 0) -> int:
    """The system prompt's tokens of a step of ``pipeline``'s report."""
    value = index.reports[pipeline].steps[step].system_prompt.value
    assert isinstance(value, int)
    return value


def fresh(snap: Snapshot) -> WorkspaceIndex:
    """A new index of the editor state ``snap`` (what a server started now would show)."""
    index = WorkspaceIndex()
    index.update(snap, frozenset(), IndexMode.FULL)
    return index


def realpaths_per_prompt_edit(parent: Path, monkeypatch: pytest.MonkeyPatch,
                              open_pipelines: int) -> int:
    """``os.path.realpath`` calls of one INCREMENTAL update for an edit of a prompt that
    40 pipelines of ``parent / "ws"`` read, with ``open_pipelines`` of them open."""
    ws = make_workspace(parent / "ws", config=CONFIG,
                        pipelines={f"p{i}.yaml": PIPELINE for i in range(40)},
                        prompts={"sys.txt": "hello\n"})
    prompt = norm(ws / "prompts" / "sys.txt")
    others = {norm(ws / "pipelines" / f"p{i}.yaml"): PIPELINE for i in range(open_pipelines)}
    roots = (norm(ws),)
    index = WorkspaceIndex()
    index.update(Snapshot(overlay=dict(others), roots=roots), frozenset(), IndexMode.FULL)
    index.update(Snapshot(overlay={**others, prompt: "a b\n"}, roots=roots),
                 frozenset([prompt]))
    calls = 0
    real = os.path.realpath

    def counted(path: Any, *args: Any, **kwargs: Any) -> str:
        nonlocal calls
        calls += 1
        return real(path, *args, **kwargs)
    with monkeypatch.context() as m:
        m.setattr(os.path, "realpath", counted)
        changes = index.update(Snapshot(overlay={**others, prompt: LONGER}, roots=roots),
                               frozenset([prompt]))
    assert changes.checked == 40
    return calls
