"""Prompt files in their own formats in the editor, over real LSP (stdio), in a folder with
no config.json: a GitHub Models, a Prompty and a Dotprompt file each get the format
diagnostic for an absent output limit (BL070), the per-variable headroom (BL079), the
step's lens and hover, and the quick-fix that writes the limit in the format's own key;
once applied, BL070 is gone.

The written value is the model's output ceiling as OpenAI publishes it (gpt-4o-mini
16,384), the number the check counts while the key is absent.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types

from tests.workspaces.prompt_files import DOTPROMPT_UNSET as DOTPROMPT
from tests.workspaces.prompt_files import GITHUB_UNSET as GITHUB

from .harness import Editor, codes_of, running_server, td

PROMPTY = """\
---
name: Support answer
model:
  api: chat
  configuration:
    type: openai
    model: gpt-4o-mini
---
system:
You answer questions about our product.

user:
{{question}}
"""
# file, text, the variable, the text after the quick-fix
CASES = {
    "github": ("bugs.prompt.yml", GITHUB, "input",
               GITHUB + "modelParameters:\n  maxCompletionTokens: 16384\n"),
    "prompty": ("support.prompty", PROMPTY, "question",
                PROMPTY.replace("model:\n", "model:\n  parameters:\n    max_tokens: 16384\n")),
    "dotprompt": ("haiku.prompt", DOTPROMPT, "topic",
                  DOTPROMPT.replace("    topic: string\n---",
                                    "    topic: string\nconfig:\n  maxOutputTokens: 16384\n"
                                    "---")),
}


async def _open(ed: Editor, name: str, text: str) -> tuple[str, list[types.Diagnostic]]:
    uri = ed.open(name, text, language_id="plaintext")
    diags = await ed.wait_diagnostics(uri, lambda ds: "BL070" in codes_of(ds))
    return uri, diags


@pytest.mark.parametrize("fmt", sorted(CASES))
async def test_prompt_file_diagnostic_lens_hover_and_quick_fix(tmp_path: Path,
                                                                fmt: str) -> None:
    name, text, variable, fixed = CASES[fmt]
    (tmp_path / name).write_text(text, "utf-8")
    async with running_server(tmp_path) as ed:
        uri, diags = await _open(ed, name, text)
        [headroom] = [d for d in diags if d.code == "BL079"]
        assert headroom.message.startswith("{{" + variable + "}}: up to ")
        assert "on gpt-4o-mini with 16,384 output" in headroom.message

        lenses = await ed.client.text_document_code_lens_async(
            types.CodeLensParams(text_document=td(uri)))
        titles = [lens.command.title for lens in lenses or [] if lens.command]
        assert any("16384" in t or "16,384" in t for t in titles), titles
        assert headroom.message in titles  # the per-variable lens

        [bl070] = [d for d in diags if d.code == "BL070"]
        hover = await ed.client.text_document_hover_async(types.HoverParams(
            text_document=td(uri), position=bl070.range.start))
        assert hover is not None and isinstance(hover.contents, types.MarkupContent)
        assert "16,384" in hover.contents.value  # the output the check counts

        actions = await ed.client.text_document_code_action_async(types.CodeActionParams(
            text_document=td(uri), range=bl070.range,
            context=types.CodeActionContext(diagnostics=[bl070])))
        [fix] = [a for a in actions or [] if isinstance(a, types.CodeAction)
                 and a.kind == types.CodeActionKind.QuickFix]
        assert fix.edit is not None and "unset → 16384" in fix.title
        ed.apply(fix.edit)
        assert ed.texts[uri] == fixed
        await ed.wait_diagnostics(uri, lambda ds: "BL070" not in codes_of(ds))
