"""A prompt file's tools, output schema and history input count as a pipeline step's
``tools``, ``response_schema`` and history terms (issues 32 and 33).

The files are written to disk as a user keeps them and checked with ``budgetlens check``.
Every expected count is computed here with tiktoken by the rules of OpenAI's cookbook
("How to count tokens with tiktoken", written out in ``tests.core.contract
.test_request_terms``), never by budgetlens's counting code.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from budgetlens_cli.main import main
from tests.core.contract.test_request_terms import cookbook_function, n
from tests.workspaces.prompt_files import clean_env

__all__ = ["clean_env"]  # the autouse fixture of tests/workspaces/prompt_files.py

MARGIN = 128


def _check(capsys: pytest.CaptureFixture[str], name: str, text: str,
           *extra: str) -> tuple[int, dict[str, Any]]:
    path = Path("repo") / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, "utf-8")
    code = main(["check", "repo", "--format", "json", *extra])
    out, err = capsys.readouterr()
    assert code in (0, 1), out + err
    return code, json.loads(out)


def framed(messages: list[tuple[str, str]]) -> int:
    """OpenAI's chat framing over o200k_base: 3 a message, its role, its text, 3 the reply."""
    return sum(3 + n(role) + n(text) for role, text in messages) + 3


PROMPTY_TOOLS = """\
---
name: weather
model:
  id: gpt-4o
  options:
    maxOutputTokens: 500
tools:
  - name: get_weather
    kind: function
    description: Get the weather in a city.
    parameters:
      - name: city
        kind: string
        description: The city, e.g. Paris.
      - name: unit
        kind: string
        description: The unit.
        enumValues: [celsius, fahrenheit]
---
system:
You tell the weather.
"""


def test_prompty_tools_count_as_the_cookbook_formats_them(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, data = _check(capsys, "weather.prompty", PROMPTY_TOOLS)
    [step] = data["steps"]
    budget = step["budget"]
    tools = cookbook_function("get_weather", "Get the weather in a city.", {
        "city": {"type": "string", "description": "The city, e.g. Paris."},
        "unit": {"type": "string", "description": "The unit.",
                 "enum": ["celsius", "fahrenheit"]}}) + 12
    messages = framed([("system", "You tell the weather.")])
    assert code == 0
    assert budget["tools"] == tools
    assert budget["fixed"] == messages + tools
    assert budget["total"] == messages + tools + 500 + MARGIN


GITHUB_SCHEMA = """\
model: openai/gpt-4o
modelParameters:
  max_completion_tokens: 300
messages:
  - role: user
    content: Describe a {{animal}}
responseFormat: json_schema
jsonSchema: |-
  {
    "name": "describe_animal",
    "strict": true,
    "schema": {
      "type": "object",
      "properties": {
        "name": {"type": "string", "description": "The name of the animal."},
        "habitat": {"type": "string", "description": "Where it lives."}
      },
      "required": ["name", "habitat"],
      "additionalProperties": false
    }
  }
"""


def _schema_count(name: str, props: dict[str, Any]) -> int:
    """A response schema by the cookbook's function rule (no description): ≈."""
    return cookbook_function(name, "", props) + 12


def test_github_models_json_schema_counts_as_the_response_schema(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, data = _check(capsys, "animal.prompt.yml", GITHUB_SCHEMA)
    [step] = data["steps"]
    budget = step["budget"]
    schema = _schema_count("describe_animal", {
        "name": {"type": "string", "description": "The name of the animal."},
        "habitat": {"type": "string", "description": "Where it lives."}})
    assert code == 0
    assert budget["response_schema"] == schema
    assert budget["fixed"] == framed([("user", "Describe a ")]) + schema
    assert "tools" not in budget


def test_github_models_text_response_format_counts_no_schema(
        capsys: pytest.CaptureFixture[str]) -> None:
    text = GITHUB_SCHEMA.replace("responseFormat: json_schema", "responseFormat: text")
    _, data = _check(capsys, "animal.prompt.yml", text)
    assert "response_schema" not in data["steps"][0]["budget"]


DOTPROMPT_SCHEMA = """\
---
model: openai/gpt-4o
config:
  maxOutputTokens: 400
tools: [lookupCountry]
output:
  format: json
  schema:
    country: string, The country.
    cities(array, The largest cities.): string
---
Name a country and its cities.
"""


def test_dotprompt_picoschema_counts_as_json_schema(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, data = _check(capsys, "country.prompt", DOTPROMPT_SCHEMA)
    [step] = data["steps"]
    budget = step["budget"]
    # Genkit's picoschema: {type: object, properties: {country: {type: string, description},
    # cities: {type: array, items: {type: string}, description}}, required: [country,
    # cities]}; the cookbook rule reads each property's type and description (an array's
    # type is "array")
    schema = _schema_count("response", {
        "country": {"type": "string", "description": "The country."},
        "cities": {"type": "array", "description": "The largest cities."}})
    assert code == 0
    assert budget["response_schema"] == schema
    # tools named only (defined in code): nothing in the file to count
    assert "tools" not in budget
    assert budget["fixed"] == framed([("user", "Name a country and its cities.")]) + schema


DOTPROMPT_HISTORY = """\
---
model: openai/gpt-4o
config:
  maxOutputTokens: 400
metadata:
  budgetlens:
    vars:
      history: 3000
      question: 200
---
{{role "system"}}
Answer briefly.
{{history}}
{{role "user"}}
{{question}}
"""


def test_a_declared_history_budget_is_the_history_term(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, data = _check(capsys, "chat.prompt", DOTPROMPT_HISTORY)
    [step] = data["steps"]
    budget = step["budget"]
    assert code == 0
    assert (budget["history"], budget["context"]) == (3000, 200)
    assert budget["total"] == budget["fixed"] + 3000 + 200 + 400 + MARGIN


GITHUB_BIG = """\
model: openai/gpt-4o
modelParameters:
  maxCompletionTokens: 1000
metadata:
  budgetlens:
    vars:
      diff: 8000
messages:
  - role: system
    content: You review pull requests.
  - role: user
    content: 'Review this diff: {{diff}}'
"""


def test_a_github_models_file_runs_behind_the_github_models_gateway(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, data = _check(capsys, "review.prompt.yml", GITHUB_BIG)
    sent = framed([("system", "You review pull requests."), ("user", "Review this diff: ")]) \
        + 8000 + MARGIN
    [cap] = [d for d in data["diagnostics"] if d["code"] == "BL067"]
    # models/gateways.json: 8,000 input tokens a request for gpt-4o (actions/ai-inference#128)
    assert code == 1 and sent > 8000
    assert f"sends {sent:,} input tokens" in cap["message"]
    assert "above the 8,000-token request cap" in cap["message"]
    assert cap["range"]["start"]["line"] == 0  # the file's model, where the gateway comes from


def test_config_json_gateway_null_runs_a_github_models_file_without_one(
        capsys: pytest.CaptureFixture[str]) -> None:
    Path("repo").mkdir()
    Path("repo/config.json").write_text('{"gateway": null}', "utf-8")
    code, data = _check(capsys, "review.prompt.yml", GITHUB_BIG)
    assert code == 0
    assert [d for d in data["diagnostics"] if d["code"] in ("BL067", "BL068")] == []


SNAKE = """\
model: openai/gpt-4o-mini
modelParameters:
  max_tokens: 2000
messages:
  - role: user
    content: 'Summarize: {{input}}'
"""


def test_max_tokens_is_read_by_neither_runner(capsys: pytest.CaptureFixture[str]) -> None:
    # actions/ai-inference a7805884 src/main.ts reads maxCompletionTokens and maxTokens;
    # gh-models 178d921 pkg/prompt/prompt.go reads maxTokens: max_tokens is read by none
    code, data = _check(capsys, "sum.prompt.yml", SNAKE)
    [warning] = [d for d in data["diagnostics"] if d["code"] == "BL070"]
    assert code == 0 and warning["severity"] == "warning"
    assert warning["range"]["start"] == {"line": 2, "character": 2}  # the max_tokens key
    assert "default 200" in warning["message"] and "gh models sends maxTokens only" in \
        warning["message"]
    assert data["steps"][0]["budget"]["output"] == 2000  # what the file says, still counted
    text = SNAKE.replace("max_tokens", "maxCompletionTokens")
    _, data = _check(capsys, "sum.prompt.yml", text)
    assert [d for d in data["diagnostics"] if d["code"] == "BL070"] == []


PYPROJECT = """\
[project]
name = "app"

[tool.budgetlens]
model_context_window = 8000
"""


def test_a_term_read_from_pyproject_names_pyproject(
        capsys: pytest.CaptureFixture[str]) -> None:
    Path("repo").mkdir()
    Path("repo/pyproject.toml").write_text(PYPROJECT, "utf-8")
    _, data = _check(capsys, "a.prompt", "---\nmodel: in-house-model\nconfig:\n"
                     "  maxOutputTokens: 100\n---\nHello {{name}}\n")
    window = data["steps"][0]["terms"]["window"]
    assert window["location"]["file"] == "repo/pyproject.toml"
    assert window["source"] == \
        "config.json model_context_window (in pyproject.toml [tool.budgetlens])"


def test_a_prompt_file_of_another_tool_is_not_counted_as_a_pipeline(
        capsys: pytest.CaptureFixture[str]) -> None:
    Path("repo").mkdir()
    Path("repo/notes.prompt").write_text("Write a poem about the sea.\n", "utf-8")
    Path("repo/haiku.prompt").write_text(
        "---\nmodel: openai/gpt-4o\nconfig:\n  maxOutputTokens: 100\n---\nA haiku.\n",
        "utf-8")
    code = main(["check", "repo"])
    out, err = capsys.readouterr()
    assert code == 0, out + err
    assert out.splitlines()[-1] == (
        "1 pipeline, 1 call_model step (0 not fitting): 0 errors, 0 warnings; 1 .prompt file"
        " without Dotprompt front matter not checked")


def test_check_help_names_prompt_files(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "*.prompt.yml" in out and "*.prompty" in out and "Dotprompt" in out
