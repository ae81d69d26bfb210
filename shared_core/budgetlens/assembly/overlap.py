"""Which knowledge cards (and bucket backgrounds) repeat content already being injected.

Rules (unified context budget governance, overlap detection by provenance):

1. A card whose ``provenance_source`` is ``"bucket_file"`` and whose ``provenance_source_ref``
   names a bucket file (``"{bucket_id}:{file_id}"``) that is being **inlined** is redundant:
   it is suppressed with the reason ``bucket_file_overlap`` (the full text is in context).
2. A card extracted from a bucket file in **manifest** mode (listed, not inlined) is kept: the
   card says more than the manifest entry. (Only inlined files are passed in, so such a card
   never matches.)
3. A card whose provenance is anything other than ``bucket_file`` is never suppressed by this
   mechanism, even when it describes the same entity as a bucket file.
4. Background dedup: a bucket's background text is suppressed when ``min_cards`` (default 3)
   or more *entity* cards linked to the bucket's matter are being injected; with fewer, the
   background is kept (it may hold what the graph does not know yet). Cards of the kinds
   ``procedure`` and ``interaction_policy`` are not entity cards.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

BUCKET_FILE_PROVENANCE = "bucket_file"
BUCKET_FILE_OVERLAP = "bucket_file_overlap"
BACKGROUND_DEDUP_MIN_CARDS = 3
NON_ENTITY_KINDS = frozenset({"procedure", "interaction_policy"})


class ProvenancedCard(Protocol):
    """What overlap detection reads from a knowledge card candidate."""

    @property
    def node_id(self) -> str: ...

    @property
    def provenance_source(self) -> str | None: ...

    @property
    def provenance_source_ref(self) -> str | None: ...


class MatterCard(Protocol):
    """What the background-dedup heuristic reads from an injected knowledge card."""

    @property
    def node_kind(self) -> str: ...

    @property
    def matter_id(self) -> str | None: ...


@dataclass(frozen=True)
class BucketFileRef:
    """A bucket file, as provenance refers to it: ``"{bucket_id}:{file_id}"``."""

    bucket_id: str
    file_id: str

    @property
    def ref(self) -> str:
        return f"{self.bucket_id}:{self.file_id}"


@dataclass(frozen=True)
class OverlapResult:
    """Card ids split into redundant (to suppress) and retained, each in input order."""

    redundant_card_ids: tuple[str, ...]
    retained_card_ids: tuple[str, ...]


def detect_bucket_overlap(
    *,
    bucket_files_to_inline: Iterable[BucketFileRef],
    knowledge_card_candidates: Iterable[ProvenancedCard],
) -> OverlapResult:
    """Split the card candidates into redundant and retained (rules 1-3 of the module doc)."""
    inlined = {f.ref for f in bucket_files_to_inline}
    redundant: list[str] = []
    retained: list[str] = []
    for card in knowledge_card_candidates:
        if (card.provenance_source == BUCKET_FILE_PROVENANCE and card.provenance_source_ref
                and card.provenance_source_ref in inlined):
            redundant.append(card.node_id)
        else:
            retained.append(card.node_id)
    return OverlapResult(tuple(redundant), tuple(retained))


def background_covered_by_cards(
    matter_id: str | None,
    injected_cards: Iterable[MatterCard],
    *,
    min_cards: int = BACKGROUND_DEDUP_MIN_CARDS,
) -> bool:
    """True when the bucket background should be suppressed (rule 4 of the module doc).

    ``matter_id`` is the bucket's matter (None: the bucket has none, never suppressed);
    ``injected_cards`` are the cards actually being injected, not the suppressed ones.
    """
    if matter_id is None:
        return False
    linked = sum(1 for c in injected_cards
                 if c.matter_id == matter_id and c.node_kind not in NON_ENTITY_KINDS)
    return linked >= min_cards
