"""The closed sets of strings of the contract, as ``str``-valued enums: a member is its
string in JSON (``to_jsonable``, ``json.dumps``) and in text (``str``, f-strings)."""

from __future__ import annotations

from budgetlens.enums import TextEnum


class TermSource(TextEnum):
    """The fixed sources of a term (others name a setting: ``settings.max_context_tokens``,
    ``config.json model_max_tokens``, ``half of max_context_tokens 4000``, ...)."""

    MISSING = "missing"
    DEFAULT = "default"
    NO_CONFIG = "no config.json"
    NO_PROMPT_KEY = "no prompt_key"
    NO_TEMPLATE = "no template"
    HISTORY_OFF = "use_history is off"
    CONTEXT_OFF = "use_context: false"
    PROMPT_FILE = "prompt file"
    PROMPT_FILE_NO_CONFIG = "prompt file (no config.json)"
    SHARED_FLOOR = "shared floor"


class OutputSource(TextEnum):
    """Where a step's output limit comes from."""

    MAX_OUTPUT_TOKENS = "max_output_tokens"
    MAX_TOKENS = "max_tokens"
    MODEL_MAX_TOKENS = "model_max_tokens"
    MISSING = "missing"




class PolicySource(TextEnum):
    """Where the limits policy came from (strongest first)."""

    OVERRIDE = "override"
    ENV_POLICY = "env PIPELINE_LIMITS_POLICY"
    CONFIG_DEVELOPMENT = "config development"
    ENV_DEVELOPMENT = "env APP_DEVELOPMENT"
    DEFAULT = "default (not development)"
    PROMPT_FILE = "default for a prompt file (no run time clamps it)"
