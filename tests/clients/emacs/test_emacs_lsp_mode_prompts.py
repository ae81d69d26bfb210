"""Emacs 28 + lsp-mode 8.0 (Debian) attach budgetlens to prompt files in their own formats
(issue 33): a Prompty, a GitHub Models and a Dotprompt file in a folder without config.json
each get the server's BL070 (no output limit).

The user's config is editor-clients/emacs/budgetlens-lsp-mode.el (it activates on the file
names, whatever mode the buffer is in: Emacs has none for ``*.prompty`` and ``*.prompt``);
lsp_mode_prompt_flow.el opens each file and runs M-x lsp like a user.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.clients.editors import emacs_command, prompt_workspace, run_editor
from tests.clients.vim.test_vim_ale_prompts import FILES

HERE = Path(__file__).resolve().parent


@pytest.mark.nvim
def test_each_prompt_file_gets_bl070_from_lsp_mode(tmp_path: Path) -> None:
    workspace = prompt_workspace(tmp_path, FILES)
    data = run_editor(emacs_command(HERE / "lsp_mode_prompt_flow.el"), tmp_path=tmp_path,
                      workspace=workspace,
                      extra_env={"BUDGETLENS_PROMPT_FILES": ",".join(FILES)})
    assert not data.get("errors"), data["errors"]
    for name in FILES:
        seen = data[name]
        assert "budgetlens" in seen["servers"], (name, seen)
        assert "BL070" in seen["codes"], (name, seen)
    assert data["bugs.prompt.yml"]["mode"] == "yaml-mode"
