"""Code lenses: step sums, the tightest step above settings, inherited steps above extends,
prompt-file token counts; clicking one opens the step (``window/showDocument``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from lsprotocol import types

from . import expected
from .harness import Editor, RecordedClient, copy_examples, find, running_server, td

# Lenses only read: one server for the module (the test that edits has its own).
pytestmark = pytest.mark.asyncio(loop_scope="module")
UNUSED_PROMPT = "Nobody uses me. 誰も使わない 🙈\n"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def ed(
        recorded: RecordedClient,
        tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Editor]:
    root = copy_examples(tmp_path_factory.mktemp("lenses"))
    (root / "prompts/unused.txt").write_text(UNUSED_PROMPT, "utf-8")
    async with running_server(root, recorded=recorded) as editor:
        yield editor


async def _lenses(ed: Editor, uri: str) -> dict[int, list[types.CodeLens]]:
    result = await ed.client.text_document_code_lens_async(types.CodeLensParams(
        text_document=td(uri)))
    by_line: dict[int, list[types.CodeLens]] = {}
    for lens in result or []:
        by_line.setdefault(lens.range.start.line, []).append(lens)
    return by_line


def _title(lens: types.CodeLens) -> str:
    assert lens.command is not None
    return lens.command.title


async def test_step_lenses_show_the_budget_sum(ed: Editor) -> None:
    workspace = ed.root
    text = (workspace / "pipelines/long_report.yaml").read_text("utf-8")
    uri = ed.open("pipelines/long_report.yaml")
    lenses = await _lenses(ed, uri)
    outline_line, _ = find(text, "- id: outline")
    write_line, _ = find(text, "- id: write_report")
    [outline] = lenses[outline_line]
    [write] = lenses[write_line]
    assert _title(outline) == expected.outline(workspace).lens()
    assert _title(write) == expected.write_report(workspace).lens()
    assert _title(write).endswith(f"({-expected.write_report(workspace).headroom} over)")
    assert write.command is not None and write.command.command == "budgetlens.showBudgetReport"


async def test_settings_lens_shows_the_tightest_step_and_opens_it(
        ed: Editor, recorded: RecordedClient) -> None:
    workspace = ed.root
    text = (workspace / "pipelines/long_report.yaml").read_text("utf-8")
    b = expected.write_report(workspace)
    uri = ed.open("pipelines/long_report.yaml")
    lenses = await _lenses(ed, uri)
    [lens] = lenses[find(text, "settings:")[0]]
    assert _title(lens) == f"tightest step: write_report ({-b.headroom} over)"
    assert lens.command is not None
    result = await ed.client.workspace_execute_command_async(types.ExecuteCommandParams(
        command=lens.command.command, arguments=lens.command.arguments))
    window = recorded.capabilities.window
    if not (window and window.show_document and window.show_document.support):
        # per client: Neovim 0.7.2 cannot show a document; the answer says so and where
        assert result["shown"] is False
        assert result["uri"] == uri
        assert result["range"]["start"]["line"] == find(text, "write_report")[0]
        return
    assert result["shown"] is True
    shown = ed.client.shown_documents[-1]
    assert shown.uri == uri
    assert shown.selection is not None
    assert shown.selection.start.line == find(text, "write_report")[0]


async def test_base_settings_lens_covers_every_pipeline_reading_them(ed: Editor) -> None:
    workspace = ed.root
    # base.yaml's settings feed chat, multilingual, support (answer) and itself; the tightest
    # of all is long_report's write_report, which also reads base's history and margin.
    b = expected.write_report(workspace)
    text = (workspace / "pipelines/base.yaml").read_text("utf-8")
    lenses = await _lenses(ed, ed.open("pipelines/base.yaml"))
    [lens] = lenses[find(text, "settings:")[0]]
    assert _title(lens) == f"tightest step: long_report.yaml › write_report ({-b.headroom} over)"


async def test_extends_lens_summarises_inherited_steps(ed: Editor) -> None:
    workspace = ed.root
    answer = expected.answer(workspace, context=3072)
    lenses = await _lenses(ed, ed.open("pipelines/support.yaml"))
    text = (workspace / "pipelines/support.yaml").read_text("utf-8")
    [lens] = lenses[find(text, "extends:")[0]]
    assert _title(lens) == f"2 inherited steps · tightest answer ({answer.headroom:,} free)"


async def test_prompt_lens_counts_tokens_and_users(ed: Editor) -> None:
    workspace = ed.root
    report_tokens = expected.tokens((workspace / "prompts/report.txt").read_text("utf-8"))
    answer_tokens = expected.tokens((workspace / "prompts/answer.txt").read_text("utf-8"))
    unused_tokens = expected.tokens(UNUSED_PROMPT)
    [[unused]] = (await _lenses(ed, ed.open("prompts/unused.txt", None, "plaintext"))
                  ).values()
    assert _title(unused) == f"{unused_tokens} tokens (cl100k_base) · used by 0 steps in 0" \
        " pipelines"
    [[report]] = (await _lenses(ed, ed.open("prompts/report.txt", None, "plaintext"))
                  ).values()
    [[answer]] = (await _lenses(ed, ed.open("prompts/answer.txt", None, "plaintext"))
                  ).values()
    assert _title(report) == f"{report_tokens} tokens (cl100k_base) · used by 2 steps in 1" \
        " pipeline"
    # answer.txt: base.yaml's step 'answer', run by base.yaml and by support.yaml
    assert _title(answer) == f"{answer_tokens} tokens (cl100k_base) · used by 2 steps in 2" \
        " pipelines"
    assert report.command is not None and report.command.command == "budgetlens.showLocation"


async def test_lenses_follow_unsaved_edits(
        recorded: RecordedClient, workspace: Path) -> None:
    text = (workspace / "pipelines/long_report.yaml").read_text("utf-8")
    async with running_server(workspace, recorded=recorded) as own:
        uri = own.open("pipelines/long_report.yaml")
        own.replace_all(uri, text.replace("max_output_tokens: 2048", "max_output_tokens: 1000"))
        lenses = await _lenses(own, uri)
    [write] = lenses[find(text, "- id: write_report")[0]]
    assert _title(write) == expected.write_report(workspace, output=1000).lens()
    assert _title(write).endswith(f"({expected.write_report(workspace, output=1000).headroom:,}"
                                  " free)")
