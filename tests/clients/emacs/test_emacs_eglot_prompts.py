"""Emacs 28 + eglot 1.9 (Debian) attach budgetlens to prompt files in their own formats
(issue 33): a Prompty, a GitHub Models and a Dotprompt file in a folder without config.json
each get the server's BL070 (no output limit) in flymake.

The user's config is editor-clients/emacs/budgetlens-eglot.el (it gives ``*.prompty`` and
``*.prompt``, which Emacs has no mode for, ``budgetlens-prompt-mode``); eglot_prompt_flow.el
opens each file and runs M-x eglot like a user.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.clients.editors import emacs_command, prompt_workspace, run_editor
from tests.clients.vim.test_vim_ale_prompts import FILES

HERE = Path(__file__).resolve().parent
MODES = {"support.prompty": "budgetlens-prompt-mode", "bugs.prompt.yml": "yaml-mode",
         "haiku.prompt": "budgetlens-prompt-mode"}


@pytest.mark.nvim
def test_each_prompt_file_gets_bl070_in_flymake(tmp_path: Path) -> None:
    workspace = prompt_workspace(tmp_path, FILES)
    data = run_editor(emacs_command(HERE / "eglot_prompt_flow.el"), tmp_path=tmp_path,
                      workspace=workspace,
                      extra_env={"BUDGETLENS_PROMPT_FILES": ",".join(FILES)})
    assert not data.get("errors"), data["errors"]
    for name, mode in MODES.items():
        seen = data[name]
        assert seen["mode"] == mode, (name, seen)
        assert "BL070" in seen["codes"], (name, seen)
        assert any("no output limit" in t for t in seen["texts"]), (name, seen)
