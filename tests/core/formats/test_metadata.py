"""``metadata.budgetlens`` (a declared budget per variable) is read in every format, with
its range; Prompty's ``${env:NAME:default}`` gives its default and no problem."""

from __future__ import annotations

import pytest

from budgetlens.formats import dotprompt, github_models, prompty
from budgetlens.formats.model import PromptFile
from tests.core.formats.helpers import sliced

BUDGET = "metadata:\n  budgetlens:\n    vars: {input: 6000}\n"
CASES = {
    "github-models": ("model: openai/gpt-4o-mini\n" + BUDGET
                      + "messages:\n  - role: user\n    content: '{{input}}'\n"),
    "prompty": "---\nmodel: gpt-4o-mini\n" + BUDGET + "---\nuser:\n{{input}}\n",
    "dotprompt": "---\nmodel: googleai/gemini-2.5-flash\n" + BUDGET + "---\n{{input}}\n",
}


def _read(fmt: str, text: str) -> PromptFile:
    if fmt == "github-models":
        return github_models.read(text, "a.prompt.yml")
    if fmt == "prompty":
        return prompty.read(text, "a.prompty")
    return dotprompt.read(text, "a.prompt")


@pytest.mark.parametrize("fmt", sorted(CASES))
def test_metadata_budgetlens_is_read_with_its_range(fmt: str) -> None:
    text = CASES[fmt]
    step = _read(fmt, text).steps[0]
    assert step.budgetlens is not None
    assert step.budgetlens.value == {"vars": {"input": 6000}}
    assert step.budgetlens.key == "metadata.budgetlens"
    assert sliced(text, step.budgetlens.range) == "vars: {input: 6000}\n"
    assert [m.variables for m in step.messages] == [("input",)]


def test_env_reference_with_a_default_uses_it() -> None:
    text = "---\nmodel:\n  id: ${env:MODEL:gpt-4o-mini}\n---\nuser:\nhi\n"
    result = prompty.read(text, "e.prompty")
    assert result.problems == []
    step = result.steps[0]
    assert step.model is not None and step.model.value == "gpt-4o-mini"
    assert sliced(text, step.model.range) == "${env:MODEL:gpt-4o-mini}"
