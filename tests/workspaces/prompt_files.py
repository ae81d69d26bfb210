"""What the tests of prompt files share: two files as a user keeps them, and (on the command
line) a run in an empty folder of its own.

Import :func:`clean_env` into a test module (and name it in ``__all__``) to use it there.
"""

from __future__ import annotations

from pathlib import Path

import pytest

#: A GitHub Models prompt file: gpt-4o-mini, output limit 2000, one variable ``input``.
GITHUB = """\
name: Bug summarizer
model: openai/gpt-4o-mini
modelParameters:
  max_tokens: 2000
messages:
  - role: system
    content: You summarize bug reports in three sentences.
  - role: user
    content: 'Summarize this report: {{input}}'
"""

#: A Dotprompt file: gpt-4o-mini, output limit 800, one variable ``topic``.
DOTPROMPT = """\
---
model: openai/gpt-4o-mini
config:
  maxOutputTokens: 800
input:
  schema:
    topic: string
---
{{role "system"}}
You write haiku.
{{role "user"}}
Write a haiku about {{topic}}.
"""

#: The same two files with no output limit.
GITHUB_UNSET = GITHUB.replace("modelParameters:\n  max_tokens: 2000\n", "")
DOTPROMPT_UNSET = DOTPROMPT.replace("config:\n  maxOutputTokens: 800\n", "")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Run from ``tmp_path``, with no result cache and no limits policy of the machine."""
    monkeypatch.delenv("PIPELINE_LIMITS_POLICY", raising=False)
    monkeypatch.delenv("APP_DEVELOPMENT", raising=False)
    monkeypatch.setenv("BUDGETLENS_NO_CACHE", "1")
    monkeypatch.chdir(tmp_path)
