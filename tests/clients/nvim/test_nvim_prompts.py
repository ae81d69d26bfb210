"""The Neovim plugin attaches to prompt files in their own formats (GitHub Models, Prompty,
Dotprompt) in a folder without config.json, in real headless Neovim: each file gets its
BL070 (no output limit) from the server. tests/clients/nvim/prompt_flow.lua opens them."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.clients.editors import prompt_workspace

from .nvim_harness import HERE, run_nvim_script

FILES = {
    "bugs.prompt.yml": "model: openai/gpt-4o-mini\nmessages:\n  - role: user\n"
                       "    content: 'Summarize: {{input}}'\n",
    "support.prompty": "---\nname: Support\nmodel:\n  api: chat\n  configuration:\n"
                       "    type: openai\n    model: gpt-4o-mini\n---\nsystem:\nBe brief.\n",
    "haiku.prompt": "---\nmodel: openai/gpt-4o-mini\n---\nWrite a haiku about {{topic}}.\n",
}


@pytest.mark.nvim
def test_each_prompt_file_gets_its_diagnostic(tmp_path: Path) -> None:
    workspace = prompt_workspace(tmp_path, FILES)
    data = run_nvim_script(
        HERE / "prompt_flow.lua", workspace=workspace, tmp_path=tmp_path,
        init=str(HERE / "plugin_init.lua"),
        extra_env={"BUDGETLENS_NVIM_PROMPT_FILES": ",".join(FILES)})
    shown = data["prompt_files"]
    assert set(shown) == set(FILES)
    for name in FILES:
        assert "BL070" in shown[name]["codes"], (name, shown[name])
