"""plan_injection: the unified injection step a-g, the manifest, and its budget guarantees.

Token numbers are checked against plain tiktoken counts of the block texts, written out here
by hand from the documented rendering (``[header]\\nbody\\n``).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from budgetlens import InjectionRequest, TokenCounter, get_tokenizer, plan_injection
from budgetlens.serialize import to_jsonable

ENC = get_tokenizer("cl100k_base")
NOW = datetime(2026, 4, 3, 14, 5, tzinfo=timezone.utc)


def tok(text: str) -> int:
    return len(ENC.encode(text))


def card(node_id: str, relevance: float = 0.5, **kw: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"node_id": node_id, "node_kind": "entity",
                           "canonical_name": node_id.title(), "relevance_score": relevance,
                           "compact": f"{node_id} compact."}
    out.update(kw)
    return out


def request(**kw: Any) -> InjectionRequest:
    base: dict[str, Any] = {"model_context_window": 100_000, "tokens_used_before": 0}
    base.update(kw)
    return InjectionRequest.model_validate(base)


def plan(**kw: Any):  # type: ignore[no-untyped-def]
    return plan_injection(request(**kw), now=NOW)


def cards_by_id(p: Any) -> dict[str, Any]:
    return {c.node_id: c for c in p.manifest.knowledge_cards}


HENDERSON = {
    "bucket_id": "henderson", "title": "Henderson", "matter_id": "m1",
    "files": [
        {"file_id": "complaint", "name": "complaint.txt", "text": "The complaint text."},
        {"file_id": "8k", "name": "8-K", "mode": "manifest", "summary": "The 8-K."},
    ],
}


def test_card_from_an_inlined_file_is_suppressed_and_recorded() -> None:
    p = plan(buckets=[HENDERSON], knowledge_cards=[
        card("from-complaint", 0.9, provenance_source="bucket_file",
             provenance_source_ref="henderson:complaint"),
        card("from-8k", 0.8, provenance_source="bucket_file",
             provenance_source_ref="henderson:8k"),
        card("from-chat", 0.7, provenance_source="conversation",
             provenance_source_ref="henderson:complaint"),
    ])
    cards = cards_by_id(p)
    assert cards["from-complaint"].suppressed
    assert cards["from-complaint"].suppression_reason == "bucket_file_overlap"
    assert cards["from-complaint"].token_count == 0
    # the 8-K is listed (manifest mode), not inlined: its card stays
    assert not cards["from-8k"].suppressed
    # other provenance is never suppressed
    assert not cards["from-chat"].suppressed
    assert p.manifest.cards_suppressed_by_bucket_overlap == 1
    assert p.manifest.overlap_detections == 1
    assert "from-complaint compact." not in p.rendered
    assert "from-8k compact." in p.rendered


def test_rendered_text_and_token_counts_of_a_small_plan() -> None:
    p = plan(buckets=[HENDERSON], knowledge_cards=[card("acme", 0.1)])
    card_block = "[entity: Acme]\nacme compact.\n"
    file_block = "[bucket Henderson: file complaint.txt]\nThe complaint text.\n"
    listed_block = "[bucket Henderson: file 8-K (not inlined)]\nThe 8-K.\n"
    assert p.rendered == card_block + file_block + listed_block
    m = p.manifest
    assert m.knowledge_cards[0].token_count == tok(card_block)
    assert m.knowledge_cards[0].rendering_tier == "compact"
    bucket = m.bucket_cards[0]
    assert bucket.token_count == tok(file_block) + tok(listed_block)
    assert (bucket.mode, bucket.files_inlined, bucket.files_manifested) == ("inline", 1, 1)
    assert not bucket.background_included
    assert m.total_tokens_used == tok(card_block) + tok(file_block) + tok(listed_block)
    assert tok(p.rendered) == m.total_tokens_used
    # the budget: remaining 100,000 -> 20% = 20,000 -> 6,000; 40/60
    assert (m.total_budget_tokens, m.knowledge_card_budget_tokens,
            m.bucket_content_budget_tokens) == (6000, 2400, 3600)
    assert m.timestamp == "2026-04-03T14:05:00Z"
    assert m.degraded_state == "none" and m.schema_version == 1


def test_tier_follows_relevance_and_falls_back_to_the_texts_given() -> None:
    texts = {"standard": "standard text.", "full": "full text."}
    p = plan(knowledge_cards=[card("hi", 0.9, **texts), card("mid", 0.5, **texts),
                              card("lo", 0.39, **texts), card("nofull", 0.95, standard="s.")])
    cards = cards_by_id(p)
    assert cards["hi"].rendering_tier == "full"
    assert cards["mid"].rendering_tier == "standard"
    assert cards["lo"].rendering_tier == "compact"
    assert cards["nofull"].rendering_tier == "standard"


def test_cards_are_rendered_by_relevance_and_fall_back_to_a_cheaper_tier() -> None:
    big = "word " * 200
    compact_block = "[entity: First]\nfirst compact.\n"
    second_block = "[entity: Second]\nsecond compact.\n"
    budget = tok(compact_block) + tok(second_block)
    # only cards: knowledge gets the whole total = min(absolute, floor(1,000,000 * 1.0))
    policy = {"max_injection_tokens_absolute": budget, "max_injection_tokens_pct_of_context": 1}
    p = plan(model_context_window=1_000_000, policy=policy,
             knowledge_cards=[card("second", 0.8), card("first", 0.9, full=big)])
    cards = cards_by_id(p)
    assert cards["first"].rendering_tier == "compact"  # full does not fit
    assert p.rendered == compact_block + second_block
    assert p.manifest.total_tokens_used == budget
    assert [c.node_id for c in p.manifest.knowledge_cards] == ["first", "second"]


def test_a_card_that_fits_in_no_tier_is_suppressed_for_budget() -> None:
    first = "[entity: First]\nfirst compact.\n"
    policy = {"max_injection_tokens_absolute": tok(first) + 1,
              "max_injection_tokens_pct_of_context": 1}
    p = plan(policy=policy, knowledge_cards=[card("first", 0.9), card("second", 0.8)])
    cards = cards_by_id(p)
    assert not cards["first"].suppressed
    assert cards["second"].suppressed
    assert cards["second"].suppression_reason == "budget_exhausted"
    assert p.manifest.degraded_state == "partial"


def test_procedure_cards_stay_within_their_sub_budget() -> None:
    # knowledge only, total 1,000; procedure share 0 -> procedure sub-budget 0
    policy = {"max_injection_tokens_absolute": 1000, "procedure_sub_budget_pct": 0.0}
    p = plan(policy=policy, knowledge_cards=[card("howto", 0.9, node_kind="procedure"),
                                             card("acme", 0.5)])
    cards = cards_by_id(p)
    assert cards["howto"].suppressed
    assert cards["howto"].suppression_reason == "sub_budget_exhausted:procedure"
    assert not cards["acme"].suppressed


def test_files_inline_when_they_fit_else_listed_else_omitted() -> None:
    small = "[bucket B: file small]\nsmall text.\n"
    listed = "[bucket B: file big (not inlined)]\nA big file.\n"
    # bucket only: total = min(absolute, floor(1,000,000 * 1.0))
    policy = {"max_injection_tokens_absolute": tok(small) + tok(listed),
              "max_injection_tokens_pct_of_context": 1}
    bucket = {"bucket_id": "b", "title": "B", "files": [
        {"file_id": "small", "text": "small text."},
        {"file_id": "big", "text": "lorem ipsum " * 500, "summary": "A big file."},
        {"file_id": "late", "text": "x", "summary": "late"},
    ]}
    p = plan(model_context_window=1_000_000, policy=policy, buckets=[bucket])
    modes = {f.file_id: f.mode for f in p.files}
    assert modes == {"small": "inline", "big": "manifest", "late": "omitted"}
    assert p.rendered == small + listed
    assert p.manifest.bucket_cards[0].token_count == tok(small) + tok(listed)
    assert p.manifest.degraded_state == "partial"


def test_background_suppressed_by_three_entity_cards_of_the_matter() -> None:
    bucket = {"bucket_id": "h", "title": "H", "matter_id": "m1",
              "background": "Henderson is a class action."}
    cards = [card(f"e{i}", 0.5, matter_id="m1") for i in range(3)]
    p = plan(buckets=[bucket], knowledge_cards=cards)
    b = p.manifest.bucket_cards[0]
    assert not b.background_included and b.background_suppressed_by_overlap
    assert b.token_count == 0 and "class action" not in p.rendered
    assert p.manifest.overlap_detections == 1
    assert p.manifest.cards_suppressed_by_bucket_overlap == 0

    p = plan(buckets=[bucket], knowledge_cards=cards[:2])
    b = p.manifest.bucket_cards[0]
    assert b.background_included and not b.background_suppressed_by_overlap
    assert b.token_count == tok("[bucket H: background]\nHenderson is a class action.\n")


def test_cards_dropped_for_budget_do_not_count_for_background_dedup() -> None:
    bucket = {"bucket_id": "h", "title": "H", "matter_id": "m1", "background": "Background."}
    cards = [card(f"e{i}", 0.5, matter_id="m1", compact="word " * 150) for i in range(3)]
    policy = {"max_injection_tokens_absolute": 1000, "min_knowledge_card_tokens": 0,
              "min_bucket_tokens": 0}
    p = plan(buckets=[bucket], knowledge_cards=cards, policy=policy)
    # knowledge budget floor(1,000 * 0.4) = 400; every card block costs the same
    cost = tok("[entity: E0]\n" + ("word " * 150).strip() + "\n")
    assert 400 // cost == 2
    rendered = [c for c in p.manifest.knowledge_cards if not c.suppressed]
    assert len(rendered) == 2
    assert p.manifest.bucket_cards[0].background_included


def test_direct_target_gives_buckets_eighty_percent() -> None:
    p = plan(buckets=[HENDERSON], knowledge_cards=[card("a")], bucket_is_direct_target=True)
    assert (p.manifest.knowledge_card_budget_tokens,
            p.manifest.bucket_content_budget_tokens) == (1200, 4800)


def test_overrun_window_renders_nothing_and_says_unavailable() -> None:
    p = plan(model_context_window=8000, tokens_used_before=9000, buckets=[HENDERSON],
             knowledge_cards=[card("a")])
    assert p.budget.context_overrun
    assert p.rendered == ""
    assert p.manifest.total_tokens_used == 0
    assert p.manifest.degraded_state == "unavailable"
    assert all(c.suppressed for c in p.manifest.knowledge_cards)
    assert [f.mode for f in p.files] == ["omitted", "omitted"]


def test_empty_request_has_an_empty_manifest() -> None:
    p = plan()
    assert p.rendered == "" and p.manifest.total_tokens_used == 0
    assert p.manifest.degraded_state == "none"


def test_manifest_serializes_without_absent_optional_fields() -> None:
    p = plan(trace_id="t-1", timestamp="2026-01-02T03:04:05+02:00",
             knowledge_cards=[card("a", primary_tag="claims")])
    d = to_jsonable(p)["manifest"]
    assert d["trace_id"] == "t-1"
    assert d["timestamp"] == "2026-01-02T01:04:05Z"
    assert d["knowledge_cards"][0]["primary_tag"] == "claims"
    assert "hedge_mode" not in d["knowledge_cards"][0]


@pytest.mark.parametrize(("payload", "where"), [
    ({"knowledge_cards": [card("a"), card("a")]}, "knowledge_cards[1].node_id"),
    ({"buckets": [{"bucket_id": "b"}, {"bucket_id": "b"}]}, "buckets[1].bucket_id"),
    ({"knowledge_cards": [card("x" * 121)]}, "node_id"),
    ({"knowledge_cards": [card("a", node_kind="k" * 41)]}, "node_kind"),
    ({"buckets": [{"bucket_id": "b", "title": "t" * 81}]}, "title"),
    ({"knowledge_cards": [card("a", relevance_score=float("nan"))]}, "relevance_score"),
    ({"tokens_used_before": -1}, "tokens_used_before"),
    ({"model_context_window": 0}, "model_context_window"),
])
def test_invalid_requests_are_rejected(payload: dict[str, Any], where: str) -> None:
    with pytest.raises(ValidationError) as info:
        request(**payload)
    assert where in str(info.value)


# ---------------------------------------------------------------------------------------------
# Properties

WORDS = st.sampled_from(["the", "claim", "Acme", "年", "émigré", "🙂", "10b-5", "\n", "  ",
                         "[x]", "loss", "causation", ".", ","])
TEXT = st.lists(WORDS, min_size=0, max_size=40).map(" ".join)


@st.composite
def requests(draw: st.DrawFn) -> InjectionRequest:
    n_cards = draw(st.integers(0, 8))
    cards = []
    for i in range(n_cards):
        prov = draw(st.sampled_from([None, "bucket_file", "conversation"]))
        cards.append({
            "node_id": f"c{i}", "node_kind": draw(st.sampled_from(
                ["entity", "person", "procedure", "interaction_policy"])),
            "canonical_name": f"Card {i}",
            "relevance_score": draw(st.floats(0, 1)),
            "compact": draw(TEXT), "standard": draw(st.none() | TEXT),
            "full": draw(st.none() | TEXT),
            "provenance_source": prov,
            "provenance_source_ref": f"b{draw(st.integers(0, 2))}:f{draw(st.integers(0, 2))}",
            "matter_id": draw(st.sampled_from([None, "m0", "m1"])),
        })
    buckets = []
    for b in range(draw(st.integers(0, 3))):
        files = [{"file_id": f"f{f}", "text": draw(TEXT), "summary": draw(TEXT),
                  "mode": draw(st.sampled_from(["inline", "manifest"]))}
                 for f in range(draw(st.integers(0, 3)))]
        buckets.append({"bucket_id": f"b{b}", "title": f"B{b}", "background": draw(TEXT),
                        "matter_id": draw(st.sampled_from([None, "m0", "m1"])),
                        "files": files})
    policy = {"max_injection_tokens_absolute": draw(st.integers(0, 400)),
              "max_injection_tokens_pct_of_context": draw(st.floats(0, 1)),
              "min_knowledge_card_tokens": draw(st.integers(0, 300)),
              "min_bucket_tokens": draw(st.integers(0, 300)),
              "procedure_sub_budget_pct": draw(st.floats(0, 1))}
    return InjectionRequest.model_validate({
        "model_context_window": draw(st.integers(1, 5000)),
        "tokens_used_before": draw(st.integers(0, 6000)),
        "bucket_is_direct_target": draw(st.booleans()),
        "policy": policy, "buckets": buckets, "knowledge_cards": cards})


COUNTER = TokenCounter(ENC)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(requests())
def test_nothing_rendered_exceeds_its_budget_and_totals_are_sums(req: InjectionRequest) -> None:
    p = plan_injection(req, counter=COUNTER, now=NOW)
    m = p.manifest
    card_tokens = sum(c.token_count for c in m.knowledge_cards)
    bucket_tokens = sum(b.token_count for b in m.bucket_cards)
    assert card_tokens <= m.knowledge_card_budget_tokens
    assert bucket_tokens <= m.bucket_content_budget_tokens
    assert m.knowledge_card_budget_tokens + m.bucket_content_budget_tokens \
        <= m.total_budget_tokens
    assert m.total_tokens_used == card_tokens + bucket_tokens
    # the real counts of the rendered sections, by plain tiktoken
    assert tok(p.cards_text) == card_tokens
    assert tok(p.buckets_text) == bucket_tokens
    for part in p.card_parts:
        assert cards_by_id(p)[part.ref].token_count == tok(part.text)
    for b in m.bucket_cards:
        parts = [x for x in p.bucket_parts if x.ref == b.bucket_id
                 or x.ref.startswith(b.bucket_id + ":")]
        assert b.token_count == sum(tok(x.text) for x in parts)
        assert b.files_inlined == sum(1 for x in parts if x.kind == "file")
        assert b.files_manifested == sum(1 for x in parts if x.kind == "listed_file")
    for c in m.knowledge_cards:
        assert (c.token_count == 0) == c.suppressed
    assert all(v >= 0 for v in (m.total_budget_tokens, m.knowledge_card_budget_tokens,
                                m.bucket_content_budget_tokens))


class BoundaryTaxTokenizer:
    """Not additive: every newline followed by '[' costs 5 extra tokens."""

    name = "boundary-tax"

    def encode(self, text: str) -> list[int]:
        return [0] * self.count(text)

    def count(self, text: str) -> int:
        return len(text.split()) + 5 * text.count("\n[")


def test_non_additive_tokenizer_still_never_exceeds_a_budget() -> None:
    counter = TokenCounter(BoundaryTaxTokenizer())
    cards = [card(f"c{i}", 0.5, compact="one two three") for i in range(10)]
    # card block "[entity: Cn]\none two three\n" = 5 words; 30 fits 6 in isolation,
    # but joined each boundary costs 5 more: 6 blocks = 30 + 25 > 30.
    req = request(policy={"max_injection_tokens_absolute": 30,
                          "max_injection_tokens_pct_of_context": 1},
                  knowledge_cards=cards)
    p = plan_injection(req, counter=counter, now=NOW)
    assert counter.count(p.cards_text) <= 30
    rendered = [c for c in p.manifest.knowledge_cards if not c.suppressed]
    # n blocks joined cost 5n + 5(n-1) <= 30 -> n = 3
    assert len(rendered) == 3
    assert p.manifest.total_tokens_used == 15
