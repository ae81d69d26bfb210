"""The stable diagnostic codes of the budget contract (documented in docs/diagnostics.md).

A code never changes meaning once released; a new rule gets a new code.
"""

from __future__ import annotations

from dataclasses import dataclass

from budgetlens.source import Severity


@dataclass(frozen=True)
class Code:
    code: str
    severity: Severity  # the usual severity; policy-dependent rules say so in ``summary``
    summary: str


_E, _W, _I = Severity.ERROR, Severity.WARNING, Severity.INFORMATION

# YAML and file problems
YAML_SYNTAX = "BL001"
YAML_REFUSED = "BL002"
YAML_LIMIT = "BL003"
PIPELINE_SHAPE = "BL004"
INVALID_VALUE = "BL005"
DUPLICATE_KEY = "BL006"
PIPELINE_UNREADABLE = "BL007"
# config.json
CONFIG_MISSING = "BL010"
CONFIG_INVALID = "BL011"
WINDOW_INVALID = "BL012"
CONFIG_VALUE_INVALID = "BL013"
TOKENIZER_INVALID = "BL014"
POLICY_INVALID = "BL015"
# extends
EXTENDS_MISSING = "BL020"
EXTENDS_CYCLE = "BL021"
EXTENDS_OUTSIDE = "BL022"
EXTENDS_PARENT_BROKEN = "BL023"
# settings
CONTEXT_INVALID = "BL030"
HISTORY_MISSING = "BL031"
# steps, prompts, templates
PROMPT_MISSING = "BL040"
PROMPT_UNREADABLE = "BL041"
PROMPT_KEY_MISSING = "BL042"
TEMPLATE_SYNTAX = "BL043"
# the contract
CONTRACT_VIOLATION = "BL050"
OUTPUT_ABOVE_CEILING = "BL051"
CANNOT_FIT = "BL052"
OUTPUT_MISSING = "BL053"
# settings.injection (the unified injection budget policy)
INJECTION_NOT_MAPPING = "BL100"
INJECTION_UNKNOWN_KEY = "BL101"
INJECTION_INVALID_VALUE = "BL102"
INJECTION_MIN_ABOVE_MAX = "BL103"
INJECTION_MINS_ABOVE_MAX = "BL104"
INJECTION_SHARES_NOT_ONE = "BL105"
# JSON responses
JSON_TRUNCATED = "BL200"

CODES: dict[str, Code] = {c.code: c for c in (
    Code(YAML_SYNTAX, _E, "YAML syntax error"),
    Code(YAML_REFUSED, _E, "YAML tag or construct not allowed (e.g. !!python/object)"),
    Code(YAML_LIMIT, _E, "YAML refused: too large, too deep, or an alias bomb"),
    Code(PIPELINE_SHAPE, _E, "pipeline file is empty or not a mapping"),
    Code(INVALID_VALUE, _E, "a value has the wrong type or range"),
    Code(DUPLICATE_KEY, _W, "duplicate mapping key; the last one wins"),
    Code(PIPELINE_UNREADABLE, _E, "pipeline file cannot be read"),
    Code(CONFIG_MISSING, _E, "no config.json at or above the pipeline"),
    Code(CONFIG_INVALID, _E, "config.json is not a valid JSON object"),
    Code(WINDOW_INVALID, _E, "model_context_window missing or not an integer > 0"),
    Code(CONFIG_VALUE_INVALID, _E, "a config.json value has the wrong type or range"),
    Code(TOKENIZER_INVALID, _E, "the tokenizer cannot be used"),
    Code(POLICY_INVALID, _W, "PIPELINE_LIMITS_POLICY or the policy override is not a policy"),
    Code(EXTENDS_MISSING, _E, "extends: parent pipeline missing or unreadable"),
    Code(EXTENDS_CYCLE, _E, "extends: the chain forms a cycle (or is too deep)"),
    Code(EXTENDS_OUTSIDE, _E, "extends: parent outside the workspace root"),
    Code(EXTENDS_PARENT_BROKEN, _E, "extends: the parent pipeline has errors"),
    Code(CONTEXT_INVALID, _E, "settings.max_context_tokens missing or not an integer > 0"),
    Code(HISTORY_MISSING, _E, "use_history with max_history_tokens missing or 0"
                              " (error in fail_fast, warning in auto_clamp)"),
    Code(PROMPT_MISSING, _E, "system prompt file missing"),
    Code(PROMPT_UNREADABLE, _E, "system prompt file unreadable, binary, not UTF-8 or too large"),
    Code(PROMPT_KEY_MISSING, _W, "call_model step without prompt_key"),
    Code(TEMPLATE_SYNTAX, _E, "user_parts.template syntax error"),
    Code(CONTRACT_VIOLATION, _E, "step does not fit the context window"
                                 " (error in fail_fast, warning in auto_clamp)"),
    Code(OUTPUT_ABOVE_CEILING, _E, "output limit above model_max_output_tokens"),
    Code(CANNOT_FIT, _E, "step cannot fit, not even at the clamp's floors"),
    Code(OUTPUT_MISSING, _E, "no output limit for the step and no model_max_tokens"),
    Code(INJECTION_NOT_MAPPING, _E, "settings.injection is not a mapping"),
    Code(INJECTION_UNKNOWN_KEY, _E, "settings.injection: unknown key"),
    Code(INJECTION_INVALID_VALUE, _E,
         "settings.injection: value of the wrong type or out of range (shares and percentages"
         " in [0, 1], token counts whole numbers >= 0, schema_version 1)"),
    Code(INJECTION_MIN_ABOVE_MAX, _W,
         "settings.injection: a minimum is larger than max_injection_tokens_absolute"),
    Code(INJECTION_MINS_ABOVE_MAX, _W,
         "settings.injection: the two minimums together exceed max_injection_tokens_absolute"),
    Code(INJECTION_SHARES_NOT_ONE, _I,
         "settings.injection: the default shares do not add up to 1"),
    Code(JSON_TRUNCATED, _I, "JSON text cut off (e.g. a model reply out of output tokens)"),
)}
