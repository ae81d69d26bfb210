"""Changes on disk (``workspace/didChangeWatchedFiles``): edited prompts, new and deleted
pipelines; an open buffer keeps beating the disk."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types

from . import expected
from .harness import Editor, codes_of, running_server


def _notify(ed: Editor, rel: str, kind: types.FileChangeType) -> None:
    ed.client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
        changes=[types.FileEvent(uri=ed.uri(rel), type=kind)]))


def _over(diags: list[types.Diagnostic]) -> bool:
    return "BL050" in codes_of(diags)


NEW_PIPELINE = """\
extends: base.yaml
settings:
  max_context_tokens: 8000
"""


async def test_watchers_are_registered_with_the_client(workspace: Path) -> None:
    async with running_server(workspace) as ed:
        await ed.wait_diagnostics(ed.uri("pipelines/long_report.yaml"), _over)
        methods = [r.method for r in getattr(ed.client, "registrations", [])]
    assert "workspace/didChangeWatchedFiles" in methods


async def test_a_prompt_changed_on_disk_rediagnoses_its_closed_pipeline(
        workspace: Path) -> None:
    prompt = workspace / "prompts/chat.txt"
    bigger = prompt.read_text("utf-8") + "Remember: " + "be concise and kind. " * 400
    total = (expected.tokens(bigger) + expected.OVERHEAD) + 1536 + 4096 + 768 + expected.MARGIN
    async with running_server(workspace) as ed:
        chat = ed.uri("pipelines/chat.yaml")
        await ed.wait_diagnostics(ed.uri("pipelines/long_report.yaml"), _over)
        prompt.write_text(bigger, "utf-8")
        _notify(ed, "prompts/chat.txt", types.FileChangeType.Changed)
        [d] = await ed.wait_diagnostics(chat, _over)
        assert f"= {total} > {expected.WINDOW}" in d.message


async def test_created_and_deleted_pipelines(workspace: Path) -> None:
    answer = expected.answer(workspace, context=8000)
    assert answer.headroom < 0
    async with running_server(workspace) as ed:
        uri = ed.uri("pipelines/new.yaml")
        await ed.wait_diagnostics(ed.uri("pipelines/long_report.yaml"), _over)
        (workspace / "pipelines/new.yaml").write_text(NEW_PIPELINE, "utf-8")
        _notify(ed, "pipelines/new.yaml", types.FileChangeType.Created)
        diags = await ed.wait_diagnostics(uri, _over)
        assert any(f"= {answer.total} > {expected.WINDOW}" in d.message for d in diags)
        (workspace / "pipelines/new.yaml").unlink()
        _notify(ed, "pipelines/new.yaml", types.FileChangeType.Deleted)
        assert await ed.wait_diagnostics(uri, lambda ds: ds == []) == []


async def test_an_open_buffer_beats_a_change_on_disk(workspace: Path) -> None:
    path = workspace / "pipelines/long_report.yaml"
    async with running_server(workspace) as ed:
        uri = ed.open("pipelines/long_report.yaml")
        await ed.wait_diagnostics(uri, _over)
        path.write_text(path.read_text("utf-8").replace("6144", "1000"), "utf-8")
        _notify(ed, "pipelines/long_report.yaml", types.FileChangeType.Changed)
        # a request after the event sees the analysis of it: the buffer still overflows
        report = await ed.client.workspace_execute_command_async(types.ExecuteCommandParams(
            command="budgetlens.showBudgetReport", arguments=[{"uri": uri}]))
        assert "6144" in report["text"]
        assert _over(list(ed.client.diagnostics[uri]))
        ed.close(uri)  # closed: the disk is the truth again
        await ed.wait_diagnostics(uri, lambda ds: ds == [])


async def test_config_json_deleted_and_created_again(workspace: Path) -> None:
    config = workspace / "config.json"
    saved = config.read_text("utf-8")
    async with running_server(workspace) as ed:
        uri = ed.uri("pipelines/support.yaml")
        await ed.wait_diagnostics(ed.uri("pipelines/long_report.yaml"), _over)
        config.unlink()
        _notify(ed, "config.json", types.FileChangeType.Deleted)
        await ed.wait_diagnostics(uri, lambda ds: "BL010" in codes_of(ds))  # no config.json
        config.write_text(saved, "utf-8")
        _notify(ed, "config.json", types.FileChangeType.Created)
        assert await ed.wait_diagnostics(uri, lambda ds: ds == []) == []
        await ed.wait_diagnostics(ed.uri("pipelines/long_report.yaml"), _over)
