"""The unified budget arithmetic, one hand-computed case per branch.

Each expected number is worked out in the comment above it (floors of plain products).
"""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from budgetlens import UnifiedContextBudgetPolicy, compute_unified_budget


def budget(window: int, used: int, *, buckets: bool = True, cards: bool = True,
           direct: bool = False, policy: UnifiedContextBudgetPolicy | None = None):
    return compute_unified_budget(model_context_window=window, tokens_used_before=used,
                                  policy=policy or UnifiedContextBudgetPolicy(),
                                  has_bucket_content=buckets, has_knowledge_cards=cards,
                                  bucket_is_direct_target=direct)


def test_policy_defaults_are_the_governance_defaults() -> None:
    p = UnifiedContextBudgetPolicy()
    assert (p.max_injection_tokens_absolute, p.max_injection_tokens_pct_of_context) == (6000, 0.20)
    assert (p.knowledge_card_share_default, p.bucket_content_share_default) == (0.40, 0.60)
    assert (p.procedure_sub_budget_pct, p.interaction_policy_sub_budget_pct) == (0.30, 0.10)
    assert (p.min_knowledge_card_tokens, p.min_bucket_tokens) == (500, 500)
    assert p.schema_version == 1


def test_both_sources_default_shares_capped_by_the_absolute_maximum() -> None:
    # remaining 120,000; 20% = 24,000; min(6,000, 24,000) = 6,000; 40% = 2,400; 60% = 3,600
    b = budget(128_000, 8_000)
    assert (b.remaining, b.total_budget) == (120_000, 6000)
    assert (b.knowledge_card_budget, b.bucket_budget) == (2400, 3600)
    assert b.split == "both" and not b.scaled and not b.context_overrun
    # sub-budgets within the card share: 30% of 2,400 = 720, 10% = 240
    assert (b.procedure_sub_budget, b.interaction_policy_sub_budget) == (720, 240)


def test_total_is_the_percentage_when_it_is_below_the_absolute_maximum() -> None:
    # remaining 20,000; 20% = 4,000 < 6,000; 40% = 1,600; 60% = 2,400
    b = budget(32_000, 12_000)
    assert (b.total_budget, b.knowledge_card_budget, b.bucket_budget) == (4000, 1600, 2400)


def test_percentage_is_floored() -> None:
    # remaining 10,007; 20% = 2,001.4 -> 2,001; 40% = 800.4 -> 800; 60% = 1,200.6 -> 1,200
    b = budget(10_007, 0)
    assert (b.total_budget, b.knowledge_card_budget, b.bucket_budget) == (2001, 800, 1200)


def test_only_knowledge_cards_get_the_whole_budget() -> None:
    # remaining 8,000; 20% = 1,600
    b = budget(10_000, 2_000, buckets=False)
    assert (b.total_budget, b.knowledge_card_budget, b.bucket_budget) == (1600, 1600, 0)
    assert b.split == "knowledge_only"


def test_only_bucket_content_gets_the_whole_budget() -> None:
    b = budget(10_000, 2_000, cards=False)
    assert (b.total_budget, b.knowledge_card_budget, b.bucket_budget) == (1600, 0, 1600)
    assert b.split == "bucket_only"


def test_neither_source_follows_the_first_branch_knowledge_gets_the_total() -> None:
    b = budget(10_000, 2_000, buckets=False, cards=False)
    assert (b.knowledge_card_budget, b.bucket_budget) == (1600, 0)


def test_one_source_ignores_the_minimum_of_the_other() -> None:
    # total 100 (remaining 500 * 0.2); the other source's 500 minimum does not apply
    b = budget(1_000, 500, buckets=False)
    assert (b.total_budget, b.knowledge_card_budget, b.bucket_budget) == (100, 100, 0)


def test_direct_target_shifts_to_twenty_eighty() -> None:
    # total 6,000; 20% = 1,200; 80% = 4,800 (the policy's 0.4/0.6 are ignored)
    b = budget(128_000, 8_000, direct=True)
    assert (b.knowledge_card_budget, b.bucket_budget) == (1200, 4800)
    assert b.split == "direct_target"
    assert (b.knowledge_share, b.bucket_share) == (0.20, 0.80)


def test_direct_target_with_one_source_still_gives_it_everything() -> None:
    b = budget(128_000, 8_000, direct=True, cards=False)
    assert (b.knowledge_card_budget, b.bucket_budget) == (0, 6000)


def test_minimums_override_shares_and_scale_when_the_sum_is_over_the_total() -> None:
    # remaining 10,000 -> total 2,000; 40% = 800, 60% = 1,200; mins 300 / 1,500:
    # kc = max(300, 800) = 800, bk = max(1,500, 1,200) = 1,500 -> 2,300 > 2,000 -> scaled:
    # kc = floor(800 * 2,000 / 2,300) = floor(695.65) = 695, bk = 2,000 - 695 = 1,305
    p = UnifiedContextBudgetPolicy(min_knowledge_card_tokens=300, min_bucket_tokens=1500)
    b = budget(10_000, 0, policy=p)
    assert (b.knowledge_card_budget, b.bucket_budget) == (695, 1305)
    assert b.scaled
    # with mins 300 / 1,100: kc 800, bk 1,200 (the share wins) -> 2,000, no scaling
    p = UnifiedContextBudgetPolicy(min_knowledge_card_tokens=300, min_bucket_tokens=1100)
    b = budget(10_000, 0, policy=p)
    assert (b.knowledge_card_budget, b.bucket_budget, b.scaled) == (800, 1200, False)
    # mins 900 / 300 with shares 0.4/0.6 of 2,000: kc = max(900, 800) = 900, bk = 1,200
    # -> 2,100 > 2,000 -> kc = floor(900 * 2,000 / 2,100) = floor(857.14) = 857, bk = 1,143
    p = UnifiedContextBudgetPolicy(min_knowledge_card_tokens=900, min_bucket_tokens=300)
    b = budget(10_000, 0, policy=p)
    assert (b.knowledge_card_budget, b.bucket_budget) == (857, 1143)


def test_default_minimums_scale_proportionally_on_a_small_total() -> None:
    # remaining 4,000 -> total 800; kc = max(500, 320) = 500, bk = max(500, 480) = 500
    # -> 1,000 > 800 -> kc = floor(500 * 0.8) = 400, bk = 800 - 400 = 400
    b = budget(10_000, 6_000)
    assert (b.total_budget, b.knowledge_card_budget, b.bucket_budget) == (800, 400, 400)
    assert b.scaled


def test_tiny_remaining_budget() -> None:
    # remaining 96 -> total floor(19.2) = 19; kc = bk = 500 -> scale 19/1,000:
    # kc = floor(9.5) = 9, bk = 19 - 9 = 10
    b = budget(4_096, 4_000)
    assert (b.total_budget, b.knowledge_card_budget, b.bucket_budget) == (19, 9, 10)
    assert b.scaled and not b.context_overrun


def test_exactly_full_window_gives_zero_without_the_overrun_flag() -> None:
    b = budget(8_000, 8_000)
    assert (b.remaining, b.total_budget, b.knowledge_card_budget, b.bucket_budget) == (0, 0, 0, 0)
    assert not b.context_overrun


@pytest.mark.parametrize(("buckets", "cards", "direct"),
                         [(True, True, False), (True, True, True), (False, True, False),
                          (True, False, False)])
def test_negative_remaining_gives_zero_budgets_and_the_overrun_flag(
        buckets: bool, cards: bool, direct: bool) -> None:
    b = budget(8_000, 9_000, buckets=buckets, cards=cards, direct=direct)
    assert b.remaining == -1000
    assert (b.total_budget, b.knowledge_card_budget, b.bucket_budget) == (0, 0, 0)
    assert (b.procedure_sub_budget, b.interaction_policy_sub_budget) == (0, 0)
    assert b.context_overrun


def test_policy_can_be_omitted() -> None:
    b = compute_unified_budget(model_context_window=128_000, tokens_used_before=8_000,
                               has_bucket_content=True, has_knowledge_cards=True)
    assert (b.knowledge_card_budget, b.bucket_budget) == (2400, 3600)


@pytest.mark.parametrize(("field", "value"), [
    ("knowledge_card_share_default", 1.5),
    ("bucket_content_share_default", -0.1),
    ("max_injection_tokens_pct_of_context", 2),
    ("procedure_sub_budget_pct", 1.01),
    ("max_injection_tokens_absolute", -1),
    ("min_bucket_tokens", 12.5),
    ("min_knowledge_card_tokens", True),
    ("max_injection_tokens_absolute", "6000"),
    ("schema_version", 2),
])
def test_policy_rejects_out_of_bound_values_naming_the_field(field: str, value: object) -> None:
    with pytest.raises(ValidationError) as info:
        UnifiedContextBudgetPolicy.model_validate({field: value})
    assert [e["loc"] for e in info.value.errors()] == [(field,)]


def test_policy_rejects_unknown_keys() -> None:
    with pytest.raises(ValidationError) as info:
        UnifiedContextBudgetPolicy.model_validate({"max_injection_tokens": 10})
    assert info.value.errors()[0]["type"] == "extra_forbidden"
