"""Models in the editor, over stdio: the target lens above each step and the per-target
hover, hover on a model name, completion of model names. The workspace's sums are by hand:
empty prompt, format overhead 10, context 7000, margin 90, so ``small`` totals 7,200 and
``big`` 16,100 (gpt-4's window is 8,192: 7,908 over)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from lsprotocol import types

from budgetlens.models import load_registry
from tests.workspaces.models import model_workspace

from .harness import Editor, caps, find, running_server, td

pytestmark = pytest.mark.asyncio(loop_scope="module")

PIPELINE = """\
settings:
  max_context_tokens: 7000
  budget_safety_margin_tokens: 90
steps:
  - id: small
    type: call_model
    model: gpt-4o-mini
    prompt_key: sys
    max_output_tokens: 100
  - id: big
    type: call_model
    prompt_key: sys
    max_output_tokens: 9000
"""
CONFIG = {"model": "gpt-4o", "format_overhead_tokens": 10,
          "targets": ["gpt-4o", "gpt-4", "claude-sonnet-4-5"]}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def ed(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Editor]:
    root = model_workspace(tmp_path_factory.mktemp("models"), CONFIG, PIPELINE)
    async with running_server(root, capabilities=caps()) as editor:
        yield editor


async def test_a_lens_per_step_says_which_targets_it_fits(ed: Editor) -> None:
    uri = ed.open("pipelines/p.yaml")
    result = await ed.client.text_document_code_lens_async(types.CodeLensParams(
        text_document=td(uri)))
    titles = {(lens.range.start.line, lens.command.title) for lens in result or []
              if lens.command is not None and lens.command.title.startswith("fits:")}
    assert titles == {
        (4, "fits: gpt-4o ✓ · gpt-4 ✓ · claude-sonnet-4-5 ≈✓"),
        (9, "fits: gpt-4o ✓ · gpt-4 ✗ (7,908 over) · claude-sonnet-4-5 ≈✓"),
    }


async def _hover(ed: Editor, rel: str, needle: str, language_id: str = "yaml") -> str:
    uri = ed.open(rel, language_id=language_id)
    line, col = find(ed.texts[uri], needle)
    result = await ed.client.text_document_hover_async(types.HoverParams(
        text_document=td(uri), position=types.Position(line=line, character=col + 1)))
    assert result is not None and isinstance(result.contents, types.MarkupContent)
    return result.contents.value


async def test_hover_on_a_step_shows_the_sums_per_target(ed: Editor) -> None:
    text = await _hover(ed, "pipelines/p.yaml", "big")
    assert text.splitlines()[-3:] == [
        "| gpt-4o ✓ | 128,000 | 16,100 | 111,900 | 9,000 / 16,384 | o200k_base |",
        "| gpt-4 ✗ | 8,192 | 16,100 | -7,908 | 9,000 / 8,192 | cl100k_base |",
        "| claude-sonnet-4-5 ✓ | 200,000 | ≈16,100 | ≈183,900 | 9,000 / 64,000 |"
        " claude_approx (approximate) |"]


async def test_hover_on_a_model_name_shows_its_registry_entry(ed: Editor) -> None:
    text = await _hover(ed, "pipelines/p.yaml", "gpt-4o-mini")
    date = load_registry().date
    assert text.startswith("**gpt-4o-mini** (OpenAI)\n- window: 128,000 tokens\n")
    assert "- max output: 16,384 tokens" in text
    assert "- tokenizer: o200k_base, counts exact" in text
    assert f"(registry {date})" in text
    text = await _hover(ed, "config.json", "claude-sonnet-4-5", "json")
    assert "- tokenizer: claude, counts approximate (≈, counted with o200k_base)" in text


async def test_completion_offers_registry_names_on_a_model_value(ed: Editor) -> None:
    uri = ed.open("pipelines/p.yaml")
    line, col = find(ed.texts[uri], "gpt-4o-mini")
    result = await ed.client.text_document_completion_async(types.CompletionParams(
        text_document=td(uri), position=types.Position(line=line, character=col + 5)))
    assert isinstance(result, types.CompletionList)
    by_label = {item.label: item for item in result.items}
    assert {"gpt-4o", "claude-sonnet-4-5", "llama-3.1-8b-instruct"} <= set(by_label)
    assert by_label["llama-3.1-8b-instruct"].detail == (
        "Meta · window 131,072 · output 16,384 · llama3")
    assert by_label["claude-sonnet-4-5"].detail == (
        "Anthropic · window 200,000 · output 64,000 · claude · ≈ approximate counts")
    item = by_label["llama-3.1-8b-instruct"]
    assert isinstance(item.text_edit, types.TextEdit)
    # the edit replaces the typed "gpt-4" (5 characters before the cursor)
    assert item.text_edit.range.start == types.Position(line=line, character=col)
    none = await ed.client.text_document_completion_async(types.CompletionParams(
        text_document=td(uri), position=types.Position(line=line - 1, character=10)))
    assert none is None
