"""A prompt file's tools in the editor, over real LSP (stdio): the step's lens shows the
tools term beside the fixed part, as it does for a pipeline step (issues 32 and 33).

The expected count is the OpenAI cookbook's rule written out in
``tests.core.contract.test_request_terms`` over tiktoken, not budgetlens's framing code.
"""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types

from tests.core.contract.test_request_terms import cookbook_function, n

from .harness import codes_of, running_server, td

PROMPTY = """\
---
name: weather
model:
  id: gpt-4o
  options:
    maxOutputTokens: 500
tools:
  - name: get_weather
    kind: function
    description: Get the weather in a city.
    parameters:
      - name: city
        kind: string
        description: The city, e.g. Paris.
---
system:
You tell the weather.

user:
{{question}}
"""


async def test_a_prompty_files_tools_show_in_its_lens(tmp_path: Path) -> None:
    (tmp_path / "weather.prompty").write_text(PROMPTY, "utf-8")
    tools = cookbook_function("get_weather", "Get the weather in a city.", {
        "city": {"type": "string", "description": "The city, e.g. Paris."}}) + 12
    messages = (3 + n("system") + n("You tell the weather.")) + (3 + n("user") + n("")) + 3
    async with running_server(tmp_path) as ed:
        uri = ed.open("weather.prompty", PROMPTY, language_id="plaintext")
        await ed.wait_diagnostics(uri, lambda ds: "BL079" in codes_of(ds))
        lenses = await ed.client.text_document_code_lens_async(
            types.CodeLensParams(text_document=td(uri)))
        titles = [lens.command.title for lens in lenses or [] if lens.command]
        assert any(f"fixed {messages + tools} (tools {tools}) + history 0" in t
                   for t in titles), titles
