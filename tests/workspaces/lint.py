"""Shared by the lint pass's tests: a workspace of pipelines over budget whose BL050 a
comment suppresses, and a count of the files whose diagnostics the pass filters by their
settings."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from budgetlens.contract import lint
from budgetlens_lsp.workspace_index import norm

#: A pipeline whose one step is over budget for ``{out}`` above about 900, its BL050
#: suppressed by the comment on the step's line.
SUPPRESSED_PIPELINE = """\
settings:
  max_context_tokens: 1000
steps:
  - id: s  # budgetlens: ignore[BL050]
    type: call_model
    prompt_key: sys
    max_output_tokens: {out}
"""


def count_filtered(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """The files whose diagnostics ``LintSettings.enabled`` is asked about, how often (from
    now on, through ``monkeypatch``)."""
    asked: Counter[str] = Counter()
    real = lint.LintSettings.enabled

    def enabled(self: lint.LintSettings, code: str, path: str) -> bool:
        asked[path] += 1
        return real(self, code, path)
    monkeypatch.setattr(lint.LintSettings, "enabled", enabled)
    return asked


def suppressed_workspace(root: Path, count: int) -> tuple[str, str, list[str]]:
    """``count`` pipelines of ``SUPPRESSED_PIPELINE`` under ``root`` (their outputs 2000 and
    up), sharing the prompt ``sys``: the root, the prompt and the pipelines, as the index
    names them."""
    (root / "config.json").write_text(
        '{"model_context_window": 2048, "model_max_tokens": 8192}')
    (root / "prompts").mkdir()
    prompt = root / "prompts" / "sys.txt"
    prompt.write_text("You are terse.\n")
    (root / "pipelines").mkdir()
    paths = []
    for i in range(count):
        path = root / "pipelines" / f"p{i:02d}.yaml"
        path.write_text(SUPPRESSED_PIPELINE.format(out=2000 + i))
        paths.append(norm(path))
    return norm(root), norm(prompt), paths
