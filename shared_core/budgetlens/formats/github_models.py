"""GitHub Models prompt files (``*.prompt.yml``, ``*.prompt.yaml``).

Read by ``actions/ai-inference`` and ``gh models run|eval``: ``messages`` (``role``,
``content`` with ``{{name}}`` placeholders), ``model`` (``openai/gpt-4o-mini``),
``modelParameters`` (``maxCompletionTokens`` preferred; ``max_tokens``; ``maxTokens``,
deprecated), ``responseFormat`` + ``jsonSchema``, ``testData``, ``evaluators``.

The placeholders are replaced the way both runners replace them: each ``{{name}}`` (no
spaces, no sections, no escaping) by the value's text. A mustache library would read
``{{#name}}`` as a section and escape HTML; the runners do neither, so the reader does
not use one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from budgetlens.formats.common import check_completion_tokens, located, output_limit
from budgetlens.formats.frontmatter import FileYaml, read_yaml
from budgetlens.formats.model import Message, Problem, ProblemKind, PromptFile, Step
from budgetlens.formats.request_shapes import github_schema
from budgetlens.formats.templates import placeholder_variables, render_placeholders
from budgetlens.source import LineIndex, Range

FORMAT = "github-models"
#: The gateway both runners send through: GitHub Models (models.github.ai).
GATEWAY = "github-models"
#: The output limit each key sets, in the order the runner prefers them.
OUTPUT_KEYS = (("modelParameters", "maxCompletionTokens"), ("modelParameters", "max_tokens"),
               ("modelParameters", "maxTokens"))
#: What actions/ai-inference sends when the file sets no output limit: the default of its
#: ``max-tokens`` input. At a7805884c80886efc241e94a5351df715968a0ad (the last commit that
#: calls GitHub Models; 832846d, 2026-06-10, made Copilot its only provider) src/main.ts
#: sends ``modelParameters.maxCompletionTokens ?? max-completion-tokens`` (default ''),
#: else ``modelParameters.maxTokens ?? max-tokens`` (action.yml: default '200').
RUNNER_DEFAULT_OUTPUT = 200
#: The key neither runner reads: actions/ai-inference (above) and gh models
#: (github/gh-models pkg/prompt/prompt.go at 178d92159f42ae0aad1bb77a096663f50dc6a7c2:
#: ``ModelParameters`` has ``maxTokens``, ``temperature``, ``topP`` only).
UNREAD_KEY = "modelParameters.max_tokens"


def is_github_models(path: str) -> bool:
    return path.endswith((".prompt.yml", ".prompt.yaml"))


def read(text: str, path: str = "", inputs: Mapping[str, Any] | None = None) -> PromptFile:
    """The file's one step; with ``inputs`` the messages are rendered with them."""
    problems: list[Problem] = []
    index = LineIndex(text)
    fy = read_yaml(text, 0, index, problems)
    result = PromptFile(path, FORMAT, [], problems, gateway=GATEWAY)
    if fy is None:
        return result
    if not isinstance(fy.value, dict) or not isinstance(fy.get("messages"), list):
        problems.append(Problem(ProblemKind.NOT_A_PROMPT, "no 'messages' list",
                                fy.whole()))
        return result
    result.steps.append(_step(fy, path, inputs, problems))
    return result


def _step(fy: FileYaml, path: str, inputs: Mapping[str, Any] | None,
          problems: list[Problem]) -> Step:
    model = located(fy, "model")
    output = output_limit(fy, OUTPUT_KEYS, OUTPUT_KEYS[0])
    if output.value is None:
        problems.append(Problem(
            ProblemKind.OUTPUT_DEFAULT,
            f"no output limit: actions/ai-inference sends its max-tokens input (default"
            f" {RUNNER_DEFAULT_OUTPUT}), gh models sends none and the model may write up to"
            " its ceiling (set modelParameters.maxCompletionTokens)",
            fy.key_range("model") or fy.whole()))
    before = len(problems)
    check_completion_tokens(model, output, problems)
    if output.key == UNREAD_KEY and len(problems) == before:
        problems.append(Problem(
            ProblemKind.OUTPUT_DEFAULT,
            f"neither runner reads {UNREAD_KEY}: actions/ai-inference sends"
            " modelParameters.maxCompletionTokens, else maxTokens, else its max-tokens input"
            f" (default {RUNNER_DEFAULT_OUTPUT}); gh models sends maxTokens only, else none"
            f" (counted: {output.value}; write modelParameters.maxCompletionTokens)",
            output.key_range or output.range or fy.whole()))
    name = fy.get("name")
    samples = [dict(case) for case in fy.get("testData") or [] if isinstance(case, dict)]
    return Step(
        name=name if isinstance(name, str) else path,
        messages=_messages(fy, inputs),
        model=model,
        output=output,
        tools=None,  # neither runner reads a file's tools (request_shapes.py)
        output_schema=github_schema(located(fy, "jsonSchema"), located(fy, "responseFormat")),
        samples=samples,
        budgetlens=located(fy, "metadata", "budgetlens"),
    )


def _messages(fy: FileYaml, inputs: Mapping[str, Any] | None) -> list[Message]:
    out: list[Message] = []
    for i, entry in enumerate(fy.get("messages")):
        if not isinstance(entry, dict):
            continue
        content = entry.get("content")
        template = content if isinstance(content, str) else ""
        rng: Range = fy.range("messages", i, "content") or fy.range("messages", i) \
            or fy.whole()
        out.append(Message(role=str(entry.get("role") or "user"),
                           text=render_placeholders(template, inputs),
                           variables=tuple(placeholder_variables(template)), range=rng))
    return out
