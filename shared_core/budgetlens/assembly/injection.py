"""The unified injection step: budget, bucket files, knowledge cards, overlap, manifest.

``plan_injection(request)`` runs the seven sub-steps of the unified injection step in order:

a. compute the unified budget (``compute_unified_budget``) from the window, the tokens used
   before injection and the policy; cards and buckets "have content" when the request lists
   any card candidate / any bucket background or file;
b. decide the bucket files, within the bucket budget: every non-empty bucket background is
   reserved first (in bucket order; one that does not fit is left out), then each file in
   order is **inlined** when its mode is ``inline`` (the default) and its text fits what is
   left, else **listed** (manifest mode: name and summary) when that fits, else omitted;
c. take the knowledge card candidates, ranked by ``relevance_score`` (highest first, ties by
   ``node_id``);
d. run overlap detection (``detect_bucket_overlap``) against the inlined files: redundant cards
   are suppressed with reason ``bucket_file_overlap`` and cost nothing;
e. render the other cards within the knowledge card budget, in rank order: each card wants the
   tier its relevance earns (``full`` >= 0.75, ``standard`` >= 0.40, else ``compact``; see
   ``TierThresholds``) and falls back to cheaper tiers until one fits what is left; cards of
   kind ``procedure`` / ``interaction_policy`` also stay within their sub-budgets. A card that
   fits in no tier is suppressed with reason ``budget_exhausted``;
f. render the buckets within the bucket budget: a reserved background is dropped again when 3+
   entity cards of the bucket's matter were rendered (``background_covered_by_cards``);
g. build the ``UnifiedInjectionManifest``.

Every rendered part is a block of text that starts with a ``[`` header line and ends with a
newline; its ``token_count`` is the count of that block with the request's tokenizer. Section
totals are sums of parts, and never exceed their budget. With the shipped tiktoken encodings
the count of the concatenated text equals that sum (the pre-tokenizer always splits at a
newline followed by ``[``); for any other tokenizer each section is counted again as one text
and its last parts are dropped until it fits (cards suppressed in step d stay suppressed).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from budgetlens.assembly.overlap import (
    BUCKET_FILE_OVERLAP,
    BucketFileRef,
    background_covered_by_cards,
    detect_bucket_overlap,
)
from budgetlens.assembly.text import one_line
from budgetlens.assembly.unified_budget import (
    UnifiedBudget,
    UnifiedContextBudgetPolicy,
    compute_unified_budget,
)
from budgetlens.assembly.unified_policy import MAX_TOKEN_COUNT
from budgetlens.enums import TextEnum
from budgetlens.serialize import JSON_AS, OMIT
from budgetlens.tokens.core import TokenCounter, TokenizerLike, as_counter

BUDGET_EXHAUSTED = "budget_exhausted"
SUB_BUDGET_EXHAUSTED = "sub_budget_exhausted"
PROCEDURE_KIND = "procedure"
INTERACTION_POLICY_KIND = "interaction_policy"

_BUCKET_EXHAUSTED = "bucket budget exhausted"


class InjectionTier(TextEnum):
    """The rendering of a knowledge card, cheapest first."""

    COMPACT = "compact"
    STANDARD = "standard"
    FULL = "full"


_TIER_ORDER: tuple[InjectionTier, ...] = (InjectionTier.FULL, InjectionTier.STANDARD,
                                          InjectionTier.COMPACT)


class BucketMode(TextEnum):
    """How a bucket's content is injected (``ManifestBucketCard.mode``)."""

    INLINE = "inline"
    MANIFEST = "manifest"


class FileMode(TextEnum):
    """What became of a bucket file (``FileDecision.mode``)."""

    INLINE = "inline"
    MANIFEST = "manifest"
    OMITTED = "omitted"


class PartKind(TextEnum):
    """What a ``RenderedPart`` renders."""

    CARD = "card"
    BACKGROUND = "background"
    FILE = "file"
    LISTED_FILE = "listed_file"


class DegradedState(TextEnum):
    """``UnifiedInjectionManifest.degraded_state`` (see its docstring)."""

    NONE = "none"
    PARTIAL = "partial"
    UNAVAILABLE = "unavailable"

Id = Annotated[str, StringConstraints(min_length=1, max_length=120)]
Str40 = Annotated[str, StringConstraints(max_length=40)]
Str80 = Annotated[str, StringConstraints(max_length=80)]
Str120 = Annotated[str, StringConstraints(max_length=120)]
Str200 = Annotated[str, StringConstraints(max_length=200)]

_INPUT = ConfigDict(extra="forbid", frozen=True, strict=True)


# ----------------------------------------------------------------------------------------------
# Request


class BucketFile(BaseModel):
    """A file of a bucket: its full ``text`` (inline mode) and a one-line ``summary``."""

    model_config = _INPUT

    file_id: Id
    name: Str200 = ""
    """Display name (default: ``file_id``)."""
    text: str = ""
    summary: str = ""
    """Shown when the file is listed rather than inlined."""
    mode: Literal["inline", "manifest"] = "inline"
    """``inline``: inline the text when it fits, else list it; ``manifest``: always list it."""


class Bucket(BaseModel):
    """A bucket of user material for a matter: a short background and files."""

    model_config = _INPUT

    bucket_id: Id
    title: Str80 = ""
    background: str = ""
    matter_id: Str120 | None = None
    """The matter the bucket belongs to (background dedup counts cards of this matter)."""
    files: list[BucketFile] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique_files(self) -> Bucket:
        _check_unique([f.file_id for f in self.files], "files", "file_id")
        return self


class KnowledgeCardCandidate(BaseModel):
    """A knowledge card that may be injected, with its text in up to three tiers."""

    model_config = _INPUT

    node_id: Id
    node_kind: Annotated[str, StringConstraints(min_length=1, max_length=40)]
    canonical_name: Annotated[str, StringConstraints(min_length=1, max_length=200)]
    relevance_score: float = Field(allow_inf_nan=False)
    compact: str
    """The shortest rendering (required)."""
    standard: str | None = None
    full: str | None = None
    provenance_source: Str40 | None = None
    """``bucket_file`` for cards extracted from a bucket file; anything else is never suppressed."""
    provenance_source_ref: Annotated[str, StringConstraints(max_length=241)] | None = None
    """``"{bucket_id}:{file_id}"`` of the bucket file the card was extracted from."""
    matter_id: Str120 | None = None
    resolution_source: Str40 | None = None
    primary_tag: Str80 | None = None
    hedge_mode: Str80 | None = None
    force_level: Str80 | None = None
    source_bundle_ids: list[Str120] = Field(default_factory=list)

    def text_for(self, tier: InjectionTier) -> str | None:
        return self.full if tier == InjectionTier.FULL \
            else self.standard if tier == InjectionTier.STANDARD else self.compact


class InjectionRequest(BaseModel):
    """Everything one unified injection step needs (the ``budgetlens inject`` PLAN.json)."""

    model_config = _INPUT

    trace_id: Str120 = ""
    timestamp: datetime | None = Field(default=None, strict=False)
    """ISO 8601, stamped on the manifest; default: the time of the call (UTC)."""
    model_context_window: int = Field(gt=0, le=MAX_TOKEN_COUNT)
    tokens_used_before: int = Field(ge=0, le=MAX_TOKEN_COUNT)
    bucket_is_direct_target: bool = False
    """The user referenced a bucket or its content: the split shifts to 0.20 / 0.80."""
    policy: UnifiedContextBudgetPolicy = Field(default_factory=UnifiedContextBudgetPolicy)
    buckets: list[Bucket] = Field(default_factory=list)
    knowledge_cards: list[KnowledgeCardCandidate] = Field(default_factory=list)
    tokenizer: str | None = None
    """Tokenizer spec (see ``get_tokenizer``); default ``cl100k_base``."""

    @model_validator(mode="after")
    def _unique_ids(self) -> InjectionRequest:
        _check_unique([b.bucket_id for b in self.buckets], "buckets", "bucket_id")
        _check_unique([c.node_id for c in self.knowledge_cards], "knowledge_cards", "node_id")
        return self


def _check_unique(ids: Sequence[str], where: str, key: str) -> None:
    seen: dict[str, int] = {}
    for i, value in enumerate(ids):
        if value in seen:
            raise ValueError(f"{where}[{i}].{key}: {value!r} repeats {where}[{seen[value]}]")
        seen[value] = i


@dataclass(frozen=True)
class TierThresholds:
    """Relevance needed for a card to want its ``full`` or ``standard`` rendering."""

    full: float = 0.75
    standard: float = 0.40

    def tier_for(self, relevance: float) -> InjectionTier:
        if relevance >= self.full:
            return InjectionTier.FULL
        return InjectionTier.STANDARD if relevance >= self.standard else InjectionTier.COMPACT


# ----------------------------------------------------------------------------------------------
# Manifest (fields and limits of the unified injection manifest, schema_version 1)

_OUTPUT = ConfigDict(extra="forbid", frozen=True)


class ManifestKnowledgeCard(BaseModel):
    model_config = _OUTPUT

    node_id: Str120
    node_kind: Str40
    canonical_name: Str200
    rendering_tier: InjectionTier
    token_count: int
    relevance_score: float
    resolution_source: Str40 | None = None
    primary_tag: Str80 | None = None
    hedge_mode: Str80 | None = None
    force_level: Str80 | None = None
    source_bundle_ids: list[Str120] = Field(default_factory=list)
    suppressed: bool = False
    suppression_reason: Str120 | None = None


class ManifestBucketCard(BaseModel):
    model_config = _OUTPUT

    bucket_id: Str120
    bucket_title: Str80
    mode: BucketMode
    background_included: bool
    background_suppressed_by_overlap: bool = False
    files_inlined: int = 0
    files_manifested: int = 0
    token_count: int


class UnifiedInjectionManifest(BaseModel):
    """The inspectable record of one injection (cards and buckets, budgets and overlap).

    ``total_tokens_used`` is the sum of every card's and bucket's ``token_count``;
    ``overlap_detections`` counts every suppression by overlap (cards + bucket backgrounds);
    ``degraded_state`` is ``unavailable`` when there was content but no budget at all,
    ``partial`` when a card, background or file was left out for lack of budget.
    """

    model_config = _OUTPUT

    trace_id: Str120
    timestamp: str
    """ISO 8601, UTC (``...Z``)."""
    total_budget_tokens: int
    knowledge_card_budget_tokens: int
    bucket_content_budget_tokens: int
    total_tokens_used: int
    knowledge_cards: list[ManifestKnowledgeCard] = Field(default_factory=list)
    bucket_cards: list[ManifestBucketCard] = Field(default_factory=list)
    overlap_detections: int = 0
    cards_suppressed_by_bucket_overlap: int = 0
    degraded_state: DegradedState = DegradedState.NONE
    schema_version: Literal[1] = 1


# ----------------------------------------------------------------------------------------------
# Plan


@dataclass(frozen=True)
class RenderedPart:
    """One rendered block: a card, a bucket background, an inlined or a listed file."""

    kind: PartKind
    ref: str
    """``node_id`` for a card, ``bucket_id`` for a background, ``bucket_id:file_id`` for files."""
    text: str
    tokens: int


@dataclass(frozen=True)
class FileDecision:
    """How one bucket file was placed; its JSON has ``reason`` only when there is one."""

    bucket_id: str
    file_id: str
    mode: FileMode
    tokens: int
    reason: str = field(default="", metadata={JSON_AS: lambda reason: reason or OMIT})


def _manifest_data(manifest: UnifiedInjectionManifest) -> dict[str, Any]:
    """The manifest as JSON data; absent optional fields (None) are left out."""
    return manifest.model_dump(mode="json", exclude_none=True)


@dataclass(frozen=True)
class InjectionPlan:
    """The result of ``plan_injection``: the manifest, the budget and the rendered parts.

    Its JSON (``to_jsonable``; ``budgetlens inject --format json``) has the manifest (absent
    optional fields left out), the budget, the tokenizer, the file decisions and the text."""

    manifest: UnifiedInjectionManifest = field(metadata={JSON_AS: _manifest_data})
    budget: UnifiedBudget
    card_parts: tuple[RenderedPart, ...]
    bucket_parts: tuple[RenderedPart, ...]
    files: tuple[FileDecision, ...] = field(default=())
    tokenizer: str = ""

    @property
    def cards_text(self) -> str:
        return "".join(p.text for p in self.card_parts)

    @property
    def buckets_text(self) -> str:
        return "".join(p.text for p in self.bucket_parts)

    @property
    def rendered(self) -> str:
        """The text to inject: knowledge cards, then bucket content."""
        return self.cards_text + self.buckets_text

    JSON_ORDER: ClassVar = ("manifest", "budget", "tokenizer", "files", "rendered")


def _block(header: str, body: str) -> str:
    body = body.strip()
    return f"[{one_line(header)}]\n{body}\n" if body else f"[{one_line(header)}]\n"


def _card_block(card: KnowledgeCardCandidate, text: str) -> str:
    return _block(f"{card.node_kind}: {card.canonical_name}", text)


def _bucket_label(bucket: Bucket) -> str:
    return bucket.title or bucket.bucket_id


def _file_label(f: BucketFile) -> str:
    return f.name or f.file_id


@dataclass
class _BucketState:
    bucket: Bucket
    background: RenderedPart | None = None
    background_suppressed: bool = False
    files: list[RenderedPart] = field(default_factory=list)
    inlined: int = 0
    listed: int = 0


def _timestamp(request: InjectionRequest, now: datetime | None) -> str:
    ts = request.timestamp or now or datetime.now(timezone.utc)
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=timezone.utc)
    return ts.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def _fits_joined(parts: list[RenderedPart], budget: int, counter: TokenCounter) -> bool:
    return counter.count("".join(p.text for p in parts)) <= budget


def plan_injection(
    request: InjectionRequest,
    *,
    counter: TokenizerLike | None = None,
    tiers: TierThresholds = TierThresholds(),
    now: datetime | None = None,
) -> InjectionPlan:
    """Run the unified injection step (a-g of the module doc) and return its plan.

    ``counter`` counts tokens (default: a fresh counter for ``request.tokenizer``): any
    tokenizer (a name, a tokenizer object, a function ``text -> int``), or a ``TokenCounter``
    you keep between requests to reuse its cache. Raises ``TokenizerError`` for an unknown
    tokenizer; the request is validated by its model.
    """
    count = as_counter(request.tokenizer if counter is None else counter)
    budget = _step_a_budget(request)
    states = [_BucketState(b) for b in request.buckets]
    files = _step_b_bucket_files(states, budget.bucket_budget, count)
    ranked = _step_c_rank_cards(request.knowledge_cards)
    redundant = _step_d_overlap(ranked, files.inlined)
    cards = _step_e_render_cards(ranked, redundant, budget, tiers, count)
    buckets = _step_f_render_buckets(states, cards.rendered, budget.bucket_budget, count)
    degraded = files.degraded or cards.degraded or buckets.degraded
    manifest = _step_g_manifest(request, budget, ranked, cards, states, _Tally(
        degraded=degraded, overlap=len(redundant) + buckets.suppressed_backgrounds,
        cards_by_overlap=len(redundant)), _timestamp(request, now))
    decisions = tuple(_final_decision(d, states) for d in files.decisions)
    return InjectionPlan(manifest, budget, tuple(cards.parts), tuple(buckets.parts),
                         decisions, count.name)


def _has_bucket_content(request: InjectionRequest) -> bool:
    return any(b.background.strip() or b.files for b in request.buckets)


# a. the unified budget

def _step_a_budget(request: InjectionRequest) -> UnifiedBudget:
    return compute_unified_budget(
        model_context_window=request.model_context_window,
        tokens_used_before=request.tokens_used_before,
        policy=request.policy,
        has_bucket_content=_has_bucket_content(request),
        has_knowledge_cards=bool(request.knowledge_cards),
        bucket_is_direct_target=request.bucket_is_direct_target,
    )


# b. bucket backgrounds reserved first, then each file inline, listed (manifest) or omitted

@dataclass
class _FilePlacement:
    left: int
    """Bucket budget not yet taken."""
    decisions: list[FileDecision] = field(default_factory=list)
    inlined: list[BucketFileRef] = field(default_factory=list)
    degraded: bool = False


def _step_b_bucket_files(states: list[_BucketState], bucket_budget: int,
                         counter: TokenCounter) -> _FilePlacement:
    out = _FilePlacement(bucket_budget)
    _reserve_backgrounds(states, out, counter)
    for st in states:
        for f in st.bucket.files:
            ref = BucketFileRef(st.bucket.bucket_id, f.file_id)
            reason = _inline_file(st, f, ref, out, counter)
            if reason is not None:
                _list_file(st, f, ref, reason, out, counter)
    return out


def _reserve_backgrounds(states: list[_BucketState], out: _FilePlacement,
                         counter: TokenCounter) -> None:
    for st in states:
        if not st.bucket.background.strip():
            continue
        text = _block(f"bucket {_bucket_label(st.bucket)}: background", st.bucket.background)
        cost = counter.count(text) if out.left > 0 else out.left + 1
        if cost <= out.left:
            st.background = RenderedPart(PartKind.BACKGROUND, st.bucket.bucket_id, text, cost)
            out.left -= cost
        else:
            out.degraded = True


def _inline_file(st: _BucketState, f: BucketFile, ref: BucketFileRef, out: _FilePlacement,
                 counter: TokenCounter) -> str | None:
    """Inline ``f`` when its mode allows and its text fits: None, else why it was not."""
    if f.mode == "manifest":
        return "mode manifest"
    if out.left <= 0:
        return "bucket budget exhausted"
    text = _block(f"bucket {_bucket_label(st.bucket)}: file {_file_label(f)}", f.text)
    cost = counter.count(text)
    if cost > out.left:
        return f"inline text ({cost} tokens) exceeds the bucket budget left"
    st.files.append(RenderedPart(PartKind.FILE, ref.ref, text, cost))
    st.inlined += 1
    out.left -= cost
    out.inlined.append(ref)
    out.decisions.append(FileDecision(ref.bucket_id, ref.file_id, FileMode.INLINE, cost))
    return None


def _list_file(st: _BucketState, f: BucketFile, ref: BucketFileRef, reason: str,
               out: _FilePlacement, counter: TokenCounter) -> None:
    """List ``f`` by name and summary when that fits, else omit it."""
    text = _block(f"bucket {_bucket_label(st.bucket)}: file {_file_label(f)} (not inlined)",
                  one_line(f.summary))
    cost = counter.count(text) if out.left > 0 else out.left + 1
    if cost <= out.left:
        st.files.append(RenderedPart(PartKind.LISTED_FILE, ref.ref, text, cost))
        st.listed += 1
        out.left -= cost
        out.decisions.append(FileDecision(ref.bucket_id, ref.file_id, FileMode.MANIFEST, cost,
                                          reason))
    else:
        out.degraded = True
        out.decisions.append(FileDecision(ref.bucket_id, ref.file_id, FileMode.OMITTED, 0,
                                          _BUCKET_EXHAUSTED))


# c. card candidates ranked by relevance

def _step_c_rank_cards(cards: Sequence[KnowledgeCardCandidate]) -> list[KnowledgeCardCandidate]:
    return sorted(cards, key=lambda c: (-c.relevance_score, c.node_id))


# d. overlap with the inlined bucket files

def _step_d_overlap(ranked: list[KnowledgeCardCandidate],
                    inlined: list[BucketFileRef]) -> set[str]:
    overlap = detect_bucket_overlap(bucket_files_to_inline=inlined,
                                    knowledge_card_candidates=ranked)
    return set(overlap.redundant_card_ids)


# e. cards within the knowledge card budget (and the per-kind sub-budgets)

@dataclass
class _CardRendering:
    entries: dict[str, tuple[InjectionTier, int, str | None]] = field(default_factory=dict)
    """Per card: the tier, its tokens and why it was suppressed (None: rendered)."""
    parts: list[RenderedPart] = field(default_factory=list)
    rendered: list[KnowledgeCardCandidate] = field(default_factory=list)
    degraded: bool = False


def _step_e_render_cards(ranked: list[KnowledgeCardCandidate], redundant: set[str],
                         budget: UnifiedBudget, tiers: TierThresholds,
                         counter: TokenCounter) -> _CardRendering:
    out = _CardRendering()
    card_left = budget.knowledge_card_budget
    sub_left = {PROCEDURE_KIND: budget.procedure_sub_budget,
                INTERACTION_POLICY_KIND: budget.interaction_policy_sub_budget}
    for card in ranked:
        wanted = tiers.tier_for(card.relevance_score)
        if card.node_id in redundant:
            out.entries[card.node_id] = (wanted, 0, BUCKET_FILE_OVERLAP)
            continue
        limit = min(card_left, sub_left.get(card.node_kind, card_left))
        chosen = _cheapest_fitting_tier(card, wanted, limit, counter)
        if chosen is None:
            out.degraded = True
            why = BUDGET_EXHAUSTED if limit == card_left else \
                f"{SUB_BUDGET_EXHAUSTED}:{card.node_kind}"
            out.entries[card.node_id] = (wanted, 0, why)
            continue
        tier, block, cost = chosen
        card_left -= cost
        if card.node_kind in sub_left:
            sub_left[card.node_kind] -= cost
        out.parts.append(RenderedPart(PartKind.CARD, card.node_id, block, cost))
        out.rendered.append(card)
        out.entries[card.node_id] = (tier, cost, None)
    _drop_cards_until_joined_fits(out, budget.knowledge_card_budget, counter)
    return out


def _cheapest_fitting_tier(card: KnowledgeCardCandidate, wanted: InjectionTier, limit: int,
                           counter: TokenCounter) -> tuple[InjectionTier, str, int] | None:
    """The first tier from ``wanted`` down whose block fits ``limit``: tier, block, cost."""
    if limit <= 0:
        return None
    for tier in _TIER_ORDER[_TIER_ORDER.index(wanted):]:
        body = card.text_for(tier)
        if body is None:
            continue
        block = _card_block(card, body)
        cost = counter.count(block)
        if cost <= limit:
            return tier, block, cost
    return None


def _drop_cards_until_joined_fits(out: _CardRendering, budget: int,
                                  counter: TokenCounter) -> None:
    """Tokenizers whose counts are not additive over blocks: drop the lowest-ranked card
    until the concatenation fits (never happens with the shipped tiktoken encodings)."""
    while out.parts and not _fits_joined(out.parts, budget, counter):
        dropped = out.parts.pop()
        out.rendered.pop()
        tier, _, _ = out.entries[dropped.ref]
        out.entries[dropped.ref] = (tier, 0, BUDGET_EXHAUSTED)
        out.degraded = True


# f. buckets within the bucket budget, backgrounds deduplicated against rendered cards

@dataclass
class _BucketRendering:
    parts: list[RenderedPart]
    suppressed_backgrounds: int
    degraded: bool = False


def _step_f_render_buckets(states: list[_BucketState],
                           rendered_cards: list[KnowledgeCardCandidate], bucket_budget: int,
                           counter: TokenCounter) -> _BucketRendering:
    suppressed = 0
    for st in states:
        if st.background is not None and background_covered_by_cards(st.bucket.matter_id,
                                                                    rendered_cards):
            st.background = None
            st.background_suppressed = True
            suppressed += 1
    parts: list[RenderedPart] = []
    for st in states:
        if st.background is not None:
            parts.append(st.background)
        parts.extend(st.files)
    out = _BucketRendering(parts, suppressed)
    while out.parts and not _fits_joined(out.parts, bucket_budget, counter):
        _forget_part(states, out.parts.pop())
        out.degraded = True
    return out


def _forget_part(states: list[_BucketState], dropped: RenderedPart) -> None:
    """Take a part dropped by the joined-count check out of its bucket's state."""
    for st in states:
        if dropped is st.background:
            st.background = None
        elif dropped in st.files:
            st.files.remove(dropped)
            if dropped.kind == PartKind.FILE:
                st.inlined -= 1
            else:
                st.listed -= 1


# g. the manifest

@dataclass(frozen=True)
class _Tally:
    """What steps b-f tell the manifest beyond the parts: left-outs and overlap counts."""

    degraded: bool
    overlap: int
    cards_by_overlap: int


def _step_g_manifest(request: InjectionRequest, budget: UnifiedBudget,
                     ranked: list[KnowledgeCardCandidate], cards: _CardRendering,
                     states: list[_BucketState], flags: _Tally,
                     timestamp: str) -> UnifiedInjectionManifest:
    manifest_cards = [_manifest_card(card, *cards.entries[card.node_id]) for card in ranked]
    bucket_cards = [_manifest_bucket(st) for st in states]
    used = sum(c.token_count for c in manifest_cards) + sum(b.token_count for b in bucket_cards)
    has_content = bool(request.knowledge_cards) or _has_bucket_content(request)
    state = DegradedState.NONE
    if has_content and budget.total_budget == 0:
        state = DegradedState.UNAVAILABLE
    elif flags.degraded:
        state = DegradedState.PARTIAL
    return UnifiedInjectionManifest(
        trace_id=request.trace_id,
        timestamp=timestamp,
        total_budget_tokens=budget.total_budget,
        knowledge_card_budget_tokens=budget.knowledge_card_budget,
        bucket_content_budget_tokens=budget.bucket_budget,
        total_tokens_used=used,
        knowledge_cards=manifest_cards,
        bucket_cards=bucket_cards,
        overlap_detections=flags.overlap,
        cards_suppressed_by_bucket_overlap=flags.cards_by_overlap,
        degraded_state=state,
    )


def _manifest_card(card: KnowledgeCardCandidate, tier: InjectionTier, cost: int,
                   suppressed_why: str | None) -> ManifestKnowledgeCard:
    return ManifestKnowledgeCard(
        node_id=card.node_id, node_kind=card.node_kind, canonical_name=card.canonical_name,
        rendering_tier=tier, token_count=cost, relevance_score=card.relevance_score,
        resolution_source=card.resolution_source, primary_tag=card.primary_tag,
        hedge_mode=card.hedge_mode, force_level=card.force_level,
        source_bundle_ids=list(card.source_bundle_ids),
        suppressed=suppressed_why is not None, suppression_reason=suppressed_why)


def _manifest_bucket(st: _BucketState) -> ManifestBucketCard:
    tokens = (st.background.tokens if st.background else 0) + sum(p.tokens for p in st.files)
    return ManifestBucketCard(
        bucket_id=st.bucket.bucket_id, bucket_title=st.bucket.title,
        mode=BucketMode.INLINE if st.inlined or st.background else BucketMode.MANIFEST,
        background_included=st.background is not None,
        background_suppressed_by_overlap=st.background_suppressed,
        files_inlined=st.inlined, files_manifested=st.listed, token_count=tokens)


def _final_decision(d: FileDecision, states: list[_BucketState]) -> FileDecision:
    """A file decision, corrected if the joined-count check dropped the file afterwards."""
    if d.mode == FileMode.OMITTED:
        return d
    ref = f"{d.bucket_id}:{d.file_id}"
    for st in states:
        if st.bucket.bucket_id == d.bucket_id:
            if any(p.ref == ref for p in st.files):
                return d
            return FileDecision(d.bucket_id, d.file_id, FileMode.OMITTED, 0, _BUCKET_EXHAUSTED)
    return d  # pragma: no cover - every decision belongs to a bucket


__all__ = [
    "BUDGET_EXHAUSTED",
    "Bucket",
    "BucketFile",
    "BucketMode",
    "DegradedState",
    "FileDecision",
    "FileMode",
    "InjectionPlan",
    "InjectionRequest",
    "InjectionTier",
    "KnowledgeCardCandidate",
    "ManifestBucketCard",
    "ManifestKnowledgeCard",
    "PartKind",
    "RenderedPart",
    "TierThresholds",
    "UnifiedInjectionManifest",
    "plan_injection",
]
