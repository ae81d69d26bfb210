"""The request terms of a step beside its prompts: tool definitions (``tools``), a response
schema (``response_schema``) and a thinking budget (``reasoning``).

``tools`` and ``response_schema`` are written inline or as ``{file: tools.json}`` (a JSON
file relative to the pipeline file that defines the step, read inside the workspace like a
prompt file). Both count into the step's fixed part:

- OpenAI models: by ``request.framing`` (``tools_tokens``, ``schema_tokens``: the rules of
  OpenAI's cookbook "How to count tokens with tiktoken"). Tools are exact for the models
  the cookbook names (``gpt-4o``, ``gpt-4o-mini``, ``gpt-4``, ``gpt-3.5-turbo``), ≈ for the
  others; a schema is ≈ always (the cookbook gives no rule for it).
- other families: the definitions' compact JSON text, counted with the step's tokenizer,
  ≈ (no provider publishes how it renders them; Claude adds its tool-use system prompt).

``reasoning`` is a thinking budget in tokens. Where it goes depends on the provider
(``reasoning_rule``; docs/pipeline-format.md has the sources):

- OpenAI reasoning models (o1, o3, o4, gpt-5): hidden reasoning is spent out of
  ``max_completion_tokens``. The step's output limit is the visible output; output plus
  reasoning must fit the model's output ceiling, and the window.
- Anthropic (Claude): ``thinking.budget_tokens`` counts toward ``max_tokens``. It lies
  inside the step's output limit: at least 1,024 and below the output limit.
- Google (Gemini): ``thinkingBudget`` is spent beside the visible output: it adds to what
  the request may use.
- any other model: counted beside the output (the conservative choice).

``request.fit`` places a run-time thinking budget (``fit_request(reasoning=...)``,
``check_request``) by the same ``reasoning_rule``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from budgetlens.contract.near_miss import suggest
from budgetlens.contract.results import Term
from budgetlens.models.registry import ModelInfo
from budgetlens.source import Location, Severity

if TYPE_CHECKING:
    from budgetlens.request.framing import Framing

TOOLS, RESPONSE_SCHEMA, REASONING = "tools", "response_schema", "reasoning"
#: The step keys this module reads (``near_miss``: a near miss of one is an error).
STEP_TERM_KEYS = (TOOLS, RESPONSE_SCHEMA, REASONING)
#: Anthropic's smallest ``thinking.budget_tokens``.
CLAUDE_MIN_THINKING = 1024
_OPENAI_REASONERS = ("o1", "o3", "o4", "gpt-5")
APPROX = "≈"


def approximate(term: Term | None) -> bool:
    """The term is an estimate (its source starts with ``≈``)."""
    return term is not None and term.source.startswith(APPROX)


@dataclass(frozen=True)
class TermSpec:
    """A step's ``tools`` or ``response_schema`` as written: inline, or a JSON file."""

    key: str
    value: Any  # the inline value (None for a file)
    file: str | None  # the JSON file (normalised path), for ``{file: ...}``
    location: Location  # the key's value in the pipeline


def plan_spec(key: str, raw: Any, owner: str, location: Location) -> TermSpec | str:
    """The spec of ``key`` written as ``raw`` in the pipeline file ``owner``, or why it
    cannot be used (a message)."""
    if isinstance(raw, dict) and set(raw) == {"file"}:
        name = raw["file"]
        if not isinstance(name, str) or not name.strip():
            return f"{key}.file must be the path of a JSON file, got {name!r}"
        path = os.path.normpath(os.path.join(os.path.dirname(owner), name))
        return TermSpec(key, None, path, location)
    if isinstance(raw, dict) and len(raw) == 1:
        (only,) = raw
        if isinstance(only, str) and suggest(only, ("file",)) is not None:
            return f"{key}: unknown key {only!r}, did you mean 'file'?"
    if key == TOOLS and isinstance(raw, list):
        return TermSpec(key, raw, None, location)
    if key == RESPONSE_SCHEMA and isinstance(raw, dict):
        return TermSpec(key, raw, None, location)
    shape = "a list of tool definitions" if key == TOOLS else "a JSON Schema (a mapping)"
    return f"{key} must be {shape} or {{file: <path of a JSON file>}}, got {raw!r}"


def plan_reasoning(raw: Any, location: Location) -> Term | str:
    """The thinking budget ``raw`` as a term (its source set by ``reasoning_term``), or
    why it cannot be used."""
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
        return f"reasoning must be a thinking budget in tokens (an integer >= 0), got {raw!r}"
    return Term(raw, REASONING, location=location)


def load_json(text: str, key: str) -> Any:
    """The JSON value of a term file; ``ValueError`` naming the problem."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON: {exc.msg} (line {exc.lineno},"
                         f" column {exc.colno})") from None
    if key == TOOLS and not isinstance(value, list):
        raise ValueError("a tools file must hold a JSON list of tool definitions")
    if key == RESPONSE_SCHEMA and not isinstance(value, dict):
        raise ValueError("a response_schema file must hold a JSON object (the schema)")
    return value


# ------------------------------------------------------------------------------ counting
def framing_for(info: ModelInfo | None, tokenizer: str) -> Framing:
    """The chat framing a step's model is counted with (none named: the generic one)."""
    # lazy: start-up speed (request.limits, request.framing: only a step with tools or a
    # response schema needs them)
    from budgetlens.request.limits import framing_of

    return framing_of(info.name if info is not None else "", info, tokenizer)


def _rule(key: str, framing: Framing, exact: bool, tokenizer: str, model: str | None) -> str:
    """How a term was counted, in one line (``≈`` first when it is an estimate)."""
    if framing.tools is not None and key == RESPONSE_SCHEMA:
        return (f"{APPROX} one function definition by the OpenAI cookbook's tools rule (no"
                " published rule for response_format)")
    if framing.tools is not None:
        rule = "OpenAI cookbook rule"
        return rule if exact else f"{APPROX} {rule} (the cookbook names no rule for" \
                                  f" {model or 'this model'})"
    extra = (f" + {framing.tool_prompt} for the provider's tool-use system prompt"
             if framing.tool_prompt and key == TOOLS else "")
    return (f"{APPROX} compact JSON counted with {tokenizer}{extra} (no published rule for"
            f" {model or 'a step without a model'})")


def spec_term(spec: TermSpec, value: Any, framing: Framing, count: Callable[[str], int],
              tokenizer: str, model: str | None) -> Term:
    """The term of ``spec`` whose value (inline or read from its file) is ``value``."""
    from budgetlens.request.framing import schema_tokens, tools_tokens  # lazy, as framing_for

    if spec.key == TOOLS:
        tokens, exact = tools_tokens(value, framing, count)
        what = f"{len(value)} definition{'s' if len(value) != 1 else ''}"
    else:
        tokens, exact = schema_tokens(_as_response_format(value), framing, count)
        what = "schema"
    where = f" file {os.path.basename(spec.file)}" if spec.file is not None else ""
    rule = _rule(spec.key, framing, exact, tokenizer, model)
    mark = f"{APPROX} " if rule.startswith(APPROX) else ""
    return Term(tokens, f"{mark}{spec.key}{where}: {what}, {rule.removeprefix(mark)}",
                location=spec.location)


def _as_response_format(schema: dict[str, Any]) -> Any:
    """A step's ``response_schema`` as the ``response_format`` framing counts: OpenAI's
    ``json_schema`` wrapper as written, or a bare schema (``name`` and ``description`` from
    its ``title`` and ``description``)."""
    if schema.get("type") == "json_schema":
        return schema
    return {"type": "json_schema", "json_schema": {
        "name": str(schema.get("title", "response")), "description": schema.get("description"),
        "schema": schema}}


# ------------------------------------------------------------------------------ reasoning
@dataclass(frozen=True)
class ReasoningRule:
    """How a provider spends a thinking budget."""

    provider: str
    inside_output: bool
    """It counts toward the step's output limit (Claude): it adds nothing to the total."""
    inside_ceiling: bool
    """Output plus reasoning must fit the model's output ceiling (OpenAI)."""
    text: str


_RULES = {
    "OpenAI": ReasoningRule("OpenAI", False, True,
                            "OpenAI reasoning tokens, spent out of max_completion_tokens"),
    "Anthropic": ReasoningRule("Anthropic", True, False,
                               "Claude thinking.budget_tokens, inside max_tokens"),
    "Google": ReasoningRule("Google", False, False,
                            "Gemini thinkingBudget, beside the output"),
}
_BESIDE = ReasoningRule("", False, False, "thinking budget, beside the output (no provider"
                                          " rule known: conservative)")


def reasoning_rule(info: ModelInfo | None) -> ReasoningRule:
    """The rule of the step's model's provider (module docstring)."""
    if info is None:
        return _BESIDE
    return _RULES.get(info.provider, _BESIDE)


def reasoning_term(term: Term, rule: ReasoningRule) -> Term:
    """``term`` with the provider's rule as its source."""
    return Term(term.value, f"{REASONING}: {rule.text}", term.inherited, term.location)


def reasoning_problems(reasoning: Term, rule: ReasoningRule, output: Term,
                       ceiling: Term | None, model: str | None,
                       ) -> list[tuple[Severity, str]]:
    """What is wrong with a thinking budget for the step's model (module docstring)."""
    value, out = reasoning.value, output.value
    if not value:
        return []
    if rule.provider == "Anthropic":
        found = []
        if value < CLAUDE_MIN_THINKING:
            found.append((Severity.ERROR, f"reasoning {value:,} is below Claude's smallest"
                          f" thinking.budget_tokens, {CLAUDE_MIN_THINKING:,}"))
        if value >= out:
            found.append((Severity.ERROR, f"reasoning {value:,} must be below the step's"
                          f" output limit {out:,} ({output.source}): Claude counts"
                          " thinking.budget_tokens toward max_tokens, leaving"
                          f" {max(0, out - value):,} for the visible output"))
        return found
    if rule.provider == "OpenAI":
        if model is not None and not _reasons(model):
            return [(Severity.WARNING, f"reasoning {value:,}: {model} is not an OpenAI"
                     " reasoning model (o1, o3, o4, gpt-5); the budget is counted all the"
                     " same")]
        if ceiling is not None and out + value > ceiling.value:
            return [(Severity.ERROR, f"output {out:,} + reasoning {value:,} ="
                     f" {out + value:,} is above the model's output ceiling"
                     f" {ceiling.value:,} ({ceiling.source}): OpenAI spends reasoning out"
                     " of max_completion_tokens")]
    return []


def _reasons(model: str) -> bool:
    return model.lower().rsplit("/", 1)[-1].startswith(_OPENAI_REASONERS)
