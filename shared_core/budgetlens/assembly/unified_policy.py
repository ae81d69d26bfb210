"""The unified context budget policy (``settings.injection``, injection requests) as a pydantic
model: its own module, so that ``unified_budget`` (the arithmetic) loads without pydantic, and
a pipeline whose ``settings.injection`` block is valid is checked without it
(``contract/injection_settings.py`` reads the keys this model gives the committed JSON Schema).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

#: The largest token count an input may give (10^15: far above any window, and exact in the
#: floats the budget arithmetic computes shares with; a larger one is refused, naming its
#: field, instead of overflowing that arithmetic).
MAX_TOKEN_COUNT = 10**15


class UnifiedContextBudgetPolicy(BaseModel):
    """How much of the remaining context window injected context may take, and how it splits.

    Fields, defaults and bounds are those of the unified context budget governance policy
    (schema_version 1). Integers must be whole numbers >= 0 (the minimums at most
    ``MAX_TOKEN_COUNT``; a larger cap is no cap); shares and percentages lie in
    [0, 1]. Unknown keys are rejected.
    """

    # Each field's description is given in Field, not read from attribute docstrings: their
    # extraction reads and parses this module's source whenever the model is built (about
    # 40 ms, in a language server's first check of a pipeline with settings.injection).
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    max_injection_tokens_absolute: int = Field(default=6000, ge=0, description=(
        "Total budget for all injected context (knowledge cards + bucket content), at most."))
    max_injection_tokens_pct_of_context: float = Field(default=0.20, ge=0, le=1, description=(
        "Total budget, at most this fraction of the context remaining before injection."))
    knowledge_card_share_default: float = Field(default=0.40, ge=0, le=1, description=(
        "Knowledge cards' share of the total when both sources have content."))
    bucket_content_share_default: float = Field(default=0.60, ge=0, le=1, description=(
        "Bucket content's share of the total when both sources have content."))
    procedure_sub_budget_pct: float = Field(default=0.30, ge=0, le=1, description=(
        "At most this fraction of the knowledge card budget goes to ``procedure`` cards."))
    interaction_policy_sub_budget_pct: float = Field(default=0.10, ge=0, le=1, description=(
        "At most this fraction of the knowledge card budget goes to ``interaction_policy``"
        " cards."))
    min_knowledge_card_tokens: int = Field(default=500, ge=0, le=MAX_TOKEN_COUNT,
                                           description=(
        "Guaranteed knowledge card budget when both sources have content (scaled if needed)."))
    min_bucket_tokens: int = Field(default=500, ge=0, le=MAX_TOKEN_COUNT, description=(
        "Guaranteed bucket budget when both sources have content (scaled if needed)."))
    schema_version: Literal[1] = Field(default=1, description=(
        "Version of the policy format; 1 is the only one."))


POLICY_FIELDS: tuple[str, ...] = tuple(UnifiedContextBudgetPolicy.model_fields)
