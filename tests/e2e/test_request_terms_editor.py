"""A mixed-model pipeline in the editor (issue 32): each step's lens and hover show its own
window, its serving limit, its tools term and its reasoning term.

Step ``route`` runs on gpt-5 (config.json's model: window 400,000; reasoning beside the
output), step ``answer`` on claude-sonnet-4-0 (its own ``model``: window 200,000; thinking
inside the output limit, tools from a file). Counts are computed here: the OpenAI cookbook's
tools rule written out in tests/core/contract/test_request_terms.py, Claude's compact JSON
with the claude_approx tokenizer plus Anthropic's 530-token tool-use prompt. Step ``local``
runs llama3.1:8b in its own server's ``num_ctx`` 8,192 (below the model's 131,072) without
the pipeline's context: 0 + 0 + 0 + 300 + 100 = 400.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from lsprotocol import types

from budgetlens.tokens.core import get_tokenizer
from tests.core.contract.test_request_terms import SEARCH, WEATHER, cookbook_tools

from .harness import Editor, RecordedClient, find, running_server, td, units

pytestmark = pytest.mark.asyncio(loop_scope="module")

PIPELINE = """settings:
  max_context_tokens: 20000
  budget_safety_margin_tokens: 100
steps:
  - id: route
    type: call_model
    max_output_tokens: 500
    reasoning: 4000
    tools:
      - WEATHER
  - id: answer
    type: call_model
    model: claude-sonnet-4-0
    max_output_tokens: 8000
    reasoning: 2048
    tools: {file: ../tools.json}
  - id: local
    type: call_model
    model: llama3.1:8b
    serving: {num_ctx: 8192}
    use_context: false
    max_output_tokens: 300
""".replace("WEATHER", json.dumps(WEATHER))


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def ed(recorded: RecordedClient,
             tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Editor]:
    root = tmp_path_factory.mktemp("terms") / "workspace"
    (root / "pipelines").mkdir(parents=True)
    (root / "config.json").write_text(json.dumps({"model": "gpt-5",
                                                  "format_overhead_tokens": 0}), "utf-8")
    (root / "tools.json").write_text(json.dumps([SEARCH]), "utf-8")
    (root / "pipelines" / "mixed.yaml").write_text(PIPELINE, "utf-8")
    async with running_server(root, recorded=recorded) as editor:
        yield editor


def _route_tools() -> int:
    return cookbook_tools([WEATHER])  # gpt-5 counted by the cookbook's gpt-4o rule (≈)


def _answer_tools() -> int:
    compact = json.dumps([SEARCH][0], ensure_ascii=False, separators=(",", ":"))
    return get_tokenizer("claude_approx").count(compact) + 530


async def test_each_step_lens_shows_its_window_tools_and_reasoning(ed: Editor) -> None:
    uri = ed.open("pipelines/mixed.yaml")
    result = await ed.client.text_document_code_lens_async(types.CodeLensParams(
        text_document=td(uri)))
    titles = {lens.range.start.line: lens.command.title for lens in result or []
              if lens.command is not None}
    route, answer = _route_tools(), _answer_tools()
    route_total = route + 20000 + 500 + 4000 + 100  # reasoning beside the output
    answer_total = answer + 20000 + 8000 + 100  # thinking inside max_tokens
    route_line, _ = find(PIPELINE, "- id: route")
    answer_line, _ = find(PIPELINE, "- id: answer")
    assert titles[route_line] == (
        f"fixed {route} (tools ≈{route}) + history 0 + context 20000 + output 500 + reasoning"
        f" 4000 + margin 100 = {route_total} / 400000 ({400000 - route_total:,} free)")
    assert titles[answer_line] == (
        f"≈ fixed {answer} (tools ≈{answer}) + history 0 + context 20000 + output 8000"
        f" (reasoning 2048 inside) + margin 100 = {answer_total} / 200000"
        f" ({200000 - answer_total:,} free)")


async def test_the_llama_step_s_lens_shows_its_own_serving_window(ed: Editor) -> None:
    uri = ed.open("pipelines/mixed.yaml")
    result = await ed.client.text_document_code_lens_async(types.CodeLensParams(
        text_document=td(uri)))
    local_line, _ = find(PIPELINE, "- id: local")
    [title] = [lens.command.title for lens in result or []
               if lens.range.start.line == local_line and lens.command is not None]
    assert title.endswith("+ history 0 + context 0 + output 300 + margin 100 = 400 / 8192"
                          " (7,792 free)"), title


async def _hover(ed: Editor, needle: str, nth: int) -> str:
    uri = ed.open("pipelines/mixed.yaml")
    line, col = find(PIPELINE, needle, nth)
    line_text = PIPELINE.split("\n")[line]
    result = await ed.client.text_document_hover_async(types.HoverParams(
        text_document=td(uri),
        position=types.Position(line=line, character=units(line_text[:col + 1], ed.encoding))))
    assert result is not None and isinstance(result.contents, types.MarkupContent)
    return result.contents.value


async def test_hovers_show_each_step_s_own_window_and_terms(ed: Editor) -> None:
    route_tools = await _hover(ed, "tools:", 0)
    assert f"**{_route_tools():,} tokens** in the fixed part" in route_tools
    assert "Window: 400,000" in route_tools and "gpt-5" in route_tools
    answer_tools = await _hover(ed, "tools:", 1)
    assert f"**{_answer_tools():,} tokens** in the fixed part" in answer_tools
    assert "claude_approx" in answer_tools and "Window: 200,000" in answer_tools
    route_reasoning = await _hover(ed, "reasoning:", 0)
    assert "**4,000 tokens**, added to the total beside the output" in route_reasoning
    assert "max_completion_tokens" in route_reasoning
    answer_reasoning = await _hover(ed, "reasoning:", 1)
    assert "**2,048 tokens**, inside the output limit" in answer_reasoning
    assert "thinking.budget_tokens" in answer_reasoning
    assert "Window: 200,000" in answer_reasoning
    serving = (await _hover(ed, "serving:", 0)).splitlines()
    assert serving[0] == "**serving** (this step's own terms)"
    assert any(line.startswith("- window 8,192: pipeline steps[2].serving.num_ctx (below"
                               " 131072 from model") for line in serving), serving


async def test_an_unsaved_edit_of_the_tools_file_moves_the_lens(ed: Editor) -> None:
    # the tools file is an input of the pipeline's report: its buffer is what counts
    tools_uri = ed.open("tools.json", language_id="json")
    ed.replace_all(tools_uri, json.dumps([SEARCH, WEATHER]))
    uri = ed.open("pipelines/mixed.yaml")
    result = await ed.client.text_document_code_lens_async(types.CodeLensParams(
        text_document=td(uri)))
    answer_line, _ = find(PIPELINE, "- id: answer")
    [title] = [lens.command.title for lens in result or []
               if lens.range.start.line == answer_line and lens.command is not None]
    claude = get_tokenizer("claude_approx")
    both = sum(claude.count(json.dumps(t, ensure_ascii=False, separators=(",", ":")))
               for t in (SEARCH, WEATHER)) + 530
    assert title.startswith(f"≈ fixed {both} (tools ≈{both}) + ")
