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
NEAR_MISS_KEY = "BL008"
INTERNAL_ERROR = "BL009"  # budgetlens itself failed while checking the file
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
DUPLICATE_STEP_ID = "BL044"
TERM_FILE_UNREADABLE = "BL045"  # a tools or response_schema file cannot be used
# the contract
CONTRACT_VIOLATION = "BL050"
OUTPUT_ABOVE_CEILING = "BL051"
CANNOT_FIT = "BL052"
OUTPUT_MISSING = "BL053"
INPUT_ABOVE_LIMIT = "BL054"  # the request's input is above the model's max_input
REASONING_INVALID = "BL055"  # a thinking budget the step's model does not accept
# models: the registry, serving limits and targets
MODEL_CONTRADICTED = "BL060"  # a number in config.json contradicts the model's registry entry
MODEL_UNKNOWN = "BL061"  # a model name the registry does not know
SERVING_BINDS = "BL062"  # the server's limit (serving.*) is below the model's window
TARGET_DOES_NOT_FIT = "BL063"  # a step does not fit a target model
GATEWAY_CAP = "BL067"  # a step's input is above its gateway's per-request cap
GATEWAY_UNKNOWN = "BL068"  # a gateway or variant the tables do not have (or no sourced cap)
MODELS_FILE_INVALID = "BL069"  # a models.json (workspace or user) value cannot be used
# prompt files in their own formats (GitHub Models, Prompty, Dotprompt)
PROMPT_OUTPUT_UNSET = "BL070"  # the file sets no output limit
PROMPT_MAX_TOKENS_REFUSED = "BL071"  # max_tokens on a model that wants max_completion_tokens
PROMPT_ENV_UNRESOLVED = "BL072"  # a Prompty ${env:NAME} with no value and no default
PROMPT_FILE_REFERENCE = "BL073"  # a ${file:...} missing or outside the workspace
PROMPT_PARTIAL_MISSING = "BL074"  # a Dotprompt {{>name}} with no _name.prompt
PROMPT_HELPER_UNKNOWN = "BL075"  # a Dotprompt helper that is not Dotprompt's
PROMPT_VARIABLE_UNDECLARED = "BL076"  # a variable used but not declared in the inputs
PROMPT_FILE_UNREADABLE = "BL077"  # no messages, or the template library refused it
PROMPT_CASE_DOES_NOT_FIT = "BL078"  # a concrete input case does not fit the window
PROMPT_VARIABLE_HEADROOM = "BL079"  # what a prompt file's variables may take
# suppression comments (``# budgetlens: ignore[...]``)
UNUSED_SUPPRESSION = "BL080"  # a suppression comment that suppresses nothing
# settings.injection (the unified injection budget policy)
INJECTION_NOT_MAPPING = "BL100"
INJECTION_UNKNOWN_KEY = "BL101"
INJECTION_INVALID_VALUE = "BL102"
INJECTION_MIN_ABOVE_MAX = "BL103"
INJECTION_MINS_ABOVE_MAX = "BL104"
INJECTION_SHARES_NOT_ONE = "BL105"
# JSON responses
JSON_TRUNCATED = "BL200"
JSON_TOO_LARGE = "BL201"

CODES: dict[str, Code] = {c.code: c for c in (
    Code(YAML_SYNTAX, _E, "YAML syntax error"),
    Code(YAML_REFUSED, _E, "YAML tag or construct not allowed (e.g. !!python/object)"),
    Code(YAML_LIMIT, _E, "YAML refused: too large, too deep, or an alias bomb"),
    Code(PIPELINE_SHAPE, _E, "pipeline file is empty or not a mapping"),
    Code(INVALID_VALUE, _E, "a value has the wrong type or range"),
    Code(DUPLICATE_KEY, _W, "duplicate mapping key; the last one wins"),
    Code(PIPELINE_UNREADABLE, _E, "pipeline file cannot be read"),
    Code(NEAR_MISS_KEY, _W, "unknown key (or step type) close to a known one: probably a typo"
                            " (an error when the key sets a budget term)"),
    Code(INTERNAL_ERROR, _E, "budgetlens could not check this file (an internal failure)"),
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
    Code(DUPLICATE_STEP_ID, _E, "two steps of a pipeline file have the same id"),
    Code(TERM_FILE_UNREADABLE, _E, "a tools or response_schema file is missing, outside the"
                                   " workspace, unreadable or not the JSON expected"),
    Code(CONTRACT_VIOLATION, _E, "step does not fit the context window"
                                 " (error in fail_fast, warning in auto_clamp)"),
    Code(OUTPUT_ABOVE_CEILING, _E, "output limit above model_max_output_tokens"),
    Code(CANNOT_FIT, _E, "step cannot fit, not even at the clamp's floors"),
    Code(OUTPUT_MISSING, _E, "no output limit for the step and no model_max_tokens"),
    Code(INPUT_ABOVE_LIMIT, _E, "the step's input is above the model's input limit"
                                " (max_input), though it may fit the window"),
    Code(REASONING_INVALID, _E, "the step's thinking budget (reasoning) does not suit its"
                                " model (a warning for a model that does not reason)"),
    Code(MODEL_CONTRADICTED, _W, "a limit in config.json contradicts the model registry"),
    Code(MODEL_UNKNOWN, _W, "model name not in the bundled registry"),
    Code(SERVING_BINDS, _I, "the server's limit (serving) is below the model's window"),
    Code(TARGET_DOES_NOT_FIT, _W, "a step does not fit one of the target models"),
    Code(GATEWAY_CAP, _E, "a step's input is above its gateway's per-request cap"),
    Code(GATEWAY_UNKNOWN, _W, "a gateway or model variant the bundled tables do not have"),
    Code(MODELS_FILE_INVALID, _E, "a models.json value cannot be used"),
    Code(PROMPT_OUTPUT_UNSET, _W, "prompt file sets no output limit"),
    Code(PROMPT_MAX_TOKENS_REFUSED, _E,
         "max_tokens on a model that refuses it and wants max_completion_tokens"),
    Code(PROMPT_ENV_UNRESOLVED, _W, "Prompty ${env:NAME} unset and without a default"),
    Code(PROMPT_FILE_REFERENCE, _E, "a referenced file is missing or outside the workspace"),
    Code(PROMPT_PARTIAL_MISSING, _E, "Dotprompt partial missing"),
    Code(PROMPT_HELPER_UNKNOWN, _W, "Dotprompt helper unknown: it counts as empty text"),
    Code(PROMPT_VARIABLE_UNDECLARED, _W, "template variable not declared in the inputs"),
    Code(PROMPT_FILE_UNREADABLE, _E, "prompt file has no messages or its template is refused"),
    Code(PROMPT_CASE_DOES_NOT_FIT, _E, "a concrete input case does not fit the window"),
    Code(PROMPT_VARIABLE_HEADROOM, _I, "the tokens a prompt file's variables may take"),
    Code(UNUSED_SUPPRESSION, _W, "a suppression comment that suppresses nothing"),
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
    Code(JSON_TOO_LARGE, _I, "JSON buffer too large to analyse as you type (editor)"),
)}

#: What to do about each code, one or two sentences (the "Fix" of docs/diagnostics.md); the
#: CLI's SARIF output carries it inline as the rule's help.
HELP: dict[str, str] = {
    YAML_SYNTAX: "Correct the YAML at the position shown (a tab used for indentation, an"
                 " unclosed bracket or quote, two documents in one file, a control character).",
    YAML_REFUSED: "Use plain YAML values (strings, numbers, booleans, lists, mappings); tags such"
                  " as !!python/object are refused and nothing is constructed from them.",
    YAML_LIMIT: "Write the values out: pipelines never need more than 20,000 values repeated"
                " through aliases, 64 levels of nesting, 2 MiB of text or numbers that long.",
    PIPELINE_SHAPE: "Start the pipeline file from a mapping with settings: and steps:.",
    INVALID_VALUE: "Use the type and range named in the message (see docs/pipeline-format.md);"
                   " the value is ignored until then.",
    DUPLICATE_KEY: "Remove one of the two keys; the last one wins.",
    NEAR_MISS_KEY: "Rename the key to the one suggested (the quick-fix does it); keys that are"
                   " not close to a known key are allowed and left alone.",
    INTERNAL_ERROR: "A bug in budgetlens: the file was not checked. The log (the editor's"
                    " output panel for budgetlens, or BUDGETLENS_TRACEBACK=1 in the CLI) has the"
                    " details; please report it.",
    PIPELINE_UNREADABLE: "Point the check at a UTF-8 YAML file (not a folder, FIFO, binary or"
                         " oversized file).",
    CONFIG_MISSING: "Add a config.json with model_context_window in the pipeline's folder or"
                    " above it, or name one with --config or the editor setting.",
    CONFIG_INVALID: "Make config.json a valid JSON object.",
    WINDOW_INVALID: "Set model_context_window to the model's real context window, an integer"
                    " > 0 (e.g. 8192).",
    CONFIG_VALUE_INVALID: "Use the type named in the message; until then the key's default"
                          " applies.",
    TOKENIZER_INVALID: "Use cl100k_base, o200k_base, a model name such as gpt-4o, or a valid"
                       " tokenizer.json path (with the tokenizers extra installed).",
    POLICY_INVALID: "Set PIPELINE_LIMITS_POLICY (or the override) to fail_fast or auto_clamp.",
    EXTENDS_MISSING: "Correct the extends path: a parent pipeline file, relative to the child.",
    EXTENDS_CYCLE: "Break the cycle, or shorten the chain to at most 32 files.",
    EXTENDS_OUTSIDE: "Keep parent pipelines inside the workspace (no '..' or symlink out).",
    EXTENDS_PARENT_BROKEN: "Fix the errors of the parent pipeline (reported in its file).",
    DUPLICATE_STEP_ID: "Give each step of the pipeline its own id (or name).",
    CONTEXT_INVALID: "Set settings.max_context_tokens to an integer > 0 here or in a parent"
                     " (typically 60-70% of the window).",
    HISTORY_MISSING: "Set settings.max_history_tokens (10-15% of the window is typical) or"
                     " turn use_history off.",
    PROMPT_MISSING: "Create <prompts_dir>/<prompt_key>.txt or correct prompt_key.",
    PROMPT_UNREADABLE: "Store the system prompt as a UTF-8 text file inside the workspace.",
    PROMPT_KEY_MISSING: "Add the prompt_key the run time uses.",
    TEMPLATE_SYNTAX: "Close the placeholder, name it with a Python identifier ({question}), or"
                     " write '{{' and '}}' for literal braces.",
    CONTRACT_VIOLATION: "Lower max_context_tokens, the step's output limit, the history budget"
                        " or the prompt; `budgetlens clamp --diff` shows the clamp plan and"
                        " `budgetlens clamp --write` applies it.",
    OUTPUT_ABOVE_CEILING: "Lower the step's output limit to model_max_output_tokens or below.",
    CANNOT_FIT: "Shorten the system prompt or template, lower the history budget or the margin,"
                " or use a model with a larger window; no clamp can help.",
    OUTPUT_MISSING: "Set max_output_tokens on the step, or model_max_tokens in config.json.",
    INPUT_ABOVE_LIMIT: "Lower the term the message names (usually max_context_tokens) until"
                       " fixed + history + context + margin fits the model's max_input.",
    REASONING_INVALID: "Claude: keep reasoning at 1,024 or more and below the output limit;"
                       " OpenAI: keep output + reasoning within the model's output ceiling.",
    TERM_FILE_UNREADABLE: "Point file: at a JSON file inside the workspace, relative to the"
                          " pipeline file: a list of tool definitions for tools, an object"
                          " for response_schema.",
    MODEL_CONTRADICTED: "Remove the number to use the registry's, or correct it; to run with"
                        " a smaller window on purpose, set serving.max_model_len (or"
                        " serving.num_ctx) instead.",
    MODEL_UNKNOWN: "Use the suggested name (the editor completes registry names), or set"
                   " model_context_window and model_max_output_tokens by hand.",
    SERVING_BINDS: "Nothing to fix if the server's limit is intended; otherwise raise it"
                   " (vLLM --max-model-len, Ollama num_ctx) so the model's full window is"
                   " used.",
    TARGET_DOES_NOT_FIT: "Shorten the step (context, output, prompt) or drop the target:"
                         " the message says by how much it is over.",
    GATEWAY_CAP: "Lower the step's context, history or prompt below the gateway's cap, or"
                 " run the step through another gateway (the message names the source of the"
                 " cap).",
    GATEWAY_UNKNOWN: "Use a gateway or variant the message lists, or remove the key; a model"
                     " without a sourced cap is not checked against the gateway.",
    MODELS_FILE_INVALID: "Correct the value (limits are whole numbers > 0, max_input and"
                         " max_output at most the window; a new model needs a window).",
    PROMPT_OUTPUT_UNSET: "Set the output limit in the format's own key (the message names it);"
                         " `budgetlens clamp --write` inserts it.",
    PROMPT_MAX_TOKENS_REFUSED: "Write the limit as max_completion_tokens (GitHub Models:"
                               " modelParameters.maxCompletionTokens).",
    PROMPT_ENV_UNRESOLVED: "Set the variable where the check runs, or write a default:"
                           " ${env:NAME:default}.",
    PROMPT_FILE_REFERENCE: "Correct the path, or move the file inside the workspace.",
    PROMPT_PARTIAL_MISSING: "Create _name.prompt next to the file (or in a parent folder"
                            " inside the workspace), or correct the partial's name.",
    PROMPT_HELPER_UNKNOWN: "Nothing to do if the helper's output is short; it counts as 0"
                           " tokens.",
    PROMPT_VARIABLE_UNDECLARED: "Declare the variable in the file's inputs (Prompty) or"
                                " input.schema (Dotprompt), or correct its name.",
    PROMPT_FILE_UNREADABLE: "Correct the template (the message quotes the library's error),"
                            " or give the file its messages.",
    PROMPT_VARIABLE_HEADROOM: "Nothing to fix: declare a budget in metadata.budgetlens.vars"
                              " to check it.",
    PROMPT_CASE_DOES_NOT_FIT: "Shorten the case's inputs, lower the output limit or use a"
                              " model with a larger window.",
    UNUSED_SUPPRESSION: "Remove the comment, or the codes it names that no diagnostic of its"
                        " line has (a code may also be off by --select or --ignore).",
    INJECTION_NOT_MAPPING: "Write the policy keys under settings.injection as a mapping.",
    INJECTION_UNKNOWN_KEY: "Correct the key's spelling or remove it (the message lists the"
                           " known keys).",
    INJECTION_INVALID_VALUE: "Use a value in range: shares and percentages in [0, 1], token"
                             " counts whole numbers >= 0, schema_version 1.",
    INJECTION_MIN_ABOVE_MAX: "Lower the minimum or raise max_injection_tokens_absolute.",
    INJECTION_MINS_ABOVE_MAX: "Lower the minimums so that together they fit"
                              " max_injection_tokens_absolute.",
    INJECTION_SHARES_NOT_ONE: "Make knowledge_card_share_default + bucket_content_share_default"
                              " add up to 1.",
    JSON_TRUNCATED: "Run the budgetlens \"show hierarchy context\" command (the quick fix) for"
                    " the budgeted view a continuation prompt needs.",
    JSON_TOO_LARGE: "Analyse the file from the command line with `budgetlens contexts FILE`.",
}
