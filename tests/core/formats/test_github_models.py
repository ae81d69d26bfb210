"""GitHub Models prompt files: fixed texts written out by hand, counted with tiktoken,
ranges checked by slicing the file, and the format's problems."""

from __future__ import annotations

from pathlib import Path

from budgetlens.formats import github_models, read_prompt_file
from budgetlens.formats.model import ProblemKind
from tests.core.formats.helpers import CORPUS, sliced, tokens

GM = CORPUS / "github_models"


def _read(name: str) -> tuple[str, github_models.PromptFile]:
    text = (GM / name).read_text("utf-8")
    return text, github_models.read(text, str(GM / name))


def test_simple_prompt_fixed_texts_ranges_and_runner_default() -> None:
    text, result = _read("simple.prompt.yml")
    step = result.steps[0]
    assert [(m.role, m.text) for m in step.messages] == [
        ("system", "Be as concise as possible"),
        ("user", "Compare  and , please"),
    ]
    assert [m.variables for m in step.messages] == [(), ("a", "b")]
    assert [tokens(m.text) for m in step.messages] == [5, 5]
    assert tokens("Be as concise as possible") + tokens("Compare  and , please") == 10
    assert sliced(text, step.messages[1].range) == "'Compare {{a}} and {{b}}, please'"
    assert step.model is not None and step.model.value == "openai/gpt-4o"
    assert sliced(text, step.model.range) == "openai/gpt-4o"
    # no output limit: the runner sends 200; a fix inserts maxCompletionTokens at top level
    assert step.output.value is None
    assert step.output.key == "modelParameters.maxCompletionTokens"
    assert sliced(text, step.output.insert_range) == text
    [problem] = result.problems
    assert problem.kind is ProblemKind.OUTPUT_DEFAULT and "200" in problem.message
    assert sliced(text, problem.range) == "model"


def test_template_variables_prompt_with_deprecated_max_tokens_key() -> None:
    text, result = _read("template_variables_prompt.yml")
    step = result.steps[0]
    assert [(m.role, m.text) for m in step.messages] == [
        ("system", "You are , a helpful assistant specializing in ."),
        ("user", "Hello ! I need help with . "),
    ]
    assert [m.variables for m in step.messages] == [("persona", "domain"),
                                                    ("name", "topic", "input")]
    assert tokens("You are , a helpful assistant specializing in .") == 9
    assert tokens("Hello ! I need help with . ") == 8
    assert [tokens(m.text) for m in step.messages] == [9, 8]
    assert (step.output.value, step.output.key) == (200, "modelParameters.maxTokens")
    assert sliced(text, step.output.range) == "200"
    assert sliced(text, step.output.key_range) == "maxTokens"
    assert result.problems == []


def test_json_schema_prompt_test_data_schema_and_concrete_inputs() -> None:
    text, result = _read("json_schema_prompt.yml")
    step = result.steps[0]
    assert [(m.role, m.text) for m in step.messages] == [
        ("system",
         "You are a helpful assistant that provides detailed information about animals."),
        ("user", "Describe a  in detail."),
    ]
    assert tokens(step.messages[0].text) == 12
    assert tokens("Describe a  in detail.") == 6
    assert step.samples == [{"animal": "dog"}, {"animal": "cat"}, {"animal": "elephant"}]
    assert step.output_schema is not None and step.output_schema.key == "jsonSchema"
    assert sliced(text, step.output_schema.range).startswith('|-\n  {\n    "name": "animal')
    concrete = github_models.read(text, "json_schema_prompt.yml", inputs=step.samples[0])
    assert concrete.steps[0].messages[1].text == "Describe a dog in detail."
    assert tokens("Describe a dog in detail.") == 6


def test_max_tokens_on_a_reasoning_model_is_reported(tmp_path: Path) -> None:
    text = ("model: openai/o3-mini\n"
            "modelParameters:\n"
            "  max_tokens: 4000\n"
            "messages:\n"
            "  - role: user\n"
            "    content: Solve {{problem}}\n")
    path = tmp_path / "solve.prompt.yml"
    path.write_text(text, "utf-8")
    result = read_prompt_file(str(path), text)
    assert result is not None and result.format == "github-models"
    [problem] = result.problems
    assert problem.kind is ProblemKind.NEEDS_COMPLETION_TOKENS
    assert sliced(text, problem.range) == "max_tokens"
    fixed = text.replace("max_tokens", "maxCompletionTokens")
    assert github_models.read(fixed, str(path)).problems == []


def test_a_file_without_messages_is_not_a_prompt() -> None:
    result = github_models.read("name: x\nmodel: openai/gpt-4o\n", "x.prompt.yml")
    assert result.steps == []
    assert [p.kind for p in result.problems] == [ProblemKind.NOT_A_PROMPT]


def test_broken_yaml_is_a_problem_with_its_range() -> None:
    text = "messages:\n  - role: user\n    content: [unclosed\n"
    result = github_models.read(text, "bad.prompt.yml")
    assert result.steps == []
    assert [p.kind for p in result.problems] == [ProblemKind.YAML]
