"""The format-neutral result of reading a prompt file: plain data with source ranges.

Every reader (``github_models``, ``prompty``, ``dotprompt``, ``mapping``) turns a file's
text into a ``PromptFile``: steps, each with its messages (role, fixed text, variables,
source range), model, output limit, tools, output schema, history input, declared and
sample inputs, and ``metadata.budgetlens``; and the problems found, each with a range.
Ranges are in the whole file's coordinates (``budgetlens.source.Range``: 0-based lines,
characters in code points), front matter included.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from budgetlens.source import Range


class ProblemKind(str, Enum):
    """What a reader found wrong. Codes are assigned by the contract (proposed in the
    issue's note); a reader only says what and where."""

    YAML = "yaml"  # the YAML (or front matter) cannot be read
    NOT_A_PROMPT = "not-a-prompt"  # the shape is not this format's (no messages, no body)
    TEMPLATE = "template"  # the template library refused the template
    OUTPUT_DEFAULT = "output-default"  # GitHub Models: no output limit, the runner sends 200
    NEEDS_COMPLETION_TOKENS = "needs-max-completion-tokens"  # max_tokens on o1/o3/o4/gpt-5
    ENV_UNRESOLVED = "env-unresolved"  # Prompty ${env:NAME} with no default
    FILE_REFERENCE = "file-reference"  # ${file:...} missing, unreadable or outside the root
    PARTIAL_MISSING = "partial-missing"  # Dotprompt {{>name}} with no _name.prompt
    HELPER_UNKNOWN = "helper-unknown"  # Dotprompt helper the reader does not know (rendered "")
    VARIABLE_UNDECLARED = "variable-undeclared"  # used in the template, not in the inputs


@dataclass(frozen=True)
class Problem:
    kind: ProblemKind
    message: str
    range: Range


@dataclass(frozen=True)
class Located:
    """A value as written, its key path (dotted, ``model.options.maxOutputTokens``) and
    the range of the value (``None`` when the value is not written in this file)."""

    value: Any
    key: str
    range: Range | None = None


@dataclass(frozen=True)
class OutputLimit:
    """The output limit of a step.

    ``value`` is ``None`` when the file sets none; then ``key`` is the key a fix should
    write and ``insert_range`` the range of the mapping to insert it into (the parent
    mapping's value when it exists, else the whole YAML document: front matter or file).
    ``key_range`` / ``range`` are the written key's and value's ranges (edit in place).
    """

    value: int | None
    key: str
    range: Range | None = None
    key_range: Range | None = None
    insert_range: Range | None = None


@dataclass(frozen=True)
class Message:
    """One message of a step.

    ``text`` is the fixed text: the template rendered with every variable empty (block
    bodies once), or with the concrete inputs when the file was read with some.
    ``variables`` are the names the message's template reads, in order of first use.
    ``range`` is the message's template in the file (a partial's text: the partial tag).
    """

    role: str
    text: str
    variables: tuple[str, ...]
    range: Range
    history: bool = False  # the message is (or holds) the conversation history


@dataclass
class Step:
    name: str
    messages: list[Message]
    model: Located | None
    output: OutputLimit
    #: OpenAI tool definitions (``request_shapes``); value ``None``: tools named only
    tools: Located | None = None
    #: a JSON Schema, or OpenAI's ``json_schema`` response format (``request_shapes``)
    output_schema: Located | None = None
    history: str | None = None  # the input holding the conversation history
    inputs: Located | None = None  # declared inputs as written (inputs, input.schema)
    declared: tuple[str, ...] | None = None  # declared input names; None: none declared
    samples: list[dict[str, Any]] = field(default_factory=list)  # testData, sample, defaults
    budgetlens: Located | None = None  # metadata.budgetlens


@dataclass
class PromptFile:
    path: str
    format: str  # "github-models" | "prompty" | "dotprompt" | "mapping"
    steps: list[Step]
    problems: list[Problem]
    version: str | None = None  # Prompty: "v1" | "v2"
    #: the gateway the format's runtime sends requests through (``models/gateways.json``)
    gateway: str | None = None


#: Model families that refuse ``max_tokens`` and want ``max_completion_tokens``.
_COMPLETION_TOKEN_PREFIXES = ("o1", "o3", "o4", "gpt-5")


def needs_completion_tokens(model: str) -> bool:
    """Whether ``model`` (any spelling: ``openai/o3-mini``, ``azureml/o1``) is a reasoning
    model that refuses ``max_tokens``."""
    name = model.rsplit("/", 1)[-1].strip().lower()
    return name.startswith(_COMPLETION_TOKEN_PREFIXES)
