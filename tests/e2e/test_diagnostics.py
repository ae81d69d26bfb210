"""Diagnostics over LSP: push and pull, closed files, prompt files, dependents, debouncing.

Numbers are derived by hand from the contract with plain tokenizer counts (expected.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from lsprotocol import types

from . import expected
from .harness import RecordedClient, caps, codes_of, find, running_server, td


def _has(code: str) -> Callable[[list[types.Diagnostic]], bool]:
    return lambda diags: code in codes_of(diags)


async def test_push_diagnostic_has_exact_range_code_severity_message_and_related(
        recorded: RecordedClient, workspace: Path) -> None:
    text = (workspace / "pipelines/long_report.yaml").read_text("utf-8")
    b = expected.write_report(workspace)
    async with running_server(workspace, recorded=recorded) as ed:
        uri = ed.open("pipelines/long_report.yaml")
        diags = await ed.wait_diagnostics(uri, _has("BL050"))
    [d] = [d for d in diags if d.code == "BL050"]
    line, col = find(text, "write_report")
    assert (d.range.start.line, d.range.start.character) == (line, col)
    assert (d.range.end.line, d.range.end.character) == (line, col + len("write_report"))
    assert d.severity == types.DiagnosticSeverity.Error  # config.json: developement -> fail_fast
    assert d.source == "budgetlens"
    assert f"= {b.total} > {expected.WINDOW} (over by {-b.headroom})" in d.message
    related = {(r.location.uri.rsplit("/", 2)[-1], r.location.range.start.line)
               for r in d.related_information or []}
    ctx_line, _ = find(text, "max_context_tokens")
    config_text = (workspace / "config.json").read_text("utf-8")
    window_line, _ = find(config_text, "model_context_window")
    assert ("report.txt", 0) in related  # the prompt file
    assert ("long_report.yaml", ctx_line) in related  # the context setting
    assert ("config.json", window_line) in related  # the window


async def test_closed_files_get_diagnostics_after_initialize(
        recorded: RecordedClient, workspace: Path) -> None:
    async with running_server(workspace, recorded=recorded) as ed:
        pipeline = await ed.wait_diagnostics(ed.uri("pipelines/long_report.yaml"), _has("BL050"))
        prompt = await ed.wait_diagnostics(ed.uri("prompts/report.txt"), _has("BL050"))
    assert [d.code for d in pipeline] == ["BL050"]
    assert len(prompt) == 1


async def test_prompt_file_diagnostic_names_the_broken_pipeline_and_step(
        recorded: RecordedClient, workspace: Path) -> None:
    b = expected.write_report(workspace)
    first_line = (workspace / "prompts/report.txt").read_text("utf-8").split("\n")[0]
    pipeline_text = (workspace / "pipelines/long_report.yaml").read_text("utf-8")
    async with running_server(workspace, recorded=recorded) as ed:
        [d] = await ed.wait_diagnostics(ed.uri("prompts/report.txt"), _has("BL050"))
    assert d.range.start == types.Position(line=0, character=0)
    assert d.range.end == types.Position(line=0, character=len(first_line))
    assert "long_report.yaml › write_report" in d.message
    assert f"({-b.headroom} over)" in d.message
    assert d.severity == types.DiagnosticSeverity.Error
    [rel] = d.related_information or []
    assert rel.location.uri.endswith("/pipelines/long_report.yaml")
    assert rel.location.range.start.line == find(pipeline_text, "write_report")[0]


async def test_pull_clients_pull_open_documents_and_get_closed_ones_pushed(
        workspace: Path) -> None:
    async with running_server(workspace, capabilities=caps(pull=True)) as ed:
        assert ed.server_capabilities is not None
        assert ed.server_capabilities.diagnostic_provider is not None
        uri = ed.uri("pipelines/long_report.yaml")
        await ed.wait_diagnostics(uri, _has("BL050"))  # closed: pushed
        ed.open("pipelines/long_report.yaml")
        await ed.wait_diagnostics(uri, lambda ds: ds == [])  # open: the push is withdrawn
        report = await ed.client.text_document_diagnostic_async(
            types.DocumentDiagnosticParams(text_document=td(uri)))
        assert isinstance(report, types.RelatedFullDocumentDiagnosticReport)
        assert codes_of(list(report.items)) == ["BL050"]
        same = await ed.client.text_document_diagnostic_async(
            types.DocumentDiagnosticParams(text_document=td(uri),
                                           previous_result_id=report.result_id))
        assert isinstance(same, types.RelatedUnchangedDocumentDiagnosticReport)
        # the closed prompt file is not pulled by the client: it is pushed
        await ed.wait_diagnostics(ed.uri("prompts/report.txt"), _has("BL050"))
        # the pipeline fixed in the buffer: the next pull is empty, the prompt push clears
        text = ed.texts[uri].replace("max_context_tokens: 6144", "max_context_tokens: 5000")
        ed.replace_all(uri, text)
        after = await ed.client.text_document_diagnostic_async(
            types.DocumentDiagnosticParams(text_document=td(uri)))
        assert isinstance(after, types.RelatedFullDocumentDiagnosticReport)
        assert list(after.items) == []
        await ed.wait_diagnostics(ed.uri("prompts/report.txt"), lambda ds: ds == [])
        assert ed.client.diagnostic_refresh_count >= 1
        assert not ed.client.diagnostics.get(uri)  # an open document is never pushed to
        ed.close(uri)  # closed again: the disk text (still over budget) is pushed
        await ed.wait_diagnostics(uri, _has("BL050"))


async def test_unsaved_buffer_text_beats_the_disk(
        recorded: RecordedClient, workspace: Path) -> None:
    async with running_server(workspace, recorded=recorded) as ed:
        uri = ed.open("pipelines/long_report.yaml")
        await ed.wait_diagnostics(uri, _has("BL050"))
        text = ed.texts[uri].replace("max_context_tokens: 6144", "max_context_tokens: 5000")
        ed.replace_all(uri, text)
        assert await ed.wait_diagnostics(uri, lambda d: not d) == []
        # the prompt file's diagnostic (computed from the buffer, not the disk) clears too
        await ed.wait_diagnostics(ed.uri("prompts/report.txt"), lambda d: not d)
    assert "6144" in (workspace / "pipelines/long_report.yaml").read_text("utf-8")


async def test_editing_a_prompt_rediagnoses_the_closed_pipeline_that_uses_it(
        recorded: RecordedClient, workspace: Path) -> None:
    prompt = (workspace / "prompts/chat.txt").read_text("utf-8")
    bigger = prompt + "Remember: " + "be concise and kind. " * 400
    # chat.yaml: history 1536 (its settings), context 4096 (base), output 768 (max_tokens),
    # template "{message}" emptied to "".
    fixed = expected.tokens(bigger) + expected.tokens("") + expected.OVERHEAD
    total = fixed + 1536 + 4096 + 768 + expected.MARGIN
    assert total > expected.WINDOW
    async with running_server(workspace, recorded=recorded) as ed:
        chat_pipeline = ed.uri("pipelines/chat.yaml")
        await ed.wait_diagnostics(ed.uri("pipelines/long_report.yaml"), _has("BL050"))
        assert not ed.client.diagnostics.get(chat_pipeline)
        ed_uri = ed.open("prompts/chat.txt", language_id="plaintext")
        ed.replace_all(ed_uri, bigger)
        [d] = await ed.wait_diagnostics(chat_pipeline, _has("BL050"))
        assert f"= {total} > {expected.WINDOW}" in d.message
        [p] = await ed.wait_diagnostics(ed_uri, _has("BL050"))
        assert "chat.yaml › chat" in p.message
        ed.replace_all(ed_uri, prompt)
        await ed.wait_diagnostics(chat_pipeline, lambda d: not d)


async def test_editing_a_base_pipeline_rediagnoses_every_child(
        recorded: RecordedClient, workspace: Path) -> None:
    chat_fixed = (expected.tokens((workspace / "prompts/chat.txt").read_text("utf-8"))
                  + expected.OVERHEAD)
    chat_total = chat_fixed + 1536 + 7000 + 768 + expected.MARGIN
    async with running_server(workspace, recorded=recorded) as ed:
        base = ed.open("pipelines/base.yaml")
        ed.replace_all(base, ed.texts[base].replace("max_context_tokens: 4096",
                                                    "max_context_tokens: 7000"))
        [d] = await ed.wait_diagnostics(ed.uri("pipelines/chat.yaml"), _has("BL050"))
        assert f"= {chat_total} > {expected.WINDOW}" in d.message
        # support.yaml sets its own max_context_tokens (3072): still fine
        await asyncio.sleep(0.3)
        assert not ed.client.diagnostics.get(ed.uri("pipelines/support.yaml"))


async def test_a_burst_of_edits_ends_in_the_diagnostics_of_the_last_text(
        recorded: RecordedClient, workspace: Path) -> None:
    async with running_server(workspace, recorded=recorded) as ed:
        uri = ed.open("pipelines/long_report.yaml")
        await ed.wait_diagnostics(uri, _has("BL050"))
        original = ed.texts[uri]
        for i in range(60):
            value = 5000 + i if i < 59 else 6144 + 500  # the last edit is over budget again
            ed.replace_all(uri, original.replace("max_context_tokens: 6144",
                                                 f"max_context_tokens: {value}"))
        b = expected.write_report(workspace, context=6644)
        diags = await ed.wait_diagnostics(
            uri, lambda ds: any(f"= {b.total} >" in d.message for d in ds))
        assert codes_of(diags) == ["BL050"]


async def test_related_information_points_into_the_parent_for_inherited_values(
        recorded: RecordedClient, workspace: Path) -> None:
    path = workspace / "pipelines/multilingual.yaml"
    path.write_text(path.read_text("utf-8").replace("max_output_tokens: 800",
                                                    "max_output_tokens: 4000"), "utf-8")
    base = (workspace / "pipelines/base.yaml").read_text("utf-8")
    async with running_server(workspace, recorded=recorded) as ed:
        uri = ed.open("pipelines/multilingual.yaml")
        diags = await ed.wait_diagnostics(uri, _has("BL050"))
    [d] = [d for d in diags if d.code == "BL050"]
    related = {(r.location.uri.rsplit("/", 1)[-1], r.location.range.start.line)
               for r in d.related_information or []}
    assert ("base.yaml", find(base, "max_context_tokens")[0]) in related
    assert ("base.yaml", find(base, "budget_safety_margin_tokens")[0]) in related
    assert ("multilingual.txt", 0) in related
