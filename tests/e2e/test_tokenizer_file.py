"""A tokenizer.json that config.json names, replaced on disk while the server runs: the
server counts with the new file (it was kept for the server's lifetime)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from lsprotocol import types

from tests.tokenizer_files import save_tokenizer

from .harness import Editor, codes_of, running_server


def _save(path: Path, *, per_character: bool) -> None:
    save_tokenizer(path, per_character=per_character)


async def _report(ed: Editor, rel: str) -> str:
    report = await ed.client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="budgetlens.showBudgetReport", arguments=[{"uri": ed.uri(rel)}]))
    return str(report["text"])


async def test_a_replaced_tokenizer_file_counts_anew(workspace: Path) -> None:
    config = json.loads((workspace / "config.json").read_text("utf-8"))
    config["tokenizer"] = "tokenizer.json"
    (workspace / "config.json").write_text(json.dumps(config), "utf-8")
    (workspace / "prompts/chat.txt").write_text("alpha beta gamma", "utf-8")
    _save(workspace / "tokenizer.json", per_character=False)
    async with running_server(workspace) as ed:
        await ed.wait_diagnostics(ed.uri("pipelines/long_report.yaml"),
                                  lambda ds: "BL050" in codes_of(ds))  # indexed
        # fixed = system prompt + template + format overhead 32: 3 words, then 16 characters
        assert "chat        35" in await _report(ed, "pipelines/chat.yaml")
        _save(workspace / "tokenizer.json", per_character=True)
        ed.client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
            changes=[types.FileEvent(uri=ed.uri("tokenizer.json"),
                                     type=types.FileChangeType.Changed)]))
        # a request after the event sees the analysis of it
        assert "chat        48" in await _report(ed, "pipelines/chat.yaml")


async def test_a_tokenizer_file_open_in_the_editor_counts_anew_once_saved(
        workspace: Path) -> None:
    """Open in the editor, the file is still loaded from disk: an unsaved edit changes no
    count, saving it does (the buffer's text is the same before and after the save)."""
    config = json.loads((workspace / "config.json").read_text("utf-8"))
    config["tokenizer"] = "tokenizer.json"
    (workspace / "config.json").write_text(json.dumps(config), "utf-8")
    (workspace / "prompts/chat.txt").write_text("alpha beta gamma", "utf-8")
    path = workspace / "tokenizer.json"
    _save(path, per_character=True)
    per_character = path.read_text("utf-8")
    _save(path, per_character=False)
    async with running_server(workspace) as ed:
        await ed.wait_diagnostics(ed.uri("pipelines/long_report.yaml"),
                                  lambda ds: "BL050" in codes_of(ds))  # indexed
        uri = ed.open("tokenizer.json", language_id="json")
        assert "chat        35" in await _report(ed, "pipelines/chat.yaml")
        ed.replace_all(uri, per_character)  # edited, not saved: the disk still has words
        assert "chat        35" in await _report(ed, "pipelines/chat.yaml")
        path.write_text(per_character, "utf-8")  # saved
        ed.client.text_document_did_save(types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=uri)))
        assert "chat        48" in await _report(ed, "pipelines/chat.yaml")


async def test_a_linked_tokenizer_file_counts_anew_when_its_target_changes(
        workspace: Path) -> None:
    """config.json names a link; the editor reports the change of the file it points to."""
    config = json.loads((workspace / "config.json").read_text("utf-8"))
    config["tokenizer"] = "tokenizer.json"
    (workspace / "config.json").write_text(json.dumps(config), "utf-8")
    (workspace / "prompts/chat.txt").write_text("alpha beta gamma", "utf-8")
    (workspace / "tokenizers").mkdir()
    target = workspace / "tokenizers/current.json"
    _save(target, per_character=False)
    os.symlink(target, workspace / "tokenizer.json")
    async with running_server(workspace) as ed:
        await ed.wait_diagnostics(ed.uri("pipelines/long_report.yaml"),
                                  lambda ds: "BL050" in codes_of(ds))  # indexed
        assert "chat        35" in await _report(ed, "pipelines/chat.yaml")
        _save(target, per_character=True)
        ed.client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
            changes=[types.FileEvent(uri=ed.uri("tokenizers/current.json"),
                                     type=types.FileChangeType.Changed)]))
        assert "chat        48" in await _report(ed, "pipelines/chat.yaml")
