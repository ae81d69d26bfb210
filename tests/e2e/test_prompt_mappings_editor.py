"""An agent YAML file read through config.json's ``prompt_mappings``, over real LSP
(stdio): the editor shows its contract diagnostic as ``budgetlens check`` does."""

from __future__ import annotations

import json
from pathlib import Path

from .harness import codes_of, running_server

CONFIG = {"prompt_mappings": [{"glob": "agents/*.yaml", "model": "model.name",
                               "output": "model.max_tokens",
                               "system_file": "instructions.file"}]}
# gpt-4's window is 8,192: 8,100 output tokens, the instructions and the margin are over it
AGENT = """\
model:
  name: gpt-4
  max_tokens: 8100
instructions:
  file: a.md
"""


async def test_a_mapped_agent_file_over_the_window_shows_bl050(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps(CONFIG), "utf-8")
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "a.yaml").write_text(AGENT, "utf-8")
    (tmp_path / "agents" / "a.md").write_text("You triage support tickets.\n", "utf-8")
    async with running_server(tmp_path) as ed:
        uri = ed.open("agents/a.yaml", AGENT, language_id="yaml")
        diags = await ed.wait_diagnostics(uri, lambda ds: "BL050" in codes_of(ds))
        [bl050] = [d for d in diags if d.code == "BL050"]
        assert "over by" in bl050.message
        assert bl050.range.start.line == 1  # "  name: gpt-4", the step's model
        # typed in the buffer, not saved: the step fits and BL050 goes
        ed.replace_all(uri, AGENT.replace("8100", "500"))
        await ed.wait_diagnostics(uri, lambda ds: "BL050" not in codes_of(ds))
