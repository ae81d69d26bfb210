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
from typing import TYPE_CHECKING, Any, Protocol

from budgetlens.enums import TextEnum

if TYPE_CHECKING:  # the policy model loads on first use: see __getattr__ below
    from budgetlens.assembly.unified_policy import POLICY_FIELDS as POLICY_FIELDS
    from budgetlens.assembly.unified_policy import (
        UnifiedContextBudgetPolicy as UnifiedContextBudgetPolicy,
    )

DIRECT_TARGET_KNOWLEDGE_SHARE = 0.20
DIRECT_TARGET_BUCKET_SHARE = 0.80



class Split(TextEnum):
    """Which branch divided the total (``UnifiedBudget.split``)."""

    KNOWLEDGE_ONLY = "knowledge_only"
    BUCKET_ONLY = "bucket_only"
    BOTH = "both"
    DIRECT_TARGET = "direct_target"


class PolicyValues(Protocol):
    """What ``compute_unified_budget`` reads of a policy: a ``UnifiedContextBudgetPolicy``, or
    the contract's light copy of one (``contract/injection_settings.py``, read without pydantic)."""

    @property
    def max_injection_tokens_absolute(self) -> int: ...
    @property
    def max_injection_tokens_pct_of_context(self) -> float: ...
    @property
    def knowledge_card_share_default(self) -> float: ...
    @property
    def bucket_content_share_default(self) -> float: ...
    @property
    def procedure_sub_budget_pct(self) -> float: ...
    @property
    def interaction_policy_sub_budget_pct(self) -> float: ...
    @property
    def min_knowledge_card_tokens(self) -> int: ...
    @property
    def min_bucket_tokens(self) -> int: ...


def __getattr__(name: str) -> Any:
    """``UnifiedContextBudgetPolicy`` and ``POLICY_FIELDS``, from ``unified_policy`` on first
    use: the model is pydantic's, and a check whose policy is valid needs none (start-up
    speed)."""
    if name in ("UnifiedContextBudgetPolicy", "POLICY_FIELDS"):
        from budgetlens.assembly import unified_policy  # see the docstring

        return getattr(unified_policy, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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


def compute_unified_budget(
    *,
    model_context_window: int,
    tokens_used_before: int,
    policy: PolicyValues | None = None,
    has_bucket_content: bool,
    has_knowledge_cards: bool,
    bucket_is_direct_target: bool = False,
) -> UnifiedBudget:
    """The knowledge card and bucket budgets for one request (see the module docstring)."""
    if policy is None:
        from budgetlens.assembly.unified_policy import UnifiedContextBudgetPolicy  # see above

        policy = UnifiedContextBudgetPolicy()
    p = policy
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
