"""Hover on budget keys: the contract math of the affected steps, inherited values and
where they come from, a prompt's token count and first lines."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from lsprotocol import types

from . import expected
from .harness import Editor, RecordedClient, copy_examples, find, running_server, td, units

# Hover only reads: one server for the whole module keeps the suite fast.
pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def ed(
        recorded: RecordedClient,
        tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Editor]:
    root = copy_examples(tmp_path_factory.mktemp("hover"))
    async with running_server(root, recorded=recorded) as editor:
        yield editor


async def _hover(ed: Editor, rel: str, needle: str, nth: int = 0) -> str | None:
    uri = ed.open(rel)
    line, col = find(ed.texts[uri], needle, nth)
    line_text = ed.texts[uri].split("\n")[line]
    result = await ed.client.text_document_hover_async(types.HoverParams(
        text_document=td(uri),
        position=types.Position(line=line, character=units(line_text[:col + 1], ed.encoding))))
    if result is None:
        return None
    assert isinstance(result.contents, types.MarkupContent)
    assert result.contents.kind == types.MarkupKind.Markdown
    return result.contents.value


async def test_hover_on_a_base_setting_lists_every_step_it_affects(ed: Editor) -> None:
    workspace = ed.root
    chat_fixed = expected.tokens((workspace / "prompts/chat.txt").read_text("utf-8")) \
        + expected.OVERHEAD
    chat = expected.Budget(fixed=chat_fixed, history=1536, context=4096, output=768)
    ja = expected.answer_ja(workspace)
    answer = expected.answer(workspace, context=4096)
    text = await _hover(ed, "pipelines/base.yaml", "max_context_tokens")
    assert text is not None
    assert "**max_context_tokens** = `4096`" in text
    # long_report.yaml and support.yaml set their own value: not listed
    assert "Used by 4 steps in 3 pipelines" in text
    assert f"`chat.yaml › chat`: {chat.lens()}" in text
    assert f"`multilingual.yaml › answer_ja`: {ja.lens()}" in text
    assert f"`base.yaml › answer`: {answer.lens()}" in text
    assert "long_report" not in text and "support" not in text


async def test_hover_on_an_output_limit_shows_the_step_sum_and_the_ceiling(
        ed: Editor) -> None:
    workspace = ed.root
    b = expected.write_report(workspace)
    text = await _hover(ed, "pipelines/long_report.yaml", "max_output_tokens", nth=1)
    assert text is not None
    assert "**max_output_tokens** = `2048`" in text
    assert f"❌ `long_report.yaml › write_report`: {b.lens()}" in text
    assert "Model output ceiling: 4,096" in text


async def test_hover_on_prompt_key_shows_token_count_and_first_lines(ed: Editor) -> None:
    workspace = ed.root
    prompt = (workspace / "prompts/multilingual.txt").read_text("utf-8")
    text = await _hover(ed, "pipelines/multilingual.yaml", "prompt_key")
    assert text is not None
    assert f"**{expected.tokens(prompt)} tokens** (cl100k_base)" in text
    assert prompt.split("\n")[0] in text  # the first line, CJK and emoji included


async def test_hover_on_extends_shows_the_chain_and_where_values_come_from(
        ed: Editor) -> None:
    workspace = ed.root
    base = (workspace / "pipelines/base.yaml").read_text("utf-8")
    text = await _hover(ed, "pipelines/chat.yaml", "extends")
    assert text is not None
    assert "Chain: `chat.yaml` → `base.yaml`" in text
    ctx_line = find(base, "max_context_tokens")[0] + 1
    margin_line = find(base, "budget_safety_margin_tokens")[0] + 1
    assert f"`max_context_tokens` = 4096 from base.yaml:{ctx_line}" in text
    assert f"`budget_safety_margin_tokens` = 128 from base.yaml:{margin_line}" in text
    assert "max_history_tokens` = 1536" not in text  # chat.yaml sets it itself


async def test_hover_elsewhere_is_empty(ed: Editor) -> None:
    assert await _hover(ed, "pipelines/base.yaml", "retrieval_top_k") is None
