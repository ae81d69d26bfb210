"""Vim 9 + ALE (Debian) attach budgetlens to prompt files in their own formats (issue 33):
a Prompty, a GitHub Models and a Dotprompt file in a folder without config.json each get
the server's BL070 (no output limit) in ALE's location list.

The user's config is tests/clients/vim/vimrc (``editor-clients/vim/budgetlens.vim`` gives
``*.prompty`` and ``*.prompt``, which Vim leaves without a filetype, the filetypes
``prompty`` and ``dotprompt``); prompt_flow.vim opens each file like a user.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.clients.editors import prompt_workspace, run_editor, vim_command

HERE = Path(__file__).resolve().parent
FILES = {
    "support.prompty": "---\nname: Support\nmodel:\n  api: chat\n  configuration:\n"
                       "    type: openai\n    model: gpt-4o-mini\n---\nsystem:\nBe brief.\n\n"
                       "user:\n{{question}}\n",
    "bugs.prompt.yml": "model: openai/gpt-4o-mini\nmessages:\n  - role: user\n"
                       "    content: 'Summarize: {{input}}'\n",
    "haiku.prompt": "---\nmodel: openai/gpt-4o-mini\n---\nWrite a haiku about {{topic}}.\n",
}
FILETYPES = {"support.prompty": "prompty", "bugs.prompt.yml": "yaml",
             "haiku.prompt": "dotprompt"}


@pytest.mark.nvim
def test_each_prompt_file_gets_bl070_from_ale(tmp_path: Path) -> None:
    workspace = prompt_workspace(tmp_path, FILES)
    data = run_editor(vim_command(HERE, "prompt_flow.vim"), tmp_path=tmp_path,
                      workspace=workspace,
                      extra_env={"BUDGETLENS_PROMPT_FILES": ",".join(FILES)})
    assert data["errors"] == {}, data["errors"]
    shown = data["prompt_files"]
    assert set(shown) == set(FILES)
    for name, filetype in FILETYPES.items():
        seen = shown[name]
        assert seen["filetype"] == filetype, (name, seen)
        assert seen["root"] == str(workspace), (name, seen)  # no config.json: its folder
        [bl070] = [d for d in seen["diagnostics"] if d["code"] == "BL070"]
        assert bl070["linter"] == "budgetlens" and bl070["type"] == "W", (name, bl070)
        assert "no output limit" in bl070["text"], (name, bl070)
