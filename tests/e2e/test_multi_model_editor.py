"""A multi-model pipeline in the editor, over stdio (issue 32): hover on a step's own terms
says which level set each one. By hand (empty prompt, format overhead 10, margin 90): the
Llama router runs in its own num_ctx 8,192 with no context, 10 + 0 + 300 + 90 = 400; the
answer step has its own context 9,000 behind GitHub Models' 8,000-token cap for gpt-4o:
10 + 9,000 + 2,000 + 90 = 11,100 in 128,000, 9,100 input tokens sent."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from lsprotocol import types

from tests.workspaces.models import model_workspace

from .harness import Editor, caps, find, running_server, td

pytestmark = pytest.mark.asyncio(loop_scope="module")

PIPELINE = """\
settings:
  max_context_tokens: 7000
  budget_safety_margin_tokens: 90
steps:
  - id: router
    type: call_model
    model: llama3.1:8b
    prompt_key: sys
    serving: {num_ctx: 8192}
    use_context: false
    max_output_tokens: 300
  - id: answer
    type: call_model
    prompt_key: sys
    max_context_tokens: 9000
    max_output_tokens: 2000
"""
CONFIG = {"model": "gpt-4o", "format_overhead_tokens": 10, "gateway": "github-models",
          "serving": {"num_ctx": 4096}}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def ed(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Editor]:
    root = model_workspace(tmp_path_factory.mktemp("multi"), CONFIG, PIPELINE)
    async with running_server(root, capabilities=caps()) as editor:
        yield editor


async def _hover(ed: Editor, needle: str) -> list[str]:
    uri = ed.open("pipelines/p.yaml")
    line, col = find(ed.texts[uri], needle)
    result = await ed.client.text_document_hover_async(types.HoverParams(
        text_document=td(uri), position=types.Position(line=line, character=col + 1)))
    assert result is not None and isinstance(result.contents, types.MarkupContent)
    return result.contents.value.splitlines()


async def test_hover_on_a_steps_serving_names_the_step_level(ed: Editor) -> None:
    lines = await _hover(ed, "serving:")
    assert lines[0] == "**serving** (this step's own terms)"
    # the step's own 8,192 wins over config.json's workspace-wide 4,096
    assert "- window 8,192: pipeline steps[0].serving.num_ctx (below 131072 from model" \
        " llama-3.1-8b-instruct (registry" in "\n".join(lines)
    assert "- context 0: use_context: false" in lines
    assert lines[-1] == ("- ✅ `p.yaml › router`: fixed 10 + history 0 + context 0 + output"
                         " 300 + margin 90 = 400 / 8192 (7,792 free)")


async def test_hover_on_a_steps_context_shows_its_gateway_cap(ed: Editor) -> None:
    lines = await _hover(ed, "max_context_tokens: 9000")
    assert "- context 9,000: steps[1].max_context_tokens" in lines
    # the answer step (no serving of its own) gets config.json's workspace-wide 4,096
    assert any(line.startswith("- window 4,096: config.json serving.num_ctx") for line in lines)
    assert ("- gateway cap 8,000 input tokens (9,100 sent): gateway github-models"
            " (https://github.com/actions/ai-inference/issues/128, recorded 2026-12-06)"
            ) in lines
