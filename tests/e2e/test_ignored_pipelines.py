"""The language server searches the workspace as ``budgetlens check`` does (issue 35): a
pipeline under a folder that ``.gitignore`` ignores is not indexed, so it gets no
diagnostics, while a normal one does; a changed ``.gitignore`` is seen at once. An open file
is checked whatever the ignore files say (as a file named to ``check`` is)."""

from __future__ import annotations

import shutil
from pathlib import Path

from lsprotocol import types

from .harness import Editor, codes_of, running_server

VENDORED = "vendor/pipelines/long_report.yaml"
STEP = "  - id: write_report"


def _vendor(workspace: Path) -> None:
    """A copy of ``pipelines/`` (long_report.yaml is over budget: BL050) under ``vendor/``,
    in a repository (a ``.git`` folder at the workspace's root; git is never run)."""
    shutil.copytree(workspace / "pipelines", workspace / "vendor" / "pipelines")
    (workspace / ".git" / "info").mkdir(parents=True)


def _over(diags: list[types.Diagnostic]) -> bool:
    return "BL050" in codes_of(diags)


async def _second_pass(ed: Editor) -> None:
    """Open the normal pipeline and have it analysed twice: the first analysis (the whole
    workspace, published in one pass) is over when the second one's result arrives."""
    uri = ed.open("pipelines/long_report.yaml")
    text = (ed.root / "pipelines/long_report.yaml").read_text("utf-8")
    await ed.wait_diagnostics(uri, _over)
    ed.replace_all(uri, text.replace(STEP, STEP + "  # budgetlens: ignore[BL050]"))
    await ed.wait_diagnostics(uri, lambda ds: ds == [])


async def test_a_gitignored_pipeline_is_not_indexed(workspace: Path) -> None:
    _vendor(workspace)
    (workspace / ".gitignore").write_text("vendor/\n", "utf-8")
    async with running_server(workspace) as ed:
        await _second_pass(ed)
        assert ed.client.diagnostics.get(ed.uri(VENDORED), []) == []


async def test_git_info_exclude_is_read_too(workspace: Path) -> None:
    _vendor(workspace)
    (workspace / ".git" / "info" / "exclude").write_text("/vendor\n", "utf-8")
    async with running_server(workspace) as ed:
        await _second_pass(ed)
        assert ed.client.diagnostics.get(ed.uri(VENDORED), []) == []


async def test_a_changed_gitignore_withdraws_and_restores_diagnostics(
        workspace: Path) -> None:
    _vendor(workspace)
    async with running_server(workspace) as ed:
        vendored = ed.uri(VENDORED)
        await ed.wait_diagnostics(vendored, _over)  # indexed: not ignored yet
        (workspace / ".gitignore").write_text("vendor/\n", "utf-8")
        ed.client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
            changes=[types.FileEvent(uri=ed.uri(".gitignore"),
                                     type=types.FileChangeType.Created)]))
        await ed.wait_diagnostics(vendored, lambda ds: ds == [])
        (workspace / ".gitignore").write_text("", "utf-8")
        ed.client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
            changes=[types.FileEvent(uri=ed.uri(".gitignore"),
                                     type=types.FileChangeType.Changed)]))
        await ed.wait_diagnostics(vendored, _over)


async def test_an_open_ignored_pipeline_is_still_checked(workspace: Path) -> None:
    _vendor(workspace)
    (workspace / ".gitignore").write_text("vendor/\n", "utf-8")
    async with running_server(workspace) as ed:
        uri = ed.open(VENDORED)
        await ed.wait_diagnostics(uri, _over)
