"""The generic mapping reader: any simple YAML agent file becomes a step."""

from __future__ import annotations

from pathlib import Path

from budgetlens.formats import mapping
from budgetlens.formats.model import ProblemKind
from tests.core.formats.helpers import sliced, tokens

SPEC = mapping.MappingSpec("agents/*.yaml", model="model.name", output="model.max_tokens",
                           system_file="instructions.file", template="task")
AGENT = ("name: triage\n"
         "model:\n"
         "  name: gpt-4o-mini\n"
         "  max_tokens: 700\n"
         "instructions:\n"
         "  file: triage.md\n"
         "task: |\n"
         "  Triage {{ticket}}.{{#labels}} Labels: {{.}}{{/labels}}\n")


def _workspace(tmp_path: Path, agent: str = AGENT) -> Path:
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "triage.md").write_text("You sort support tickets.\n", "utf-8")
    path = tmp_path / "agents" / "triage.yaml"
    path.write_text(agent, "utf-8")
    return path


def test_mapping_reads_model_output_system_file_and_template(tmp_path: Path) -> None:
    path = _workspace(tmp_path)
    assert SPEC.matches("agents/triage.yaml") and not SPEC.matches("other/triage.yaml")
    result = mapping.read(AGENT, SPEC, str(path), root=tmp_path)
    assert result.problems == []
    step = result.steps[0]
    assert [(m.role, m.text) for m in step.messages] == [
        ("system", "You sort support tickets.\n"), ("user", "Triage . Labels: \n")]
    assert step.messages[1].variables == ("ticket", "labels")
    assert (tokens("You sort support tickets.\n"), tokens("Triage . Labels: \n")) == (5, 6)
    assert (step.output.value, step.output.key) == (700, "model.max_tokens")
    assert sliced(AGENT, step.output.range) == "700"
    assert step.model is not None and sliced(AGENT, step.model.range) == "gpt-4o-mini"
    assert sliced(AGENT, step.messages[0].range) == "triage.md"


def test_mapping_system_file_outside_the_workspace_is_not_read(tmp_path: Path) -> None:
    (tmp_path / "secret.md").write_text("secret", "utf-8")
    agent = AGENT.replace("file: triage.md", "file: ../../secret.md")
    ws = tmp_path / "ws"
    ws.mkdir()
    path = _workspace(ws, agent)
    result = mapping.read(agent, SPEC, str(path), root=ws)
    [problem] = result.problems
    assert problem.kind is ProblemKind.FILE_REFERENCE and "outside" in problem.message
    assert sliced(agent, problem.range) == "../../secret.md"
    assert [m.role for m in result.steps[0].messages] == ["user"]


def test_mapping_system_text_and_missing_output(tmp_path: Path) -> None:
    spec = mapping.MappingSpec("*.yml", model="llm", output="limits.output",
                               system_text="prompt")
    text = "llm: o4-mini\nlimits: {}\nprompt: Be terse.\n"
    result = mapping.read(text, spec, "a.yml")
    step = result.steps[0]
    assert [(m.role, m.text) for m in step.messages] == [("system", "Be terse.")]
    assert step.output.value is None and sliced(text, step.output.insert_range) == "{}"
