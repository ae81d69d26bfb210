"""A plain step's budget is made without the calls of the terms it lacks (``check._plain``,
``plain_step_budget``): the report is the one the full arithmetic (``full_step_budget``)
gives, and the full arithmetic runs only for a step that has such a term."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from budgetlens.contract import check as check_module
from budgetlens.contract.results import PipelineReport
from tests.core.contract.helpers import check, make_workspace

#: Plain steps of every kind the plain path handles: history on and off, a context of the
#: step's own or none, a floor, a constant margin, a template, a missing output limit.
PLAIN = """\
settings:
  max_context_tokens: 3000
  max_history_tokens: 500
  min_output_tokens: 50
  budget_safety_margin_tokens: 64
steps:
  - id: plain
    type: call_model
    prompt_key: sys
    max_output_tokens: 400
  - id: history
    type: call_model
    prompt_key: sys
    use_history: true
    max_history_tokens: 200
    max_output_tokens: 300
  - id: no_context
    type: call_model
    prompt_key: sys
    use_context: false
    user_parts:
      template: "Answer {question} briefly."
    max_output_tokens: 200
  - id: own_context
    type: call_model
    prompt_key: sys
    max_context_tokens: 1000
    max_output_tokens: 5000
  - id: no_output
    type: call_model
    prompt_key: sys
"""

#: The same steps with what a plain step lacks: tools, a thinking budget, a model of its
#: own, a margin with a percentage.
FULL = {
    "tools.yaml": PLAIN.replace("    max_output_tokens: 400\n", "    max_output_tokens: 400\n"
                                "    tools:\n      - type: function\n        function:\n"
                                "          name: look_up\n"),
    "reasoning.yaml": PLAIN.replace("    max_output_tokens: 400\n",
                                    "    max_output_tokens: 400\n    reasoning: 100\n"),
    "own_model.yaml": PLAIN.replace("    max_output_tokens: 400\n",
                                    "    max_output_tokens: 400\n    model: gpt-4o-mini\n"),
    "percent.yaml": PLAIN.replace("budget_safety_margin_tokens: 64",
                                  'budget_safety_margin_tokens: "5% + 64"'),
}


def _workspace(root: Path) -> Path:
    return make_workspace(root, config={"model": "gpt-4o", "tokenizer": "o200k_base"},
                          pipelines={"plain.yaml": PLAIN, **FULL},
                          prompts={"sys.txt": "You answer questions about the weather."})


def _full_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(check_module, "_plain", lambda *args: False)


def _comparable(report: PipelineReport) -> tuple[object, ...]:
    return (report.steps, report.diagnostics, report.clamp)


@pytest.mark.parametrize("name", ["plain.yaml", *FULL])
def test_the_plain_path_gives_the_full_paths_report(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    path = _workspace(tmp_path) / "pipelines" / name
    quick = check(path)
    _full_only(monkeypatch)
    full = check(path)
    assert quick.steps and len(quick.steps) == 5
    assert _comparable(quick) == _comparable(full)


def test_only_a_step_with_a_term_of_its_own_takes_the_full_path(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _workspace(tmp_path)
    calls: list[str] = []
    full = check_module._PipelineCheck.full_step_budget

    def counted(self: object, sp: Any, *args: object) -> object:
        calls.append(sp.at.name)
        return full(self, sp, *args)  # type: ignore[arg-type]
    monkeypatch.setattr(check_module._PipelineCheck, "full_step_budget", counted)
    check(root / "pipelines" / "plain.yaml")
    assert calls == []
    check(root / "pipelines" / "tools.yaml")
    assert calls == ["plain"]
    calls.clear()
    check(root / "pipelines" / "percent.yaml")
    assert calls == ["plain", "history", "no_context", "own_context", "no_output"]


def test_a_step_exactly_at_its_window_fits_on_both_paths(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = make_workspace(tmp_path / "a", config={"model_context_window": 100_000},
                           pipelines={"plain.yaml": PLAIN},
                           prompts={"sys.txt": "You answer questions about the weather."})
    total = check(first / "pipelines" / "plain.yaml").steps[0].total
    root = make_workspace(tmp_path / "b", config={"model_context_window": total},
                          pipelines={"plain.yaml": PLAIN},
                          prompts={"sys.txt": "You answer questions about the weather."})
    quick = check(root / "pipelines" / "plain.yaml")
    assert (quick.steps[0].total, quick.steps[0].headroom, quick.steps[0].fits) == (total, 0, True)
    _full_only(monkeypatch)
    assert _comparable(quick) == _comparable(check(root / "pipelines" / "plain.yaml"))
