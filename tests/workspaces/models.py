"""The workspace of the model tests, on the command line and in the editor alike.

It holds config.json, pipelines/p.yaml and an empty prompts/sys.txt. With the prompt empty, a
step's fixed part is the format overhead alone, so every sum is done by hand in the test.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.core.contract.helpers import make_workspace

#: One step, by hand with format overhead 10: 10 + context 1000 + output 500 + margin 90 = 1,600.
ANSWER_PIPELINE = """\
settings:
  max_context_tokens: 1000
  budget_safety_margin_tokens: 90
steps:
  - id: answer
    type: call_model
    prompt_key: sys
    max_output_tokens: 500
"""


def model_workspace(root: Path, config: dict[str, Any] | str, pipeline: str) -> Path:
    """Write config.json, pipelines/p.yaml and an empty prompts/sys.txt under ``root``."""
    return make_workspace(root, config=config, pipelines={"p.yaml": pipeline},
                          prompts={"sys.txt": ""})


def enter(root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run the CLI from ``root``, with no limits policy or development flag of the machine."""
    monkeypatch.chdir(root)
    monkeypatch.delenv("PIPELINE_LIMITS_POLICY", raising=False)
    monkeypatch.delenv("APP_DEVELOPMENT", raising=False)
    return root
