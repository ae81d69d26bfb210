"""Overlap detection by provenance and the background-dedup heuristic."""

from __future__ import annotations

from dataclasses import dataclass

from budgetlens.assembly.overlap import (
    BucketFileRef,
    background_covered_by_cards,
    detect_bucket_overlap,
)


@dataclass(frozen=True)
class Card:
    node_id: str
    provenance_source: str | None = None
    provenance_source_ref: str | None = None
    node_kind: str = "entity"
    matter_id: str | None = None


INLINED = [BucketFileRef("henderson", "complaint"), BucketFileRef("henderson", "answer")]


def test_card_from_an_inlined_bucket_file_is_redundant() -> None:
    cards = [Card("c1", "bucket_file", "henderson:complaint"),
             Card("c2", "bucket_file", "henderson:answer")]
    r = detect_bucket_overlap(bucket_files_to_inline=INLINED, knowledge_card_candidates=cards)
    assert r.redundant_card_ids == ("c1", "c2")
    assert r.retained_card_ids == ()


def test_card_from_a_file_not_being_inlined_is_kept() -> None:
    # henderson:exhibit-a is in manifest mode: not in the inlined list
    cards = [Card("c1", "bucket_file", "henderson:exhibit-a"),
             Card("c2", "bucket_file", "other:complaint")]
    r = detect_bucket_overlap(bucket_files_to_inline=INLINED, knowledge_card_candidates=cards)
    assert r.redundant_card_ids == ()
    assert r.retained_card_ids == ("c1", "c2")


def test_card_with_other_provenance_is_never_suppressed_even_with_a_matching_ref() -> None:
    cards = [Card("conv", "conversation", "henderson:complaint"),
             Card("onb", "onboarding", "henderson:complaint"),
             Card("none", None, "henderson:complaint"),
             Card("noref", "bucket_file", None),
             Card("empty", "bucket_file", "")]
    r = detect_bucket_overlap(bucket_files_to_inline=INLINED, knowledge_card_candidates=cards)
    assert r.redundant_card_ids == ()
    assert r.retained_card_ids == ("conv", "onb", "none", "noref", "empty")


def test_order_is_kept_in_both_lists() -> None:
    cards = [Card("a", "bucket_file", "henderson:answer"), Card("b"),
             Card("c", "bucket_file", "henderson:complaint"), Card("d")]
    r = detect_bucket_overlap(bucket_files_to_inline=INLINED, knowledge_card_candidates=cards)
    assert (r.redundant_card_ids, r.retained_card_ids) == (("a", "c"), ("b", "d"))


def test_nothing_inlined_means_nothing_redundant() -> None:
    cards = [Card("a", "bucket_file", "henderson:answer")]
    r = detect_bucket_overlap(bucket_files_to_inline=[], knowledge_card_candidates=cards)
    assert r.redundant_card_ids == ()


def test_three_entity_cards_of_the_matter_suppress_the_background() -> None:
    cards = [Card(f"c{i}", matter_id="m1") for i in range(3)]
    assert background_covered_by_cards("m1", cards)


def test_two_entity_cards_of_the_matter_keep_the_background() -> None:
    cards = [Card("c1", matter_id="m1"), Card("c2", matter_id="m1"),
             Card("c3", matter_id="m2"), Card("c4")]
    assert not background_covered_by_cards("m1", cards)


def test_procedure_and_interaction_policy_cards_are_not_entity_cards() -> None:
    cards = [Card("c1", matter_id="m1"), Card("c2", matter_id="m1"),
             Card("p", node_kind="procedure", matter_id="m1"),
             Card("i", node_kind="interaction_policy", matter_id="m1")]
    assert not background_covered_by_cards("m1", cards)
    assert background_covered_by_cards("m1", [*cards, Card("c3", matter_id="m1")])


def test_bucket_without_a_matter_never_loses_its_background() -> None:
    cards = [Card(f"c{i}") for i in range(5)]
    assert not background_covered_by_cards(None, cards)


def test_threshold_is_configurable() -> None:
    cards = [Card("c1", matter_id="m1"), Card("c2", matter_id="m1")]
    assert background_covered_by_cards("m1", cards, min_cards=2)
    assert not background_covered_by_cards("m1", cards, min_cards=3)
