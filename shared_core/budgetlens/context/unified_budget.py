"""One injection budget for knowledge cards and bucket content, divided between the two.

``compute_unified_budget`` is the arithmetic of the unified context budget, exactly:

```
remaining = model_context_window - tokens_used_before
total     = min(max_injection_tokens_absolute,
                floor(remaining * max_injection_tokens_pct_of_context))
no bucket content      -> knowledge cards get total, buckets 0
no knowledge cards     -> knowledge cards 0, buckets get total
both                   -> shares (knowledge_card_share_default, bucket_content_share_default),
                          or (0.20, 0.80) when a bucket is the direct target of the request
                          kc = max(min_knowledge_card_tokens, floor(total * knowledge share))
                          bk = max(min_bucket_tokens,         floor(total * bucket share))
                          if kc + bk > total: kc = floor(kc * total / (kc + bk)); bk = total - kc
```

The one departure from the source arithmetic: a negative ``remaining`` (the window is already
overrun before injection) gives a total of 0 and sets ``context_overrun`` instead of producing
negative budgets. Floors are taken on IEEE doubles, as the source does.

>>> b = compute_unified_budget(model_context_window=128_000, tokens_used_before=8_000,
...     policy=UnifiedContextBudgetPolicy(), has_bucket_content=True, has_knowledge_cards=True,
...     bucket_is_direct_target=False)
>>> (b.total_budget, b.knowledge_card_budget, b.bucket_budget)
(6000, 2400, 3600)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from budgetlens.context.text import TextEnum
from budgetlens.serialize import to_jsonable

DIRECT_TARGET_KNOWLEDGE_SHARE = 0.20
DIRECT_TARGET_BUCKET_SHARE = 0.80



class Split(TextEnum):
    """Which branch divided the total (``UnifiedBudget.split``)."""

    KNOWLEDGE_ONLY = "knowledge_only"
    BUCKET_ONLY = "bucket_only"
    BOTH = "both"
    DIRECT_TARGET = "direct_target"


class UnifiedContextBudgetPolicy(BaseModel):
    """How much of the remaining context window injected context may take, and how it splits.

    Fields, defaults and bounds are those of the unified context budget governance policy
    (schema_version 1). Integers must be whole numbers >= 0; shares and percentages lie in
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
    min_knowledge_card_tokens: int = Field(default=500, ge=0, description=(
        "Guaranteed knowledge card budget when both sources have content (scaled if needed)."))
    min_bucket_tokens: int = Field(default=500, ge=0, description=(
        "Guaranteed bucket budget when both sources have content (scaled if needed)."))
    schema_version: Literal[1] = Field(default=1, description=(
        "Version of the policy format; 1 is the only one."))


POLICY_FIELDS: tuple[str, ...] = tuple(UnifiedContextBudgetPolicy.model_fields)


@dataclass(frozen=True)
class UnifiedBudget:
    """The split ``compute_unified_budget`` implies. Every number is >= 0."""

    remaining: int
    """``model_context_window - tokens_used_before``; negative when the window is overrun."""
    total_budget: int
    knowledge_card_budget: int
    bucket_budget: int
    split: Split
    """Which branch divided the total: one source only, both by default shares, or direct target."""
    knowledge_share: float
    bucket_share: float
    scaled: bool
    """True when the minimums pushed the sum over the total and both were scaled down."""
    context_overrun: bool
    """True when ``tokens_used_before`` exceeds the window: nothing can be injected."""
    procedure_sub_budget: int
    interaction_policy_sub_budget: int

    def to_dict(self) -> dict[str, Any]:
        """``to_jsonable(self)``; kept only for contract/injection.py, which still calls it."""
        return dict(to_jsonable(self))


def compute_unified_budget(
    *,
    model_context_window: int,
    tokens_used_before: int,
    policy: UnifiedContextBudgetPolicy | None = None,
    has_bucket_content: bool,
    has_knowledge_cards: bool,
    bucket_is_direct_target: bool = False,
) -> UnifiedBudget:
    """The knowledge card and bucket budgets for one request (see the module docstring)."""
    p = policy if policy is not None else UnifiedContextBudgetPolicy()
    remaining = model_context_window - tokens_used_before
    overrun = remaining < 0
    total = min(p.max_injection_tokens_absolute,
                math.floor(remaining * p.max_injection_tokens_pct_of_context))
    total = max(total, 0)

    knowledge_share = p.knowledge_card_share_default
    bucket_share = p.bucket_content_share_default
    scaled = False
    split: Split
    if not has_bucket_content:
        split, knowledge, bucket = Split.KNOWLEDGE_ONLY, total, 0
        knowledge_share, bucket_share = 1.0, 0.0
    elif not has_knowledge_cards:
        split, knowledge, bucket = Split.BUCKET_ONLY, 0, total
        knowledge_share, bucket_share = 0.0, 1.0
    else:
        split = Split.BOTH
        if bucket_is_direct_target:
            split = Split.DIRECT_TARGET
            knowledge_share = DIRECT_TARGET_KNOWLEDGE_SHARE
            bucket_share = DIRECT_TARGET_BUCKET_SHARE
        knowledge = max(p.min_knowledge_card_tokens, math.floor(total * knowledge_share))
        bucket = max(p.min_bucket_tokens, math.floor(total * bucket_share))
        if knowledge + bucket > total:
            scaled = True
            scale = total / (knowledge + bucket)
            knowledge = math.floor(knowledge * scale)
            bucket = total - knowledge
    return UnifiedBudget(
        remaining=remaining,
        total_budget=total,
        knowledge_card_budget=knowledge,
        bucket_budget=bucket,
        split=split,
        knowledge_share=knowledge_share,
        bucket_share=bucket_share,
        scaled=scaled,
        context_overrun=overrun,
        procedure_sub_budget=math.floor(knowledge * p.procedure_sub_budget_pct),
        interaction_policy_sub_budget=math.floor(knowledge * p.interaction_policy_sub_budget_pct),
    )
