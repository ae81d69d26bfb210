"""The server's workspace index, in process: the dependency graph decides what is re-checked,
and only changed inputs are tokenized again."""

from __future__ import annotations

import shutil
from pathlib import Path

from budgetlens.tokens.core import get_tokenizer
from budgetlens_lsp.workspace_index import IndexMode, Snapshot, WorkspaceIndex, norm

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _index(tmp_path: Path) -> tuple[WorkspaceIndex, Path]:
    root = tmp_path / "ws"
    shutil.copytree(EXAMPLES, root)
    index = WorkspaceIndex()
    index.update(Snapshot(roots=(norm(root),)), frozenset(), IndexMode.FULL)
    return index, root


def test_dependency_graph_from_the_reports(tmp_path: Path) -> None:
    index, root = _index(tmp_path)
    pipes = root / "pipelines"
    users = {Path(p).name for p in index.dependents[norm(root / "prompts/answer.txt")]}
    assert users == {"base.yaml", "support.yaml"}  # the step 'answer' is base.yaml's
    base_users = {Path(p).name for p in index.dependents[norm(pipes / "base.yaml")]}
    assert base_users == {"base.yaml", "chat.yaml", "long_report.yaml", "multilingual.yaml",
                          "support.yaml"}
    config_users = index.dependents[norm(root / "config.json")]
    assert len(config_users) == 5


def test_editing_a_prompt_retokenizes_only_that_prompt(tmp_path: Path) -> None:
    index, root = _index(tmp_path)
    counter = index.cache.counter(get_tokenizer("cl100k_base"))
    prompt = norm(root / "prompts/chat.txt")
    before = counter.misses
    new_text = (root / "prompts/chat.txt").read_text("utf-8") + "One more rule.\n"
    results = index.update(Snapshot(overlay={prompt: new_text}, roots=(norm(root),)),
                           frozenset([prompt]), IndexMode.INCREMENTAL)
    assert counter.misses == before + 1  # the edited prompt; templates and others: cached
    assert results.checked == 1  # chat.yaml is the only pipeline reading chat.txt
    report = index.reports[norm(root / "pipelines/chat.yaml")]
    assert report.steps[0].system_prompt.value == get_tokenizer("cl100k_base").count(new_text)
